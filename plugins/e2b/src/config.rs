//! The E2B kind's configuration. Public: `template` (`<template>:<build
//! UUID>`), `api_url` and `domain` (both empty: E2B's own), and the
//! sandbox's `cpu_count` and `memory_mb` (omitted: selection discovery
//! adopts the build's). Credential: `{"api_key": "…"}`, which the host
//! holds and fills into requests; the adapter sees only its length.

use oac_provider_sdk::endpoint;
use oac_provider_sdk::prelude::*;
use serde::{Deserialize, Serialize};

/// E2B's API when the configuration names none.
pub const DEFAULT_API_URL: &str = "https://api.e2b.app";
/// E2B's sandbox domain when the configuration names none.
pub const DEFAULT_DOMAIN: &str = "e2b.app";

/// A pinned template: a template name and one of its builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    /// 1..128 of `[A-Za-z0-9_-]`.
    pub template: String,
    /// A canonical lowercase, non-nil UUID.
    pub build: String,
}

fn is_template_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// True for `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in lowercase hex, not all
/// zeros.
pub fn is_canonical_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    let shaped = groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(group, length)| {
            group.len() == length
                && group
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
    shaped && text.bytes().any(|b| b != b'0' && b != b'-')
}

impl Selector {
    /// Parses `<template>:<build UUID>`.
    pub fn parse(text: &str) -> Option<Self> {
        let (template, build) = text.split_once(':')?;
        (is_template_name(template) && is_canonical_uuid(build)).then(|| Selector {
            template: template.to_string(),
            build: build.to_string(),
        })
    }
}

/// The public configuration as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Public {
    /// `<template>:<build UUID>`.
    pub template: String,
    /// `https://host`, or empty for E2B's own.
    #[serde(default)]
    pub api_url: String,
    /// The sandbox domain, or empty for E2B's own.
    #[serde(default)]
    pub domain: String,
    /// vCPUs of every sandbox (omitted: the build's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_count: Option<u32>,
    /// Memory of every sandbox in MiB (omitted: the build's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u32>,
}

/// A validated configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Configuration {
    /// The pinned template.
    pub selector: Selector,
    /// The API origin, e.g. `https://api.e2b.app`.
    pub api_url: String,
    /// The sandbox domain, e.g. `e2b.app`.
    pub domain: String,
    /// vCPUs, when known.
    pub cpu_count: Option<u32>,
    /// Memory in MiB, when known.
    pub memory_mb: Option<u32>,
    /// The public object as written (for `encode`).
    pub public: Public,
}

impl Configuration {
    /// Validates the public configuration (JSON text).
    pub fn parse(text: &str) -> Result<Self, Error> {
        let public: Public = serde_json::from_str(text).map_err(|_| Error::Invalid)?;
        Self::from_public(public)
    }

    /// Validates a decoded public configuration.
    pub fn from_public(public: Public) -> Result<Self, Error> {
        let selector = Selector::parse(&public.template).ok_or(Error::Invalid)?;
        let (api_url, domain) = endpoint::resolve(
            &public.api_url,
            &public.domain,
            DEFAULT_API_URL,
            DEFAULT_DOMAIN,
        )
        .map_err(|_| Error::Invalid)?;
        let positive = |value: Option<u32>| value.is_none_or(|v| v > 0);
        if !positive(public.cpu_count) || !positive(public.memory_mb) {
            return Err(Error::Invalid);
        }
        Ok(Configuration {
            selector,
            api_url: api_url.to_string(),
            domain: domain.to_string(),
            cpu_count: public.cpu_count,
            memory_mb: public.memory_mb,
            public,
        })
    }
}

/// Checks a credential's shape: the registration declares one field,
/// `api_key` (the host refuses anything else before the adapter runs), and
/// E2B keys are at most 256 bytes.
pub fn check_credential(credential: &Credential) -> Result<(), Error> {
    let fits = credential.fields.len() == 1
        && credential
            .length("api_key")
            .is_some_and(|length| (1..=256).contains(&length));
    fits.then_some(()).ok_or(Error::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(path: &str) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR")))
            .expect("the case table");
        serde_json::from_str(&text).expect("JSON")
    }

    #[test]
    fn every_template_case_of_the_table_holds() {
        let cases = table("cases/template.json");
        assert!(cases.len() >= 14);
        for case in cases {
            let selector = case["selector"].as_str().expect("selector");
            let got = match Selector::parse(selector) {
                Some(Selector { template, build }) => serde_json::json!({"ok": [template, build]}),
                None => serde_json::json!({"error": "template"}),
            };
            assert_eq!(got, case["expect"], "{}", case["case"]);
        }
    }

    /// The host's endpoint table holds for the adapter's configuration too.
    #[test]
    fn every_endpoint_case_of_the_contract_table_holds_for_the_configuration() {
        let cases = table("../../contract/cases/endpoint.json");
        assert!(cases.len() >= 29);
        for case in cases {
            let public = Public {
                template: "base:2c5d9a1e-8b3f-4c6d-9e7f-0a1b2c3d4e5f".into(),
                api_url: case["api_url"].as_str().expect("api_url").into(),
                domain: case["domain"].as_str().expect("domain").into(),
                cpu_count: None,
                memory_mb: None,
            };
            let got = match Configuration::from_public(public) {
                Ok(configuration) => {
                    serde_json::json!({"ok": [configuration.api_url, configuration.domain]})
                }
                Err(_) => serde_json::Value::Null,
            };
            match case["expect"].get("ok") {
                Some(ok) => assert_eq!(got["ok"], *ok, "{}", case["case"]),
                None => assert!(got.is_null(), "{} accepted", case["case"]),
            }
        }
    }

    #[test]
    fn a_configuration_decodes_with_or_without_resources() {
        let configuration = Configuration::parse(
            r#"{"template":"base:2c5d9a1e-8b3f-4c6d-9e7f-0a1b2c3d4e5f","cpu_count":2,"memory_mb":1024}"#,
        )
        .expect("valid");
        assert_eq!(configuration.api_url, DEFAULT_API_URL);
        assert_eq!(configuration.domain, DEFAULT_DOMAIN);
        assert_eq!(configuration.cpu_count, Some(2));
        for bad in [
            r#"{"template":"base"}"#,
            r#"{"template":"base:2c5d9a1e-8b3f-4c6d-9e7f-0a1b2c3d4e5f","cpu_count":0}"#,
            r#"{"template":"base:2c5d9a1e-8b3f-4c6d-9e7f-0a1b2c3d4e5f","image":"x"}"#,
            r#"{"template":"base:2c5d9a1e-8b3f-4c6d-9e7f-0a1b2c3d4e5f","api_url":"https://api.x.dev"}"#,
            "[]",
        ] {
            assert_eq!(Configuration::parse(bad), Err(Error::Invalid), "{bad}");
        }
    }

    fn credential(fields: &[(&str, u32)]) -> Credential {
        Credential {
            handle: 0,
            fields: fields
                .iter()
                .map(|(name, length)| CredentialField {
                    name: (*name).into(),
                    length: *length,
                })
                .collect(),
        }
    }

    #[test]
    fn a_credential_is_exactly_an_api_key() {
        assert_eq!(check_credential(&credential(&[("api_key", 12)])), Ok(()));
        for bad in [
            credential(&[("api_key", 0)]),
            credential(&[("api_key", 257)]),
            credential(&[("api_key", 12), ("team", 1)]),
            credential(&[("token", 12)]),
        ] {
            assert_eq!(check_credential(&bad), Err(Error::Invalid), "{bad:?}");
        }
    }
}
