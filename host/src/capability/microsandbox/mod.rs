//! The `microsandbox` capability: microVMs through the host's helper
//! process (`oac-helper-protocol`, run by [`helper`], never killed). The
//! host derives every VM and snapshot name ([`names`]), owns the VM policy
//! ([`policy`]), applied on create and restore and checked after both,
//! judges the node's readiness ([`readiness`]) and checks ownership,
//! native ids and ancestry on every call ([`imports`]).
//!
//! The capability's parts, as every capability has them: its [`Grant`],
//! its [`Binding`] (the helper, the runtime and the VM policy a node
//! supplies), its [`Broker`] (built once per kind), its per-call state
//! (none beyond what every call has: the call's helpers are counted in
//! [`crate::capability::Call`]), its `View` with its marker and
//! `add_to_linker`.

pub mod helper;
mod imports;
pub mod names;
pub mod policy;
pub mod readiness;

pub use imports::{
    BOOTSTRAP_COMPLETE, BOOTSTRAP_LABEL, BOOTSTRAP_PENDING, OPERATION_LABEL,
    SOURCE_GENERATION_LABEL, SOURCE_ID_LABEL,
};
pub(crate) use imports::{View, add_to_linker};

use crate::capability::boundary::{Boundary, NativeHook};
use helper::Helper;
use oac_helper_protocol::{Operation, Runtime};
use policy::VmPolicy;
use readiness::{Readiness, RuntimePin};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a registry row grants: whether the kind runs microVMs.
pub type Grant = bool;

/// What a node supplies for a kind granted microsandbox.
#[derive(Clone, Debug, Default)]
pub struct Binding {
    /// The helper executable (absolute path).
    pub helper: Option<PathBuf>,
    /// The runtime the helper drives.
    pub runtime: Option<Runtime>,
    /// The runtime the node must have for VMs to be ready: version and
    /// digest of `msb`.
    pub pin: RuntimePin,
    /// The VM policy (`[kinds.<kind>.vm_policy]`).
    pub policy: Option<VmPolicy>,
}

/// One helper operation, as the boundary's hook sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // each is the helper operation of the same name
pub enum VmAction {
    Probe,
    Get,
    Create,
    Exec,
    Relabel,
    Pause,
    Resume,
    KillRemove,
    Capture,
    GetSnapshot,
    Restore,
    RemoveSnapshot,
    Metrics,
}

impl VmAction {
    /// The action of `operation`.
    pub fn of(operation: &Operation) -> Self {
        match operation {
            Operation::Probe => VmAction::Probe,
            Operation::Get { .. } => VmAction::Get,
            Operation::Create { .. } => VmAction::Create,
            Operation::Exec { .. } => VmAction::Exec,
            Operation::Relabel { .. } => VmAction::Relabel,
            Operation::Pause { .. } => VmAction::Pause,
            Operation::Resume { .. } => VmAction::Resume,
            Operation::KillRemove { .. } => VmAction::KillRemove,
            Operation::Capture { .. } => VmAction::Capture,
            Operation::GetSnapshot { .. } => VmAction::GetSnapshot,
            Operation::Restore { .. } => VmAction::Restore,
            Operation::RemoveSnapshot { .. } => VmAction::RemoveSnapshot,
            Operation::Metrics { .. } => VmAction::Metrics,
        }
    }

    /// A stable name, e.g. `vm-kill-remove`.
    pub fn name(self) -> &'static str {
        match self {
            VmAction::Probe => "vm-probe",
            VmAction::Get => "vm-get",
            VmAction::Create => "vm-create",
            VmAction::Exec => "vm-exec",
            VmAction::Relabel => "vm-relabel",
            VmAction::Pause => "vm-pause",
            VmAction::Resume => "vm-resume",
            VmAction::KillRemove => "vm-kill-remove",
            VmAction::Capture => "vm-capture",
            VmAction::GetSnapshot => "vm-get-snapshot",
            VmAction::Restore => "vm-restore",
            VmAction::RemoveSnapshot => "vm-remove-snapshot",
            VmAction::Metrics => "vm-metrics",
        }
    }

    /// True for operations that only read.
    pub fn is_read(self) -> bool {
        matches!(
            self,
            VmAction::Probe | VmAction::Get | VmAction::GetSnapshot | VmAction::Metrics
        )
    }

    /// True for removals (cleanup).
    pub fn is_removal(self) -> bool {
        matches!(self, VmAction::KillRemove | VmAction::RemoveSnapshot)
    }
}

/// How long a readiness judgement is trusted before a create or restore
/// probes again.
pub(crate) const READINESS_TTL: Duration = Duration::from_secs(60);

/// The microVMs of one kind: its helper, its VM policy, the runtime it
/// must find, the boundary every helper call crosses, and the node's last
/// readiness judgement.
#[derive(Clone)]
pub(crate) struct Broker {
    helper: Helper,
    policy: Arc<VmPolicy>,
    pin: RuntimePin,
    boundary: Boundary,
    readiness: Arc<Mutex<Option<(Instant, Readiness)>>>,
}

impl Broker {
    /// The broker of a kind granted `grant` on a node supplying `binding`
    /// (none when the grant or any part of the binding is missing: every
    /// import then answers `denied`).
    pub(crate) fn build(
        grant: Grant,
        binding: &Binding,
        hook: Option<Arc<dyn NativeHook>>,
    ) -> Option<Self> {
        if !grant {
            return None;
        }
        Some(Self {
            helper: Helper::new(binding.helper.clone()?, binding.runtime.clone()?),
            policy: Arc::new(binding.policy.clone()?),
            pin: binding.pin.clone(),
            boundary: Boundary::new(hook),
            readiness: Arc::default(),
        })
    }

    /// Whether the kind's VMs get exactly `access` (the VM policy decides).
    pub(crate) fn enforces(&self, access: oac_provider_api::types::NetworkAccess) -> bool {
        self.policy.enforces(access)
    }

    /// The last readiness judgement, if it is recent enough to act on.
    fn known_readiness(&self) -> Option<Readiness> {
        let known = self
            .readiness
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        known
            .as_ref()
            .filter(|(at, _)| at.elapsed() < READINESS_TTL)
            .map(|(_, readiness)| readiness.clone())
    }

    /// Records a readiness judgement.
    fn learn_readiness(&self, readiness: &Readiness) {
        let mut known = self
            .readiness
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A change of judgement is the operator's to see, with its reason.
        if known.as_ref().map(|(_, before)| before.reason) != Some(readiness.reason) {
            match readiness.reason {
                None => tracing::info!(event = "microsandbox_ready", "the node can run VMs"),
                Some(reason) => tracing::warn!(
                    event = "microsandbox_not_ready",
                    reason,
                    "the node cannot run VMs"
                ),
            }
        }
        *known = Some((Instant::now(), readiness.clone()));
    }
}
