//! A kind's credential as its registration declares it, and the handles a
//! configuration call gets in place of credential values.
//!
//! The registration names the string fields of the credential's JSON
//! object. The host parses every credential against that shape before a
//! call and keeps its value; the component sees only a handle (field names
//! and lengths) and passes handles back to say which credential an answer
//! keeps. So no configuration call can copy, encode or hide a credential:
//! its value never enters guest memory.

use crate::bindings::exports::oac::sandbox_provider::configuration_adapter as adapter;
use oac_provider_api::types::{Configuration, StoredConfiguration};

/// Longest value of one field, in bytes.
pub(crate) const MAX_FIELD_BYTES: usize = 8 << 10;

/// A credential checked against its shape: its canonical JSON text (the
/// declared fields, in order) and each field's length.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Checked {
    canonical: String,
    fields: Vec<(String, u32)>,
}

impl Checked {
    /// Parses `text` against `shape`: a JSON object whose keys are exactly
    /// the declared fields, each a non-empty string of at most
    /// [`MAX_FIELD_BYTES`] (for a kind that declares none, only `{}`, which
    /// holds nothing). `None` otherwise (the text is never echoed).
    pub(crate) fn parse(shape: &[String], text: &str) -> Option<Self> {
        let serde_json::Value::Object(object) = serde_json::from_str(text).ok()? else {
            return None;
        };
        if object.len() != shape.len() {
            return None;
        }
        let mut canonical = String::from("{");
        let mut fields = Vec::with_capacity(shape.len());
        for (index, name) in shape.iter().enumerate() {
            let value = object.get(name)?.as_str()?;
            if value.is_empty() || value.len() > MAX_FIELD_BYTES {
                return None;
            }
            if index > 0 {
                canonical.push(',');
            }
            canonical.push_str(&serde_json::to_string(name).ok()?);
            canonical.push(':');
            canonical.push_str(&serde_json::to_string(value).ok()?);
            fields.push((name.clone(), u32::try_from(value.len()).ok()?));
        }
        canonical.push('}');
        Some(Self { canonical, fields })
    }
}

/// What is wrong with credential `text` for `shape`, as a key path and a
/// reason (never a value): `None` when it fits.
pub(crate) fn misfit(shape: &[String], text: &str) -> Option<(String, &'static str)> {
    if Checked::parse(shape, text).is_some() {
        return None;
    }
    let Ok(serde_json::Value::Object(object)) = serde_json::from_str(text) else {
        return Some(("credential".into(), "is not a JSON object"));
    };
    for name in shape {
        match object.get(name).and_then(|value| value.as_str()) {
            None => return Some((format!("credential.{name}"), "is missing or not a string")),
            Some("") => return Some((format!("credential.{name}"), "is empty")),
            Some(value) if value.len() > MAX_FIELD_BYTES => {
                return Some((format!("credential.{name}"), "is too long"));
            }
            Some(_) => {}
        }
    }
    Some(("credential".into(), "has a field the kind does not declare"))
}

/// The credentials one configuration call was handed, by handle: equal
/// credentials share one handle.
pub(crate) struct Handed<'a> {
    shape: &'a [String],
    held: Vec<Checked>,
}

/// A credential that does not fit the kind's shape, or a handle the call
/// was never given.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unfit;

impl<'a> Handed<'a> {
    /// No credential handed yet, for a kind of `shape`.
    pub(crate) fn new(shape: &'a [String]) -> Self {
        Self {
            shape,
            held: Vec::new(),
        }
    }

    /// The handle of credential `text`, which must fit the shape.
    pub(crate) fn hand(&mut self, text: &str) -> Result<adapter::Credential, Unfit> {
        let checked = Checked::parse(self.shape, text).ok_or(Unfit)?;
        let index = match self.held.iter().position(|held| *held == checked) {
            Some(index) => index,
            None => {
                self.held.push(checked);
                self.held.len() - 1
            }
        };
        Ok(self.handle(index))
    }

    fn handle(&self, index: usize) -> adapter::Credential {
        adapter::Credential {
            handle: index as u32,
            fields: self.held[index]
                .fields
                .iter()
                .map(|(name, length)| adapter::CredentialField {
                    name: name.clone(),
                    length: *length,
                })
                .collect(),
        }
    }

    /// The canonical text behind a handle the component passed back: one
    /// this call handed out, fields and all.
    pub(crate) fn value(&self, credential: &adapter::Credential) -> Result<String, Unfit> {
        let index = credential.handle as usize;
        if index < self.held.len() && self.handle(index) == *credential {
            Ok(self.held[index].canonical.clone())
        } else {
            Err(Unfit)
        }
    }

