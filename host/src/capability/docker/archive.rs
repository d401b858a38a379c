//! Archive uploads, checked and rewritten by the host. The engine extracts
//! a tar as root, honouring owners, modes, links and device nodes, so what
//! reaches it is the host's own canonical archive: only regular files and
//! directories, relative paths without `..`, owner 1000:1000, permission
//! bits without setuid, setgid or sticky. An archive that asks for anything
//! else is refused whole; nothing of the original's headers (PAX records,
//! long-name extensions) survives the rewrite, so the engine's tar reader
//! cannot see something the host's reader did not.

use bytes::Bytes;
use std::path::{Component, Path};

/// Largest archive an upload accepts: 48 MiB (within the hostcall fuel,
/// `HOSTCALL_FUEL`, so it is refused by this check, typed,
/// rather than by a trap).
pub const MAX_ARCHIVE_BYTES: usize = 48 << 20;
/// Most entries one archive may hold.
pub(super) const MAX_ENTRIES: usize = 10_000;
/// The only owner (uid and gid) an entry may have.
pub(super) const OWNER: u64 = 1000;

/// Which rule an archive breaks. Carries nothing from the archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum ArchiveViolation {
    /// Larger than [`MAX_ARCHIVE_BYTES`] or more than [`MAX_ENTRIES`].
    #[error("the archive is too large")]
    TooLarge,
    /// Not a readable tar.
    #[error("the archive is not a readable tar")]
    Malformed,
    /// A link, device node, FIFO or other non-regular entry.
    #[error("the archive holds an entry that is not a file or directory")]
    EntryType,
    /// An absolute path, `..`, `.`, or a path that is not UTF-8.
    #[error("the archive holds a path outside its root")]
    Path,
    /// A setuid, setgid or sticky bit.
    #[error("the archive holds a setuid, setgid or sticky mode")]
    Mode,
    /// An owner other than 1000:1000.
    #[error("the archive holds an entry not owned by 1000:1000")]
    Owner,
}

fn is_relative_path(path: &Path) -> bool {
    path.to_str().is_some()
        && path.components().count() > 0
        && path
            .components()
            .all(|component| matches!(component, Component::Normal(_)))
}

/// Checks `archive` and returns the canonical archive to send, in parts:
/// the host's own headers for each entry, and between them slices of
/// `archive` holding the entries' data (no copy of it is made). Nothing is
/// returned unless every entry passes.
pub(super) fn sanitize(archive: Bytes) -> Result<Vec<Bytes>, ArchiveViolation> {
    if archive.len() > MAX_ARCHIVE_BYTES {
        return Err(ArchiveViolation::TooLarge);
    }
    let mut reader = tar::Archive::new(&archive[..]);
    let entries = reader.entries().map_err(|_| ArchiveViolation::Malformed)?;
    let mut parts = Vec::new();
    let mut count = 0;
    for entry in entries {
        let entry = entry.map_err(|_| ArchiveViolation::Malformed)?;
        count += 1;
        if count > MAX_ENTRIES {
            return Err(ArchiveViolation::TooLarge);
        }
        let kind = entry.header().entry_type();
        let directory = match kind {
            tar::EntryType::Regular => false,
            tar::EntryType::Directory => true,
            _ => return Err(ArchiveViolation::EntryType),
        };
        let path = entry
            .path()
            .map_err(|_| ArchiveViolation::Path)?
            .into_owned();
        if !is_relative_path(&path) {
            return Err(ArchiveViolation::Path);
        }
        let header = entry.header();
        let mode = header.mode().map_err(|_| ArchiveViolation::Malformed)?;
        if mode & 0o7000 != 0 {
            return Err(ArchiveViolation::Mode);
        }
        let owner = (header.uid(), header.gid());
        if !matches!(owner, (Ok(OWNER), Ok(OWNER))) {
            return Err(ArchiveViolation::Owner);
        }
        let mtime = header.mtime().unwrap_or(0);
        // The entry's data as it lies in the archive (a directory has none).
        let data = if directory {
            Bytes::new()
        } else {
            let start = usize::try_from(entry.raw_file_position())
                .map_err(|_| ArchiveViolation::Malformed)?;
            let end = usize::try_from(entry.size())
                .ok()
                .and_then(|size| start.checked_add(size))
                .filter(|end| *end <= archive.len())
                .ok_or(ArchiveViolation::Malformed)?;
            archive.slice(start..end)
        };
        let mut canonical = tar::Header::new_gnu();
        canonical.set_entry_type(if directory {
            tar::EntryType::Directory
        } else {
            tar::EntryType::Regular
        });
        canonical.set_mode(mode & 0o777);
        canonical.set_uid(OWNER);
        canonical.set_gid(OWNER);
        canonical.set_mtime(mtime);
        canonical.set_size(data.len() as u64);
        parts.push(headers_of(&mut canonical, &path)?);
        let padding = data.len().next_multiple_of(BLOCK) - data.len();
        parts.push(data);
        parts.push(Bytes::from_static(&ZEROS[..padding]));
    }
    // The end of the archive: two zero blocks.
    parts.push(Bytes::from_static(&ZEROS[..2 * BLOCK]));
    Ok(parts)
}

