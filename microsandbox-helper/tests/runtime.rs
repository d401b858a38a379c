//! The helper against the real runtime (`scripts/microsandbox-runtime.sh`
//! installs it; `OAC_MICROSANDBOX_RUNTIME` names its directory): the paths
//! that need no VM. The probe, lookups that find nothing, cleanup of what
//! is absent, a create whose image cannot be pulled, and the refusals. Without a runtime the tests say so and
//! pass, unless `OAC_REQUIRE_MICROSANDBOX=1` (CI) makes that a failure.

use oac_helper_protocol::{
    ErrorCode, ExecCommand, Guard, NetworkPolicy, Operation, Outcome, Request, Response, Runtime,
    VERSION, VmSpec, decode_response, encode,
};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The release's `msb` (scripts/microsandbox-runtime.sh pins it too).
const MSB_SHA256: &str = "02230b0d0ccab4da487c96282ef06bc366a603f0b95201e999cf9e13df31767e";

/// The installed runtime, or `None` (said on stderr) when there is none.
fn installed() -> Option<PathBuf> {
    match std::env::var_os("OAC_MICROSANDBOX_RUNTIME") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var("OAC_REQUIRE_MICROSANDBOX").as_deref() == Ok("1") => {
            panic!("OAC_REQUIRE_MICROSANDBOX=1 but OAC_MICROSANDBOX_RUNTIME is not set")
        }
        None => {
            eprintln!(
                "skipped: no microsandbox runtime (run scripts/microsandbox-runtime.sh DIR and \
                 set OAC_MICROSANDBOX_RUNTIME=DIR)"
            );
            None
        }
    }
}