    /// `configuration` as the component sees it.
    pub(crate) fn configuration(
        &mut self,
        configuration: &Configuration,
    ) -> Result<adapter::Configuration, Unfit> {
        Ok(adapter::Configuration {
            public: configuration.public.clone(),
            credential: configuration
                .credential
                .as_deref()
                .map(|text| self.hand(text))
                .transpose()?,
        })
    }

    /// `stored` as the component sees it: its secret parsed as a
    /// credential of the shape.
    pub(crate) fn stored(
        &mut self,
        stored: &StoredConfiguration,
    ) -> Result<adapter::StoredConfiguration, Unfit> {
        let secret = match &stored.secret {
            None => None,
            Some(bytes) => Some(self.hand(std::str::from_utf8(bytes).map_err(|_| Unfit)?)?),
        };
        Ok(adapter::StoredConfiguration {
            public: stored.public.clone(),
            metadata: stored.metadata.clone(),
            secret,
        })
    }

    /// The component's configuration with its credential's value restored.
    pub(crate) fn back(&self, answer: adapter::Configuration) -> Result<Configuration, Unfit> {
        Ok(Configuration {
            public: answer.public,
            credential: answer
                .credential
                .map(|credential| self.value(&credential))
                .transpose()?,
        })
    }

    /// The component's stored configuration with the credential's canonical
    /// text as its secret.
    pub(crate) fn back_stored(
        &self,
        answer: adapter::StoredConfiguration,
    ) -> Result<StoredConfiguration, Unfit> {
        Ok(StoredConfiguration {
            public: answer.public,
            metadata: answer.metadata,
            secret: answer
                .secret
                .map(|credential| self.value(&credential).map(String::into_bytes))
                .transpose()?,
        })
    }

    /// Every credential value handed, to look for in answers.
    pub(crate) fn values(&self) -> Vec<String> {
        self.held
            .iter()
            .map(|held| held.canonical.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Vec<String> {
        vec!["api_key".into(), "team".into()]
    }

    #[test]
    fn a_credential_fits_only_its_declared_fields() {
        let shape = shape();
        let fit = Checked::parse(&shape, r#"{ "team":"t1", "api_key":"k-123" }"#).expect("fits");
        assert_eq!(fit.canonical, r#"{"api_key":"k-123","team":"t1"}"#);
        for unfit in [
            r#"{"api_key":"k"}"#,
            r#"{"api_key":"k","team":"t","extra":"x"}"#,
            r#"{"api_key":"","team":"t"}"#,
            r#"{"api_key":1,"team":"t"}"#,
            r#"["k","t"]"#,
            "k-123",
        ] {
            assert!(Checked::parse(&shape, unfit).is_none(), "{unfit}");
        }
        let long = "x".repeat(MAX_FIELD_BYTES + 1);
        let text = serde_json::json!({ "api_key": long, "team": "t" }).to_string();
        assert!(Checked::parse(&shape, &text).is_none());
        let empty = Checked::parse(&[], " { } ").expect("no fields, nothing held");
        assert_eq!(empty.canonical, "{}");
        assert!(Checked::parse(&[], r#"{"api_key":"k"}"#).is_none());
    }

    #[test]
    fn a_shape_has_few_well_formed_unique_names() {
        use oac_provider_api::registry::validate::{MAX_CREDENTIAL_FIELDS, is_credential_shape};
        assert!(is_credential_shape(&[]));
        assert!(is_credential_shape(&shape()));
        assert!(!is_credential_shape(&["api_key".into(), "api_key".into()]));
        assert!(!is_credential_shape(&["Api-Key".into()]));
        assert!(!is_credential_shape(&vec![
            "a".to_string();
            MAX_CREDENTIAL_FIELDS + 1
        ]));
    }

    #[test]
    fn equal_credentials_share_a_handle_and_only_handed_ones_come_back() {
        let shape = shape();
        let mut handed = Handed::new(&shape);
        let first = handed.hand(r#"{"api_key":"k1","team":"t"}"#).expect("fits");
        let again = handed.hand(r#"{"team":"t","api_key":"k1"}"#).expect("fits");
        let other = handed
            .hand(r#"{"api_key":"k22","team":"t"}"#)
            .expect("fits");
        assert_eq!(first, again);
        assert_ne!(first, other);
        assert_eq!(
            first.fields,
            vec![
                adapter::CredentialField {
                    name: "api_key".into(),
                    length: 2
                },
                adapter::CredentialField {
                    name: "team".into(),
                    length: 1
                },
            ]
        );
        assert_eq!(
            handed.value(&other).as_deref(),
            Ok(r#"{"api_key":"k22","team":"t"}"#)
        );
        let forged = adapter::Credential {
            handle: 7,
            fields: first.fields.clone(),
        };
        assert_eq!(handed.value(&forged), Err(Unfit));
        let relabelled = adapter::Credential {
            handle: first.handle,
            fields: other.fields.clone(),
        };
        assert_eq!(handed.value(&relabelled), Err(Unfit));
    }
}
