//! The required operations on generation 0 (what Create makes), the
//! observations, the readiness probe and the (empty) public configuration.
//! Every VM is the host's: it derives the names, applies the node's VM
//! policy and checks ownership; this adapter observes before it acts and
//! never replays a change.

use crate::bootstrap;
use crate::vm::{self, failed, found};
use oac_provider_sdk::capability::microsandbox::{self as msb, VmError, VmExec, VmState};
use oac_provider_sdk::prelude::*;

/// The provider; `lib.rs` declares what it supports.
pub struct MicrosandboxProvider;

/// What an observation of generation 0 shows. It never settles a Create:
/// only Create's own answer can.
fn info_of(allocation: Reference, state: &VmState) -> Info {
    Info {
        reference: allocation,
        provider_id: Some(state.id.clone()),
        state: match vm::status(state) {
            ComputeStatus::Running => LifecycleState::Running,
            ComputeStatus::Paused => LifecycleState::Paused,
            _ => LifecycleState::Stopped,
        },
        bootstrap_complete: vm::bootstrapped(state),
        create_settled: false,
    }
}

/// Generation 0 as the runtime has it (`None`: absent).
fn first(allocation: &Reference) -> Result<Option<VmState>, Error> {
    found(msb::inspect(allocation, &vm::first()))
}

/// Create's definite end where the host refused: a VM that did not carry
/// the node's policy (the host removed it), or a node that cannot boot VMs
/// (the host sent nothing, or the runtime recorded a VM it could not
/// boot): settled, with what is left, if anything. Kill removes it.
fn refused(allocation: Reference) -> Failure {
    let info = match first(&allocation) {
        Ok(Some(state)) => Some(Info {
            create_settled: true,
            ..info_of(allocation.clone(), &state)
        }),
        Ok(None) => Some(Info {
            reference: allocation,
            provider_id: None,
            state: LifecycleState::Absent,
            bootstrap_complete: false,
            create_settled: true,
        }),
        Err(_) => None,
    };
    Failure {
        error: Error::Invalid,
        info,
    }
}

fn create(request: Bootstrap) -> Result<Info, Failure> {
    let allocation = request.reference.clone();
    if let Some(existing) = first(&allocation)? {
        return Err(Failure {
            error: Error::Exists,
            info: Some(info_of(allocation, &existing)),
        });
    }
    let created = match msb::create(&allocation) {
        Ok(state) => state,
        // The host removed a VM that did not carry the policy, or refused
        // a create on a node that cannot boot VMs: a definite end.
        Err(VmError::Invalid | VmError::NotReady) => return Err(refused(allocation)),
        Err(error) => return Err(failed(error).into()),
    };
    // Qualify the exact VM before anything runs in it.
    if !created.conforms {
        return Err(refused(allocation));
    }
    let made = msb::Incarnation {
        id: Some(created.id.clone()),
        ..vm::first()
    };
    match msb::exec(&allocation, &made, &bootstrap::init(&request)) {
        Ok(ran) if ran.exit_code == 0 => {}
        // The init ran and refused: a definite end at a VM without its
        // daemon (Kill removes it).
        Ok(_) => {
            return Err(Failure {
                error: Error::RuntimeNotRunning,
                info: Some(Info {
                    create_settled: true,
                    bootstrap_complete: false,
                    ..info_of(allocation, &created)
                }),
            });
        }
        Err(_) => return Err(Error::ComputeUnconfirmed.into()),
    }
    msb::mark_bootstrapped(&allocation, &made).map_err(|_| Error::ComputeUnconfirmed)?;
    let after = msb::inspect(&allocation, &made).map_err(|_| Error::ComputeUnconfirmed)?;
    let info = info_of(allocation, &after);
    if !info.bootstrap_complete {
        return Err(Error::ComputeUnconfirmed.into());
    }
    Ok(Info {
        create_settled: true,
        ..info
    })
}

fn get_info(allocation: Reference) -> Result<Info, Error> {
    match first(&allocation)? {
        Some(state) => Ok(info_of(allocation, &state)),
        None => Err(Error::NotFound),
    }
}

/// Kill's answer: generation 0 confirmed gone. It does not settle the
/// original Create, which a Kill cannot know has ended.
fn kill(allocation: Reference) -> Result<Info, Failure> {
    remove(&allocation, &vm::first())?;
    Ok(Info {
        reference: allocation,
        provider_id: None,
        state: LifecycleState::Absent,
        bootstrap_complete: false,
        create_settled: false,
    })
}

/// Force-kills and removes `target`, then confirms it absent.
pub fn remove(allocation: &Reference, target: &msb::Incarnation) -> Result<(), Error> {
    msb::remove(allocation, target).map_err(failed)?;
    match found(msb::inspect(allocation, target))? {
        None => Ok(()),
        Some(_) => Err(Error::ComputeUnconfirmed),
    }
}

/// Runs a command as the runtime user in a running, bootstrapped
/// incarnation.
pub fn run_in(
    allocation: &Reference,
    target: &msb::Incarnation,
    request: Command,
) -> Result<CommandResult, Error> {
    let state = match found(msb::inspect(allocation, target))? {
        Some(state) => state,
        None => return Err(Error::NotFound),
    };
    if !vm::bootstrapped(&state) || state.status != msb::VmStatus::Running {
        return Err(Error::RuntimeNotRunning);
    }
    let exact = msb::Incarnation {
        id: Some(state.id),
        ..target.clone()
    };
    let command = VmExec {
        args: request.args,
        working_dir: Some(
            request
                .directory
                .unwrap_or_else(|| bootstrap::WORKING_DIR.into()),
        ),
        stdin: request.stdin,
        as_root: false,
        output_limit_bytes: oac_provider_sdk::bounds::MAX_OUTPUT_BYTES,
    };
    let output = msb::exec(allocation, &exact, &command).map_err(|error| match error {
        VmError::Invalid => Error::Invalid,
        VmError::NotFound => Error::NotFound,
        VmError::Ownership => Error::Ownership,
        _ => Error::CommandUnconfirmed,
    })?;
    Ok(CommandResult {
        stdout: output.stdout,
        stderr: output.stderr,
        exit_code: output.exit_code,
    })
}

