//! The fixed registry: which provider kinds exist, where their components
//! are, what each may reach. There is no discovery: a kind exists only if it
//! is in [`builtin`], and every registration is validated before anything is
//! compiled or called.

use std::path::Path;

/// How Core reaches the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
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
    /// The `<file>.sha256` that `cargo xtask build-plugins` stages beside it.
    Staged,
    /// A digest pinned in the table (64 lowercase hex digits).
    Pinned(String),
}

pub use crate::capability::Grants;
pub use crate::capability::http::EndpointGrant;

/// Resource bounds for every call of the kind.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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
            max_open_requests_per_call: crate::capability::http::MAX_OPEN_REQUESTS_PER_CALL as u32,
            max_open_requests_per_kind: crate::capability::http::MAX_OPEN_REQUESTS_PER_KIND as u32,
            volume_roles: vec!["home".into(), "environment".into()],
        }
    }
}

/// Defaults for checkpointing kinds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SuspensionDefaults {
    /// Idle time after which Core may suspend, in seconds.
    pub idle_suspend_seconds: u32,
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
    /// Artifacts a node needs (e.g. the runtime image), by name.
    pub node_artifacts: Vec<String>,
    /// Suspension defaults, for kinds that may checkpoint.
    pub suspension: Option<SuspensionDefaults>,
}

/// The registry table compiled into this host. Adding a kind means adding a
/// row here, nowhere else.
pub fn builtin() -> Vec<Registration> {
    vec![
        Registration {
            // One hardened container and two labelled volumes per allocation.
            kind: "docker".into(),
            mode: Mode::Nodes,
            component: "docker.wasm".into(),
            digest: DigestSource::Staged,
            credential_fields: Vec::new(),
            grants: Grants {
                docker: true,
                http_origins: Vec::new(),
                credential_origins: Vec::new(),
                receipts: false,
                http_endpoint: None,
            },
            policy: Policy {
                default_budget_ms: 60_000,
                ..Policy::default()
            },
            node_artifacts: vec!["runtime-image".into(), "seccomp.json".into()],
            suspension: None,
        },
        Registration {
            // The host's self-test component: exercises every capability and
            // rule, and is what `validate`/`call` use until real adapters land.
            kind: "steerable".into(),
            mode: Mode::Nodes,
            component: "steerable.wasm".into(),
            digest: DigestSource::Staged,
            credential_fields: Vec::new(),
            grants: Grants {
                docker: true,
                http_origins: Vec::new(),
                credential_origins: Vec::new(),
                receipts: false,
                http_endpoint: None,
            },
            policy: Policy::default(),
            node_artifacts: Vec::new(),
            suspension: None,
        },
        Registration {
            // E2B sandboxes over E2B's REST API and envd, from Core's side:
            // the API origin and envd hosts come from the configuration's
            // endpoint; receipts prove settlement across restarts.
            kind: "e2b".into(),
            mode: Mode::Direct,
            component: "e2b.wasm".into(),
            digest: DigestSource::Staged,
            credential_fields: vec!["api_key".into()],
            grants: Grants {
                docker: false,
                http_origins: Vec::new(),
                credential_origins: Vec::new(),
                receipts: true,
                http_endpoint: Some(EndpointGrant {
                    api_url_key: "api_url".into(),
                    domain_key: "domain".into(),
                    default_api_url: "https://api.e2b.app".into(),
                    default_domain: "e2b.app".into(),
                }),
            },
            policy: Policy {
                default_budget_ms: 60_000,
                ..Policy::default()
            },
            node_artifacts: Vec::new(),
            suspension: None,
        },
        Registration {
            // The self-test component as a direct kind: what runs on Core's
            // side, with durable receipts.
            kind: "steerable-direct".into(),
            mode: Mode::Direct,
            component: "steerable.wasm".into(),
            digest: DigestSource::Staged,
            credential_fields: vec!["api_key".into()],
            grants: Grants {
                docker: false,
                http_origins: Vec::new(),
                credential_origins: Vec::new(),
                receipts: true,
                http_endpoint: None,
            },
            policy: Policy::default(),
            node_artifacts: Vec::new(),
            suspension: None,
        },
    ]
}

