//! The registry: which provider kinds exist, where their components are,
//! what each may reach and what it declares. One explicit table from two
//! sources, the rows compiled in ([`builtin`]) and an operator's registry
//! file ([`file`]); nothing is discovered and no component registers
//! itself. Every row is validated ([`validate`]) before anything is
//! compiled or called.
//!
//! It lives here, with no WebAssembly runtime, because both sides read it:
//! the node loads components from it, and Core's side (the proxy) takes
//! each kind's mode, grants and declaration from its own copy, never from a
//! node. The two agree when their [`Registry::digest`]s do.

pub mod builtin;
pub mod file;
pub mod validate;

pub use builtin::builtin;
pub use file::{RegistryFileError, decode_toml, parse_file};
pub use validate::{RegistrationError, parse_origin, validate_registration, validate_table};

use crate::declaration::{Decision, Declaration};
use oac_contract::Operation;
use std::collections::BTreeMap;

/// How Core reaches the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Runs on operator nodes, served by `sandbox-host serve`.
    Nodes,
    /// Calls a vendor API directly from the host.
    Direct,
}

/// Where the expected SHA-256 of a component comes from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DigestSource {
    /// The `<file>.sha256` that `cargo xtask build-plugins` stages beside
    /// it (rows compiled in with the components built beside them).
    Staged,
    /// A digest pinned in the table (64 lowercase hex digits): every row
    /// of an operator's registry file.
    Pinned(String),
}

/// The capabilities a kind's component may use; everything else is denied.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// The Docker Engine capability (node kinds only).
    #[serde(default)]
    pub docker: bool,
    /// Origins (`scheme://host[:port]`) the HTTP capability may reach.
    #[serde(default)]
    pub http_origins: Vec<String>,
    /// Which of `http_origins` receive the credential (in the header the
    /// component names): exact origins, never a pattern. A request for the
    /// credential to any other origin is refused before it is sent.
    #[serde(default)]
    pub credential_origins: Vec<String>,
    /// The durable receipt store (the binding supplies it). A kind granted
    /// it also keeps the host's settlement records, so its GetInfo, Renew
    /// and Kill may claim settlement on them, in process and through a node.
    #[serde(default)]
    pub receipts: bool,
    /// microVMs through the host's microsandbox helper (node kinds only;
    /// the node supplies the helper, the runtime and the VM policy).
    #[serde(default)]
    pub microsandbox: bool,
    /// HTTP origins the kind's configuration names.
    #[serde(default)]
    pub http_endpoint: Option<EndpointGrant>,
}

/// HTTP origins named by a kind's configuration (a vendor API and the
/// domain its sandboxes are served under), resolved once per kind at load
/// under [`oac_contract::endpoint`]'s rule. The API origin and every
/// `https://` host within the domain (default port) are allowed; only the
/// API origin receives the credential (a host within the domain may be
/// anyone's: E2B serves every sandbox's ports there).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointGrant {
    /// Configuration key of the API URL, e.g. `api_url`.
    pub api_url_key: String,
    /// Configuration key of the domain, e.g. `domain`.
    pub domain_key: String,
    /// The API URL when the configuration gives neither.
    pub default_api_url: String,
    /// The domain when the configuration gives neither.
    pub default_domain: String,
}

impl EndpointGrant {
    /// The endpoint `configuration` names, or the defaults: `(api_url,
    /// domain)`. A key that is present but not a string is refused.
    pub fn resolve(
        &self,
        configuration: &serde_json::Value,
    ) -> Result<(String, String), oac_contract::endpoint::EndpointError> {
        use oac_contract::endpoint::EndpointError;
        let text = |key: &str, error| match configuration.get(key) {
            None | Some(serde_json::Value::Null) => Ok(""),
            Some(serde_json::Value::String(text)) => Ok(text.as_str()),
            Some(_) => Err(error),
        };
        let api_url = text(&self.api_url_key, EndpointError::ApiUrl)?;
        let domain = text(&self.domain_key, EndpointError::Domain)?;
        let (api_url, domain) = oac_contract::endpoint::resolve(
            api_url,
            domain,
            &self.default_api_url,
            &self.default_domain,
        )?;
        Ok((api_url.to_string(), domain.to_string()))
    }
}

/// Requests one call may hold open at once, by default.
pub const DEFAULT_OPEN_REQUESTS_PER_CALL: u32 = 64;
/// Requests all calls of one kind may hold open at once, by default.
pub const DEFAULT_OPEN_REQUESTS_PER_KIND: u32 = 1024;