/// A tar block.
const BLOCK: usize = 512;
/// Zero bytes for padding and the archive's end.
static ZEROS: [u8; 2 * BLOCK] = [0; 2 * BLOCK];

/// The header blocks of one entry as the tar crate writes them (a long path
/// takes a GNU long-name entry before the header), without its data.
fn headers_of(header: &mut tar::Header, path: &Path) -> Result<Bytes, ArchiveViolation> {
    let mut builder = tar::Builder::new(Vec::with_capacity(2 * BLOCK));
    builder
        .append_data(header, path, std::io::empty())
        .map_err(|_| ArchiveViolation::Malformed)?;
    // Taken before the builder ends the archive on drop.
    Ok(Bytes::copy_from_slice(builder.get_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    struct Entry<'a> {
        path: &'a str,
        kind: tar::EntryType,
        mode: u32,
        owner: u64,
        content: &'a [u8],
    }

    fn file<'a>(path: &'a str, content: &'a [u8]) -> Entry<'a> {
        Entry {
            path,
            kind: tar::EntryType::Regular,
            mode: 0o600,
            owner: OWNER,
            content,
        }
    }

    /// Writes raw headers, so paths the tar crate's builder would refuse
    /// (absolute, `..`) can be written too.
    fn tar_of(entries: &[Entry<'_>]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for entry in entries {
            let mut header = tar::Header::new_ustar();
            let name = entry.path.as_bytes();
            header.as_old_mut().name[..name.len()].copy_from_slice(name);
            header.set_entry_type(entry.kind);
            header.set_mode(entry.mode);
            header.set_uid(entry.owner);
            header.set_gid(entry.owner);
            header.set_size(entry.content.len() as u64);
            if entry.kind == tar::EntryType::Symlink {
                header.set_link_name("/etc/shadow").expect("link name");
            }
            header.set_cksum();
            bytes.extend_from_slice(header.as_bytes());
            bytes.extend_from_slice(entry.content);
            bytes.resize(bytes.len().div_ceil(512) * 512, 0);
        }
        bytes.extend_from_slice(&[0; 1024]);
        bytes
    }

    fn read_back(archive: &[u8]) -> Vec<(String, u32, u64, u64, Vec<u8>)> {
        let mut reader = tar::Archive::new(archive);
        reader
            .entries()
            .expect("entries")
            .map(|entry| {
                let mut entry = entry.expect("entry");
                let header = entry.header().clone();
                let mut content = Vec::new();
                entry.read_to_end(&mut content).expect("content");
                (
                    entry.path().expect("path").display().to_string(),
                    header.mode().expect("mode"),
                    header.uid().expect("uid"),
                    header.gid().expect("gid"),
                    content,
                )
            })
            .collect()
    }

    #[test]
    fn files_and_directories_pass_and_are_rewritten_canonically() {
        let directory = Entry {
            kind: tar::EntryType::Directory,
            mode: 0o700,
            ..file("runtime", b"")
        };
        let archive = tar_of(&[directory, file("runtime/record.json", b"{}")]);
        let rebuilt = sanitize(Bytes::from(archive)).expect("accepted");
        assert_eq!(
            read_back(&rebuilt.concat()),
            vec![
                ("runtime".into(), 0o700, OWNER, OWNER, vec![]),
                (
                    "runtime/record.json".into(),
                    0o600,
                    OWNER,
                    OWNER,
                    b"{}".to_vec()
                ),
            ]
        );
    }

    #[test]
    fn data_is_sliced_not_copied_and_long_paths_keep_their_extension() {
        let long = format!("deep/{}/file", "d".repeat(120));
        let data = vec![7u8; 5_000];
        let mut builder = tar::Builder::new(Vec::new());
        for (path, content) in [(long.as_str(), data.as_slice()), ("short", b"x")] {
            let mut header = tar::Header::new_gnu();
            header.set_size(content.len() as u64);
            header.set_mode(0o600);
            header.set_uid(OWNER);
            header.set_gid(OWNER);
            builder
                .append_data(&mut header, path, content)
                .expect("entry");
        }
        let archive = Bytes::from(builder.into_inner().expect("tar"));
        let parts = sanitize(archive.clone()).expect("accepted");
        // The data part lies inside the component's own bytes.
        let inside = |part: &Bytes| {
            let (start, end) = (
                archive.as_ptr() as usize,
                archive.as_ptr() as usize + archive.len(),
            );
            let at = part.as_ptr() as usize;
            at >= start && at + part.len() <= end
        };
        assert!(
            parts
                .iter()
                .any(|part| part.len() == data.len() && inside(part))
        );
        let back = read_back(&parts.concat());
        assert_eq!(back[0].0, long);
        assert_eq!(back[0].4, data);
        assert_eq!(back[1].0, "short");
    }

    #[test]
    fn each_dangerous_entry_is_refused() {
        let special = [
            (tar::EntryType::Char, "kmsg"),
            (tar::EntryType::Block, "sda"),
            (tar::EntryType::Fifo, "pipe"),
            (tar::EntryType::Symlink, "link"),
            (tar::EntryType::Link, "hard"),
        ]
        .map(|(kind, name)| {
            (
                Entry {
                    kind,
                    ..file(name, b"")
                },
                ArchiveViolation::EntryType,
            )
        });
        let cases = [
            (
                Entry {
                    mode: 0o4755,
                    ..file("suid", b"x")
                },
                ArchiveViolation::Mode,
            ),
            (
                Entry {
                    mode: 0o2755,
                    ..file("sgid", b"x")
                },
                ArchiveViolation::Mode,
            ),
            (file("/etc/passwd", b"x"), ArchiveViolation::Path),
            (file("../escape", b"x"), ArchiveViolation::Path),
            (file("a/../../escape", b"x"), ArchiveViolation::Path),
            (
                Entry {
                    owner: 0,
                    ..file("root-owned", b"x")
                },
                ArchiveViolation::Owner,
            ),
        ];
        for (entry, violation) in special.into_iter().chain(cases) {
            let path = entry.path;
            let archive = tar_of(&[file("fine", b"ok"), entry]);
            assert_eq!(sanitize(Bytes::from(archive)), Err(violation), "{path}");
        }
    }

    #[test]
    fn a_pax_owner_override_is_read_and_refused() {
        // The ustar header says 1000:1000, a PAX record before it says root:
        // the engine's reader would honour the record, so the host must too.
        let pax = Entry {
            kind: tar::EntryType::XHeader,
            ..file("PaxHeaders/file", b"8 uid=0\n8 gid=0\n")
        };
        let archive = tar_of(&[pax, file("file", b"x")]);
        assert_eq!(sanitize(Bytes::from(archive)), Err(ArchiveViolation::Owner));
    }

    #[test]
    fn garbage_and_oversized_archives_are_refused() {
        assert_eq!(
            sanitize(Bytes::from(vec![1; 700])),
            Err(ArchiveViolation::Malformed)
        );
        assert_eq!(
            sanitize(Bytes::from(vec![0; MAX_ARCHIVE_BYTES + 1])),
            Err(ArchiveViolation::TooLarge)
        );
    }
}