/// A fresh runtime home of `mode` beside the installed runtime `dir`.
fn runtime(dir: &Path, test: &str, mode: u32) -> Runtime {
    let home = std::env::temp_dir().join(format!("oac-helper-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir(&home).expect("home");
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(mode)).expect("mode");
    Runtime {
        home: home.display().to_string(),
        msb: dir.join("bin/msb").display().to_string(),
        libkrunfw: dir.join("lib/libkrunfw.so.5.6.1").display().to_string(),
    }
}

fn request(runtime: &Runtime, operation: Operation) -> Vec<u8> {
    encode(&Request {
        version: VERSION,
        runtime: runtime.clone(),
        deadline_unix_ms: u64::MAX,
        operation,
    })
}

/// Runs the helper with `input` on stdin, as the host does.
fn helper(input: &[u8]) -> Response {
    let mut child = Command::new(env!("CARGO_BIN_EXE_oac-microsandbox-helper"))
        .env_clear()
        .env("RUST_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the helper starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("writes");
    let output = child.wait_with_output().expect("the helper exits");
    assert!(output.status.success(), "the helper exits 0");
    decode_response(&output.stdout).expect("one response of this protocol")
}

fn error(code: ErrorCode) -> Outcome {
    Outcome::Error { code }
}

#[test]
fn the_probe_reports_the_pinned_runtime_and_this_cpu() {
    let Some(dir) = installed() else { return };
    let runtime = runtime(&dir, "probe", 0o700);
    let Outcome::Probe { probe } = helper(&request(&runtime, Operation::Probe)).outcome else {
        panic!("not a probe");
    };
    assert_eq!(probe.runtime_version, "msb 0.7.11");
    assert_eq!(probe.runtime_sha256, MSB_SHA256);
    assert_eq!(probe.home_mode, Some(0o700));
    let flags = std::fs::read_to_string("/proc/cpuinfo").expect("cpuinfo");
    let virtualisation = flags
        .lines()
        .filter(|line| line.starts_with("flags"))
        .any(|line| line.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    assert_eq!(probe.cpu_virtualisation, virtualisation);
    if !virtualisation {
        // The runtime's own diagnosis agrees that no VM boots here.
        assert!(!probe.doctor_passed);
    }
    // The probe changes nothing: the home stays empty.
    assert_eq!(std::fs::read_dir(&runtime.home).expect("home").count(), 0);
}

#[test]
fn lookups_find_nothing_and_cleanup_of_the_absent_is_done() {
    let Some(dir) = installed() else { return };
    let runtime = runtime(&dir, "absent", 0o700);
    let name = "oac-0123456789abcdef0123456789abcdef-g0".to_string();
    let get = Operation::Get { name: name.clone() };
    assert_eq!(
        helper(&request(&runtime, get)).outcome,
        error(ErrorCode::NotFound)
    );
    // The runtime made its database in the home on first use.
    assert!(Path::new(&runtime.home).join("db/msb.db").exists());
    let snapshot = Operation::GetSnapshot {
        group: name.clone(),
        member: "s-op-1".into(),
    };
    assert_eq!(
        helper(&request(&runtime, snapshot)).outcome,
        error(ErrorCode::NotFound)
    );
    let kill = Operation::KillRemove {
        guard: Guard {
            name: name.clone(),
            id: "local:1".into(),
            labels: BTreeMap::new(),
        },
    };
    assert_eq!(helper(&request(&runtime, kill)).outcome, Outcome::Done);
    let remove = Operation::RemoveSnapshot {
        group: name.clone(),
        member: "s-op-1".into(),
        snapshot_id: "snap_0".into(),
    };
    assert_eq!(helper(&request(&runtime, remove)).outcome, Outcome::Done);
    // Every operation on a VM or snapshot that is not there is not-found,
    // with nothing done.
    let guard = Guard {
        name: name.clone(),
        id: "local:1".into(),
        labels: BTreeMap::new(),
    };
    let absent = [
        Operation::Exec {
            guard: guard.clone(),
            command: ExecCommand {
                args: vec!["true".into()],
                working_dir: None,
                user: "1000:1000".into(),
                stdin_base64: None,
                output_limit_bytes: 1024,
            },
        },
        Operation::Relabel {
            guard: guard.clone(),
            labels: BTreeMap::from([("io.oac.bootstrap".into(), "complete".into())]),
        },
        Operation::Pause {
            guard: guard.clone(),
        },
        Operation::Resume {
            guard: guard.clone(),
        },
        Operation::Capture {
            guard: guard.clone(),
            group: name.clone(),
            member: "s-op-1".into(),
            labels: BTreeMap::new(),
        },
        Operation::Restore {
            group: name.clone(),
            member: "s-op-1".into(),
            snapshot_id: "snap_0".into(),
            name: name.replace("-g0", "-g1"),
            network: NetworkPolicy::None,
        },
        Operation::Metrics { guard },
    ];
    for operation in absent {
        let operation_name = operation.name();
        assert_eq!(
            helper(&request(&runtime, operation)).outcome,
            error(ErrorCode::NotFound),
            "{operation_name}"
        );
    }
}

#[test]
fn a_create_whose_image_cannot_be_had_is_unknown_and_leaves_no_vm() {
    let Some(dir) = installed() else { return };
    let runtime = runtime(&dir, "create", 0o700);
    let name = "oac-0123456789abcdef0123456789abcdef-g0".to_string();
    // `.example` never resolves: the image cannot be pulled.
    let spec = VmSpec {
        name: name.clone(),
        image: format!("registry.example/oac@sha256:{}", "a".repeat(64)),
        cpus: 1,
        memory_mib: 512,
        root_disk_mib: 1024,
        environment_disk_mib: 256,
        user: "1000:1000".into(),
        network: NetworkPolicy::None,
        security_profile: "restricted".into(),
        labels: BTreeMap::from([("io.oac.bootstrap".into(), "pending".into())]),
    };
    let create = Operation::Create { spec };
    assert_eq!(
        helper(&request(&runtime, create)).outcome,
        error(ErrorCode::Unconfirmed)
    );
    let get = Operation::Get { name };
    assert_eq!(
        helper(&request(&runtime, get)).outcome,
        error(ErrorCode::NotFound)
    );
}

#[test]
fn a_home_others_can_read_is_refused_untouched() {
    let Some(dir) = installed() else { return };
    let runtime = runtime(&dir, "shared", 0o755);
    let get = Operation::Get {
        name: "oac-0123456789abcdef0123456789abcdef-g0".into(),
    };
    assert_eq!(
        helper(&request(&runtime, get)).outcome,
        error(ErrorCode::Invalid)
    );
    assert_eq!(std::fs::read_dir(&runtime.home).expect("home").count(), 0);
}

#[test]
fn garbage_and_other_versions_are_invalid() {
    // No runtime is reached: these need none.
    assert_eq!(helper(b"{not json").outcome, error(ErrorCode::Invalid));
    let runtime = Runtime {
        home: "/nonexistent".into(),
        msb: "/nonexistent/msb".into(),
        libkrunfw: "/nonexistent/libkrunfw".into(),
    };
    let text = String::from_utf8(request(&runtime, Operation::Probe)).expect("utf-8");
    let other = text.replacen("\"version\":1", "\"version\":9", 1);
    assert_eq!(helper(other.as_bytes()).outcome, error(ErrorCode::Invalid));
}
