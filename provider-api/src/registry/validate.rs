//! The registration check: every row, built in or an operator's, before any
//! component is read, compiled or called. Errors name the kind and the
//! field, never a value, so no configuration is echoed.

use super::{DigestSource, Mode, NodeArtifact, Registration};
use crate::declaration::{self, Decision, Declaration, Inventory};
use oac_contract::{Interface, Operation};
use std::collections::BTreeSet;
use std::path::{Component, Path};

/// A registration that must not be loaded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistrationError {
    /// The kind name is malformed.
    #[error("registration has an invalid kind name")]
    InvalidKind,
    /// Two rows name the same kind.
    #[error("kind `{0}` is registered twice")]
    DuplicateKind(String),
    /// A node gives a kind less than its grants need.
    #[error("kind `{kind}` needs {what}")]
    Missing {
        /// The kind.
        kind: String,
        /// What it needs and where it is given.
        what: &'static str,
    },
    /// The credential a node gives a kind does not fit the kind's shape.
    #[error("kind `{kind}`: {path} {why}")]
    Credential {
        /// The kind.
        kind: String,
        /// The key path at fault, e.g. `credential.api_key`.
        path: String,
        /// What is wrong with it (never its value).
        why: &'static str,
    },
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
    pub fn invalid<T>(&self, field: &'static str) -> Result<T, RegistrationError> {
        Err(RegistrationError::InvalidField {
            kind: self.kind.clone(),
            field,
        })
    }

    /// The declaration the row pins, over every operation of the contract,
    /// checked by the declaration rules; `None` when it pins none.
    pub fn pinned_declaration(&self) -> Option<Result<Declaration, declaration::DeclarationError>> {
        let unsupported = self.unsupported.as_ref()?;
        if unsupported
            .keys()
            .any(|name| Operation::from_name(name).is_none())
        {
            return Some(Err(declaration::DeclarationError::Unknown));
        }
        let entries: Vec<(String, Decision)> = Operation::ALL
            .iter()
            .map(|operation| {
                let decision = self.pinned(*operation).unwrap_or(Decision::Supported);
                (operation.name().to_string(), decision)
            })
            .collect();
        Some(declaration::validate_declaration(
            &Inventory(Operation::ALL.to_vec()),
            &entries,
        ))
    }
}

/// Whether every kind supports `operation`: the configuration adapter is
/// mandatory, and only credential replacement and configuration discovery
/// may be unsupported.
fn configuration_required(operation: Operation) -> bool {
    operation.interface() == Interface::ConfigurationAdapter
        && !matches!(
            operation,
            Operation::WithCredential | Operation::DiscoverConfiguration
        )
}

fn is_kind_name(kind: &str) -> bool {
    oac_contract::is_lowercase_name(kind, 32, Some(b'-'))
}

fn is_component_file(name: &str) -> bool {
    let path = Path::new(name);
    name.ends_with(".wasm")
        && path.components().count() == 1
        && matches!(path.components().next(), Some(Component::Normal(_)))
}

/// 64 lowercase hex digits.
pub fn is_sha256_hex(digest: &str) -> bool {
    digest.len() == 64
        && digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Most fields a credential may declare.
pub const MAX_CREDENTIAL_FIELDS: usize = 8;

/// Whether `name` may name a credential field: `[a-z][a-z0-9_]{0,63}`.
pub fn is_credential_field(name: &str) -> bool {
    oac_contract::is_lowercase_name(name, 64, Some(b'_'))
}

/// Whether `fields` is a credential shape a registration may declare: at
/// most [`MAX_CREDENTIAL_FIELDS`] well-formed names, none twice. Empty
/// means the kind takes no credential.
pub fn is_credential_shape(fields: &[String]) -> bool {
    let unique: BTreeSet<&str> = fields.iter().map(String::as_str).collect();
    fields.len() <= MAX_CREDENTIAL_FIELDS
        && unique.len() == fields.len()
        && fields.iter().all(|f| is_credential_field(f))
}

/// Whether `role` may name a volume role: `[a-z][a-z0-9]{0,15}`.
pub fn is_volume_role(role: &str) -> bool {
    oac_contract::is_lowercase_name(role, 16, None)
}

/// An origin the HTTP capability may be granted: `https://host[:port]`, or
/// `http://` to a loopback host (test fixtures), with no path, query or user.
pub fn parse_origin(origin: &str) -> Option<url::Url> {
    let url = url::Url::parse(origin).ok()?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && loopback);
    let bare = url.path() == "/"
        && url.query().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    (scheme_ok && bare && url.host_str().is_some() && !origin.ends_with('/')).then_some(url)
}