/// How many generations an observation looks through for the incarnation
/// Core names (each suspend and resume makes the next one).
const GENERATIONS_OBSERVED: u64 = 32;

/// One sample of the incarnation with exactly `of.provider_id`: never
/// sampled by name alone, and only while it runs.
fn observe(of: Target) -> Result<Sample, Error> {
    let Some(id) = of.provider_id else {
        return Err(Error::NotFound);
    };
    let unavailable = |error: Error| match error {
        Error::ComputeUnconfirmed => Error::ObservationUnavailable,
        other => other,
    };
    // An observation names no ancestry: the host then answers only a VM
    // that carries the allocation's labels.
    let mut exact = None;
    for generation in 0..GENERATIONS_OBSERVED {
        let named = msb::Incarnation {
            generation,
            id: None,
            restored_from: None,
        };
        if let Some(state) = found(msb::inspect(&of.reference, &named)).map_err(unavailable)?
            && state.id == id
        {
            exact = Some((named, state));
            break;
        }
    }
    let Some((named, state)) = exact else {
        return Err(Error::NotFound);
    };
    if state.status != msb::VmStatus::Running {
        return Err(Error::RuntimeNotRunning);
    }
    let target = msb::Incarnation {
        id: Some(state.id),
        ..named
    };
    let sample = msb::metrics(&of.reference, &target).map_err(|error| match error {
        VmError::NotFound => Error::RuntimeNotRunning,
        VmError::Ownership => Error::Ownership,
        _ => Error::ObservationUnavailable,
    })?;
    Ok(Sample {
        cpu_seconds: Some(sample.vcpu_time_ns as f64 / 1e9),
        memory_bytes: sample.memory_bytes,
        memory_limit_bytes: sample.memory_limit_bytes,
        cpus: f64::from(sample.vcpus),
        started_at: started_at(sample.observed_at_ms, sample.uptime_ms),
    })
}

/// When the sampled incarnation started: the sample's own instant less the
/// uptime the runtime measured at that instant (RFC 3339).
fn started_at(observed_at_ms: u64, uptime_ms: u64) -> Option<String> {
    let started = observed_at_ms.checked_sub(uptime_ms)?;
    let instant = std::time::UNIX_EPOCH + std::time::Duration::from_millis(started);
    Some(humantime::format_rfc3339_millis(instant).to_string())
}

fn observe_batch(targets: Vec<Target>) -> Vec<Result<Sample, Error>> {
    targets.into_iter().map(observe).collect()
}

/// The node's readiness, as the host judges it from its helper's probe.
fn probe() -> Vec<Diagnostic> {
    match msb::probe() {
        Ok(readiness) if readiness.ready => Vec::new(),
        Ok(readiness) => vec![match readiness.reason.as_deref() {
            Some("helper_unavailable") => Diagnostic::ProviderUnavailable,
            Some(
                "runtime_version_mismatch" | "runtime_digest_mismatch" | "runtime_home_not_private",
            ) => Diagnostic::ConfigurationInvalid,
            _ => Diagnostic::HostUnsupported,
        }],
        Err(_) => vec![Diagnostic::ProviderUnavailable],
    }
}

impl Sandbox for MicrosandboxProvider {
    fn create(request: Bootstrap) -> Result<Info, Failure> {
        create(request)
    }
    fn get_info(allocation: Reference) -> Result<Info, Error> {
        get_info(allocation)
    }
    fn renew(allocation: Reference) -> Result<Info, Failure> {
        // A microVM has no lease: renewing is observing.
        get_info(allocation).map_err(Failure::from)
    }
    fn kill(allocation: Reference) -> Result<Info, Failure> {
        kill(allocation)
    }
    fn run_command(allocation: Reference, request: Command) -> Result<CommandResult, Error> {
        run_in(&allocation, &vm::first(), request)
    }
}

impl Observe for MicrosandboxProvider {
    fn observe(of: Target) -> Result<Sample, Error> {
        observe(of)
    }
}

impl ObserveBatch for MicrosandboxProvider {
    fn observe_batch(targets: Vec<Target>) -> Result<Vec<Result<Sample, Error>>, Error> {
        Ok(observe_batch(targets))
    }
}

impl Readiness for MicrosandboxProvider {
    fn probe() -> Vec<Diagnostic> {
        probe()
    }
}

/// The public configuration of this node kind is the empty object (the
/// node's file holds the VM policy), with no credential.
impl JsonConfigured for MicrosandboxProvider {
    const CONFIGURATION: JsonConfiguration = JsonConfiguration {
        canonical: oac_provider_sdk::configuration::empty_object,
        credential_fields: &[],
        may_change: |_, _| true,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_starts_its_uptime_before_it_was_taken() {
        assert_eq!(
            started_at(1_700_000_060_500, 60_000).as_deref(),
            Some("2023-11-14T22:13:20.500Z")
        );
        assert_eq!(started_at(5, 6), None, "an uptime longer than the clock");
    }
}
