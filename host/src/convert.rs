//! The one place where the contract's values cross the WebAssembly
//! boundary: conversions between the provider interface's types
//! ([`oac_provider_api::types`]) and the generated bindings. Each pair is
//! total, so nothing is lost crossing.

use crate::bindings::exports::oac::sandbox_provider::configuration_adapter as adapter;
use crate::bindings::exports::oac::sandbox_provider::readiness::Diagnostic as BoundDiagnostic;
use crate::bindings::oac::sandbox_provider::types as wit;
use oac_provider_api::types::*;

impl From<wit::Reference> for Reference {
    fn from(r: wit::Reference) -> Self {
        Self {
            tenant_id: r.tenant_id,
            environment_id: r.environment_id,
            allocation_id: r.allocation_id,
        }
    }
}

impl From<Reference> for wit::Reference {
    fn from(r: Reference) -> Self {
        Self {
            tenant_id: r.tenant_id,
            environment_id: r.environment_id,
            allocation_id: r.allocation_id,
        }
    }
}

impl From<wit::LifecycleState> for LifecycleState {
    fn from(s: wit::LifecycleState) -> Self {
        match s {
            wit::LifecycleState::Pending => Self::Pending,
            wit::LifecycleState::Running => Self::Running,
            wit::LifecycleState::Paused => Self::Paused,
            wit::LifecycleState::Suspended => Self::Suspended,
            wit::LifecycleState::Stopped => Self::Stopped,
            wit::LifecycleState::Absent => Self::Absent,
        }
    }
}

impl From<wit::Info> for Info {
    fn from(i: wit::Info) -> Self {
        Self {
            reference: i.reference.into(),
            provider_id: i.provider_id,
            state: i.state.into(),
            bootstrap_complete: i.bootstrap_complete,
            create_settled: i.create_settled,
        }
    }
}

impl From<NetworkAccess> for wit::NetworkAccess {
    fn from(n: NetworkAccess) -> Self {
        match n {
            NetworkAccess::Enabled => Self::Enabled,
            NetworkAccess::Disabled => Self::Disabled,
            NetworkAccess::Restricted => Self::Restricted,
        }
    }
}

impl From<Bootstrap> for wit::Bootstrap {
    fn from(b: Bootstrap) -> Self {
        Self {
            reference: b.reference.into(),
            session_id: b.session_id,
            device_id: b.device_id,
            core_url: b.core_url,
            daemon_credential: b.daemon_credential,
            harness: b.harness,
            network_access: b.network_access.into(),
            allowed_domains: b.allowed_domains,
        }
    }
}

impl From<Command> for wit::Command {
    fn from(c: Command) -> Self {
        Self {
            args: c.args,
            directory: c.directory,
            stdin: c.stdin,
        }
    }
}

impl From<wit::CommandResult> for CommandResult {
    fn from(c: wit::CommandResult) -> Self {
        Self {
            stdout: c.stdout,
            stderr: c.stderr,
            exit_code: c.exit_code,
        }
    }
}

impl From<Target> for wit::Target {
    fn from(t: Target) -> Self {
        Self {
            reference: t.reference.into(),
            provider_id: t.provider_id,
        }
    }
}

impl From<wit::Sample> for Sample {
    fn from(s: wit::Sample) -> Self {
        Self {
            cpu_seconds: s.cpu_seconds,
            memory_bytes: s.memory_bytes,
            memory_limit_bytes: s.memory_limit_bytes,
            cpus: s.cpus,
            started_at: s.started_at,
        }
    }
}

impl From<wit::SnapshotIdentity> for SnapshotIdentity {
    fn from(s: wit::SnapshotIdentity) -> Self {
        Self {
            reference: s.reference.into(),
            id: s.id,
            digest: s.digest,
            checkpoint_id: s.checkpoint_id,
            checkpoint_root: s.checkpoint_root,
            operation_id: s.operation_id,
            source_generation: s.source_generation,
            source_name: s.source_name,
            source_id: s.source_id,
        }
    }
}

impl From<SnapshotIdentity> for wit::SnapshotIdentity {
    fn from(s: SnapshotIdentity) -> Self {
        Self {
            reference: s.reference.into(),
            id: s.id,
            digest: s.digest,
            checkpoint_id: s.checkpoint_id,
            checkpoint_root: s.checkpoint_root,
            operation_id: s.operation_id,
            source_generation: s.source_generation,
            source_name: s.source_name,
            source_id: s.source_id,
        }
    }
}

