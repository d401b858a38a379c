//! The host: the loaded kinds, by name. Loading validates every
//! registration and binding before anything is compiled, then loads each
//! component and validates its declaration; Core then calls the [`Kind`] it
//! looks up, which is the provider.

use crate::binding::{self, NodeBinding};
use crate::bindings::Support;
use crate::call;
use crate::capability::SharedCapabilities;
use crate::capability::boundary::Boundary;
use crate::capability::docker::DockerConnectError;
use crate::capability::scope::CallScope;
use crate::declaration::{self, Decision, Declaration, DeclarationError};
use crate::kind::{Kind, Policing};
use crate::loader::{self, LoadError, Runtime};
use crate::registry::{self, Registration, RegistrationError};
use oac_provider_api::Budget;
use oac_provider_api::types::{ConfigurationRequirements, Error, Requirement};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Why a host cannot start. Messages never echo configuration values.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// A registry row or node binding is malformed.
    #[error(transparent)]
    Registration(#[from] RegistrationError),
    /// A direct kind's configured input can never work: every call would
    /// fail. Named by key path, never by value.
    #[error("kind `{kind}`: {path} {why}")]
    Configured {
        /// The kind.
        kind: String,
        /// The key path at fault, e.g. `credential.api_key`.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A registered kind has no node binding.
    #[error("kind `{0}` has no node binding")]
    MissingBinding(String),
    /// A component failed loading.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The Docker Engine of a kind is unusable.
    #[error("kind `{kind}`: {error}")]
    Docker {
        /// The kind.
        kind: String,
        /// What is wrong.
        error: DockerConnectError,
    },
    /// The engine could not be created.
    #[error("the WebAssembly engine could not be created")]
    Engine,
    /// The HTTP client of a kind could not be created (TLS setup).
    #[error("kind `{0}`: the HTTP client could not be created")]
    Http(String),
    /// A kind's configuration names an endpoint the rule refuses.
    #[error("kind `{kind}`: configuration {field} is not an allowed endpoint")]
    Endpoint {
        /// The kind.
        kind: String,
        /// The field(s) at fault.
        field: &'static str,
    },
    /// A kind that requires a credential was given none (a direct kind's
    /// `credential_file`, or the binding Core builds).
    #[error("kind `{0}` requires a credential and has none")]
    MissingCredential(String),
    /// A kind's default budget is not a budget the contract allows.
    #[error("kind `{0}`: its default budget is out of range")]
    Budget(String),
}

/// Whether loading also connects the native capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connect {
    /// Validate and load only: no native I/O (for `validate`, `describe`).
    Offline,
    /// Also connect each granted capability (Docker: API ≥ 1.45 required).
    Capabilities,
}

/// The loaded registry.
pub struct Host {
    _runtime: Arc<Runtime>,
    kinds: BTreeMap<String, Kind>,
}

/// The capabilities of `registration` on `binding`, with the Docker
/// broker already connected (or none).
fn capabilities(
    registration: &Registration,
    binding: &NodeBinding,
    docker: Option<crate::capability::docker::Broker>,
) -> Result<SharedCapabilities, HostError> {
    binding
        .capabilities(registration, docker)
        .map(Arc::new)
        .map_err(|unbuilt| match unbuilt {
            crate::capability::Unbuilt::Endpoint(field) => HostError::Endpoint {
                kind: registration.kind.clone(),
                field,
            },
            crate::capability::Unbuilt::Http => HostError::Http(registration.kind.clone()),
        })
}

impl Host {
    /// Validates every registration and binding, then loads each component
    /// and validates its declaration. Any failure loads nothing.
    pub async fn load(
        runtime: Arc<Runtime>,
        table: &[Registration],
        plugin_dir: &Path,
        bindings: &BTreeMap<String, NodeBinding>,
        connect: Connect,
    ) -> Result<Self, HostError> {
        Self::load_with(
            runtime,
            table,
            plugin_dir,
            bindings,
            connect,
            Policing::Enforced,
        )
        .await
    }

