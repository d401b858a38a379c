//! The configuration adapter of a kind whose configuration is a JSON public
//! object beside an optional credential: every operation of
//! [`crate::guest::ConfigurationAdapter`] (and `with-credential`) from three
//! decisions the adapter makes — how its public object is canonicalised,
//! which credential fields it needs, and what a change may not alter.
//! The calls are pure (the host lets them reach nothing), and errors never
//! echo input: everything refused is `invalid`. Implement
//! [`JsonConfigured`] and both traits follow.

use crate::guest::{ConfigurationAdapter, WithCredential};
use crate::types::{Configuration, Credential, Error, StoredConfiguration};

/// An adapter whose configuration adapter (and `with-credential`) is
/// [`JsonConfiguration`]: implementing this is implementing both.
pub trait JsonConfigured {
    /// The adapter's rules.
    const CONFIGURATION: JsonConfiguration;
}

impl<T: JsonConfigured> ConfigurationAdapter for T {
    fn decode_input(
        public: String,
        credential: Option<Credential>,
    ) -> Result<Configuration, Error> {
        T::CONFIGURATION.decode_input(public, credential)
    }
    fn encode(configuration: Configuration) -> Result<StoredConfiguration, Error> {
        T::CONFIGURATION.encode(configuration)
    }
    fn decode(stored: StoredConfiguration) -> Result<Configuration, Error> {
        T::CONFIGURATION.decode(stored)
    }
    fn normalize(configuration: Configuration) -> Result<Configuration, Error> {
        T::CONFIGURATION.normalize(configuration)
    }
    fn resolve_change(
        next: Configuration,
        previous: Configuration,
    ) -> Result<Configuration, Error> {
        T::CONFIGURATION.resolve_change(next, previous)
    }
    fn equal(left: Configuration, right: Configuration) -> Result<bool, Error> {
        T::CONFIGURATION.equal(left, right)
    }
}

impl<T: JsonConfigured> WithCredential for T {
    fn with_credential(
        owner: Configuration,
        candidate: Credential,
    ) -> Result<Configuration, Error> {
        T::CONFIGURATION.with_credential(owner, candidate)
    }
}

/// The canonical public object of a kind with no public configuration of
/// its own (a node kind whose node file holds the rest): only the empty
/// object, `{}`; anything else is `invalid`.
pub fn empty_object(text: &str) -> Result<String, Error> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) if map.is_empty() => Ok("{}".into()),
        _ => Err(Error::Invalid),
    }
}

/// An adapter's configuration rules.
#[derive(Clone, Copy)]
pub struct JsonConfiguration {
    /// The canonical text of a public object (strictly decoded, defaults
    /// filled in), or `invalid`.
    pub canonical: fn(&str) -> Result<String, Error>,
    /// The credential's fields; empty when the kind takes no credential.
    pub credential_fields: &'static [&'static str],
    /// Whether a change from the first canonical public object to the
    /// second is allowed (e.g. the vendor endpoint stays the same).
    pub may_change: fn(&str, &str) -> bool,
}

impl JsonConfiguration {
    /// The configuration canonicalised, its credential checked.
    fn checked(&self, configuration: Configuration) -> Result<Configuration, Error> {
        let public = (self.canonical)(&configuration.public)?;
        let credential = match (configuration.credential, self.credential_fields) {
            (None, []) => None,
            (Some(credential), fields) if !fields.is_empty() => {
                let fits = fields
                    .iter()
                    .all(|field| credential.length(field).is_some_and(|length| length > 0))
                    && credential.fields.len() == fields.len();
                if !fits {
                    return Err(Error::Invalid);
                }
                Some(credential)
            }
            _ => return Err(Error::Invalid),
        };
        Ok(Configuration { public, credential })
    }

    /// `decode-input`: an operator's public object and credential.
    pub fn decode_input(
        &self,
        public: String,
        credential: Option<Credential>,
    ) -> Result<Configuration, Error> {
        self.checked(Configuration { public, credential })
    }

