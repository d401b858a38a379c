//! The durable store behind the `receipts` capability: an embedded redb
//! database in the node's (or Core's) state directory, private to its
//! owner, one process at a time. A change returns only once its commit is
//! fsync'd. Records are keyed by (kind, installation, tenant, environment,
//! allocation, key); at most [`MAX_RECEIPTS_PER_ALLOCATION`] per allocation.

use oac_contract::bounds::MAX_RECEIPTS_PER_ALLOCATION;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The store's file in a state directory.
pub const STORE_FILE: &str = "receipts.redb";

/// (kind, installation, tenant, environment, allocation, key).
pub(super) type Address<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str, &'a str);

const RECORDS: TableDefinition<Address<'static>, &[u8]> = TableDefinition::new("receipts");

/// Above every key byte (`[a-z0-9_]`): the end of one allocation's range.
const PAST_EVERY_KEY: &str = "\u{7f}";

/// The durable receipt store of a node (or of Core's direct kinds). One
/// process holds it at a time: a second open of the same file is refused.
#[derive(Clone)]
pub struct ReceiptStore {
    database: Arc<redb::Database>,
}

impl std::fmt::Debug for ReceiptStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReceiptStore")
    }
}

/// Why the store cannot be opened. Names the directory, never a record.
#[derive(Debug, thiserror::Error)]
pub enum ReceiptStoreError {
    /// The state directory cannot be created, or others may read it.
    #[error(
        "state directory {0}: cannot be created, or is readable by group or others (chmod 700)"
    )]
    Directory(PathBuf),
    /// The store file cannot be opened (damaged, or held by another process).
    #[error(
        "state directory {0}: the receipt store cannot be opened (damaged, or held by another process)"
    )]
    Open(PathBuf),
}

/// Why a store operation did not happen as asked.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StoreFailure {
    /// Nothing changed.
    Unavailable,
    /// The allocation holds the most records allowed.
    Full,
    /// The commit failed: the change may or may not be durable.
    Unconfirmed,
}

impl ReceiptStore {
    /// Opens (or creates) the store in `state_dir`, creating the directory
    /// private to its owner. A directory others may write to is refused:
    /// they could replace the store.
    pub fn open(state_dir: &Path) -> Result<Self, ReceiptStoreError> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let directory = || ReceiptStoreError::Directory(state_dir.to_path_buf());
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(state_dir)
            .map_err(|_| directory())?;
        let mode = std::fs::metadata(state_dir)
            .map_err(|_| directory())?
            .permissions()
            .mode();
        if mode & 0o022 != 0 {
            return Err(directory());
        }
        let database = redb::Database::create(state_dir.join(STORE_FILE))
            .map_err(|_| ReceiptStoreError::Open(state_dir.to_path_buf()))?;
        Ok(Self {
            database: Arc::new(database),
        })
    }

    /// The store's database, for the host's own tables
    /// ([`crate::settlement`]).
    pub(crate) fn database(&self) -> &redb::Database {
        &self.database
    }

    /// The record at `address`.
    pub(super) fn get(&self, address: Address<'_>) -> Result<Option<Vec<u8>>, StoreFailure> {
        let read = self
            .database
            .begin_read()
            .map_err(|_| StoreFailure::Unavailable)?;
        let table = match read.open_table(RECORDS) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(_) => return Err(StoreFailure::Unavailable),
        };
        let value = table.get(address).map_err(|_| StoreFailure::Unavailable)?;
        Ok(value.map(|value| value.value().to_vec()))
    }

    /// Writes `value` at `address` (or removes the record for `None`) and
    /// commits durably.
    pub(super) fn change(
        &self,
        address: Address<'_>,
        value: Option<&[u8]>,
    ) -> Result<(), StoreFailure> {
        let write = self
            .database
            .begin_write()
            .map_err(|_| StoreFailure::Unavailable)?;
        {
            let mut table = write
                .open_table(RECORDS)
                .map_err(|_| StoreFailure::Unavailable)?;
            match value {
                Some(value) => {
                    let (kind, installation, tenant, environment, allocation, _) = address;
                    let first = (kind, installation, tenant, environment, allocation, "");
                    let past = (
                        kind,
                        installation,
                        tenant,
                        environment,
                        allocation,
                        PAST_EVERY_KEY,
                    );
                    let held = table
                        .range(first..past)
                        .map_err(|_| StoreFailure::Unavailable)?
                        .count();
                    let replaces = table
                        .get(address)
                        .map_err(|_| StoreFailure::Unavailable)?
                        .is_some();
                    if !replaces && held >= MAX_RECEIPTS_PER_ALLOCATION {
                        return Err(StoreFailure::Full);
                    }
                    table
                        .insert(address, value)
                        .map_err(|_| StoreFailure::Unavailable)?;
                }
                None => {
                    table
                        .remove(address)
                        .map_err(|_| StoreFailure::Unavailable)?;
                }
            }
        }
        // The default durability is immediate: the commit is fsync'd before
        // it returns. A failed commit may still have reached the disk.
        write.commit().map_err(|_| StoreFailure::Unconfirmed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address<'a>(allocation: &'a str, key: &'a str) -> Address<'a> {
        ("kind", "inst", "t", "e", allocation, key)
    }

    #[test]
    fn records_are_kept_per_allocation_and_survive_reopening() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        {
            let store = ReceiptStore::open(&state).expect("open");
            store
                .change(address("a", "create_pending"), Some(b"one"))
                .expect("put");
            store
                .change(address("b", "create_pending"), Some(b"two"))
                .expect("put");
            assert_eq!(
                store.get(address("a", "create_pending")),
                Ok(Some(b"one".to_vec()))
            );
            assert_eq!(store.get(address("c", "create_pending")), Ok(None));
        }
        let store = ReceiptStore::open(&state).expect("reopen");
        assert_eq!(
            store.get(address("b", "create_pending")),
            Ok(Some(b"two".to_vec()))
        );
        store
            .change(address("b", "create_pending"), None)
            .expect("remove");
        assert_eq!(store.get(address("b", "create_pending")), Ok(None));
        assert_eq!(
            store.get(address("a", "create_pending")),
            Ok(Some(b"one".to_vec()))
        );
    }

    #[test]
    fn an_allocation_holds_at_most_its_quota_of_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ReceiptStore::open(dir.path()).expect("open");
        let keys: Vec<String> = (0..MAX_RECEIPTS_PER_ALLOCATION)
            .map(|index| format!("k{index}"))
            .collect();
        for key in &keys {
            store.change(address("a", key), Some(b"x")).expect("put");
        }
        assert_eq!(
            store.change(address("a", "one_more"), Some(b"x")),
            Err(StoreFailure::Full)
        );
        // Replacing a held record and another allocation's records are fine.
        store
            .change(address("a", "k0"), Some(b"y"))
            .expect("replace");
        store.change(address("b", "k0"), Some(b"x")).expect("other");
        store.change(address("a", "k1"), None).expect("remove");
        store
            .change(address("a", "one_more"), Some(b"x"))
            .expect("room again");
    }

    #[test]
    fn a_second_open_and_a_shared_directory_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let _held = ReceiptStore::open(dir.path()).expect("open");
        assert!(matches!(
            ReceiptStore::open(dir.path()),
            Err(ReceiptStoreError::Open(_))
        ));
        let shared = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o775))
            .expect("chmod");
        assert!(matches!(
            ReceiptStore::open(shared.path()),
            Err(ReceiptStoreError::Directory(_))
        ));
    }
}
