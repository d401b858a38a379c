//! The tar archives Create uploads into the volumes: the Runtime bootstrap
//! file under /home and the /environment directories. Entries carry explicit
//! parent directories, owners and modes, so nothing depends on the engine's
//! defaults.

use oac_provider_sdk::types::Bootstrap;

/// Owner of everything the runtime user touches.
pub const RUNTIME_UID: u64 = 1000;
/// Directory of the bootstrap file, relative to /home.
pub const BOOTSTRAP_DIR: &str = "runtime";
/// Bootstrap file, relative to /home.
pub const BOOTSTRAP_FILE: &str = "runtime/runtime-bootstrap.json";
/// Absolute path the daemon reads.
pub const BOOTSTRAP_PATH: &str = "/home/runtime/runtime-bootstrap.json";
/// Directories created under /environment.
pub const ENVIRONMENT_DIRS: [&str; 4] = ["workspace", "staging", "initialization", "packages"];
/// Version of the bootstrap record.
pub const BOOTSTRAP_VERSION: u32 = 1;

/// The daemon connection record: the only place the daemon credential goes.
pub fn bootstrap_record(request: &Bootstrap) -> Vec<u8> {
    let record = serde_json::json!({
        "version": BOOTSTRAP_VERSION,
        "core_url": request.core_url,
        "device_id": request.device_id,
        "daemon_credential": request.daemon_credential,
        "harness": request.harness,
    });
    serde_json::to_vec(&record).unwrap_or_default()
}

fn header(path: &str, mode: u32, size: u64, directory: bool) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    // Paths here are short constants; set_path only fails on over-long names.
    let _ = header.set_path(path);
    header.set_mode(mode);
    header.set_uid(RUNTIME_UID);
    header.set_gid(RUNTIME_UID);
    header.set_size(size);
    header.set_mtime(0);
    header.set_entry_type(if directory {
        tar::EntryType::Directory
    } else {
        tar::EntryType::Regular
    });
    header.set_cksum();
    header
}

fn archive(entries: &[(&str, u32, Option<&[u8]>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, mode, content) in entries {
        let bytes = content.unwrap_or_default();
        let header = header(path, *mode, bytes.len() as u64, content.is_none());
        // Appending to an in-memory Vec cannot fail.
        let _ = builder.append(&header, bytes);
    }
    builder.into_inner().unwrap_or_default()
}

/// Archive for /home: `runtime/` (0700) and the bootstrap file (0600).
pub fn home_archive(record: &[u8]) -> Vec<u8> {
    archive(&[
        (BOOTSTRAP_DIR, 0o700, None),
        (BOOTSTRAP_FILE, 0o600, Some(record)),
    ])
}

/// Archive for /environment: its four directories (0755).
pub fn environment_archive() -> Vec<u8> {
    let entries: Vec<(&str, u32, Option<&[u8]>)> = ENVIRONMENT_DIRS
        .iter()
        .map(|dir| (*dir, 0o755, None))
        .collect();
    archive(&entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_home_archive_holds_the_record_with_owner_and_modes() {
        let record = br#"{"daemon_credential":"secret"}"#;
        let bytes = home_archive(record);
        let mut archive = tar::Archive::new(bytes.as_slice());
        let mut seen = Vec::new();
        for entry in archive.entries().expect("entries") {
            let mut entry = entry.expect("entry");
            let header = entry.header().clone();
            let mut content = Vec::new();
            entry.read_to_end(&mut content).expect("read");
            seen.push((
                entry.path().expect("path").to_string_lossy().into_owned(),
                header.mode().expect("mode"),
                header.uid().expect("uid"),
                content,
            ));
        }
        assert_eq!(seen[0], ("runtime".into(), 0o700, 1000, vec![]));
        assert_eq!(
            seen[1],
            (
                "runtime/runtime-bootstrap.json".into(),
                0o600,
                1000,
                record.to_vec()
            )
        );
    }
}
