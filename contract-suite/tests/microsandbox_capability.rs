//! The `microsandbox` capability through real Wasm: the self-test
//! component (`steerable`, action `vm`) calls each function of the
//! capability, the host brokers it to the fake helper run as a process
//! (`oac-fake microsandbox-helper`, behind a wrapper script as an
//! operator's helper path would be), and the tests read the fake runtime's
//! state and journal: what was created, changed or never touched.

use oac_fixtures::microsandbox_helper::{Drift, FakeRuntime, Fault};
use sandbox_host::capability::microsandbox::names::VmNames;
use sandbox_host::capability::microsandbox::policy::{
    GuestProfile, NetworkSetting, VmPolicy, VmPolicySettings,
};
use sandbox_host::capability::microsandbox::readiness::RuntimePin;
use sandbox_host::capability::microsandbox::{BOOTSTRAP_LABEL, Binding};
use sandbox_host::provider::SandboxProvider;
use sandbox_host::testing::TestHost;
use sandbox_host::testing::{Fault as BoundaryFault, NativeHook, NativeRequest};
use sandbox_host::types::{Bootstrap, Reference};
use sandbox_host::{Budget, Host, NodeBinding};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const INSTALLATION: &str = "inst-vm";
const IMAGE: &str = "registry.example/oac-runtime:1@sha256:\
    0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn policy() -> VmPolicy {
    VmPolicy::new(VmPolicySettings {
        image: IMAGE.into(),
        cpus: 2,
        memory_mib: 512,
        root_disk_mib: 1024,
        environment_disk_mib: 256,
        network: NetworkSetting::None,
        guest_profile: GuestProfile::Restricted,
    })
    .expect("a valid policy")
}

fn reference(allocation: &str) -> Reference {
    Reference::new("t", "e", allocation)
}

fn vm_name(allocation: &str, generation: u64) -> String {
    VmNames::of(INSTALLATION, &reference(allocation)).vm(generation)
}

fn budget(ms: u32) -> Budget {
    Budget::from_millis(ms).expect("budget")
}

/// Every native request the host sent, and a fault to inject into the
/// next request of one action.
#[derive(Debug, Default)]
struct Recorder {
    requests: Mutex<Vec<String>>,
    fault: Mutex<Option<(String, BoundaryFault)>>,
}

impl NativeHook for Recorder {
    fn on_request(&self, request: &NativeRequest) -> Option<BoundaryFault> {
        self.requests
            .lock()
            .expect("lock")
            .push(request.action.name().to_string());
        let mut fault = self.fault.lock().expect("lock");
        match fault.as_ref() {
            Some((action, _)) if action == request.action.name() => fault.take().map(|(_, f)| f),
            _ => None,
        }
    }
}

impl Recorder {
    fn taken(&self) -> Vec<String> {
        std::mem::take(&mut *self.requests.lock().expect("lock"))
    }
}

/// A fake runtime and the helper script reaching it.
struct Setup {
    _dir: tempfile::TempDir,
    fake: FakeRuntime,
    script: PathBuf,
}

impl Setup {
    fn new() -> Arc<Self> {
        let dir = tempfile::tempdir().expect("dir");
        let fake = FakeRuntime::create(dir.path()).expect("fake runtime");
        let script = dir.path().join("helper");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nexec '{}' microsandbox-helper\n",
                env!("CARGO_BIN_EXE_oac-fake")
            ),
        )
        .expect("script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("mode");
        Arc::new(Self {
            _dir: dir,
            fake,
            script,
        })
    }
}

/// A host whose steerable-vm kind runs `steps` (create and get-info) and
/// `kill_steps` (kill) on a fake runtime through the helper.
struct Bench {
    setup: Arc<Setup>,
    fake: FakeRuntime,
    recorder: Arc<Recorder>,
    host: Host,
}

impl Bench {
    async fn new(steps: Value, kill_steps: Value) -> Self {
        Self::on(&Setup::new(), steps, kill_steps).await
    }