    pub(crate) async fn load_with(
        runtime: Arc<Runtime>,
        table: &[Registration],
        plugin_dir: &Path,
        bindings: &BTreeMap<String, NodeBinding>,
        connect: Connect,
        policing: Policing,
    ) -> Result<Self, HostError> {
        registry::validate_table(table)?;
        for registration in table {
            let binding = bindings
                .get(&registration.kind)
                .ok_or_else(|| HostError::MissingBinding(registration.kind.clone()))?;
            binding::validate_node_binding(registration, binding)?;
            if connect == Connect::Capabilities {
                binding::require_native(registration, binding)?;
            }
        }
        let mut kinds = BTreeMap::new();
        for registration in table {
            let binding = &bindings[&registration.kind];
            let loaded = loader::load(&runtime, registration, plugin_dir)?;
            let (declaration, requirements) =
                Self::declaration(registration, binding, &loaded).await?;
            if connect == Connect::Capabilities
                && requirements.credential == Requirement::Required
                && binding.credential.is_none()
            {
                return Err(HostError::MissingCredential(registration.kind.clone()));
            }
            let docker = match (connect, &binding.docker.socket, &binding.docker.policy) {
                (Connect::Capabilities, Some(socket), Some(policy)) => Some(
                    crate::capability::docker::Broker::connect(
                        socket,
                        &binding.installation_id,
                        policy.clone(),
                        &registration.policy.volume_roles,
                        Duration::from_secs(10),
                        Boundary::new(binding.hook.clone()),
                    )
                    .await
                    .map_err(|error| HostError::Docker {
                        kind: registration.kind.clone(),
                        error,
                    })?,
                ),
                _ => None,
            };
            let permits = Arc::new(Semaphore::new(
                registration.policy.max_concurrent_calls as usize,
            ));
            kinds.insert(
                registration.kind.clone(),
                Kind {
                    registration: registration.clone(),
                    digest: loaded.digest,
                    inventory: loaded.inventory,
                    declaration,
                    pre: loaded.pre,
                    capabilities: capabilities(registration, binding, docker)?,
                    permits,
                    turns: Default::default(),
                    fence: Default::default(),
                    policing,
                    settlements: binding
                        .receipts
                        .clone()
                        .filter(|_| registration.grants.receipts)
                        .map(|store| {
                            crate::settlement::Settlements::new(
                                store,
                                &registration.kind,
                                &binding.installation_id,
                            )
                        }),
                },
            );
        }
        Ok(Self {
            _runtime: runtime,
            kinds,
        })
    }

    /// The capabilities of a declaration or requirements call: none.
    fn denied(
        registration: &Registration,
        binding: &NodeBinding,
    ) -> Result<Arc<crate::capability::Capabilities>, HostError> {
        capabilities(
            &Registration {
                grants: Default::default(),
                ..registration.clone()
            },
            binding,
            None,
        )
    }

    /// Calls `operations()` with every capability denied: the component's
    /// declaration as it gave it, before any rule is checked.
    pub(crate) async fn declared(
        registration: &Registration,
        binding: &NodeBinding,
        loaded: &loader::Loaded,
    ) -> Result<Vec<(String, Decision)>, HostError> {
        let kind = registration.kind.clone();
        let budget = Budget::from_millis(registration.policy.default_budget_ms)
            .map_err(|_| HostError::Budget(kind.clone()))?;
        let entries = call::run(
            &loaded.pre,
            Self::denied(registration, binding)?,
            CallScope::pure().into(),
            &registration.policy,
            budget.deadline_from_now(),
            async |provider, store| {
                provider
                    .declarations(&mut *store)?
                    .call_operations(store)
                    .await
            },
        )
        .await
        .map_err(|_| LoadError::DeclarationCall { kind })?;
        Ok(entries
            .into_iter()
            .map(|entry| {
                let decision = match entry.support {
                    Support::Supported => Decision::Supported,
                    Support::Unsupported(reason) => Decision::Unsupported(reason),
                };
                (entry.operation, decision)
            })
            .collect())
    }