/// Resource bounds for every call of the kind.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Budget used when a caller gives none, in milliseconds.
    pub default_budget_ms: u32,
    /// Linear-memory limit of one instance, in bytes.
    pub max_memory_bytes: usize,
    /// Operations of this kind allowed in flight at once.
    pub max_concurrent_calls: u32,
    /// Guest CPU time one call may use, in milliseconds, whatever its
    /// budget: a component spinning in a long budget ends here (time it
    /// waits on native requests does not count).
    pub max_guest_cpu_ms: u32,
    /// HTTP requests one call may hold open at once (sent or being sent,
    /// until its response body is read or dropped); beyond it a request is
    /// refused before it is sent.
    pub max_open_requests_per_call: u32,
    /// HTTP requests all calls of the kind may hold open at once.
    pub max_open_requests_per_kind: u32,
    /// The volumes an allocation may have, by role (kinds granted Docker):
    /// each is created only under the host's name `<container>-<role>`, so
    /// this bounds the volumes per allocation, as the one container name
    /// bounds its containers to one.
    pub volume_roles: Vec<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            default_budget_ms: 30_000,
            max_memory_bytes: 64 << 20,
            max_concurrent_calls: 64,
            max_guest_cpu_ms: 10_000,
            max_open_requests_per_call: DEFAULT_OPEN_REQUESTS_PER_CALL,
            max_open_requests_per_kind: DEFAULT_OPEN_REQUESTS_PER_KIND,
            volume_roles: vec!["home".into(), "environment".into()],
        }
    }
}

/// Defaults for checkpointing kinds: required exactly when the component
/// declares the checkpoint interface supported.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuspensionDefaults {
    /// Idle time after which Core may suspend, in seconds (1..=30 days).
    pub idle_suspend_seconds: u32,
    /// How long a suspended allocation's snapshot is kept, in seconds (at
    /// least the idle time, at most a year).
    pub retention_seconds: u32,
}

/// What a node artifact is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArtifactRole {
    /// Something the node itself runs or reads (e.g. a helper binary).
    Node,
    /// What runs inside an allocation (e.g. the runtime daemon).
    Runtime,
    /// An isolation policy (e.g. a seccomp profile).
    Policy,
    /// An image allocations start from.
    Image,
}

/// A file a node must have for the kind: where it is (relative to the
/// node's artifact directory), its suffix and what it is for.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeArtifact {
    /// Logical path: relative, `/`-separated, no `.` or `..` component.
    pub path: String,
    /// The file's suffix (e.g. `.json`, `.tar`), which `path` ends with.
    pub suffix: String,
    /// What it is for.
    pub role: ArtifactRole,
}

/// One row of the registry table.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Registration {
    /// Kind name, `^[a-z][a-z0-9-]{0,31}$`.
    pub kind: String,
    /// How Core reaches it.
    pub mode: Mode,
    /// Component file name, relative to the plugin directory.
    pub component: String,
    /// Where the expected digest comes from.
    pub digest: DigestSource,
    /// The credential's shape: the string fields of its JSON object
    /// (e.g. `api_key`). Empty means the kind takes no credential. The
    /// host checks every credential against it and hands configuration
    /// calls only field names and lengths.
    pub credential_fields: Vec<String>,
    /// Capability grants.
    pub grants: Grants,
    /// Call bounds.
    pub policy: Policy,
    /// Files a node needs for the kind.
    pub node_artifacts: Vec<NodeArtifact>,
    /// Suspension defaults, for kinds that declare checkpoints.
    pub suspension: Option<SuspensionDefaults>,
    /// The component's operation declaration, pinned: operation name →
    /// reason for each operation it declares unsupported; every other
    /// operation it has is supported. Core knows a kind's declaration from
    /// this without loading Wasm, and the host refuses a component that
    /// declares anything else. `None` (rows built in code by tests and the
    /// contract suite only) takes the component's own.
    pub unsupported: Option<BTreeMap<String, String>>,
}

impl Registration {
    /// The pinned decision for `operation`, if the row pins its declaration.
    pub fn pinned(&self, operation: Operation) -> Option<Decision> {
        let unsupported = self.unsupported.as_ref()?;
        Some(match unsupported.get(operation.name()) {
            Some(reason) => Decision::Unsupported(reason.clone()),
            None => Decision::Supported,
        })
    }

    /// Whether `declaration` (a component's, validated against its
    /// inventory) is the one this row pins; true when it pins none.
    pub fn pins(&self, declaration: &Declaration) -> bool {
        let Some(unsupported) = &self.unsupported else {
            return true;
        };
        let declared_unsupported: BTreeMap<&str, &str> = declaration
            .0
            .iter()
            .filter_map(|(operation, decision)| match decision {
                Decision::Unsupported(reason) => Some((operation.name(), reason.as_str())),
                Decision::Supported => None,
            })
            .collect();
        let pinned: BTreeMap<&str, &str> = unsupported
            .iter()
            .map(|(operation, reason)| (operation.as_str(), reason.as_str()))
            .collect();
        declared_unsupported == pinned
    }

