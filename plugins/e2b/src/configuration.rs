//! The configuration adapter: strict decoding, the canonical form (the
//! endpoint spelled out, so E2B's defaults and the same values written out
//! are one configuration), storage with the credential only in `secret`,
//! and changes that keep the endpoint (sandboxes live there).

use crate::config::{self, Public};
use oac_provider_sdk::prelude::*;

/// The canonical public object of `public` (JSON text).
fn canonical(public: &str) -> Result<(String, config::Configuration), Error> {
    let configuration = config::Configuration::parse(public)?;
    let canonical = Public {
        api_url: configuration.api_url.clone(),
        domain: configuration.domain.clone(),
        ..configuration.public.clone()
    };
    let text = serde_json::to_string(&canonical).map_err(|_| Error::Invalid)?;
    Ok((text, configuration))
}

/// A configuration with its public object canonical and its credential
/// checked (an E2B kind always has one).
fn checked(configuration: Configuration) -> Result<(Configuration, config::Configuration), Error> {
    let credential = configuration.credential.ok_or(Error::Invalid)?;
    config::check_credential(&credential)?;
    let (public, decoded) = canonical(&configuration.public)?;
    Ok((
        Configuration {
            public,
            credential: Some(credential),
        },
        decoded,
    ))
}

/// Strictly decodes an operator's input.
pub fn decode_input(
    public: String,
    credential: Option<Credential>,
) -> Result<Configuration, Error> {
    checked(Configuration { public, credential }).map(|(configuration, _)| configuration)
}

/// Storage: the credential only in `secret`.
pub fn encode(configuration: Configuration) -> Result<StoredConfiguration, Error> {
    let (configuration, _) = checked(configuration)?;
    Ok(StoredConfiguration {
        public: configuration.public,
        metadata: "{}".into(),
        secret: configuration.credential,
    })
}

/// From storage.
pub fn decode(stored: StoredConfiguration) -> Result<Configuration, Error> {
    if stored.metadata != "{}" {
        return Err(Error::Invalid);
    }
    decode_input(stored.public, Some(stored.secret.ok_or(Error::Invalid)?))
}

/// The canonical form.
pub fn normalize(configuration: Configuration) -> Result<Configuration, Error> {
    checked(configuration).map(|(configuration, _)| configuration)
}

/// `next` replaces `previous` unless it moves the endpoint: existing
/// sandboxes live at the old one.
pub fn resolve_change(
    next: Configuration,
    previous: Configuration,
) -> Result<Configuration, Error> {
    let (_, before) = checked(previous)?;
    let (next, after) = checked(next)?;
    if (before.api_url, before.domain) != (after.api_url, after.domain) {
        return Err(Error::Invalid);
    }
    Ok(next)
}

/// Equal after normalisation, credential included.
pub fn equal(left: Configuration, right: Configuration) -> Result<bool, Error> {
    Ok(normalize(left)? == normalize(right)?)
}

/// `owner` with `candidate` as its credential.
pub fn with_credential(
    owner: Configuration,
    candidate: Credential,
) -> Result<Configuration, Error> {
    normalize(Configuration {
        public: owner.public,
        credential: Some(candidate),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "base:2c5d9a1e-8b3f-4c6d-9e7f-0a1b2c3d4e5f";
    /// The host's handle for `{"api_key":"e2b_0123456789"}`.
    fn key() -> Credential {
        key_of(0, 14)
    }

    fn key_of(handle: u32, length: u32) -> Credential {
        Credential {
            handle,
            fields: vec![CredentialField {
                name: "api_key".into(),
                length,
            }],
        }
    }

    fn public(extra: &str) -> String {
        format!(r#"{{"template":"{TEMPLATE}"{extra}}}"#)
    }

    #[test]
    fn defaults_and_the_same_endpoint_written_out_are_one_configuration() {
        let implicit = decode_input(public(""), Some(key())).expect("valid");
        let explicit = decode_input(
            public(r#","api_url":"https://api.e2b.app","domain":"e2b.app""#),
            Some(key()),
        )
        .expect("valid");
        assert_eq!(implicit, explicit);
        assert_eq!(
            implicit.public,
            format!(
                r#"{{"template":"{TEMPLATE}","api_url":"https://api.e2b.app","domain":"e2b.app"}}"#
            )
        );
    }

    #[test]
    fn the_credential_is_stored_only_as_the_secret_and_comes_back() {
        let configuration = decode_input(public(""), Some(key())).expect("valid");
        let stored = encode(configuration.clone()).expect("encoded");
        assert_eq!(stored.metadata, "{}");
        assert!(!stored.public.contains("api_key"));
        assert_eq!(stored.secret, Some(key()));
        assert_eq!(decode(stored), Ok(configuration));
        assert_eq!(
            decode_input(public(""), None),
            Err(Error::Invalid),
            "an E2B kind needs its API key"
        );
    }

    #[test]
    fn a_change_keeps_the_endpoint() {
        let previous = decode_input(public(""), Some(key())).expect("valid");
        let resized = decode_input(public(r#","cpu_count":4"#), Some(key())).expect("valid");
        assert_eq!(
            resolve_change(resized.clone(), previous.clone()),
            Ok(resized)
        );
        let moved = decode_input(
            public(r#","api_url":"https://api.x.dev","domain":"x.dev""#),
            Some(key()),
        )
        .expect("valid");
        assert_eq!(resolve_change(moved, previous), Err(Error::Invalid));
    }

    #[test]
    fn a_new_credential_is_checked() {
        let owner = decode_input(public(""), Some(key())).expect("valid");
        let replaced = with_credential(owner.clone(), key_of(1, 7)).expect("valid");
        assert_eq!(replaced.credential, Some(key_of(1, 7)));
        assert_eq!(
            with_credential(owner, key_of(2, 300)),
            Err(Error::Invalid),
            "longer than any E2B key"
        );
    }
}