    /// A host on the runtime of `setup`.
    async fn on(setup: &Arc<Setup>, steps: Value, kill_steps: Value) -> Self {
        let fake = setup.fake.clone();
        let microsandbox = Binding {
            helper: Some(setup.script.clone()),
            runtime: Some(fake.runtime()),
            pin: RuntimePin {
                version: "0.7.11".into(),
                sha256: oac_fixtures::microsandbox_helper::FAKE_RUNTIME_SHA256.into(),
            },
            policy: Some(policy()),
        };
        let (host, recorder) = load(microsandbox, steps, kill_steps).await;
        Self {
            setup: setup.clone(),
            fake,
            recorder,
            host,
        }
    }

    fn kind(&self) -> &sandbox_host::Kind {
        self.host.kind("steerable-vm").expect("kind")
    }

    /// Runs the steps in a GetInfo of `allocation`: each step's outcome.
    async fn steps(&self, allocation: &str) -> Vec<Value> {
        let info = self
            .kind()
            .get_info(reference(allocation), budget(20_000))
            .await
            .expect("the steps answer in the provider id");
        outcomes(info.provider_id)
    }

    fn journal(&self) -> Vec<String> {
        self.fake.state().expect("state").journal
    }

    fn vms(&self) -> BTreeMap<String, oac_helper_protocol::Vm> {
        self.fake
            .state()
            .expect("state")
            .vms
            .into_iter()
            .map(|(name, vm)| (name, vm.vm))
            .collect()
    }
}

/// A host whose steerable-vm kind, bound to `microsandbox`, runs `steps`
/// and `kill_steps`; and what records its native requests.
async fn load(microsandbox: Binding, steps: Value, kill_steps: Value) -> (Host, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let registration = sandbox_host::testing::steerable_vm_row();
    let binding = NodeBinding {
        installation_id: INSTALLATION.into(),
        configuration: json!({
            "action": "vm",
            "vm_steps": steps,
            "vm_kill_steps": kill_steps,
        }),
        microsandbox,
        hook: Some(recorder.clone()),
        ..NodeBinding::default()
    };
    let host = TestHost::one(registration, binding).loaded().await;
    (host, recorder)
}

/// A Create's input for `allocation` whose daemon credential is `credential`
/// (a secret of the call), with no network (the VM policy's).
fn bootstrap(allocation: &str, credential: &str) -> Bootstrap {
    sandbox_host::testing::bootstrap(reference(allocation), credential)
}

fn outcomes(provider_id: Option<String>) -> Vec<Value> {
    serde_json::from_str(&provider_id.expect("outcomes")).expect("a JSON array")
}

fn step(call: &str) -> Value {
    json!({ "call": call })
}

fn at(call: &str, generation: u64) -> Value {
    json!({ "call": call, "generation": generation, "id": "@" })
}

fn restored(call: &str, generation: u64) -> Value {
    json!({ "call": call, "generation": generation, "restored_from": true })
}

fn exec(args: &[&str]) -> Value {
    json!({ "call": "exec", "generation": 0, "args": args })
}

fn error(outcome: &Value) -> &str {
    outcome["error"].as_str().unwrap_or("ok")
}