/// A registration or binding that must not be loaded. It names the field,
/// never its value, so no configuration is echoed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistrationError {
    /// The kind name is malformed.
    #[error("registration has an invalid kind name")]
    InvalidKind,
    /// Two rows name the same kind.
    #[error("kind `{0}` is registered twice")]
    DuplicateKind(String),
    /// A field of a valid-named kind is invalid.
    #[error("kind `{kind}`: invalid {field}")]
    InvalidField {
        /// The kind.
        kind: String,
        /// The field, e.g. `component`, `grants.docker`.
        field: &'static str,
    },
}

impl Registration {
    /// `Err` naming `field` of this kind as invalid (never its value).
    pub(crate) fn invalid<T>(&self, field: &'static str) -> Result<T, RegistrationError> {
        Err(RegistrationError::InvalidField {
            kind: self.kind.clone(),
            field,
        })
    }
}

fn is_kind_name(kind: &str) -> bool {
    oac_contract::is_lowercase_name(kind, 32, Some(b'-'))
}

fn is_component_file(name: &str) -> bool {
    let path = Path::new(name);
    name.ends_with(".wasm")
        && path.components().count() == 1
        && matches!(
            path.components().next(),
            Some(std::path::Component::Normal(_))
        )
}

fn is_sha256_hex(digest: &str) -> bool {
    digest.len() == 64
        && digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks one row before any component is read, compiled or called.
pub fn validate_registration(registration: &Registration) -> Result<(), RegistrationError> {
    if !is_kind_name(&registration.kind) {
        return Err(RegistrationError::InvalidKind);
    }
    let invalid = |field| registration.invalid(field);
    if !is_component_file(&registration.component) {
        return invalid("component");
    }
    if let DigestSource::Pinned(digest) = &registration.digest
        && !is_sha256_hex(digest)
    {
        return invalid("digest");
    }
    if !crate::credential::is_shape(&registration.credential_fields) {
        return invalid("credential_fields");
    }
    if registration.grants.docker && registration.mode != Mode::Nodes {
        return invalid("grants.docker");
    }
    if registration
        .grants
        .http_origins
        .iter()
        .any(|origin| crate::capability::http::parse_origin(origin).is_none())
    {
        return invalid("grants.http_origins");
    }
    if registration
        .grants
        .credential_origins
        .iter()
        .any(|origin| !registration.grants.http_origins.contains(origin))
    {
        return invalid("grants.credential_origins");
    }
    if let Some(endpoint) = &registration.grants.http_endpoint
        && endpoint.resolve(&serde_json::json!({})).is_err()
    {
        return invalid("grants.http_endpoint");
    }
    let policy = &registration.policy;
    if crate::Budget::from_millis(policy.default_budget_ms).is_err() {
        return invalid("policy.default_budget_ms");
    }
    if !(1 << 20..=4 << 30).contains(&policy.max_memory_bytes) {
        return invalid("policy.max_memory_bytes");
    }
    if !(1..=1024).contains(&policy.max_concurrent_calls) {
        return invalid("policy.max_concurrent_calls");
    }
    if !(1..=oac_contract::bounds::MAX_BUDGET_MS).contains(&policy.max_guest_cpu_ms) {
        return invalid("policy.max_guest_cpu_ms");
    }
    let per_call = policy.max_open_requests_per_call;
    if !(1..=4096).contains(&per_call) {
        return invalid("policy.max_open_requests_per_call");
    }
    if !(per_call..=16_384).contains(&policy.max_open_requests_per_kind) {
        return invalid("policy.max_open_requests_per_kind");
    }
    let roles: std::collections::BTreeSet<&str> =
        policy.volume_roles.iter().map(String::as_str).collect();
    if policy.volume_roles.len() > 8
        || roles.len() != policy.volume_roles.len()
        || !roles
            .iter()
            .all(|role| crate::capability::docker::names::is_volume_role(role))
    {
        return invalid("policy.volume_roles");
    }
    let artifacts_ok = registration
        .node_artifacts
        .iter()
        .all(|artifact| !artifact.trim().is_empty());
    if !artifacts_ok
        || (registration.mode == Mode::Direct && !registration.node_artifacts.is_empty())
    {
        return invalid("node_artifacts");
    }
    match &registration.suspension {
        Some(_) if registration.mode != Mode::Nodes => invalid("suspension"),
        Some(defaults) if defaults.idle_suspend_seconds == 0 => invalid("suspension"),
        _ => Ok(()),
    }
}

/// Checks a whole table: every row, and no kind twice.
pub fn validate_table(table: &[Registration]) -> Result<(), RegistrationError> {
    let mut seen = std::collections::BTreeSet::new();
    for registration in table {
        validate_registration(registration)?;
        if !seen.insert(registration.kind.as_str()) {
            return Err(RegistrationError::DuplicateKind(registration.kind.clone()));
        }
    }
    Ok(())
}

/// The builtin row of the steerable test component (unit tests).
#[cfg(test)]
pub(crate) fn steerable_row() -> Registration {
    builtin()
        .into_iter()
        .find(|row| row.kind == "steerable")
        .expect("steerable row")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Registration {
        steerable_row()
    }

    fn field_error(registration: &Registration) -> Option<&'static str> {
        match validate_registration(registration) {
            Err(RegistrationError::InvalidField { field, .. }) => Some(field),
            _ => None,
        }
    }

    #[test]
    fn an_endpoint_grant_resolves_the_configuration_or_its_defaults() {
        let grant = EndpointGrant {
            api_url_key: "api_url".into(),
            domain_key: "domain".into(),
            default_api_url: "https://api.e2b.app".into(),
            default_domain: "e2b.app".into(),
        };
        let resolved = |configuration| grant.resolve(&configuration).map_err(|e| e.field());
        assert_eq!(
            resolved(serde_json::json!({"template": "t"})),
            Ok(("https://api.e2b.app".into(), "e2b.app".into()))
        );
        assert_eq!(
            resolved(serde_json::json!({"api_url": "https://api.x.dev", "domain": "x.dev"})),
            Ok(("https://api.x.dev".into(), "x.dev".into()))
        );
        assert_eq!(
            resolved(serde_json::json!({"api_url": "https://api.x.dev"})),
            Err("api_url and domain")
        );
        assert_eq!(
            resolved(serde_json::json!({"api_url": 7, "domain": "x.dev"})),
            Err("api_url")
        );
        let bad_default = Registration {
            mode: Mode::Direct,
            grants: Grants {
                docker: false,
                http_origins: Vec::new(),
                credential_origins: Vec::new(),
                receipts: false,
                http_endpoint: Some(EndpointGrant {
                    default_domain: "localhost".into(),
                    ..grant.clone()
                }),
            },
            ..row()
        };
        assert_eq!(field_error(&bad_default), Some("grants.http_endpoint"));
    }

    #[test]
    fn builtin_table_is_valid() {
        assert_eq!(validate_table(&builtin()), Ok(()));
    }

    #[test]
    fn malformed_kind_names_are_rejected() {
        for kind in ["", "Docker", "1docker", "dock_er", &"a".repeat(33), "../x"] {
            let registration = Registration {
                kind: kind.into(),
                ..row()
            };
            assert_eq!(
                validate_registration(&registration),
                Err(RegistrationError::InvalidKind),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn each_malformed_field_is_named() {
        let cases: Vec<(Registration, &str)> = vec![
            (
                Registration {
                    component: "../steerable.wasm".into(),
                    ..row()
                },
                "component",
            ),
            (
                Registration {
                    component: "/abs/steerable.wasm".into(),
                    ..row()
                },
                "component",
            ),
            (
                Registration {
                    component: "steerable.so".into(),
                    ..row()
                },
                "component",
            ),
            (
                Registration {
                    digest: DigestSource::Pinned("abc".into()),
                    ..row()
                },
                "digest",
            ),
            (
                Registration {
                    digest: DigestSource::Pinned("A".repeat(64)),
                    ..row()
                },
                "digest",
            ),
            (
                Registration {
                    mode: Mode::Direct,
                    ..row()
                },
                "grants.docker",
            ),
            (
                Registration {
                    grants: Grants {
                        docker: true,
                        http_origins: vec!["http://vendor.example".into()],
                        credential_origins: Vec::new(),
                        receipts: false,
                        http_endpoint: None,
                    },
                    ..row()
                },
                "grants.http_origins",
            ),
            (
                Registration {
                    grants: Grants {
                        docker: true,
                        http_origins: vec!["https://vendor.example/path".into()],
                        credential_origins: Vec::new(),
                        receipts: false,
                        http_endpoint: None,
                    },
                    ..row()
                },
                "grants.http_origins",
            ),
            (
                Registration {
                    grants: Grants {
                        docker: true,
                        http_origins: vec!["https://api.vendor.example".into()],
                        credential_origins: vec!["https://files.vendor.example".into()],
                        receipts: false,
                        http_endpoint: None,
                    },
                    ..row()
                },
                "grants.credential_origins",
            ),
            (
                Registration {
                    policy: Policy {
                        default_budget_ms: 0,
                        ..Policy::default()
                    },
                    ..row()
                },
                "policy.default_budget_ms",
            ),
            (
                Registration {
                    policy: Policy {
                        default_budget_ms: 120_001,
                        ..Policy::default()
                    },
                    ..row()
                },
                "policy.default_budget_ms",
            ),
            (
                Registration {
                    policy: Policy {
                        max_memory_bytes: 1024,
                        ..Policy::default()
                    },
                    ..row()
                },
                "policy.max_memory_bytes",
            ),
            (
                Registration {
                    policy: Policy {
                        max_concurrent_calls: 0,
                        ..Policy::default()
                    },
                    ..row()
                },
                "policy.max_concurrent_calls",
            ),
            (
                Registration {
                    policy: Policy {
                        max_guest_cpu_ms: 0,
                        ..Policy::default()
                    },
                    ..row()
                },
                "policy.max_guest_cpu_ms",
            ),
            (
                Registration {
                    policy: Policy {
                        max_open_requests_per_call: 0,
                        ..Policy::default()
                    },
                    ..row()
                },
                "policy.max_open_requests_per_call",
            ),
            (
                Registration {
                    policy: Policy {
                        max_open_requests_per_call: 64,
                        max_open_requests_per_kind: 8,
                        ..Policy::default()
                    },
                    ..row()
                },
                "policy.max_open_requests_per_kind",
            ),
            (
                Registration {
                    policy: Policy {
                        volume_roles: vec!["home".into(), "home".into()],
                        ..Policy::default()
                    },
                    ..row()
                },
                "policy.volume_roles",
            ),
            (
                Registration {
                    policy: Policy {
                        volume_roles: vec!["../etc".into()],
                        ..Policy::default()
                    },
                    ..row()
                },
                "policy.volume_roles",
            ),
            (
                Registration {
                    credential_fields: vec!["api_key".into(), "api_key".into()],
                    ..row()
                },
                "credential_fields",
            ),
            (
                Registration {
                    node_artifacts: vec![" ".into()],
                    ..row()
                },
                "node_artifacts",
            ),
            (
                Registration {
                    suspension: Some(SuspensionDefaults {
                        idle_suspend_seconds: 0,
                    }),
                    ..row()
                },
                "suspension",
            ),
            (
                Registration {
                    mode: Mode::Direct,
                    grants: Grants::default(),
                    suspension: Some(SuspensionDefaults {
                        idle_suspend_seconds: 60,
                    }),
                    ..row()
                },
                "suspension",
            ),
        ];
        for (registration, field) in cases {
            assert_eq!(field_error(&registration), Some(field), "{registration:?}");
        }
    }

    #[test]
    fn allowed_origins_are_https_or_loopback_http() {
        assert!(crate::capability::http::parse_origin("https://api.e2b.dev").is_some());
        assert!(crate::capability::http::parse_origin("https://api.e2b.dev:8443").is_some());
        assert!(crate::capability::http::parse_origin("http://127.0.0.1:9000").is_some());
        assert!(crate::capability::http::parse_origin("https://api.e2b.dev/").is_none());
        assert!(crate::capability::http::parse_origin("https://user@api.e2b.dev").is_none());
        assert!(crate::capability::http::parse_origin("ftp://api.e2b.dev").is_none());
    }

    #[test]
    fn duplicate_kinds_are_rejected() {
        assert_eq!(
            validate_table(&[row(), row()]),
            Err(RegistrationError::DuplicateKind("steerable".into()))
        );
    }
}