    /// Whether a later GetInfo, Renew or Kill of this kind may rest a
    /// settlement claim on the host's own record: the host keeps records
    /// only for kinds it gives a durable store.
    pub fn keeps_settlement_records(&self) -> bool {
        self.grants.receipts
    }
}

/// A validated table: the rows compiled in and an operator's rows, each
/// kind once. Its [`digest`](Self::digest) is its identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registry {
    rows: Vec<Registration>,
}

impl Registry {
    /// The built-in rows alone.
    pub fn builtin() -> Self {
        Self { rows: builtin() }
    }

    /// The built-in rows and those of the operator's file at `path`.
    pub fn with_file(path: &std::path::Path) -> Result<Self, RegistryFileError> {
        Self::extended(builtin(), Some(path))
    }

    /// `base` (the built-in rows, or a test's) and the rows of the
    /// operator's file at `path`, if any.
    pub fn extended(
        base: Vec<Registration>,
        path: Option<&std::path::Path>,
    ) -> Result<Self, RegistryFileError> {
        let Some(path) = path else {
            return Ok(Self::of(base)?);
        };
        let text = std::fs::read_to_string(path).map_err(|error| RegistryFileError::Read {
            path: path.to_path_buf(),
            error: error.kind(),
        })?;
        Self::beside(base, parse_file(&text)?)
    }

    /// `base` and `operator` rows: refused if any row is invalid or an
    /// operator row names a kind of `base`.
    fn beside(
        mut rows: Vec<Registration>,
        operator: Vec<Registration>,
    ) -> Result<Self, RegistryFileError> {
        for row in operator {
            if rows.iter().any(|known| known.kind == row.kind) {
                return Err(RegistryFileError::Shadows(row.kind));
            }
            rows.push(row);
        }
        validate_table(&rows)?;
        Ok(Self { rows })
    }

    /// A table of exactly `rows` (tests and the contract suite build
    /// their own), validated.
    pub fn of(rows: Vec<Registration>) -> Result<Self, RegistrationError> {
        validate_table(&rows)?;
        Ok(Self { rows })
    }

    /// Every row, in table order (owned).
    pub fn into_rows(self) -> Vec<Registration> {
        self.rows
    }

    /// Every row, in table order.
    pub fn rows(&self) -> &[Registration] {
        &self.rows
    }

    /// The row of `kind`.
    pub fn get(&self, kind: &str) -> Option<&Registration> {
        self.rows.iter().find(|row| row.kind == kind)
    }

    /// The kinds, in table order.
    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.rows.iter().map(|row| row.kind.as_str())
    }

    /// The table's identity: `sha256:` and the hex SHA-256 of the
    /// canonical JSON of every row (sorted by kind, object keys sorted, no
    /// whitespace). Two sides with the same digest hold the same rows.
    pub fn digest(&self) -> String {
        use sha2::Digest as _;
        let mut rows: Vec<&Registration> = self.rows.iter().collect();
        rows.sort_by(|a, b| a.kind.cmp(&b.kind));
        let value = serde_json::to_value(&rows).unwrap_or_default();
        let canonical = canonical_json(&value);
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(canonical)))
    }
}

/// `value` as JSON text with every object's keys sorted and no whitespace,
/// whatever map order serde_json was built with.
fn canonical_json(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|key| {
                    format!(
                        "{}:{}",
                        serde_json::Value::String(key.clone()),
                        canonical_json(&map[key])
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        serde_json::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", items.join(","))
        }
        scalar => scalar.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_canonical_and_covers_every_field() {
        let registry = Registry::builtin();
        let mut reordered = registry.rows().to_vec();
        reordered.reverse();
        assert_eq!(
            Registry::of(reordered).expect("valid").digest(),
            registry.digest()
        );
        let mut changed = registry.rows().to_vec();
        changed[0].policy.max_concurrent_calls += 1;
        assert_ne!(
            Registry::of(changed).expect("valid").digest(),
            registry.digest()
        );
        assert!(registry.digest().starts_with("sha256:"));
        assert_eq!(
            canonical_json(&serde_json::json!({"b": [1, {"d": 2, "c": "x"}], "a": null})),
            r#"{"a":null,"b":[1,{"c":"x","d":2}]}"#
        );
    }

    #[test]
    fn an_operator_row_never_shadows_a_builtin_kind() {
        let docker = Registry::builtin().get("docker").expect("docker").clone();
        assert!(matches!(
            Registry::beside(builtin(), vec![docker]),
            Err(RegistryFileError::Shadows(kind)) if kind == "docker"
        ));
    }
}