#[tokio::test]
async fn every_function_works_through_wasm_on_a_node_that_boots_vms() {
    let steps = json!([
        step("probe"),
        step("create"),
        at("inspect", 0),
        {"call": "exec", "args": ["cat"], "stdin": "to stdin", "as_root": true},
        exec(&["sh", "-c", "echo out; echo err >&2; exit 3"]),
        step("mark-bootstrapped"),
        at("inspect", 0),
        {"call": "exec", "args": ["cat"], "as_root": true},
        step("pause"),
        at("inspect", 0),
        at("resume", 0),
        at("metrics", 0),
        {"call": "capture", "operation_id": "suspend-1"},
        {"call": "find-snapshot", "operation_id": "suspend-1"},
        {"call": "capture", "operation_id": "suspend-1"},
        at("remove", 0),
        restored("restore", 1),
        restored("inspect", 1),
        {"call": "exec", "generation": 1, "restored_from": true, "args": ["echo", "again"]},
        {"call": "exec", "generation": 1, "restored_from": true, "args": ["cat"], "as_root": true},
        restored("restore", 1),
        step("delete-snapshot"),
        restored("remove", 1),
        at("inspect", 0),
        at("name", 1),
    ]);
    let bench = Bench::new(steps, json!([])).await;
    let out = bench.steps("a").await;
    let names = (vm_name("a", 0), vm_name("a", 1));
    assert_eq!(
        out[24]["ok"],
        json!(names.1),
        "the derived name, for a compute"
    );
    assert_eq!(out[0]["ok"], json!({"ready": true, "reason": null}));
    let created = &out[1]["ok"];
    assert_eq!(created["name"], json!(names.0));
    assert_eq!(created["status"], "running");
    assert_eq!(created["conforms"], true);
    assert_eq!(created["bootstrap_complete"], false);
    assert_eq!(out[2]["ok"], out[1]["ok"], "inspect sees what create made");
    assert_eq!(out[3]["ok"]["stdout"], "to stdin", "root while pending");
    assert_eq!(
        out[4]["ok"],
        json!({"stdout": "out\n", "stderr": "err\n", "exit_code": 3})
    );
    assert_eq!(out[5]["ok"], Value::Null);
    assert_eq!(out[6]["ok"]["bootstrap_complete"], true);
    assert_eq!(error(&out[7]), "denied", "no root after the bootstrap");
    assert_eq!(out[9]["ok"]["status"], "paused");
    assert_eq!(out[10]["ok"]["status"], "running");
    let metrics = &out[11]["ok"];
    assert_eq!(metrics["id"], created["id"], "metrics name the incarnation");
    assert_eq!(metrics["name"], json!(names.0));
    assert_eq!(metrics["memory_limit_bytes"], json!(512u64 << 20));
    assert_eq!(metrics["vcpus"], json!(2));
    let snapshot = &out[12]["ok"];
    assert_eq!(
        snapshot["native_reference"],
        json!(format!("{}:s-suspend-1", names.0))
    );
    assert_eq!(snapshot["source_id"], created["id"]);
    assert_eq!(snapshot["source_name"], json!(names.0));
    assert_eq!(out[13]["ok"], *snapshot, "find-snapshot finds the same");
    assert_eq!(error(&out[14]), "exists", "one snapshot per operation");
    assert_eq!(out[15]["ok"], Value::Null);
    let restored = &out[16]["ok"];
    assert_eq!(restored["name"], json!(names.1));
    assert_eq!(restored["snapshot_parent"], snapshot["id"]);
    assert_eq!(restored["conforms"], true);
    assert_eq!(restored["bootstrap_complete"], true);
    assert_ne!(restored["id"], created["id"], "a new incarnation");
    assert_eq!(out[17]["ok"], *restored);
    assert_eq!(out[18]["ok"]["stdout"], "again\n");
    assert_eq!(error(&out[19]), "denied");
    assert_eq!(out[20]["ok"], *restored, "an owned restore is adopted");
    assert_eq!(out[21]["ok"], Value::Null);
    assert_eq!(out[22]["ok"], Value::Null);
    assert_eq!(error(&out[23]), "not-found");
    let state = bench.fake.state().expect("state");
    assert!(state.vms.is_empty(), "{:?}", state.vms.keys());
    assert!(state.snapshots.is_empty());
    let restore = state
        .journal
        .iter()
        .filter(|line| line.starts_with("restore "))
        .count();
    assert_eq!(
        restore, 1,
        "the second restore adopted: {:?}",
        state.journal
    );
}