/// A node artifact's logical path is relative, `/`-separated, made of
/// plain names (`[A-Za-z0-9._-]`, not `.` or `..`), and ends with its
/// suffix (`.` and 1 to 16 lowercase letters or digits).
fn is_node_artifact(artifact: &NodeArtifact) -> bool {
    let plain = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    };
    let suffix_ok = artifact.suffix.strip_prefix('.').is_some_and(|rest| {
        (1..=16).contains(&rest.len())
            && rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    artifact.path.len() <= 256
        && artifact.path.split('/').all(plain)
        && suffix_ok
        && artifact.path.len() > artifact.suffix.len()
        && artifact.path.ends_with(&artifact.suffix)
}

/// Longest idle time before suspension, and longest retention.
const MAX_IDLE_SECONDS: u32 = 30 * 24 * 3600;
const MAX_RETENTION_SECONDS: u32 = 365 * 24 * 3600;

/// Checks one row.
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
    if !is_credential_shape(&registration.credential_fields) {
        return invalid("credential_fields");
    }
    let grants = &registration.grants;
    if grants.docker && registration.mode != Mode::Nodes {
        return invalid("grants.docker");
    }
    if grants.microsandbox && registration.mode != Mode::Nodes {
        return invalid("grants.microsandbox");
    }
    if grants
        .http_origins
        .iter()
        .any(|origin| parse_origin(origin).is_none())
    {
        return invalid("grants.http_origins");
    }
    if grants
        .credential_origins
        .iter()
        .any(|origin| !grants.http_origins.contains(origin))
    {
        return invalid("grants.credential_origins");
    }
    if let Some(endpoint) = &grants.http_endpoint
        && endpoint.resolve(&serde_json::json!({})).is_err()
    {
        return invalid("grants.http_endpoint");
    }
    validate_policy(registration)?;
    if !registration.node_artifacts.iter().all(is_node_artifact)
        || (registration.mode == Mode::Direct && !registration.node_artifacts.is_empty())
    {
        return invalid("node_artifacts");
    }
    let checkpoints = match registration.pinned_declaration() {
        Some(Err(_)) => return invalid("unsupported"),
        Some(Ok(declaration)) => {
            if Operation::ALL.into_iter().any(|operation| {
                configuration_required(operation) && !declaration.supports(operation)
            }) {
                return invalid("unsupported");
            }
            Some(declaration.supports_checkpoint())
        }
        None => None,
    };
    validate_suspension(registration, checkpoints)
}

fn validate_policy(registration: &Registration) -> Result<(), RegistrationError> {
    let invalid = |field| registration.invalid(field);
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
    let roles: BTreeSet<&str> = policy.volume_roles.iter().map(String::as_str).collect();
    if policy.volume_roles.len() > 8
        || roles.len() != policy.volume_roles.len()
        || !roles.iter().all(|role| is_volume_role(role))
    {
        return invalid("policy.volume_roles");
    }
    Ok(())
}

/// Suspension defaults: bounded, for node kinds only, and (when the row
/// pins its declaration) present exactly when checkpoints are declared.
fn validate_suspension(
    registration: &Registration,
    checkpoints: Option<bool>,
) -> Result<(), RegistrationError> {
    let invalid = || registration.invalid("suspension");
    match (&registration.suspension, checkpoints) {
        (Some(_), _) if registration.mode != Mode::Nodes => invalid(),
        (Some(_), Some(false)) | (None, Some(true)) => invalid(),
        (Some(defaults), _)
            if !(1..=MAX_IDLE_SECONDS).contains(&defaults.idle_suspend_seconds)
                || !(defaults.idle_suspend_seconds..=MAX_RETENTION_SECONDS)
                    .contains(&defaults.retention_seconds) =>
        {
            invalid()
        }
        _ => Ok(()),
    }
}

