//! The host: the loaded kinds and the operations Core calls on them. Each
//! operation checks the kind and the declaration, bounds its input, runs in
//! a fresh instance, and polices the answer before returning it.

use crate::bindings::exports::oac::sandbox_provider::configuration_adapter::ConfigurationRequirements;
use crate::bindings::exports::oac::sandbox_provider::readiness::Diagnostic;
use crate::bindings::oac::sandbox_provider::types::{Sample, Target};
use crate::bindings::{
    Bootstrap, Command, CommandResult, Error, Failure, Info, Reference, Support,
    UnsupportedOperation,
};
use crate::bindings::{Provider, ProviderPre};
use crate::budget::Budget;
use crate::call::{self, Aborted};
use crate::capability::docker::{
    DockerBroker, DockerConnectError, MAX_OUTPUT_BYTES, MAX_STDIN_BYTES,
};
use crate::capability::http::HttpBroker;
use crate::capability::scope::CallScope;
use crate::capability::{Capabilities, SharedCapabilities};
use crate::declaration::{self, Decision, Declaration, DeclarationError, Inventory};
use crate::loader::{self, LoadError, Runtime};
use crate::registry::{self, NodeBinding, Registration, RegistrationError};
use crate::state::CallState;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Why a host cannot start. Messages never echo configuration values.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A registry row or node binding is malformed.
    #[error(transparent)]
    Registration(#[from] RegistrationError),
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
}

/// Why a raw call returned no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The kind is not loaded.
    #[error("unknown provider kind")]
    UnknownKind,
    /// The call ended without the component's answer.
    #[error("call aborted: {}", .0.code())]
    Aborted(Aborted),
}

/// Whether loading also connects the native capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connect {
    /// Validate and load only: no native I/O (for `validate`, `describe`).
    Offline,
    /// Also connect each granted capability (Docker: API ≥ 1.45 required).
    Capabilities,
}

/// One loaded, validated kind.
pub struct Kind {
    /// Its registry row.
    pub registration: Registration,
    /// SHA-256 of its component.
    pub digest: String,
    /// Operations derived from the component's exports.
    pub inventory: Inventory,
    /// The validated declaration.
    pub declaration: Declaration,
    pre: ProviderPre<CallState>,
    capabilities: SharedCapabilities,
    permits: Arc<Semaphore>,
}

/// The loaded registry.
pub struct Host {
    _runtime: Arc<Runtime>,
    kinds: BTreeMap<String, Kind>,
}

fn capabilities(
    registration: &Registration,
    binding: &NodeBinding,
    docker: Option<DockerBroker>,
) -> SharedCapabilities {
    Arc::new(Capabilities {
        kind: registration.kind.clone(),
        installation_id: binding.installation_id.clone(),
        configuration: binding.configuration.to_string(),
        docker,
        http: HttpBroker::new(
            &registration.grants.http_origins,
            binding.credential.clone(),
        ),
        credential: binding.credential.clone(),
    })
}

impl Kind {
    async fn run<R>(
        &self,
        scope: CallScope,
        budget: Budget,
        call: impl AsyncFnOnce(
            &crate::bindings::Provider,
            &mut wasmtime::Store<CallState>,
        ) -> wasmtime::Result<R>,
    ) -> Result<R, Aborted> {
        let deadline = budget.deadline_from_now();
        let _permit = tokio::time::timeout_at(deadline.into(), self.permits.acquire())
            .await
            .map_err(|_| Aborted::Expired)?
            .map_err(|_| Aborted::Unavailable)?;
        let outcome = call::run(
            &self.pre,
            self.capabilities.clone(),
            scope,
            self.registration.policy.max_memory_bytes,
            deadline,
            call,
        )
        .await;
        if let Err(aborted) = &outcome {
            tracing::warn!(kind = %self.registration.kind, outcome = aborted.code(), "call aborted");
        }
        outcome
    }

    /// `unsupported(operation, reason)` when declared so: answered by the
    /// host, so no instance runs and no native I/O happens.
    fn check_supported(&self, operation: &str) -> Result<(), Error> {
        match self.declaration.decision(operation) {
            Some(Decision::Supported) => Ok(()),
            Some(Decision::Unsupported(reason)) => Err(Error::Unsupported(UnsupportedOperation {
                operation: operation.to_string(),
                reason: reason.clone(),
            })),
            None => Err(Error::Invalid),
        }
    }
}

