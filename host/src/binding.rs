//! What an operator's node supplies for one kind at run time — the
//! installation, the engine socket and container policy, the microsandbox
//! runtime and VM policy, the kind's own configuration and credential, the
//! receipt store — and the checks that it fits what the kind's
//! registration grants, before anything connects.

use crate::capability::{
    Capabilities, HeldCredential, Unbuilt, docker, http, microsandbox, receipts,
};
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
    /// The microsandbox helper, runtime and VM policy (kinds granted
    /// microsandbox).
    pub microsandbox: microsandbox::Binding,
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
            .field("microsandbox", &self.microsandbox)
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

    /// The node's microsandbox helper, runtime and the pin its `msb` must
    /// match, if the kind is granted microsandbox, and the node's VM policy
    /// for every kind, if it has one and the kind names none of its own
    /// ([`Self::vm_policy`]).
    pub fn node_microsandbox(mut self, node: &microsandbox::Binding) -> Self {
        if !self.registration.grants.microsandbox {
            return self;
        }
        let named = self.binding.microsandbox.policy.take();
        self.binding.microsandbox = microsandbox::Binding {
            policy: named.or_else(|| node.policy.clone()),
            ..node.clone()
        };
        self
    }

    /// The VM policy named for this kind, kept as named: the checks refuse
    /// it when the kind is not granted microsandbox.
    pub fn vm_policy(mut self, policy: Option<microsandbox::policy::VmPolicy>) -> Self {
        if policy.is_some() {
            self.binding.microsandbox.policy = policy;
        }
        self
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
            microsandbox: microsandbox::Broker::build(
                grants.microsandbox,
                &self.microsandbox,
                self.hook.clone(),
            ),
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
    let microsandbox = &binding.microsandbox;
    if !registration.grants.microsandbox {
        if microsandbox.helper.is_some() {
            return invalid("microsandbox.helper");
        }
        if microsandbox.runtime.is_some() {
            return invalid("microsandbox.runtime");
        }
        if microsandbox.policy.is_some() {
            return invalid("vm_policy");
        }
    }
    if let Some(field) = microsandbox_misfit(microsandbox) {
        return invalid(field);
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

/// The first field of a microsandbox binding that can never work: a path
/// that is not absolute, or a pinned digest that is not 64 lowercase hex
/// digits (named as the node configuration's `[microsandbox]` keys).
pub(crate) fn microsandbox_misfit(binding: &microsandbox::Binding) -> Option<&'static str> {
    let absolute = |path: &str| std::path::Path::new(path).is_absolute();
    let runtime = binding.runtime.as_ref();
    let digest = &binding.pin.sha256;
    [
        (
            "microsandbox.helper",
            binding
                .helper
                .as_ref()
                .is_none_or(|path| path.is_absolute()),
        ),
        (
            "microsandbox.home",
            runtime.is_none_or(|runtime| absolute(&runtime.home)),
        ),
        (
            "microsandbox.msb",
            runtime.is_none_or(|runtime| absolute(&runtime.msb)),
        ),
        (
            "microsandbox.libkrunfw",
            runtime.is_none_or(|runtime| absolute(&runtime.libkrunfw)),
        ),
        (
            "microsandbox.msb_sha256",
            digest.len() == 64
                && digest
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        ),
    ]
    .into_iter()
    .find(|(_, fits)| !fits)
    .map(|(field, _)| field)
}

/// Checks that a binding supplies every native capability the kind is
/// granted, as connecting needs: a kind granted Docker needs the engine
/// socket and the container policy, one granted microsandbox the helper,
/// the runtime and the VM policy.
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
    if registration.grants.microsandbox {
        if binding.microsandbox.helper.is_none() || binding.microsandbox.runtime.is_none() {
            return missing(
                "the microsandbox helper and runtime: `[microsandbox]` (`helper`, `home`, `msb`, `libkrunfw`) in the node configuration (`--microsandbox` for the CLI)",
            );
        }
        if binding.microsandbox.policy.is_none() {
            return missing(
                "a VM policy: `[kinds.<kind>.vm_policy]` in the node configuration (`--vm-policy` for the CLI)",
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
            microsandbox: Default::default(),
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

    fn vm_policy() -> microsandbox::policy::VmPolicy {
        use microsandbox::policy::{NetworkSetting, VmPolicy, VmPolicySettings};
        VmPolicy::new(VmPolicySettings {
            image: format!("oac-runtime@sha256:{}", "a".repeat(64)),
            cpus: 1,
            memory_mib: 512,
            root_disk_mib: 1024,
            environment_disk_mib: 64,
            network: NetworkSetting::None,
            guest_profile: Default::default(),
        })
        .expect("valid VM policy")
    }

    fn node_microsandbox() -> microsandbox::Binding {
        microsandbox::Binding {
            helper: Some("/usr/lib/oac/oac-microsandbox-helper".into()),
            runtime: Some(oac_helper_protocol::Runtime {
                home: "/opt/oac/microsandbox/home".into(),
                msb: "/opt/oac/microsandbox/bin/msb".into(),
                libkrunfw: "/opt/oac/microsandbox/lib/libkrunfw.so.5".into(),
            }),
            pin: Default::default(),
            policy: None,
        }
    }

    #[test]
    fn a_microsandbox_binding_must_fit_the_grant() {
        let granted = Registration {
            kind: "vm".into(),
            grants: Grants {
                microsandbox: true,
                ..Grants::default()
            },
            ..row()
        };
        let build = |registration: &Registration, node: &microsandbox::Binding, named| {
            NodeBinding::builder(registration, "inst-1")
                .node_microsandbox(node)
                .vm_policy(named)
                .build()
        };
        let good = build(&granted, &node_microsandbox(), Some(vm_policy())).expect("fits");
        assert_eq!(require_native(&granted, &good), Ok(()));
        assert_eq!(good.microsandbox.policy, Some(vm_policy()));
        assert_eq!(
            good.microsandbox.pin,
            microsandbox::readiness::RuntimePin::default()
        );
        // The node's policy for every kind (the CLI's) does as well.
        let everyone = microsandbox::Binding {
            policy: Some(vm_policy()),
            ..node_microsandbox()
        };
        let given = build(&granted, &everyone, None).expect("fits");
        assert_eq!(require_native(&granted, &given), Ok(()));

        let with = |change: fn(&mut microsandbox::Binding)| {
            let mut binding = good.clone();
            change(&mut binding.microsandbox);
            binding
        };
        let cases: [(NodeBinding, &str); 7] = [
            (with(|m| m.helper = None), "`[microsandbox]`"),
            (with(|m| m.runtime = None), "`[microsandbox]`"),
            (with(|m| m.policy = None), "vm_policy"),
            (
                with(|m| m.helper = Some("oac-microsandbox-helper".into())),
                "microsandbox.helper",
            ),
            (
                with(|m| m.runtime.as_mut().expect("runtime").home = "home".into()),
                "microsandbox.home",
            ),
            (
                with(|m| m.runtime.as_mut().expect("runtime").libkrunfw = "lib".into()),
                "microsandbox.libkrunfw",
            ),
            (
                with(|m| m.pin.sha256 = "A".repeat(64)),
                "microsandbox.msb_sha256",
            ),
        ];
        for (binding, field) in cases {
            let refused = validate_node_binding(&granted, &binding)
                .and_then(|()| require_native(&granted, &binding));
            let named = match &refused {
                Err(RegistrationError::InvalidField { field: named, .. }) => named.contains(field),
                Err(RegistrationError::Missing { what, .. }) => what.contains(field),
                _ => false,
            };
            assert!(named, "{field}: {refused:?}");
        }

        // Not granted: the node's section is not given, what the kind names
        // is refused.
        let docker_only = row();
        let ungiven = NodeBinding::builder(&docker_only, "inst-1")
            .node_microsandbox(&everyone)
            .build()
            .expect("nothing given");
        assert!(ungiven.microsandbox.helper.is_none() && ungiven.microsandbox.policy.is_none());
        assert_eq!(
            build(&docker_only, &node_microsandbox(), Some(vm_policy())).map(|_| ()),
            Err(RegistrationError::InvalidField {
                kind: "steerable".into(),
                field: "vm_policy"
            }),
            "a VM policy without the microsandbox grant"
        );
        let named = NodeBinding {
            microsandbox: node_microsandbox(),
            ..ungiven
        };
        assert_eq!(
            validate_node_binding(&docker_only, &named),
            Err(RegistrationError::InvalidField {
                kind: "steerable".into(),
                field: "microsandbox.helper"
            }),
        );
    }
}
