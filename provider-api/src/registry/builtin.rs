//! The rows compiled into every build: the shipped adapters only. Test
//! kinds live in test registries; an operator's kinds in its registry file.

use super::{
    ArtifactRole, DigestSource, EndpointGrant, Grants, Mode, NodeArtifact, Policy, Registration,
    SuspensionDefaults,
};
use std::collections::BTreeMap;

/// `reason` for each of `operations`.
fn unsupported(groups: &[(&[&str], &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        groups
            .iter()
            .flat_map(|(operations, reason)| {
                operations
                    .iter()
                    .map(|operation| (operation.to_string(), reason.to_string()))
            })
            .collect(),
    )
}

/// The nine checkpoint operations.
const CHECKPOINT: &[&str] = &[
    "initial",
    "new-compute",
    "get-compute",
    "suspend",
    "resume",
    "resume-compute",
    "kill-compute",
    "delete-snapshot",
    "run-command-compute",
];

/// The built-in rows.
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
                ..Grants::default()
            },
            policy: Policy {
                default_budget_ms: 60_000,
                ..Policy::default()
            },
            node_artifacts: vec![
                NodeArtifact {
                    path: "images/runtime.tar".into(),
                    suffix: ".tar".into(),
                    role: ArtifactRole::Image,
                },
                NodeArtifact {
                    path: "seccomp/seccomp.json".into(),
                    suffix: ".json".into(),
                    role: ArtifactRole::Policy,
                },
            ],
            suspension: None,
            unsupported: unsupported(&[
                (CHECKPOINT, "docker_does_not_support_checkpoints"),
                (
                    &["observe-batch"],
                    "docker_observes_one_allocation_at_a_time",
                ),
                (
                    &["discover-selection", "discover-configuration"],
                    "node_configuration_has_no_catalog",
                ),
                (
                    &["verify-credential", "with-credential"],
                    "credentials_not_required",
                ),
            ]),
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
                receipts: true,
                http_endpoint: Some(EndpointGrant {
                    api_url_key: "api_url".into(),
                    domain_key: "domain".into(),
                    default_api_url: "https://api.e2b.app".into(),
                    default_domain: "e2b.app".into(),
                }),
                ..Grants::default()
            },
            policy: Policy {
                default_budget_ms: 60_000,
                ..Policy::default()
            },
            node_artifacts: Vec::new(),
            suspension: None,
            unsupported: unsupported(&[(CHECKPOINT, "e2b_has_no_exact_incarnations")]),
        },
        Registration {
            // One microVM per incarnation through the node's microsandbox
            // helper, under the node's VM policy; idle Environments are
            // suspended to full snapshots and resumed into the next
            // incarnation.
            kind: "microsandbox".into(),
            mode: Mode::Nodes,
            component: "microsandbox.wasm".into(),
            digest: DigestSource::Staged,
            credential_fields: Vec::new(),
            grants: Grants {
                microsandbox: true,
                ..Grants::default()
            },
            policy: Policy {
                default_budget_ms: 120_000,
                ..Policy::default()
            },
            node_artifacts: Vec::new(),
            // A snapshot holds the VM's memory: suspend after 15 idle
            // minutes, keep a snapshot a week.
            suspension: Some(SuspensionDefaults {
                idle_suspend_seconds: 15 * 60,
                retention_seconds: 7 * 24 * 3600,
            }),
            unsupported: unsupported(&[
                (
                    &["discover-selection", "discover-configuration"],
                    "node_configuration_has_no_catalog",
                ),
                (
                    &["verify-credential", "with-credential"],
                    "credentials_not_required",
                ),
            ]),
        },
    ]
}
