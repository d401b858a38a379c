//! The `receipts` capability: small durable records of the call's own
//! allocation ([`store`]). An adapter writes a receipt before the native
//! effect it describes, so a crash cannot lose it. A call names only a
//! record's key; the host adds the kind, installation and allocation, so no
//! component reaches another kind's, installation's or allocation's
//! records. Only a call that may change its allocation writes.
//!
//! The capability's parts, as every capability has them: its [`Grant`]
//! (what a registry row grants), its [`Binding`] (what a node supplies),
//! its [`Broker`] (built once per kind), its per-call state (none: a
//! receipt call needs only what every call has, [`Call`]), its [`View`]
//! with the [`Receipts`] marker, and [`add_to_linker`].

mod store;

pub use store::{ReceiptStore, ReceiptStoreError, STORE_FILE};

use crate::bindings::oac::sandbox_provider::receipts::{self, ReceiptsError};
use crate::capability::Call;
use crate::capability::boundary::{Action, Boundary, Crossing, Effect, ImportCall, NativeHook};
use oac_contract::bounds::MAX_RECEIPT_BYTES;
use oac_provider_api::types::Reference;
use std::sync::Arc;
use store::{Address, StoreFailure};

/// What a registry row grants: whether the kind keeps receipts.
pub type Grant = bool;

/// What a node supplies: its store (one per node, shared by its kinds).
pub type Binding = Option<ReceiptStore>;

/// A request to the durable receipt store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // each is the receipts function of the same name
pub enum ReceiptAction {
    Get,
    Put,
    Remove,
}

impl ReceiptAction {
    /// A stable name, e.g. `receipt-put`.
    pub fn name(self) -> &'static str {
        match self {
            ReceiptAction::Get => "receipt-get",
            ReceiptAction::Put => "receipt-put",
            ReceiptAction::Remove => "receipt-remove",
        }
    }

    /// True for a read.
    pub fn is_read(self) -> bool {
        self == ReceiptAction::Get
    }
}

/// The receipts of one kind: its store and the boundary every request
/// crosses (recorded, faults injected, never retried).
#[derive(Clone)]
pub(crate) struct Broker {
    store: ReceiptStore,
    boundary: Boundary,
}

impl Broker {
    /// The broker of a kind granted `grant` on a node supplying `binding`
    /// (none when either is missing: every import answers `denied`).
    pub(crate) fn build(
        grant: Grant,
        binding: &Binding,
        hook: Option<Arc<dyn NativeHook>>,
    ) -> Option<Self> {
        let store = binding.clone().filter(|_| grant)?;
        Some(Self {
            store,
            boundary: Boundary::new(hook),
        })
    }
}

/// What a receipt import sees of its call.
pub(crate) struct View<'a> {
    pub(crate) call: &'a Call,
}

linked_through_view!(Receipts, receipts);

/// The owned parts of a record's address.
struct Owned {
    kind: String,
    installation: String,
    reference: Reference,
    key: String,
}

impl Owned {
    fn address(&self) -> Address<'_> {
        (
            &self.kind,
            &self.installation,
            &self.reference.tenant_id,
            &self.reference.environment_id,
            &self.reference.allocation_id,
            &self.key,
        )
    }
}

/// [`super::refused`] for the receipts policy.
fn refused(rule: &'static str, error: ReceiptsError) -> ReceiptsError {
    super::refused("receipts", rule, error)
}

impl View<'_> {
    /// The broker and the record address for `key`, or why the call may
    /// not reach it (checked before anything is read or written).
    fn receipt(
        &self,
        action: ReceiptAction,
        key: String,
    ) -> Result<(Broker, Owned), ReceiptsError> {
        let capabilities = &self.call.capabilities;
        let broker = capabilities
            .receipts
            .clone()
            .ok_or_else(|| refused("not_granted", ReceiptsError::Denied))?;
        let (function, effect) = match action {
            ReceiptAction::Get => ("get", Effect::Reads),
            ReceiptAction::Put => ("put", Effect::Changes),
            ReceiptAction::Remove => ("remove", Effect::Removes),
        };
        broker.boundary.note_call(ImportCall {
            capability: "receipts",
            function,
            target: &key,
            effect,
        });
        // Only a call that may change its allocation writes: an observation,
        // a probe or a verification may read at most.
        let scope = &self.call.scope;
        if !scope.may_reach() || (!action.is_read() && !scope.may_change()) {
            return Err(refused("call_may_not_write", ReceiptsError::Denied));
        }
        let reference = scope
            .single()
            .ok_or_else(|| refused("not_one_allocation", ReceiptsError::Denied))?
            .clone();
        if !oac_contract::is_valid_reason(&key) {
            return Err(refused("key", ReceiptsError::Invalid));
        }
        Ok((
            broker,
            Owned {
                kind: capabilities.kind.clone(),
                installation: capabilities.installation_id.clone(),
                reference,
                key,
            },
        ))
    }

    /// Runs one store request for `key` across the boundary, on a blocking
    /// thread, within the call's deadline.
    async fn cross<T: Send + 'static>(
        &self,
        action: ReceiptAction,
        key: String,
        request: impl FnOnce(&ReceiptStore, Address<'_>) -> Result<T, StoreFailure> + Send + 'static,
    ) -> Result<Result<T, Crossing<StoreFailure>>, ReceiptsError> {
        let (broker, owned) = self.receipt(action, key)?;
        let decided = broker
            .boundary
            .decide(Action::Receipts(action), &owned.key, false);
        let store = broker.store.clone();
        // The request starts only when the boundary sends it: a request the
        // boundary refuses never touches the store.
        let sending = async move {
            tokio::task::spawn_blocking(move || request(&store, owned.address()))
                .await
                .unwrap_or(Err(StoreFailure::Unconfirmed))
        };
        Ok(broker
            .boundary
            .dispatch(&decided, self.call.deadline, &self.call.in_flight, sending)
            .await)
    }
}

/// A change's outcome as the component sees it.
fn changed(outcome: Result<(), Crossing<StoreFailure>>) -> Result<(), ReceiptsError> {
    outcome.map_err(|crossing| match crossing {
        Crossing::NotSent | Crossing::CleanupFailed => ReceiptsError::Unavailable,
        Crossing::Native(StoreFailure::Unavailable) => ReceiptsError::Unavailable,
        Crossing::Native(StoreFailure::Full) => ReceiptsError::Full,
        Crossing::Lost | Crossing::Native(StoreFailure::Unconfirmed) => ReceiptsError::Unconfirmed,
    })
}

impl receipts::Host for View<'_> {
    async fn get(&mut self, key: String) -> Result<Option<Vec<u8>>, ReceiptsError> {
        self.cross(ReceiptAction::Get, key, |store, address| store.get(address))
            .await?
            .map_err(|_| ReceiptsError::Unavailable)
    }

    async fn put(&mut self, key: String, value: Vec<u8>) -> Result<(), ReceiptsError> {
        if value.len() > MAX_RECEIPT_BYTES {
            // Checked after the scope and key, as before any request.
            self.receipt(ReceiptAction::Put, key)?;
            return Err(refused("record_bound", ReceiptsError::Invalid));
        }
        let outcome = self
            .cross(ReceiptAction::Put, key, move |store, address| {
                store.change(address, Some(&value))
            })
            .await?;
        changed(outcome)
    }

    async fn remove(&mut self, key: String) -> Result<(), ReceiptsError> {
        let outcome = self
            .cross(ReceiptAction::Remove, key, |store, address| {
                store.change(address, None)
            })
            .await?;
        changed(outcome)
    }
}
