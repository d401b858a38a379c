//! What an operator's node supplies for one kind at run time — the
//! installation, the engine socket and container policy, the kind's own
//! configuration and credential, the receipt store — and the checks that
//! it fits what the kind's registration grants, before anything connects.

use crate::capability::{Capabilities, HeldCredential, Unbuilt, docker, http, receipts};
use crate::registry::{Registration, RegistrationError};
use std::path::PathBuf;

/// What an operator's node supplies for one kind at run time. Its `Debug`
/// never shows the credential.
#[derive(Clone, Default)]
pub struct NodeBinding {
    /// Installation id; the value of every `io.oac.installation` label.
    pub installation_id: String,
    /// The Docker Engine and the container policy (kinds granted Docker).
    pub docker: docker::Binding,
    /// The kind's native configuration, handed to the component as JSON.
    pub configuration: serde_json::Value,
    /// Vendor credential the HTTP capability may attach; never shown to the component.
    pub credential: Option<String>,
    /// The durable receipt store, for kinds granted receipts.
    pub receipts: receipts::Binding,
    /// A test network for TLS fixtures (`None` in production).
    pub http_test_network: Option<crate::capability::http::TestNetwork>,
    /// Sees every native request of this binding and may inject faults
    /// (the contract suite's instrument; `None` in production).
    pub hook: Option<std::sync::Arc<dyn crate::capability::boundary::NativeHook>>,
}

impl std::fmt::Debug for NodeBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeBinding")
            .field("installation_id", &self.installation_id)
            .field("docker", &self.docker)
            .field("configuration", &self.configuration)
            .field(
                "credential",
                &self.credential.as_ref().map(|_| "[redacted]"),
            )
            .field("receipts", &self.receipts)
            .field("http_test_network", &self.http_test_network)
            .field("hook", &self.hook)
            .finish()
    }
}

/// Builds the [`NodeBinding`] of one registration, for the node's
/// configuration and the CLI alike. What the operator named for this kind
/// is kept as named, so the checks refuse it when the kind is not granted
/// it; what the node has for every kind (an engine, a receipt store) is
/// given only to the kinds granted it.
pub struct BindingBuilder<'a> {
    registration: &'a Registration,
    binding: NodeBinding,
}

impl NodeBinding {
    /// A builder of `registration`'s binding under `installation_id`.
    pub fn builder<'a>(
        registration: &'a Registration,
        installation_id: &str,
    ) -> BindingBuilder<'a> {
        BindingBuilder {
            registration,
            binding: NodeBinding {
                installation_id: installation_id.to_string(),
                configuration: serde_json::json!({}),
                ..Default::default()
            },
        }
    }
}

impl BindingBuilder<'_> {
    /// The engine socket and container policy named for this kind.
    pub fn docker(
        mut self,
        socket: Option<PathBuf>,
        policy: Option<docker::policy::ContainerPolicy>,
    ) -> Self {
        self.binding.docker = docker::Binding { socket, policy };
        self
    }

    /// The node's engine socket and container policy, if the kind is
    /// granted Docker.
    pub fn node_docker(
        self,
        socket: &std::path::Path,
        policy: Option<&docker::policy::ContainerPolicy>,
    ) -> Self {
        if !self.registration.grants.docker {
            return self;
        }
        self.docker(Some(socket.to_path_buf()), policy.cloned())
    }

    /// The node's receipt store, if the kind is granted receipts.
    pub fn node_receipts(mut self, store: Option<&receipts::ReceiptStore>) -> Self {
        self.binding.receipts = store.cloned().filter(|_| self.registration.grants.receipts);
        self
    }

    /// The kind's own configuration (an object; `{}` when not given).
    pub fn configuration(mut self, configuration: serde_json::Value) -> Self {
        self.binding.configuration = configuration;
        self
    }

    /// The kind's credential.
    pub fn credential(mut self, credential: Option<String>) -> Self {
        self.binding.credential = credential;
        self
    }

    /// The binding, checked against the registration
    /// ([`validate_node_binding`]).
    pub fn build(self) -> Result<NodeBinding, RegistrationError> {
        validate_node_binding(self.registration, &self.binding)?;
        Ok(self.binding)
    }
}

impl NodeBinding {
    /// The capabilities `registration` is granted, on what this binding
    /// supplies: one broker per capability, each built from its grant, its
    /// binding and the boundary (the Docker broker, which connects, is
    /// given already built).
    pub(crate) fn capabilities(
        &self,
        registration: &Registration,
        docker: Option<docker::Broker>,
    ) -> Result<Capabilities, Unbuilt> {
        let grants = &registration.grants;
        let http = http::Broker::build(
            grants,
            &self.configuration,
            &self.installation_id,
            (
                registration.policy.max_open_requests_per_call as usize,
                registration.policy.max_open_requests_per_kind as usize,
            ),
            self.hook.clone(),
            self.http_test_network.as_ref(),
        )?;
        Ok(Capabilities {
            kind: registration.kind.clone(),
            installation_id: self.installation_id.clone(),
            configuration: self.configuration.to_string(),
            docker,
            http,
            receipts: receipts::Broker::build(grants.receipts, &self.receipts, self.hook.clone()),
            credential: std::sync::RwLock::new(HeldCredential::new(self.credential.clone())),
        })
    }
}

