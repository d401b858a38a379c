//! The runtime's two seccomp profiles: the upstream Moby default profile,
//! pinned by digest, as it is (`seccomp.json`), and the same plus exactly
//! one appended rule that lets the sandbox build nested sandboxes (new
//! namespaces, mounts, pivot_root; `seccomp-nested.json`), which only a
//! policy with `nested_sandbox` may use ([`allows_nesting`] tells them
//! apart, and the host refuses the second without it).
//!
//! This crate commits the pin, the rule and the assembler, never the
//! upstream bytes: [`assemble_files`] reads the upstream profile and its
//! licence from paths, refuses any other digest, and writes both profiles
//! and `seccomp.LICENSE`.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Where the upstream profile comes from.
pub const UPSTREAM_REPOSITORY: &str = "moby/profiles";
/// The upstream file within that repository.
pub const UPSTREAM_PATH: &str = "seccomp/default.json";
/// The pinned upstream commit.
pub const UPSTREAM_COMMIT: &str = "65adc7e022c97f55e45c054ff012988027733b87";
/// SHA-256 of the upstream file at that commit.
pub const UPSTREAM_SHA256: &str =
    "785b2429264afba4d594320337cb17f144f3c7d51585f9805eef72e28f4f9334";
/// The upstream licence.
pub const UPSTREAM_LICENSE: &str = "Apache-2.0";

/// The syscalls the appended rule allows.
pub const APPENDED_SYSCALLS: [&str; 6] = [
    "clone",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
];

/// The one rule this project adds to the upstream profile.
pub fn appended_rule() -> Value {
    json!({
        "names": APPENDED_SYSCALLS,
        "action": "SCMP_ACT_ALLOW",
        "comment": "oac: nested sandboxes need new namespaces, mounts and pivot_root"
    })
}

/// Why a profile cannot be assembled.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    /// The upstream file is not the pinned one.
    #[error("upstream profile has SHA-256 {found}, expected the pinned {UPSTREAM_SHA256}")]
    Digest {
        /// The digest of the file given.
        found: String,
    },
    /// The pinned bytes are not a profile with a `syscalls` list.
    #[error("upstream profile is not a seccomp profile with a syscalls list")]
    Shape,
    /// A file cannot be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// `reading` or `writing`.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// The file name of the profile without nesting.
pub const PROFILE_FILE: &str = "seccomp.json";
/// The file name of the profile with the nesting rule.
pub const NESTED_PROFILE_FILE: &str = "seccomp-nested.json";

/// The profile for containers that build no nested sandbox: the upstream
/// document, checked against the pin, as it is.
pub fn assemble(upstream: &[u8]) -> Result<Value, SeccompError> {
    let found = hex::encode(Sha256::digest(upstream));
    if found != UPSTREAM_SHA256 {
        return Err(SeccompError::Digest { found });
    }
    let profile: Value = serde_json::from_slice(upstream).map_err(|_| SeccompError::Shape)?;
    if !profile.get("syscalls").is_some_and(Value::is_array) {
        return Err(SeccompError::Shape);
    }
    Ok(profile)
}

/// The profile for policies with `nested_sandbox`: [`assemble`]'s with
/// [`appended_rule`] added as the last entry of `syscalls`.
pub fn assemble_nested(upstream: &[u8]) -> Result<Value, SeccompError> {
    let mut profile = assemble(upstream)?;
    profile
        .get_mut("syscalls")
        .and_then(Value::as_array_mut)
        .ok_or(SeccompError::Shape)?
        .push(appended_rule());
    Ok(profile)
}

/// Whether `profile` lets a process use any of [`APPENDED_SYSCALLS`]
/// unconditionally: a rule that allows one of them with no argument
/// conditions and no capability or architecture it depends on (what the
/// appended rule does; upstream allows them only with `CAP_SYS_ADMIN`,
/// which every container drops, or with argument filters). A profile
/// that does so is for nested sandboxes only.
pub fn allows_nesting(profile: &Value) -> bool {
    let Some(rules) = profile.get("syscalls").and_then(Value::as_array) else {
        return false;
    };
    let empty = |rule: &Value, key: &str| match rule.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(map)) => map.is_empty(),
        Some(_) => false,
    };
    rules.iter().any(|rule| {
        let allows = rule.get("action").and_then(Value::as_str) == Some("SCMP_ACT_ALLOW");
        let names = rule.get("names").and_then(Value::as_array);
        let names_one = names.is_some_and(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .any(|name| APPENDED_SYSCALLS.contains(&name))
        });
        allows && names_one && empty(rule, "args") && empty(rule, "includes")
    }) || profile.get("defaultAction").and_then(Value::as_str) == Some("SCMP_ACT_ALLOW")
}

