//! An operator's registry file (TOML): the rows it adds to the built-in
//! ones, one `[kinds.<kind>]` table each. Every row pins its component's
//! SHA-256 and its operation declaration. Decoding is strict (an unknown
//! key is refused) and its errors name the key path, never a value.
//!
//! ```toml
//! [kinds.acme]
//! mode = "direct"                    # or "nodes"
//! component = "acme.wasm"            # in the plugin directory
//! sha256 = "<64 lowercase hex digits>"
//! credential_fields = ["api_key"]
//!
//! [kinds.acme.grants]
//! http_origins = ["https://api.acme.example"]
//! credential_origins = ["https://api.acme.example"]
//! receipts = true
//!
//! [kinds.acme.unsupported]           # operation = reason; others supported
//! initial = "acme_has_no_checkpoints"
//! ```

use super::{
    DigestSource, Grants, Mode, NodeArtifact, Policy, Registration, RegistrationError,
    SuspensionDefaults,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Why an operator's registry cannot be used. Nothing is loaded then.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryFileError {
    /// The file cannot be read.
    #[error("registry file {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::ErrorKind,
    },
    /// The file is not a registry (the message names the key path).
    #[error("registry file: {0}")]
    Decode(String),
    /// A row fails the registration check.
    #[error("registry file: {0}")]
    Invalid(#[from] RegistrationError),
    /// A row names a kind that is built in.
    #[error(
        "registry file: kind `{0}` is built into this host; an operator's row may not replace it"
    )]
    Shadows(String),
}

/// One row as an operator writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    mode: Mode,
    component: String,
    sha256: String,
    #[serde(default)]
    credential_fields: Vec<String>,
    #[serde(default)]
    grants: Grants,
    #[serde(default)]
    policy: Policy,
    #[serde(default)]
    node_artifacts: Vec<NodeArtifact>,
    suspension: Option<SuspensionDefaults>,
    unsupported: BTreeMap<String, String>,
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    kinds: BTreeMap<String, Row>,
}

/// The rows of a registry file's `text`, each checked by the registration
/// check (built-in kinds are not consulted here: see
/// [`super::Registry::extended`]).
pub fn parse_file(text: &str) -> Result<Vec<Registration>, RegistryFileError> {
    let file: File = decode_toml(text).map_err(RegistryFileError::Decode)?;
    let rows: Vec<Registration> = file
        .kinds
        .into_iter()
        .map(|(kind, row)| Registration {
            kind,
            mode: row.mode,
            component: row.component,
            digest: DigestSource::Pinned(row.sha256),
            credential_fields: row.credential_fields,
            grants: row.grants,
            policy: row.policy,
            node_artifacts: row.node_artifacts,
            suspension: row.suspension,
            unsupported: Some(row.unsupported),
        })
        .collect();
    super::validate_table(&rows)?;
    Ok(rows)
}

/// Decodes TOML `text` strictly; an error names the line or the key path
/// and what was expected, never the value found.
pub fn decode_toml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let line = |error: &toml::de::Error| {
        let at = error.span().map_or(0, |span| span.start);
        text[..at.min(text.len())].matches('\n').count() + 1
    };
    let deserializer = toml::Deserializer::parse(text)
        .map_err(|error| format!("line {}: {}", line(&error), without_value(error.message())))?;
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let message = without_value(error.inner().message());
        match error.path().to_string() {
            path if path == "." => format!("line {}: {message}", line(error.inner())),
            path => format!("`{path}`: {message}"),
        }
    })
}