impl From<wit::Compute> for Compute {
    fn from(c: wit::Compute) -> Self {
        Self {
            generation: c.generation,
            name: c.name,
            id: c.id,
            restored_from: c.restored_from.map(Into::into),
        }
    }
}

impl From<Compute> for wit::Compute {
    fn from(c: Compute) -> Self {
        Self {
            generation: c.generation,
            name: c.name,
            id: c.id,
            restored_from: c.restored_from.map(Into::into),
        }
    }
}

impl From<wit::ComputeStatus> for ComputeStatus {
    fn from(s: wit::ComputeStatus) -> Self {
        match s {
            wit::ComputeStatus::Running => Self::Running,
            wit::ComputeStatus::Paused => Self::Paused,
            wit::ComputeStatus::Suspended => Self::Suspended,
            wit::ComputeStatus::Stopped => Self::Stopped,
            wit::ComputeStatus::Absent => Self::Absent,
        }
    }
}

impl From<wit::ComputeState> for ComputeState {
    fn from(s: wit::ComputeState) -> Self {
        Self {
            compute: s.compute.into(),
            status: s.status.into(),
            bootstrap_complete: s.bootstrap_complete,
            snapshot: s.snapshot.map(Into::into),
            source_stopped: s.source_stopped,
        }
    }
}

impl From<SuspendRequest> for wit::SuspendRequest {
    fn from(r: SuspendRequest) -> Self {
        Self {
            reference: r.reference.into(),
            operation_id: r.operation_id,
            source: r.source.into(),
            snapshot: r.snapshot.map(Into::into),
            observe_only: r.observe_only,
        }
    }
}

impl From<ResumeRequest> for wit::ResumeRequest {
    fn from(r: ResumeRequest) -> Self {
        Self {
            reference: r.reference.into(),
            operation_id: r.operation_id,
            snapshot: r.snapshot.into(),
            target: r.target.into(),
            observe_only: r.observe_only,
        }
    }
}

impl From<wit::UnsupportedOperation> for UnsupportedOperation {
    fn from(u: wit::UnsupportedOperation) -> Self {
        Self {
            operation: u.operation,
            reason: u.reason,
        }
    }
}

impl From<wit::Error> for Error {
    fn from(e: wit::Error) -> Self {
        match e {
            wit::Error::Invalid => Self::Invalid,
            wit::Error::Ownership => Self::Ownership,
            wit::Error::Exists => Self::Exists,
            wit::Error::NotFound => Self::NotFound,
            wit::Error::ComputeUnconfirmed => Self::ComputeUnconfirmed,
            wit::Error::CommandUnconfirmed => Self::CommandUnconfirmed,
            wit::Error::Unsupported(u) => Self::Unsupported(u.into()),
            wit::Error::ObservationUnavailable => Self::ObservationUnavailable,
            wit::Error::RuntimeNotRunning => Self::RuntimeNotRunning,
        }
    }
}

impl From<wit::Failure> for Failure {
    fn from(f: wit::Failure) -> Self {
        Self {
            error: f.error.into(),
            info: f.info.map(Into::into),
        }
    }
}

impl From<adapter::Requirement> for Requirement {
    fn from(r: adapter::Requirement) -> Self {
        match r {
            adapter::Requirement::Required => Self::Required,
            adapter::Requirement::NotRequired => Self::NotRequired,
        }
    }
}

impl From<adapter::ConfigurationRequirements> for ConfigurationRequirements {
    fn from(r: adapter::ConfigurationRequirements) -> Self {
        Self {
            credential: r.credential.into(),
            public_origin: r.public_origin.into(),
            configuration_discovery: r.configuration_discovery,
        }
    }
}

impl From<BoundDiagnostic> for Diagnostic {
    fn from(d: BoundDiagnostic) -> Self {
        match d {
            BoundDiagnostic::ConfigurationInvalid => Self::ConfigurationInvalid,
            BoundDiagnostic::ProviderUnavailable => Self::ProviderUnavailable,
            BoundDiagnostic::HostUnsupported => Self::HostUnsupported,
            BoundDiagnostic::LimitsUnsupported => Self::LimitsUnsupported,
            BoundDiagnostic::ImageUnavailable => Self::ImageUnavailable,
        }
    }
}