/// `profile` as `seccomp.json` holds it (indented, one trailing line
/// break): the text a node's policy reads and sends with every container.
pub fn file_text(profile: &Value) -> Result<Vec<u8>, SeccompError> {
    let mut text = serde_json::to_vec_pretty(profile).map_err(|_| SeccompError::Shape)?;
    text.push(b'\n');
    Ok(text)
}

/// The provenance header written before the upstream licence.
pub fn provenance() -> String {
    format!(
        "{PROFILE_FILE} is {UPSTREAM_PATH} from {UPSTREAM_REPOSITORY} at commit {UPSTREAM_COMMIT}\n\
         (SHA-256 {UPSTREAM_SHA256}, licence {UPSTREAM_LICENSE}); {NESTED_PROFILE_FILE} is the\n\
         same with one rule appended that allows: {}.\n\nThe upstream licence follows.\n\n",
        APPENDED_SYSCALLS.join(", ")
    )
}

fn read(path: &Path) -> Result<Vec<u8>, SeccompError> {
    std::fs::read(path).map_err(|source| SeccompError::Io {
        action: "reading",
        path: path.to_path_buf(),
        source,
    })
}

fn write(path: PathBuf, bytes: &[u8]) -> Result<PathBuf, SeccompError> {
    std::fs::write(&path, bytes).map_err(|source| SeccompError::Io {
        action: "writing",
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// What [`assemble_files`] wrote.
#[derive(Debug)]
pub struct Assembled {
    /// `seccomp.json`: the profile without nesting.
    pub profile: PathBuf,
    /// `seccomp-nested.json`: the profile for `nested_sandbox` policies.
    pub nested: PathBuf,
    /// `seccomp.LICENSE`: provenance and the upstream licence.
    pub license: PathBuf,
}

/// Reads the upstream profile and licence, assembles both profiles, and
/// writes them and `seccomp.LICENSE` into `out`.
pub fn assemble_files(
    upstream: &Path,
    license: &Path,
    out: &Path,
) -> Result<Assembled, SeccompError> {
    let upstream = read(upstream)?;
    let (plain, nested) = (assemble(&upstream)?, assemble_nested(&upstream)?);
    let license = read(license)?;
    std::fs::create_dir_all(out).map_err(|source| SeccompError::Io {
        action: "writing",
        path: out.to_path_buf(),
        source,
    })?;
    let profile = write(out.join(PROFILE_FILE), &file_text(&plain)?)?;
    let nested = write(out.join(NESTED_PROFILE_FILE), &file_text(&nested)?)?;
    let mut notice = provenance().into_bytes();
    notice.extend_from_slice(&license);
    let license = write(out.join("seccomp.LICENSE"), &notice)?;
    Ok(Assembled {
        profile,
        nested,
        license,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The upstream copy kept beside the repository (never committed).
    fn upstream_dir() -> Option<PathBuf> {
        let dir = std::env::var_os("OAC_SECCOMP_UPSTREAM")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/seccomp-upstream")
            });
        if dir.join("moby-default-65adc7e.json").exists() {
            Some(dir)
        } else if std::env::var("CI").is_ok() {
            panic!(
                "the upstream seccomp profile is missing at {}",
                dir.display()
            )
        } else {
            eprintln!("SKIPPED: no upstream seccomp profile at {}", dir.display());
            None
        }
    }

    #[test]
    fn any_other_digest_is_refused() {
        assert!(matches!(
            assemble(br#"{"syscalls":[]}"#),
            Err(SeccompError::Digest { .. })
        ));
        assert!(matches!(assemble(b""), Err(SeccompError::Digest { .. })));
    }

    #[test]
    fn the_plain_profile_is_upstream_and_allows_no_nesting() {
        let Some(dir) = upstream_dir() else { return };
        let upstream_bytes =
            std::fs::read(dir.join("moby-default-65adc7e.json")).expect("upstream");
        let upstream: Value = serde_json::from_slice(&upstream_bytes).expect("json");
        let plain = assemble(&upstream_bytes).expect("assembles");
        assert_eq!(plain, upstream);
        assert!(
            !allows_nesting(&plain),
            "upstream allows them only with CAP_SYS_ADMIN"
        );
        assert!(allows_nesting(
            &assemble_nested(&upstream_bytes).expect("nested")
        ));
    }

    #[test]
    fn nesting_is_any_unconditional_allow_of_a_nesting_syscall() {
        let profile =
            |rule: Value| json!({ "defaultAction": "SCMP_ACT_ERRNO", "syscalls": [rule] });
        assert!(allows_nesting(&profile(appended_rule())));
        assert!(allows_nesting(&profile(
            json!({ "names": ["read", "unshare"], "action": "SCMP_ACT_ALLOW", "args": [] })
        )));
        for conditional in [
            json!({ "names": ["unshare"], "action": "SCMP_ACT_ALLOW",
                    "includes": { "caps": ["CAP_SYS_ADMIN"] } }),
            json!({ "names": ["clone"], "action": "SCMP_ACT_ALLOW",
                    "args": [{ "index": 0, "value": 2114060288, "op": "SCMP_CMP_MASKED_EQ" }] }),
            json!({ "names": ["unshare"], "action": "SCMP_ACT_ERRNO" }),
            json!({ "names": ["read"], "action": "SCMP_ACT_ALLOW" }),
        ] {
            assert!(
                !allows_nesting(&profile(conditional.clone())),
                "{conditional}"
            );
        }
        assert!(allows_nesting(
            &json!({ "defaultAction": "SCMP_ACT_ALLOW", "syscalls": [] })
        ));
    }

    #[test]
    fn the_nested_profile_is_upstream_plus_exactly_one_rule() {
        let Some(dir) = upstream_dir() else { return };
        let upstream_bytes =
            std::fs::read(dir.join("moby-default-65adc7e.json")).expect("upstream");
        let upstream: Value = serde_json::from_slice(&upstream_bytes).expect("json");
        let assembled = assemble_nested(&upstream_bytes).expect("assembles");
        let (before, after) = (
            upstream["syscalls"].as_array().expect("list"),
            assembled["syscalls"].as_array().expect("list"),
        );
        assert_eq!(after.len(), before.len() + 1);
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "upstream rules unchanged and in order"
        );
        assert_eq!(after[before.len()], appended_rule());
        let mut rest = assembled.clone();
        rest.as_object_mut().expect("object").remove("syscalls");
        let mut upstream_rest = upstream.clone();
        upstream_rest
            .as_object_mut()
            .expect("object")
            .remove("syscalls");
        assert_eq!(
            rest, upstream_rest,
            "everything outside syscalls is upstream's"
        );
    }

    #[test]
    fn files_are_written_with_provenance_and_licence() {
        let Some(dir) = upstream_dir() else { return };
        let out = tempfile::tempdir().expect("tempdir");
        let assembled = assemble_files(
            &dir.join("moby-default-65adc7e.json"),
            &dir.join("LICENSE"),
            out.path(),
        )
        .expect("assembled");
        let read = |path: &Path| -> Value {
            serde_json::from_slice(&std::fs::read(path).expect("json")).expect("parse")
        };
        let (plain, nested) = (read(&assembled.profile), read(&assembled.nested));
        assert!(!allows_nesting(&plain));
        assert_eq!(
            nested["syscalls"].as_array().and_then(|list| list.last()),
            Some(&appended_rule())
        );
        let notice = std::fs::read_to_string(assembled.license).expect("licence");
        assert!(notice.starts_with(&provenance()));
        assert!(notice.contains("Apache License"));
    }

    #[test]
    fn a_tampered_upstream_file_is_refused_by_path() {
        let Some(dir) = upstream_dir() else { return };
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut bytes = std::fs::read(dir.join("moby-default-65adc7e.json")).expect("upstream");
        bytes.push(b'\n');
        let tampered = tmp.path().join("default.json");
        std::fs::write(&tampered, bytes).expect("write");
        let outcome = assemble_files(&tampered, &dir.join("LICENSE"), &tmp.path().join("out"));
        assert!(matches!(outcome, Err(SeccompError::Digest { .. })));
        assert!(
            !tmp.path().join("out/seccomp.json").exists(),
            "nothing written"
        );
    }
}