/// serde's "invalid type: <found>, expected <wanted>" (and "invalid value",
/// "unknown variant") name the value found; only what was expected is kept.
fn without_value(message: &str) -> &str {
    let names_value = ["invalid type", "invalid value", "unknown variant"]
        .iter()
        .any(|prefix| message.starts_with(prefix));
    match message.find(", expected ") {
        Some(at) if names_value => &message[at + 2..],
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn acme(extra: &str) -> String {
        format!(
            "[kinds.acme]\nmode = \"direct\"\ncomponent = \"acme.wasm\"\nsha256 = \"{DIGEST}\"\n\
             credential_fields = [\"api_key\"]\n{extra}\n[kinds.acme.grants]\n\
             http_origins = [\"https://api.acme.example\"]\n\
             credential_origins = [\"https://api.acme.example\"]\nreceipts = true\n\
             [kinds.acme.unsupported]\ninitial = \"acme_has_no_checkpoints\"\n\
             new-compute = \"acme_has_no_checkpoints\"\nget-compute = \"acme_has_no_checkpoints\"\n\
             suspend = \"acme_has_no_checkpoints\"\nresume = \"acme_has_no_checkpoints\"\n\
             resume-compute = \"acme_has_no_checkpoints\"\nkill-compute = \"acme_has_no_checkpoints\"\n\
             delete-snapshot = \"acme_has_no_checkpoints\"\n\
             run-command-compute = \"acme_has_no_checkpoints\"\n"
        )
    }

    #[test]
    fn an_operator_row_pins_digest_and_declaration() {
        let rows = parse_file(&acme("")).expect("valid");
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.digest, DigestSource::Pinned(DIGEST.into()));
        assert!(row.keeps_settlement_records());
        let declaration = row.pinned_declaration().expect("pinned").expect("valid");
        assert!(declaration.supports(oac_contract::Operation::Create));
        assert!(!declaration.supports_checkpoint());
    }

    #[test]
    fn what_cannot_be_registered_is_refused_by_key_never_by_value() {
        let refused = |text: String| parse_file(&text).expect_err("refused").to_string();
        let no_digest = acme("").replace(&format!("sha256 = \"{DIGEST}\"\n"), "");
        assert!(refused(no_digest).contains("missing field `sha256`"));
        let staged = acme("").replace(DIGEST, "staged");
        assert!(refused(staged).contains("invalid digest"));
        let unknown_key = acme("vendor = \"secret-value\"");
        let message = refused(unknown_key);
        assert!(message.contains("vendor") && !message.contains("secret-value"));
        let full = acme("");
        let (no_declaration, _) = full
            .split_once("[kinds.acme.unsupported]")
            .expect("a declaration");
        let no_declaration = no_declaration.to_string();
        assert!(refused(no_declaration).contains("missing field `unsupported`"));
        let create_off = acme("").replace("initial =", "create = \"x\"\ninitial =");
        assert!(refused(create_off).contains("invalid unsupported"));
        let partial_checkpoint = acme("").replace("suspend = \"acme_has_no_checkpoints\"\n", "");
        assert!(refused(partial_checkpoint).contains("invalid unsupported"));
        let no_adapter = acme("").replace("initial =", "decode-input = \"none\"\ninitial =");
        assert!(refused(no_adapter).contains("invalid unsupported"));
        let suspension =
            acme("suspension = { idle_suspend_seconds = 60, retention_seconds = 3600 }");
        assert!(refused(suspension).contains("invalid suspension"));
        let mode = acme("").replace("\"direct\"", "\"sideways\"");
        let message = refused(mode);
        assert!(
            message.contains("mode") && !message.contains("sideways"),
            "{message}"
        );
    }

    #[test]
    fn node_artifacts_are_typed_and_safe() {
        let with = |artifact: &str| {
            let text = acme("").replace("\"direct\"", "\"nodes\"").replace(
                "credential_fields = [\"api_key\"]\n",
                &format!("credential_fields = []\nnode_artifacts = [{artifact}]\n"),
            );
            let text = text.replace(
                "[kinds.acme.grants]\nhttp_origins = [\"https://api.acme.example\"]\ncredential_origins = [\"https://api.acme.example\"]\nreceipts = true\n",
                "",
            );
            parse_file(&text).map(|_| ()).map_err(|e| e.to_string())
        };
        assert_eq!(
            with(r#"{ path = "bin/helper.tar", suffix = ".tar", role = "node" }"#),
            Ok(())
        );
        for bad in [
            r#"{ path = "../helper.tar", suffix = ".tar", role = "node" }"#,
            r#"{ path = "/etc/helper.tar", suffix = ".tar", role = "node" }"#,
            r#"{ path = "bin/helper.tar", suffix = ".json", role = "node" }"#,
            r#"{ path = ".tar", suffix = ".tar", role = "node" }"#,
        ] {
            assert!(
                with(bad).expect_err(bad).contains("node_artifacts"),
                "{bad}"
            );
        }
        assert!(with(r#"{ path = "a.tar", suffix = ".tar", role = "daemon" }"#).is_err());
    }
}