/// Checks what a node supplies for a registered kind, before connecting
/// anywhere: native bindings only for what the kind is granted.
pub fn validate_node_binding(
    registration: &Registration,
    binding: &NodeBinding,
) -> Result<(), RegistrationError> {
    let invalid = |field| registration.invalid(field);
    let id = binding.installation_id.as_bytes();
    let id_ok = !id.is_empty()
        && id.len() <= 128
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !id_ok {
        return invalid("installation_id");
    }
    let granted = registration.grants.docker;
    match &binding.docker.socket {
        Some(socket) if !granted || !socket.is_absolute() => return invalid("docker_socket"),
        _ => {}
    }
    if binding.docker.policy.is_some() && !granted {
        return invalid("container_policy");
    }
    if !binding.configuration.is_object() {
        return invalid("configuration");
    }
    if let Some((path, why)) = binding
        .credential
        .as_deref()
        .and_then(|text| crate::credential::misfit(&registration.credential_fields, text))
    {
        return Err(RegistrationError::Credential {
            kind: registration.kind.clone(),
            path,
            why,
        });
    }
    Ok(())
}

/// Checks that a binding supplies every native capability the kind is
/// granted, as connecting needs: a kind granted Docker needs the engine
/// socket and the container policy.
pub fn require_native(
    registration: &Registration,
    binding: &NodeBinding,
) -> Result<(), RegistrationError> {
    let missing = |what| {
        Err(RegistrationError::Missing {
            kind: registration.kind.clone(),
            what,
        })
    };
    if registration.grants.docker {
        if binding.docker.socket.is_none() {
            return missing(
                "a Docker Engine socket: `docker_socket` in its node configuration section (`--docker-socket` for the CLI)",
            );
        }
        if binding.docker.policy.is_none() {
            return missing(
                "a container policy: `[kinds.<kind>.container_policy]` in the node configuration (`--container-policy` for the CLI)",
            );
        }
    }
    if registration.grants.receipts && binding.receipts.is_none() {
        return missing(
            "a receipt store: `state_dir` in the node configuration (`--state-dir` for the CLI)",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Grants;
    use crate::testing::steerable_row as row;

    fn test_policy() -> crate::capability::docker::policy::ContainerPolicy {
        let settings = crate::capability::docker::policy::PolicySettings {
            image: format!("sha256:{}", "a".repeat(64)),
            network: "none".into(),
            seccomp_profile: "seccomp.json".into(),
            cpus: 1.0,
            memory_mib: 256,
            pids_limit: 128,
            nested_sandbox: false,
        };
        crate::capability::docker::policy::ContainerPolicy::new(
            &settings,
            r#"{"defaultAction":"SCMP_ACT_ERRNO"}"#.into(),
        )
        .expect("valid policy")
    }

    #[test]
    fn node_binding_must_fit_the_grants() {
        let registration = row();
        let good = NodeBinding {
            installation_id: "inst-1".into(),
            docker: docker::Binding {
                socket: Some("/run/oac/docker.sock".into()),
                policy: Some(test_policy()),
            },
            configuration: serde_json::json!({}),
            credential: None,
            receipts: None,
            http_test_network: None,
            hook: None,
        };
        assert_eq!(validate_node_binding(&registration, &good), Ok(()));
        let cases = [
            (
                NodeBinding {
                    installation_id: String::new(),
                    ..good.clone()
                },
                "installation_id",
            ),
            (
                NodeBinding {
                    installation_id: "a b".into(),
                    ..good.clone()
                },
                "installation_id",
            ),
            (
                NodeBinding {
                    docker: docker::Binding {
                        socket: None,
                        ..good.docker.clone()
                    },
                    ..good.clone()
                },
                "docker_socket",
            ),
            (
                NodeBinding {
                    docker: docker::Binding {
                        socket: Some("relative.sock".into()),
                        ..good.docker.clone()
                    },
                    ..good.clone()
                },
                "docker_socket",
            ),
            (
                NodeBinding {
                    docker: docker::Binding {
                        policy: None,
                        ..good.docker.clone()
                    },
                    ..good.clone()
                },
                "container_policy",
            ),
            (
                NodeBinding {
                    configuration: serde_json::json!([1]),
                    ..good.clone()
                },
                "configuration",
            ),
        ];
        for (binding, field) in cases {
            let refused = validate_node_binding(&registration, &binding)
                .and_then(|()| require_native(&registration, &binding));
            let named = match &refused {
                Err(RegistrationError::InvalidField { field: named, .. }) => named.contains(field),
                Err(RegistrationError::Missing { what, .. }) => what.contains(field),
                _ => false,
            };
            assert!(named, "{field}: {refused:?}");
        }
        let ungranted = Registration {
            grants: Grants::default(),
            ..registration.clone()
        };
        assert_eq!(
            validate_node_binding(
                &ungranted,
                &NodeBinding {
                    docker: docker::Binding {
                        socket: None,
                        ..good.docker.clone()
                    },
                    ..good.clone()
                }
            ),
            Err(RegistrationError::InvalidField {
                kind: "steerable".into(),
                field: "container_policy"
            }),
            "a policy without the Docker grant"
        );
        let offline = NodeBinding {
            docker: docker::Binding::default(),
            ..good
        };
        assert_eq!(validate_node_binding(&registration, &offline), Ok(()));
    }
}