    /// The component's declaration ([`Self::declared`]) validated against
    /// the inventory and the registration, and its requirements.
    async fn declaration(
        registration: &Registration,
        binding: &NodeBinding,
        loaded: &loader::Loaded,
    ) -> Result<(Declaration, ConfigurationRequirements), HostError> {
        let kind = registration.kind.clone();
        let denied = Self::denied(registration, binding)?;
        let budget = Budget::from_millis(registration.policy.default_budget_ms)
            .map_err(|_| HostError::Budget(kind.clone()))?;
        let entries = Self::declared(registration, binding, loaded).await?;
        let rejected = |error: DeclarationError| {
            HostError::Load(LoadError::Declaration {
                kind: kind.clone(),
                error,
            })
        };
        let declaration =
            declaration::validate_declaration(&loaded.inventory, &entries).map_err(rejected)?;
        declaration::validate_binding(&declaration, registration.mode).map_err(rejected)?;
        if !registration.pins(&declaration) {
            let declared: Vec<String> = declaration
                .by_name()
                .into_iter()
                .filter_map(|(operation, decision)| match decision {
                    Decision::Unsupported(reason) => Some(format!("{operation} = \"{reason}\"")),
                    Decision::Supported => None,
                })
                .collect();
            return Err(HostError::Load(LoadError::NotAsPinned {
                kind: kind.clone(),
                declared: declared.join(", "),
            }));
        }
        let requirements = call::run(
            &loaded.pre,
            denied.clone(),
            CallScope::pure().into(),
            &registration.policy,
            budget.deadline_from_now(),
            async |provider, store| {
                provider
                    .configuration_adapter(&mut *store)?
                    .call_requirements(store)
                    .await
            },
        )
        .await
        .map_err(|_| LoadError::DeclarationCall { kind: kind.clone() })?;
        let requirements: ConfigurationRequirements = requirements.into();
        declaration::validate_requirements(&declaration, &requirements, registration.mode)
            .map_err(rejected)?;
        Ok((declaration, requirements))
    }

    /// Refuses what can never work before anything is served: for every
    /// loaded direct kind `bindings` names, the credential given must fit
    /// the kind's shape, and
    /// the component's own `decode-input` must accept the configured public
    /// object with it. `serve`, `call` and `validate` run it at start.
    pub async fn check_configured(
        &self,
        bindings: &BTreeMap<String, NodeBinding>,
    ) -> Result<(), HostError> {
        for kind in self.kinds.values() {
            let Some(binding) = bindings.get(kind.name()) else {
                continue;
            };
            if let Err((path, why)) = kind.check_configured(binding).await {
                return Err(HostError::Configured {
                    kind: kind.name().to_string(),
                    path,
                    why,
                });
            }
        }
        Ok(())
    }

    /// A registry of exactly the loaded kinds' rows: what a node built
    /// with [`crate::transport::Node::new`] reports, and so the registry
    /// Core's side must hold to talk to it (tests and benches; `serve`
    /// reports the whole registry it was configured from).
    pub fn loaded_registry(&self) -> crate::registry::Registry {
        let rows = self.kinds().map(|kind| kind.registration.clone()).collect();
        crate::registry::Registry::of(rows).unwrap_or_else(|_| crate::registry::Registry::builtin())
    }

    /// The loaded kinds, by name.
    pub fn kinds(&self) -> impl Iterator<Item = &Kind> {
        self.kinds.values()
    }

    /// A loaded kind, the provider Core calls; an unknown kind is invalid
    /// input.
    pub fn kind(&self, kind: &str) -> Result<&Kind, Error> {
        self.kinds.get(kind).ok_or(Error::Invalid)
    }
}
