//! The host's own record of what each Create settled to: the only thing a
//! later GetInfo, Renew or Kill may rest a `create-settled` claim on
//! ([`Evidence::Recorded`]). The host writes it from a Create's own
//! policed answer, durably and while that Create still holds its
//! allocation's turn, so no later call of the allocation can run before it
//! is there. A component's receipts are its own bookkeeping: it can write
//! them at any time (before a Create that then crashed, or from another
//! call), so they are never evidence.
//!
//! Records live beside the receipts, in the node's (or Core's) store, in a
//! table no capability reaches, keyed by (kind, installation, tenant,
//! environment, allocation). A kind without a store keeps no record: only
//! its Create's own answer may claim settlement.

use crate::capability::receipts::ReceiptStore;
use oac_provider_api::police::{Evidence, Settled};
use oac_provider_api::types::Reference;
use redb::{ReadableDatabase, TableDefinition};

/// (kind, installation, tenant, environment, allocation).
type Key<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str);

const SETTLEMENTS: TableDefinition<Key<'static>, &[u8]> = TableDefinition::new("settlements");

/// The settlement records of one kind and installation.
#[derive(Clone, Debug)]
pub(crate) struct Settlements {
    store: ReceiptStore,
    kind: String,
    installation: String,
}

impl Settlements {
    /// The records of `kind` under `installation` in `store`.
    pub(crate) fn new(store: ReceiptStore, kind: &str, installation: &str) -> Self {
        Self {
            store,
            kind: kind.to_string(),
            installation: installation.to_string(),
        }
    }

    /// Records what a Create of `reference` settled to, committed durably
    /// (fsync'd) before it returns. A failure is logged: the Create's own
    /// answer stands, and later claims go unproved (the safe side).
    pub(crate) async fn record(&self, reference: &Reference, settled: &Settled) {
        let this = self.clone();
        let reference = reference.clone();
        let Ok(value) = serde_json::to_vec(settled) else {
            return;
        };
        let written = tokio::task::spawn_blocking(move || this.write(&reference, &value))
            .await
            .unwrap_or(Err(()));
        if written.is_err() {
            tracing::warn!(kind = %self.kind, event = "settlement_not_recorded", "settlement record failed");
        }
    }

    /// What a Create of `reference` settled to, as evidence for a later
    /// call's claim: [`Evidence::Answer`] (nothing but the answer) when
    /// there is no record or it cannot be read.
    pub(crate) async fn evidence(&self, reference: &Reference) -> Evidence {
        let this = self.clone();
        let reference = reference.clone();
        tokio::task::spawn_blocking(move || this.read(&reference))
            .await
            .ok()
            .flatten()
            .map_or(Evidence::Answer, Evidence::Recorded)
    }

    fn key<'a>(&'a self, reference: &'a Reference) -> Key<'a> {
        (
            &self.kind,
            &self.installation,
            &reference.tenant_id,
            &reference.environment_id,
            &reference.allocation_id,
        )
    }

    fn write(&self, reference: &Reference, value: &[u8]) -> Result<(), ()> {
        let write = self.store.database().begin_write().map_err(|_| ())?;
        {
            let mut table = write.open_table(SETTLEMENTS).map_err(|_| ())?;
            table.insert(self.key(reference), value).map_err(|_| ())?;
        }
        write.commit().map_err(|_| ())
    }

    fn read(&self, reference: &Reference) -> Option<Settled> {
        let read = self.store.database().begin_read().ok()?;
        let table = read.open_table(SETTLEMENTS).ok()?;
        let value = table.get(self.key(reference)).ok()??;
        serde_json::from_slice(value.value()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(allocation: &str) -> Reference {
        Reference::new("t", "e", allocation)
    }

    #[tokio::test]
    async fn a_record_is_kept_per_kind_installation_and_allocation_across_reopening() {
        let dir = tempfile::tempdir().expect("dir");
        {
            let store = ReceiptStore::open(dir.path()).expect("store");
            let records = Settlements::new(store, "k", "inst");
            assert_eq!(records.evidence(&reference("a")).await, Evidence::Answer);
            records
                .record(&reference("a"), &Settled::Present("sbx-1".into()))
                .await;
            records.record(&reference("b"), &Settled::Absent).await;
        }
        let store = ReceiptStore::open(dir.path()).expect("reopen");
        let records = Settlements::new(store.clone(), "k", "inst");
        assert_eq!(
            records.evidence(&reference("a")).await,
            Evidence::Recorded(Settled::Present("sbx-1".into()))
        );
        assert_eq!(
            records.evidence(&reference("b")).await,
            Evidence::Recorded(Settled::Absent)
        );
        for other in [
            Settlements::new(store.clone(), "other-kind", "inst"),
            Settlements::new(store, "k", "other-installation"),
        ] {
            assert_eq!(other.evidence(&reference("a")).await, Evidence::Answer);
        }
    }
}