/// Checks a whole table: every row, and no kind twice.
pub fn validate_table(table: &[Registration]) -> Result<(), RegistrationError> {
    let mut seen = BTreeSet::new();
    for registration in table {
        validate_registration(registration)?;
        if !seen.insert(registration.kind.as_str()) {
            return Err(RegistrationError::DuplicateKind(registration.kind.clone()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{EndpointGrant, Grants, Policy, SuspensionDefaults, builtin};

    /// A node row that pins no declaration (as tests build them).
    fn row() -> Registration {
        Registration {
            unsupported: None,
            ..crate::registry::builtin()
                .into_iter()
                .find(|row| row.kind == "docker")
                .expect("docker row")
        }
    }

    /// [`row`] granted the HTTP origins `http` and, of those, `credential`.
    fn origins(http: &[&str], credential: &[&str]) -> Registration {
        let owned = |origins: &[&str]| origins.iter().map(|o| o.to_string()).collect();
        Registration {
            grants: Grants {
                docker: true,
                http_origins: owned(http),
                credential_origins: owned(credential),
                ..Grants::default()
            },
            ..row()
        }
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
                microsandbox: false,
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
        for row in builtin() {
            assert!(
                row.pinned_declaration().is_some_and(|d| d.is_ok()),
                "{}",
                row.kind
            );
        }
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
                    grants: Grants {
                        docker: false,
                        microsandbox: true,
                        ..Grants::default()
                    },
                    ..row()
                },
                "grants.microsandbox",
            ),
            (
                Registration {
                    mode: Mode::Direct,
                    ..row()
                },
                "grants.docker",
            ),
            (
                origins(&["http://vendor.example"], &[]),
                "grants.http_origins",
            ),
            (
                origins(&["https://vendor.example/path"], &[]),
                "grants.http_origins",
            ),
            (
                origins(
                    &["https://api.vendor.example"],
                    &["https://files.vendor.example"],
                ),
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
                    node_artifacts: vec![NodeArtifact {
                        path: " ".into(),
                        suffix: ".json".into(),
                        role: crate::registry::ArtifactRole::Policy,
                    }],
                    ..row()
                },
                "node_artifacts",
            ),
            (
                Registration {
                    suspension: Some(SuspensionDefaults {
                        idle_suspend_seconds: 0,
                        retention_seconds: 60,
                    }),
                    ..row()
                },
                "suspension",
            ),
            (
                Registration {
                    mode: Mode::Direct,
                    grants: Grants::default(),
                    node_artifacts: Vec::new(),
                    suspension: Some(SuspensionDefaults {
                        idle_suspend_seconds: 60,
                        retention_seconds: 60,
                    }),
                    ..row()
                },
                "suspension",
            ),
            (
                Registration {
                    suspension: Some(SuspensionDefaults {
                        idle_suspend_seconds: 600,
                        retention_seconds: 60,
                    }),
                    ..row()
                },
                "suspension",
            ),
            (
                Registration {
                    suspension: Some(SuspensionDefaults {
                        idle_suspend_seconds: 60,
                        retention_seconds: 600,
                    }),
                    ..builtin().remove(0)
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
        assert!(parse_origin("https://api.e2b.dev").is_some());
        assert!(parse_origin("https://api.e2b.dev:8443").is_some());
        assert!(parse_origin("http://127.0.0.1:9000").is_some());
        assert!(parse_origin("https://api.e2b.dev/").is_none());
        assert!(parse_origin("https://user@api.e2b.dev").is_none());
        assert!(parse_origin("ftp://api.e2b.dev").is_none());
    }

    #[test]
    fn duplicate_kinds_are_rejected() {
        assert_eq!(
            validate_table(&[row(), row()]),
            Err(RegistrationError::DuplicateKind("docker".into()))
        );
    }
}