#[tokio::test]
async fn every_policy_field_is_checked_after_create_and_after_restore() {
    let steps = json!([
        step("create"),
        step("mark-bootstrapped"),
        {"call": "capture", "operation_id": "op"},
        restored("restore", 1),
    ]);
    let bench = Bench::new(steps, json!([])).await;
    for (index, drift) in Drift::ALL.into_iter().enumerate() {
        let allocation = format!("create-{index}");
        bench.fake.unapply("create", drift).expect("drift");
        let out = bench.steps(&allocation).await;
        assert_eq!(error(&out[0]), "invalid", "{drift:?}: {out:?}");
        assert!(
            !bench.vms().contains_key(&vm_name(&allocation, 0)),
            "{drift:?}: the VM that does not carry the policy is removed"
        );
        let allocation = format!("restore-{index}");
        bench.fake.unapply("restore", drift).expect("drift");
        let out = bench.steps(&allocation).await;
        assert_eq!(error(&out[2]), "ok", "{drift:?}: {out:?}");
        assert_eq!(error(&out[3]), "invalid", "{drift:?}: {out:?}");
        assert!(
            !bench.vms().contains_key(&vm_name(&allocation, 1)),
            "{drift:?}: the restored VM that does not carry the policy is removed"
        );
    }
    // A VM whose configuration drifted later is reported, never used.
    let out = bench.steps("later").await;
    assert_eq!(error(&out[3]), "ok");
    let record = out[2]["ok"].clone();
    bench
        .fake
        .drift(&vm_name("later", 1), |vm| vm.ports = 1)
        .expect("drift");
    let restored = json!({"generation": 1, "restored_from": true, "snapshot": record});
    let with = |call: &str, extra: Value| {
        let mut step = restored.clone();
        step["call"] = json!(call);
        if let (Some(step), Some(extra)) = (step.as_object_mut(), extra.as_object()) {
            step.extend(extra.clone());
        }
        step
    };
    let later = Bench::on(
        &bench.setup,
        json!([
            with("inspect", json!({})),
            with("exec", json!({"args": ["echo"]})),
            with("pause", json!({})),
            with("capture", json!({"operation_id": "again"})),
            with("remove", json!({})),
        ]),
        json!([]),
    )
    .await;
    let out = later.steps("later").await;
    assert_eq!(out[0]["ok"]["conforms"], false);
    let errors: Vec<&str> = out[1..].iter().map(error).collect();
    assert_eq!(errors, ["invalid", "invalid", "invalid", "ok"], "{out:?}");
}

#[tokio::test]
async fn a_foreign_vm_under_the_derived_name_answers_ownership_and_is_never_touched() {
    let steps = json!([
        step("create"),
        at("inspect", 0),
        exec(&["echo"]),
        step("pause"),
        step("remove"),
        {"call": "capture", "operation_id": "op"},
        {"call": "inspect", "allocation": "other"},
        {"call": "create", "allocation": "other"},
    ]);
    let bench = Bench::new(steps, json!([])).await;
    let name = vm_name("a", 0);
    let foreign = BTreeMap::from([
        (
            "io.oac.installation".to_string(),
            "someone-else".to_string(),
        ),
        ("io.oac.tenant".to_string(), "t".to_string()),
        ("io.oac.environment".to_string(), "e".to_string()),
        ("io.oac.allocation".to_string(), "a".to_string()),
    ]);
    bench.fake.seed_vm(&name, foreign).expect("seed");
    let before = bench.vms()[&name].clone();
    let out = bench.steps("a").await;
    let errors: Vec<&str> = out.iter().map(error).collect();
    assert_eq!(
        errors,
        [
            "exists",
            "ownership",
            "ownership",
            "ownership",
            "ownership",
            "ownership",
            "ownership",
            "ownership"
        ]
    );
    assert_eq!(bench.vms()[&name], before, "untouched");
    let changed: Vec<String> = bench
        .journal()
        .into_iter()
        .filter(|line| !line.starts_with("get ") && !line.starts_with("create "))
        .collect();
    assert!(changed.is_empty(), "{changed:?}");
    // Another allocation of the same environment is not the call's: no
    // request was sent for it.
    let requests = bench.recorder.taken();
    assert_eq!(
        requests.iter().filter(|r| *r == "vm-create").count(),
        1,
        "{requests:?}"
    );
}

