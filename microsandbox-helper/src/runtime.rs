//! The runtime the request names: its home checked and its library set up
//! on it, and the allocation lock files in it.

use oac_helper_protocol::{ErrorCode, Runtime};
use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Points the library at `runtime` (its home, `msb` and `libkrunfw`). The
/// home must be a directory private to its owner (mode 0700, no link):
/// anything else is `invalid`, and nothing is created in it.
pub(crate) async fn open(runtime: &Runtime) -> Result<(), ErrorCode> {
    private_directory(Path::new(&runtime.home))?;
    microsandbox::config::set_sdk_msb_path(&runtime.msb);
    microsandbox::set_libkrunfw_path(&runtime.libkrunfw);
    let backend = microsandbox::LocalBackend::builder()
        .home(&runtime.home)
        .build()
        .await
        .map_err(|_| ErrorCode::Unconfirmed)?;
    microsandbox::set_default_backend(backend);
    Ok(())
}

fn private_directory(path: &Path) -> Result<(), ErrorCode> {
    let meta = std::fs::symlink_metadata(path).map_err(|_| ErrorCode::Invalid)?;
    let private = meta.is_dir() && meta.permissions().mode() & 0o777 == 0o700;
    private.then_some(()).ok_or(ErrorCode::Invalid)
}

/// The lock of the allocation the VM `name` (`<allocation>-g<generation>`)
/// belongs to, held until the returned file is dropped. Waits for it until
/// `deadline_unix_ms`: a helper still working on the allocation keeps it,
/// and this one answers `unconfirmed` rather than interleave.
pub(crate) async fn lock_allocation(
    runtime: &Runtime,
    name: &str,
    deadline_unix_ms: u64,
) -> Result<File, ErrorCode> {
    let allocation = name
        .rsplit_once("-g")
        .map(|(allocation, _)| allocation)
        .filter(|allocation| !allocation.is_empty())
        .ok_or(ErrorCode::Invalid)?;
    let directory = PathBuf::from(&runtime.home).join("oac-locks");
    if std::fs::symlink_metadata(&directory).is_err() {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&directory)
            .map_err(|_| ErrorCode::Unconfirmed)?;
    }
    private_directory(&directory)?;
    let path = directory.join(format!("{allocation}.lock"));
    if std::fs::symlink_metadata(&path).is_ok_and(|meta| !meta.is_file()) {
        return Err(ErrorCode::Invalid);
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|_| ErrorCode::Unconfirmed)?;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if now_ms() < deadline_unix_ms => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(_) => return Err(ErrorCode::Unconfirmed),
        }
    }
}

/// Now, Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