/// An answer that claims another allocation, or `unsupported` from a
/// supported operation, is not evidence: the outcome is unknown.
pub(crate) fn police_read(
    answer: Result<Info, Error>,
    allocation: &Reference,
) -> Result<Info, Error> {
    match answer {
        Ok(info) if info.reference != *allocation => Err(Error::ComputeUnconfirmed),
        Err(Error::Unsupported(_)) => Err(Error::ComputeUnconfirmed),
        other => other,
    }
}

/// Like [`police_read`]; a failure keeps its info only when it is bound to
/// the call's exact reference.
fn police_mutation(answer: Result<Info, Failure>, allocation: &Reference) -> Result<Info, Failure> {
    match answer {
        Ok(info) if info.reference != *allocation => Err(Error::ComputeUnconfirmed.into()),
        Ok(info) => Ok(info),
        Err(Failure {
            error: Error::Unsupported(_),
            ..
        }) => Err(Error::ComputeUnconfirmed.into()),
        Err(Failure { error, info }) => Err(Failure {
            error,
            info: info.filter(|info| info.reference == *allocation),
        }),
    }
}

/// Output over the bound is never a (truncated) success.
pub(crate) fn police_command(answer: Result<CommandResult, Error>) -> Result<CommandResult, Error> {
    let limit = MAX_OUTPUT_BYTES as usize;
    match answer {
        Ok(result) if result.stdout.len() > limit || result.stderr.len() > limit => {
            Err(Error::CommandUnconfirmed)
        }
        Err(Error::Unsupported(_) | Error::ComputeUnconfirmed) => Err(Error::CommandUnconfirmed),
        other => other,
    }
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
        registry::validate_table(table)?;
        for registration in table {
            let binding = bindings
                .get(&registration.kind)
                .ok_or_else(|| HostError::MissingBinding(registration.kind.clone()))?;
            registry::validate_node_binding(registration, binding)?;
            if connect == Connect::Capabilities {
                registry::require_native(registration, binding)?;
            }
        }
        let mut kinds = BTreeMap::new();
        for registration in table {
            let binding = &bindings[&registration.kind];
            let loaded = loader::load(&runtime, registration, plugin_dir)?;
            let declaration = Self::declaration(registration, binding, &loaded).await?;
            let docker = match (connect, &binding.docker_socket, &binding.container_policy) {
                (Connect::Capabilities, Some(socket), Some(policy)) => Some(
                    DockerBroker::connect(
                        socket,
                        &binding.installation_id,
                        policy.clone(),
                        Duration::from_secs(10),
                        binding.hook.clone(),
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
                    capabilities: capabilities(registration, binding, docker),
                    permits,
                },
            );
        }
        Ok(Self {
            _runtime: runtime,
            kinds,
        })
    }

    /// Calls `operations()` with every capability denied, then validates
    /// the answer against the inventory and the registration.
    async fn declaration(
        registration: &Registration,
        binding: &NodeBinding,
        loaded: &loader::Loaded,
    ) -> Result<Declaration, HostError> {
        let kind = registration.kind.clone();
        let denied = capabilities(
            &Registration {
                grants: Default::default(),
                ..registration.clone()
            },
            binding,
            None,
        );
        let budget = Budget::from_millis(registration.policy.default_budget_ms)
            .map_err(|_| HostError::Engine)?;
        let deadline = budget.deadline_from_now();
        let entries = call::run(
            &loaded.pre,
            denied,
            CallScope::Node,
            registration.policy.max_memory_bytes,
            deadline,
            async |provider, store| {
                provider
                    .oac_sandbox_provider_declarations()
                    .call_operations(store)
                    .await
            },
        )
        .await
        .map_err(|_| LoadError::DeclarationCall { kind: kind.clone() })?;
        let entries: Vec<(String, Decision)> = entries
            .into_iter()
            .map(|entry| {
                let decision = match entry.support {
                    Support::Supported => Decision::Supported,
                    Support::Unsupported(reason) => Decision::Unsupported(reason),
                };
                (entry.operation, decision)
            })
            .collect();
        let rejected = |error: DeclarationError| {
            HostError::Load(LoadError::Declaration {
                kind: kind.clone(),
                error,
            })
        };
        let declaration =
            declaration::validate_declaration(&loaded.inventory, &entries).map_err(rejected)?;
        declaration::validate_binding(&declaration, &loaded.inventory, registration.mode)
            .map_err(rejected)?;
        Ok(declaration)
    }

    /// The loaded kinds, by name.
    pub fn kinds(&self) -> impl Iterator<Item = &Kind> {
        self.kinds.values()
    }

    /// A loaded kind; an unknown kind is invalid input.
    pub fn kind(&self, kind: &str) -> Result<&Kind, Error> {
        self.kinds.get(kind).ok_or(Error::Invalid)
    }

    /// Calls the component directly, without the declaration check or the
    /// policing of answers: the contract suite uses it to judge what the
    /// component itself does (e.g. that it answers `unsupported` before any
    /// native I/O). Budget, limits and the capability policy still apply,
    /// with the capabilities bound to `scope`'s allocations.
    pub async fn call_raw<R>(
        &self,
        kind: &str,
        scope: CallScope,
        budget: Budget,
        call: impl AsyncFnOnce(&Provider, &mut wasmtime::Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let kind = self.kind(kind).map_err(|_| CallError::UnknownKind)?;
        kind.run(scope, budget, call)
            .await
            .map_err(CallError::Aborted)
    }

    /// The common path of every operation: the kind, the declaration (an
    /// unsupported operation is answered here, before any instance or I/O),
    /// one call in a fresh instance whose capabilities reach only `scope`'s
    /// allocations, and `aborted` when the call ends without the
    /// component's answer.
    pub(crate) async fn invoke<R>(
        &self,
        kind: &str,
        operation: &str,
        scope: CallScope,
        budget: Budget,
        aborted: Error,
        call: impl AsyncFnOnce(&Provider, &mut wasmtime::Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, Error> {
        let kind = self.kind(kind)?;
        kind.check_supported(operation)?;
        kind.run(scope, budget, call).await.map_err(|_| aborted)
    }

    /// The kind's configuration requirements (credential, public origin).
    pub async fn requirements(
        &self,
        kind: &str,
        budget: Budget,
    ) -> Result<ConfigurationRequirements, Error> {
        self.invoke(
            kind,
            "requirements",
            CallScope::Node,
            budget,
            Error::ComputeUnconfirmed,
            async |provider, store| {
                provider
                    .oac_sandbox_provider_configuration_adapter()
                    .call_requirements(store)
                    .await
            },
        )
        .await
    }

    /// Create compute for the allocation. Never replayed.
    pub async fn create(
        &self,
        kind: &str,
        request: Bootstrap,
        budget: Budget,
    ) -> Result<Info, Failure> {
        let answer = self
            .invoke(
                kind,
                "create",
                CallScope::Allocation(request.reference.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |provider, store| {
                    provider
                        .oac_sandbox_provider_sandbox_provider()
                        .call_create(store, &request)
                        .await
                },
            )
            .await?;
        police_mutation(answer, &request.reference)
    }

    /// Observe the allocation.
    pub async fn get_info(
        &self,
        kind: &str,
        allocation: Reference,
        budget: Budget,
    ) -> Result<Info, Error> {
        let answer = self
            .invoke(
                kind,
                "get-info",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |provider, store| {
                    provider
                        .oac_sandbox_provider_sandbox_provider()
                        .call_get_info(store, &allocation)
                        .await
                },
            )
            .await?;
        police_read(answer, &allocation)
    }

    /// Extend the provider's lease.
    pub async fn renew(
        &self,
        kind: &str,
        allocation: Reference,
        budget: Budget,
    ) -> Result<Info, Failure> {
        let answer = self
            .invoke(
                kind,
                "renew",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |provider, store| {
                    provider
                        .oac_sandbox_provider_sandbox_provider()
                        .call_renew(store, &allocation)
                        .await
                },
            )
            .await?;
        police_mutation(answer, &allocation)
    }

    /// Delete the allocation's resources.
    pub async fn kill(
        &self,
        kind: &str,
        allocation: Reference,
        budget: Budget,
    ) -> Result<Info, Failure> {
        let answer = self
            .invoke(
                kind,
                "kill",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::ComputeUnconfirmed,
                async |provider, store| {
                    provider
                        .oac_sandbox_provider_sandbox_provider()
                        .call_kill(store, &allocation)
                        .await
                },
            )
            .await?;
        police_mutation(answer, &allocation)
    }

    /// The kind's readiness diagnostics on this node (empty when ready).
    pub async fn probe(&self, kind: &str, budget: Budget) -> Result<Vec<Diagnostic>, Error> {
        self.invoke(
            kind,
            "probe",
            CallScope::Node,
            budget,
            Error::ObservationUnavailable,
            async |provider, store| {
                provider
                    .oac_sandbox_provider_readiness()
                    .call_probe(store)
                    .await
            },
        )
        .await
    }

    /// One resource-usage sample. Expiry or a trap is
    /// `observation-unavailable`: an observation proves nothing either way.
    pub async fn observe(
        &self,
        kind: &str,
        target: Target,
        budget: Budget,
    ) -> Result<Sample, Error> {
        let answer = self
            .invoke(
                kind,
                "observe",
                CallScope::Allocation(target.reference.clone()),
                budget,
                Error::ObservationUnavailable,
                async |provider, store| {
                    provider
                        .oac_sandbox_provider_observation_source()
                        .call_observe(store, &target)
                        .await
                },
            )
            .await?;
        match answer {
            Err(Error::Unsupported(_) | Error::ComputeUnconfirmed) => {
                Err(Error::ObservationUnavailable)
            }
            other => other,
        }
    }

    /// Run one command. Never replayed.
    pub async fn run_command(
        &self,
        kind: &str,
        allocation: Reference,
        request: Command,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        let stdin_too_large = request
            .stdin
            .as_ref()
            .is_some_and(|stdin| stdin.len() > MAX_STDIN_BYTES);
        if request.args.is_empty() || stdin_too_large {
            return Err(Error::Invalid);
        }
        let answer = self
            .invoke(
                kind,
                "run-command",
                CallScope::Allocation(allocation.clone()),
                budget,
                Error::CommandUnconfirmed,
                async |provider, store| {
                    provider
                        .oac_sandbox_provider_sandbox_provider()
                        .call_run_command(store, &allocation, &request)
                        .await
                },
            )
            .await?;
        police_command(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::LifecycleState;

    fn reference(allocation: &str) -> Reference {
        Reference {
            tenant_id: "t".into(),
            environment_id: "e".into(),
            allocation_id: allocation.into(),
        }
    }

    fn info(allocation: &str) -> Info {
        Info {
            reference: reference(allocation),
            provider_id: Some("id".into()),
            state: LifecycleState::Running,
            bootstrap_complete: true,
            create_settled: true,
        }
    }

    #[test]
    fn answers_about_another_allocation_are_not_evidence() {
        assert_eq!(
            police_read(Ok(info("b")), &reference("a")),
            Err(Error::ComputeUnconfirmed)
        );
        assert_eq!(police_read(Ok(info("a")), &reference("a")), Ok(info("a")));
        assert_eq!(
            police_mutation(Ok(info("b")), &reference("a")),
            Err(Error::ComputeUnconfirmed.into())
        );
        let foreign = Failure {
            error: Error::Exists,
            info: Some(info("b")),
        };
        assert_eq!(
            police_mutation(Err(foreign), &reference("a")),
            Err(Failure {
                error: Error::Exists,
                info: None
            })
        );
        let own = Failure {
            error: Error::Exists,
            info: Some(info("a")),
        };
        assert_eq!(police_mutation(Err(own.clone()), &reference("a")), Err(own));
    }

    #[test]
    fn unsupported_from_a_supported_operation_is_unconfirmed() {
        let unsupported = Error::Unsupported(UnsupportedOperation {
            operation: "get-info".into(),
            reason: "x".into(),
        });
        assert_eq!(
            police_read(Err(unsupported.clone()), &reference("a")),
            Err(Error::ComputeUnconfirmed)
        );
        assert_eq!(
            police_command(Err(unsupported)),
            Err(Error::CommandUnconfirmed)
        );
    }

    #[test]
    fn oversized_output_is_never_success() {
        let big = CommandResult {
            stdout: vec![0; MAX_OUTPUT_BYTES as usize + 1],
            stderr: vec![],
            exit_code: 0,
        };
        assert_eq!(police_command(Ok(big)), Err(Error::CommandUnconfirmed));
        let fits = CommandResult {
            stdout: vec![0; MAX_OUTPUT_BYTES as usize],
            stderr: vec![],
            exit_code: 3,
        };
        assert_eq!(police_command(Ok(fits.clone())), Ok(fits));
    }
}