#[tokio::test]
async fn an_id_or_ancestry_the_vm_does_not_have_answers_ownership() {
    let steps = json!([
        step("create"),
        {"call": "inspect", "id": "local:999"},
        step("mark-bootstrapped"),
        {"call": "capture", "operation_id": "op"},
        at("remove", 0),
        restored("restore", 1),
        {"call": "inspect", "generation": 1, "restored_from": true, "forge": ["id", "snap_ffffffffffffffff"]},
        {"call": "inspect", "generation": 1, "restored_from": true, "forge": ["native-reference", "x:s-op"]},
        {"call": "pause", "generation": 1},
        {"call": "inspect", "generation": 0, "restored_from": true},
        {"call": "delete-snapshot", "forge": ["digest", "sha256:00"]},
        restored("inspect", 1),
        // A read may name a later generation by its number alone: only a
        // VM with the allocation's labels answers.
        {"call": "inspect", "generation": 1},
        {"call": "inspect", "generation": 2},
    ]);
    let bench = Bench::new(steps, json!([])).await;
    bench
        .fake
        .seed_vm(&vm_name("a", 2), BTreeMap::new())
        .expect("seed");
    let out = bench.steps("a").await;
    let errors: Vec<&str> = out.iter().map(error).collect();
    assert_eq!(
        errors,
        [
            "ok",
            "ownership",
            "ok",
            "ok",
            "ok",
            "ok",
            "ownership",
            "invalid",
            "invalid",
            "invalid",
            "ownership",
            "ok",
            "ok",
            "ownership"
        ],
        "{out:?}"
    );
    assert_eq!(
        out[12]["ok"], out[11]["ok"],
        "the same VM, its ancestry reported"
    );
    assert_eq!(bench.fake.state().expect("state").snapshots.len(), 1);
}

#[tokio::test]
async fn confidential_input_travels_only_in_stdin_and_snapshot_names_stay_the_hosts() {
    let secret = "daemon-credential-7f3a9c";
    let steps = json!([
        step("create"),
        {"call": "exec", "args": ["echo", secret], "as_root": true},
        {"call": "exec", "args": ["sha256sum"], "stdin": secret, "as_root": true},
        {"call": "exec", "args": ["cat"], "working_dir": format!("/home/{secret}")},
        step("mark-bootstrapped"),
        {"call": "capture", "operation_id": "../escape"},
        {"call": "capture", "operation_id": "group:member"},
        {"call": "capture", "operation_id": ""},
        {"call": "find-snapshot", "operation_id": "a/b"},
        {"call": "capture", "operation_id": "fine-1"},
    ]);
    let bench = Bench::new(steps, json!([])).await;
    let answer = bench
        .kind()
        .create(bootstrap("a", secret), budget(20_000))
        .await
        .expect("answers");
    let out = outcomes(answer.provider_id);
    let errors: Vec<&str> = out.iter().map(error).collect();
    assert_eq!(
        errors,
        [
            "ok", "invalid", "ok", "invalid", "ok", "invalid", "invalid", "invalid", "invalid",
            "ok"
        ],
        "{out:?}"
    );
    assert!(
        out[2]["ok"]["stdout"]
            .as_str()
            .is_some_and(|digest| digest.len() > 64),
        "stdin reached the command"
    );
    let execs = bench
        .journal()
        .iter()
        .filter(|line| line.starts_with("exec "))
        .count();
    assert_eq!(execs, 1, "only the command with its secret in stdin ran");
    let state = bench.fake.state().expect("state");
    assert_eq!(
        state.snapshots.keys().collect::<Vec<_>>(),
        [&format!("{}:s-fine-1", vm_name("a", 0))]
    );
}

