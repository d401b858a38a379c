//! Containers one call has already proven its own. An ownership proof is
//! an inspection showing the call's labels on a container named by its
//! full id; labels and the host's container settings cannot change after
//! create (the Engine API has no call to relabel a container, and the
//! broker never updates one), and a full id is never reused. So within one
//! call a second request on the same id rests on the first proof instead
//! of inspecting again. A name is always resolved again (it can be given
//! to another container once the first is removed).

use std::collections::HashMap;
use std::sync::Mutex;

/// What an inspection proved about one container of this call.
#[derive(Clone, Debug)]
pub(crate) struct Proof {
    /// The first policy field it does not carry, if any (without one it
    /// is usable, not only removable).
    pub nonconformity: Option<&'static str>,
    /// Where its mounts are, inside the container.
    pub mount_targets: Vec<String>,
}

/// The proofs of one call (it lives in the call's store).
#[derive(Debug, Default)]
pub(crate) struct ProvenContainers(Mutex<HashMap<String, Proof>>);

impl ProvenContainers {
    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, Proof>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The proof about the container whose full id is `id`, if any.
    pub(crate) fn get(&self, id: &str) -> Option<Proof> {
        self.held().get(id).cloned()
    }

    /// Records what an inspection of `id` (a full id) proved.
    pub(crate) fn record(&self, id: &str, proof: Proof) {
        self.held().insert(id.to_string(), proof);
    }

    /// Forgets `id` (it was removed).
    pub(crate) fn forget(&self, id: &str) {
        self.held().remove(id);
    }
}