    /// `encode`: the credential travels only as the secret.
    pub fn encode(&self, configuration: Configuration) -> Result<StoredConfiguration, Error> {
        let configuration = self.checked(configuration)?;
        Ok(StoredConfiguration {
            public: configuration.public,
            metadata: "{}".into(),
            secret: configuration.credential,
        })
    }

    /// `decode`: what [`Self::encode`] stored.
    pub fn decode(&self, stored: StoredConfiguration) -> Result<Configuration, Error> {
        if stored.metadata != "{}" {
            return Err(Error::Invalid);
        }
        self.decode_input(stored.public, stored.secret)
    }

    /// `normalize`.
    pub fn normalize(&self, configuration: Configuration) -> Result<Configuration, Error> {
        self.checked(configuration)
    }

    /// `resolve-change`: `next`, when the change is allowed.
    pub fn resolve_change(
        &self,
        next: Configuration,
        previous: Configuration,
    ) -> Result<Configuration, Error> {
        let previous = self.checked(previous)?;
        let next = self.checked(next)?;
        if !(self.may_change)(&previous.public, &next.public) {
            return Err(Error::Invalid);
        }
        Ok(next)
    }

    /// `equal`, after normalisation.
    pub fn equal(&self, left: Configuration, right: Configuration) -> Result<bool, Error> {
        Ok(self.checked(left)? == self.checked(right)?)
    }

    /// `with-credential`: `owner`'s public object with `candidate`.
    pub fn with_credential(
        &self,
        owner: Configuration,
        candidate: Credential,
    ) -> Result<Configuration, Error> {
        self.checked(Configuration {
            public: owner.public,
            credential: Some(candidate),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CredentialField;

    #[test]
    fn only_the_empty_object_is_an_empty_configuration() {
        assert_eq!(empty_object(" { } "), Ok("{}".into()));
        for bad in ["", "[]", "null", r#"{"image":"x"}"#, "{"] {
            assert_eq!(empty_object(bad), Err(Error::Invalid), "{bad:?}");
        }
    }

    const RULES: JsonConfiguration = JsonConfiguration {
        canonical: |public| match public.trim() {
            "" | "{}" => Ok("{}".into()),
            r#"{"region":"a"}"# => Ok(r#"{"region":"a"}"#.into()),
            _ => Err(Error::Invalid),
        },
        credential_fields: &["api_key"],
        may_change: |before, after| before == after,
    };

    fn key(length: u32) -> Credential {
        Credential {
            handle: 0,
            fields: vec![CredentialField {
                name: "api_key".into(),
                length,
            }],
        }
    }

    #[test]
    fn the_credential_is_checked_and_stored_only_as_the_secret() {
        let configuration = RULES
            .decode_input(" {} ".into(), Some(key(12)))
            .expect("valid");
        assert_eq!(configuration.public, "{}");
        let stored = RULES.encode(configuration.clone()).expect("encodes");
        assert_eq!(
            (stored.metadata.as_str(), stored.secret.clone()),
            ("{}", Some(key(12)))
        );
        assert_eq!(RULES.decode(stored), Ok(configuration.clone()));
        assert_eq!(RULES.decode_input("{}".into(), None), Err(Error::Invalid));
        assert_eq!(
            RULES.decode_input("{}".into(), Some(key(0))),
            Err(Error::Invalid)
        );
        assert_eq!(
            RULES.decode_input("{".into(), Some(key(3))),
            Err(Error::Invalid)
        );
        let moved = RULES
            .decode_input(r#"{"region":"a"}"#.into(), Some(key(3)))
            .expect("valid");
        assert_eq!(
            RULES.resolve_change(moved, configuration.clone()),
            Err(Error::Invalid)
        );
        assert_eq!(
            RULES
                .with_credential(configuration.clone(), key(20))
                .map(|c| c.credential),
            Ok(Some(key(20)))
        );
        assert_eq!(RULES.equal(configuration.clone(), configuration), Ok(true));
    }
}