#[tokio::test]
async fn an_answer_shown_as_another_installations_answers_ownership() {
    let bench = Bench::new(json!([step("create"), at("remove", 0)]), json!([])).await;
    *bench.recorder.fault.lock().expect("lock") =
        Some(("vm-get".into(), BoundaryFault::ForeignOwnership));
    let out = bench.steps("a").await;
    assert_eq!(error(&out[1]), "ownership");
    assert!(bench.vms().contains_key(&vm_name("a", 0)), "never removed");
    // A create's or a capture's own answer shown so: `ownership` too, and
    // nothing more is sent.
    for (action, steps) in [
        ("vm-create", json!([step("create")])),
        (
            "vm-capture",
            json!([step("create"), step("mark-bootstrapped"), {"call": "capture", "operation_id": "op"}]),
        ),
    ] {
        let bench = Bench::new(steps, json!([])).await;
        *bench.recorder.fault.lock().expect("lock") =
            Some((action.into(), BoundaryFault::ForeignOwnership));
        let out = bench.steps("a").await;
        assert_eq!(error(out.last().expect("a step")), "ownership", "{action}");
        let sent = bench.recorder.taken();
        assert_eq!(sent.last().map(String::as_str), Some(action), "{sent:?}");
    }
}

#[tokio::test]
async fn a_node_that_cannot_boot_vms_refuses_create_without_native_io_and_still_serves_cleanup() {
    let bench = Bench::new(json!([step("probe"), step("create")]), json!([])).await;
    bench
        .fake
        .without_virtualisation()
        .expect("no virtualisation");
    let out = bench.steps("a").await;
    assert_eq!(
        out[0]["ok"],
        json!({"ready": false, "reason": "no_cpu_virtualisation"})
    );
    assert_eq!(error(&out[1]), "not-ready");
    assert_eq!(bench.recorder.taken(), ["vm-probe"], "create sent nothing");
    let create = Bench::new(json!([step("create"), step("create")]), json!([])).await;
    create
        .fake
        .without_virtualisation()
        .expect("no virtualisation");
    let out = create.steps("a").await;
    assert_eq!(error(&out[0]), "not-ready");
    assert_eq!(error(&out[1]), "not-ready");
    assert_eq!(
        create.recorder.taken(),
        ["vm-probe"],
        "probed once, then known"
    );
    assert!(create.journal().is_empty(), "{:?}", create.journal());
    // Observation and cleanup still work on what is there.
    let name = vm_name("b", 0);
    let labels = BTreeMap::from([
        ("io.oac.installation".to_string(), INSTALLATION.to_string()),
        ("io.oac.tenant".to_string(), "t".to_string()),
        ("io.oac.environment".to_string(), "e".to_string()),
        ("io.oac.allocation".to_string(), "b".to_string()),
        (BOOTSTRAP_LABEL.to_string(), "pending".to_string()),
    ]);
    let cleanup = Bench::new(json!([at("inspect", 0), at("remove", 0)]), json!([])).await;
    cleanup
        .fake
        .without_virtualisation()
        .expect("no virtualisation");
    cleanup.fake.seed_vm(&name, labels).expect("seed");
    let out = cleanup.steps("b").await;
    assert_eq!(out[0]["ok"]["conforms"], false, "the seeded VM");
    assert_eq!(out[1]["ok"], Value::Null);
    assert!(cleanup.vms().is_empty());
}

#[tokio::test]
async fn helper_faults_are_fixed_codes_and_nothing_is_replayed() {
    let steps = json!([step("create")]);
    let bench = Bench::new(steps, json!([])).await;
    bench
        .fake
        .inject("create", Fault::LoseAnswer)
        .expect("fault");
    assert_eq!(error(&bench.steps("a").await[0]), "unconfirmed");
    assert!(bench.vms().contains_key(&vm_name("a", 0)), "it was applied");
    assert_eq!(
        error(&bench.steps("a").await[0]),
        "exists",
        "never created twice"
    );
    let creates = bench
        .journal()
        .iter()
        .filter(|line| line.starts_with("create "))
        .count();
    assert_eq!(creates, 2, "the second create was refused, not replayed");
    for (fault, allocation) in [(Fault::Crash, "b"), (Fault::Garbage, "c")] {
        bench.fake.inject("create", fault).expect("fault");
        assert_eq!(error(&bench.steps(allocation).await[0]), "unconfirmed");
    }
    // Nothing took effect for them: the helper failed before the runtime.
    assert!(!bench.vms().contains_key(&vm_name("b", 0)));
}

#[tokio::test]
async fn commands_report_exits_overflows_failures_and_crashes() {
    let steps = json!([
        step("create"),
        exec(&["exit", "7"]),
        {"call": "exec", "args": ["head", "-c", "5000", "/dev/zero"], "output_limit": 4096},
        exec(&["missing-program"]),
        {"call": "exec", "args": ["cat"], "working_dir": "relative"},
        {"call": "exec", "args": []},
        {"call": "exec", "args": ["cat"], "output_limit": 2_000_000},
    ]);
    let bench = Bench::new(steps, json!([])).await;
    let out = bench.steps("a").await;
    assert_eq!(out[1]["ok"]["exit_code"], 7);
    let errors: Vec<&str> = out[2..].iter().map(error).collect();
    assert_eq!(
        errors,
        [
            "command-unconfirmed",
            "command-unconfirmed",
            "invalid",
            "invalid",
            "invalid"
        ]
    );
    // A command that runs past the budget: no exit seen, nothing killed.
    let sleeping = Bench::on(&bench.setup, json!([exec(&["sleep", "60"])]), json!([])).await;
    let started = Instant::now();
    let answer = sleeping
        .kind()
        .get_info(reference("a"), budget(1_500))
        .await;
    assert!(answer.is_err(), "the outcome is unknown: {answer:?}");
    assert!(started.elapsed() >= Duration::from_millis(1_500));
    assert_eq!(
        sleeping.journal().last().map(String::as_str),
        Some(format!("exec {}", vm_name("a", 0)).as_str())
    );
}

#[tokio::test]
async fn a_crashed_vm_and_a_corrupted_snapshot_are_reported_not_used() {
    let made = Bench::new(
        json!([
            step("create"),
            step("mark-bootstrapped"),
            {"call": "capture", "operation_id": "op"},
        ]),
        json!([]),
    )
    .await;
    let out = made.steps("a").await;
    let record = out[2]["ok"].clone();
    assert!(record["id"].is_string(), "{out:?}");
    let name = vm_name("a", 0);
    made.fake.crash(&name).expect("crash");
    made.fake.corrupt(&name, "s-op").expect("corrupt");
    let after = Bench::on(
        &made.setup,
        json!([
            at("inspect", 0),
            exec(&["echo"]),
            step("pause"),
            at("resume", 0),
            {"call": "find-snapshot", "operation_id": "op"},
            {"call": "restore", "generation": 1, "restored_from": true, "snapshot": record},
            {"call": "delete-snapshot", "snapshot": record},
            at("remove", 0),
        ]),
        json!([]),
    )
    .await;
    let out = after.steps("a").await;
    assert_eq!(out[0]["ok"]["status"], "crashed");
    let errors: Vec<&str> = out[1..].iter().map(error).collect();
    assert_eq!(
        errors,
        ["failed", "failed", "failed", "failed", "failed", "ok", "ok"],
        "{out:?}"
    );
    let state = after.fake.state().expect("state");
    assert!(state.vms.is_empty() && state.snapshots.is_empty());
    assert!(
        !state
            .journal
            .iter()
            .any(|line| line.starts_with("restore ")),
        "a corrupted artifact is never restored: {:?}",
        state.journal
    );
}

#[tokio::test]
async fn a_kill_queued_behind_a_create_whose_budget_ended_never_overtakes_it() {
    let bench = Bench::new(json!([step("create")]), json!([at("remove", 0)])).await;
    bench
        .fake
        .inject("create", Fault::Slow(2_500))
        .expect("fault");
    let kind = bench.kind();
    let started = Instant::now();
    let create = kind.create(bootstrap("a", "credential"), budget(300));
    let kill = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let answer = kind.kill(reference("a"), budget(10_000)).await;
        (answer, started.elapsed())
    };
    let (created, (killed, kill_done)) = tokio::join!(create, kill);
    // The create's budget ended before its helper answered: the component
    // saw `unconfirmed` (or its own answer came too late).
    if let Ok(info) = &created {
        assert_eq!(
            outcomes(info.provider_id.clone())[0]["error"],
            "unconfirmed"
        );
    }
    let killed = killed.expect("the kill answers");
    assert_eq!(outcomes(killed.provider_id)[0]["ok"], Value::Null);
    assert!(
        kill_done >= Duration::from_millis(2_500),
        "the kill ran only after the create's helper exited ({kill_done:?})"
    );
    let journal = bench.journal();
    let create_at = journal.iter().position(|line| line.starts_with("create "));
    let first_get = journal.iter().position(|line| line.starts_with("get "));
    assert!(create_at < first_get, "{journal:?}");
    assert!(
        bench.vms().is_empty(),
        "the kill removed what the create made"
    );
}

/// The real helper (`OAC_MICROSANDBOX_HELPER`, which `cargo xtask test`
/// builds and names) on the real runtime (`OAC_MICROSANDBOX_RUNTIME`, from
/// `scripts/microsandbox-runtime.sh`), through Wasm: the host judges the
/// probe by this CPU (no VM boots without `vmx` or `svm`); on a machine
/// without them, a create answers `not-ready` with nothing but the probe
/// sent, and lookups still answer from the runtime.
#[tokio::test]
async fn the_real_helper_and_runtime_are_judged_by_this_machine() {
    let (Some(helper), Some(installed)) = (
        std::env::var_os("OAC_MICROSANDBOX_HELPER"),
        std::env::var_os("OAC_MICROSANDBOX_RUNTIME"),
    ) else {
        assert_ne!(
            std::env::var("OAC_REQUIRE_MICROSANDBOX_HELPER").as_deref(),
            Ok("1"),
            "OAC_REQUIRE_MICROSANDBOX_HELPER=1 but OAC_MICROSANDBOX_HELPER or \
             OAC_MICROSANDBOX_RUNTIME is not set"
        );
        eprintln!(
            "SKIPPED the_real_helper_and_runtime_are_judged_by_this_machine: set \
             OAC_MICROSANDBOX_HELPER and OAC_MICROSANDBOX_RUNTIME (cargo xtask test does)"
        );
        return;
    };
    let installed = PathBuf::from(installed);
    let home = tempfile::tempdir().expect("home");
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).expect("mode");
    let microsandbox = Binding {
        helper: Some(PathBuf::from(helper)),
        runtime: Some(oac_helper_protocol::Runtime {
            home: home.path().display().to_string(),
            msb: installed.join("bin/msb").display().to_string(),
            libkrunfw: installed
                .join("lib/libkrunfw.so.5.6.1")
                .display()
                .to_string(),
        }),
        pin: RuntimePin::default(),
        policy: Some(policy()),
    };
    let steps = json!([
        step("probe"),
        step("create"),
        at("inspect", 0),
        at("remove", 0)
    ]);
    let (host, recorder) = load(microsandbox, steps, json!([])).await;
    let info = host
        .kind("steerable-vm")
        .expect("kind")
        .get_info(reference("a"), budget(60_000))
        .await
        .expect("answers");
    let out = outcomes(info.provider_id);
    let virtualisation = std::fs::read_to_string("/proc/cpuinfo")
        .expect("cpuinfo")
        .lines()
        .filter(|line| line.starts_with("flags"))
        .any(|line| line.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    if virtualisation {
        assert_ne!(out[0]["ok"]["reason"], "no_cpu_virtualisation", "{out:?}");
        return;
    }
    assert_eq!(
        out[0]["ok"],
        json!({"ready": false, "reason": "no_cpu_virtualisation"}),
        "{out:?}"
    );
    assert_eq!(error(&out[1]), "not-ready");
    assert_eq!(error(&out[2]), "not-found");
    assert_eq!(out[3]["ok"], Value::Null, "removing the absent is done");
    assert_eq!(
        recorder.taken(),
        ["vm-probe", "vm-get", "vm-get"],
        "the create sent nothing"
    );
}
