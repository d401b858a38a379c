//! The `receipts` capability through real Wasm: a call reaches only its own
//! (kind, installation, allocation) records, within bounds, across the
//! capability boundary; a receipt survives reopening the store and a
//! `kill -9` of the process that wrote it.

use crate::support::*;
use sandbox_host::ReceiptStore;
use sandbox_host::host::Connect;
use sandbox_host::testing::{Fault, NativeHook, NativeRequest};
use sandbox_host::types::{Error, Reference, Target};
use sandbox_host::{Budget, Registration};
use serde_json::{Value, json};
use std::io::BufRead;
use std::sync::Arc;

/// The direct steerable test row (granted receipts) as `kind`.
fn direct(kind: &str) -> Registration {
    let row = sandbox_host::testing::steerable_direct_row();
    assert!(row.grants.receipts, "steerable-direct is granted receipts");
    Registration {
        kind: kind.into(),
        ..row
    }
}

fn reference(allocation: &str) -> Reference {
    Reference::new("t", "e", allocation)
}

/// Where one steered call runs.
struct At<'a> {
    registration: Registration,
    installation: &'a str,
    store: &'a ReceiptStore,
    hook: Option<Arc<dyn NativeHook>>,
}

impl<'a> At<'a> {
    fn kind(kind: &str, store: &'a ReceiptStore) -> Self {
        Self {
            registration: direct(kind),
            installation: INSTALLATION,
            store,
            hook: None,
        }
    }

    /// What the steered receipt action answered (GetInfo's provider id).
    async fn answer(&self, steering: Value, allocation: &str) -> String {
        let mut binding = binding(None, steering);
        binding.installation_id = self.installation.into();
        binding.receipts = Some(self.store.clone());
        binding.hook = self.hook.clone();
        let host = TestHost::one(self.registration.clone(), binding)
            .loaded()
            .await;
        let kind = host.kind(&self.registration.kind).expect("kind");
        let info = kind
            .get_info(
                reference(allocation),
                Budget::from_millis(10_000).expect("budget"),
            )
            .await
            .expect("the steered action answers in the provider id");
        info.provider_id.expect("an outcome")
    }
}

fn put(key: &str, value: &str) -> Value {
    json!({"action": "receipt-put", "receipt_key": key, "receipt_value": value})
}

fn get(key: &str) -> Value {
    json!({"action": "receipt-get", "receipt_key": key})
}

fn remove(key: &str) -> Value {
    json!({"action": "receipt-remove", "receipt_key": key})
}

#[tokio::test]
async fn a_receipt_belongs_to_one_kind_installation_and_allocation() {
    let (_dir, store) = receipt_store();
    let alpha = At::kind("alpha", &store);
    assert_eq!(alpha.answer(put("create_pending", "v1"), "a").await, "ok");
    assert_eq!(alpha.answer(get("create_pending"), "a").await, "v1");
    assert_eq!(
        alpha.answer(get("create_pending"), "b").await,
        "none",
        "another allocation of the same kind and installation"
    );
    assert_eq!(
        At::kind("beta", &store)
            .answer(get("create_pending"), "a")
            .await,
        "none",
        "another kind on the same store"
    );
    let other_installation = At {
        installation: "inst-other",
        ..At::kind("alpha", &store)
    };
    assert_eq!(
        other_installation.answer(get("create_pending"), "a").await,
        "none",
        "another installation"
    );
    assert_eq!(alpha.answer(put("create_pending", "v2"), "a").await, "ok");
    assert_eq!(alpha.answer(get("create_pending"), "a").await, "v2");
    assert_eq!(alpha.answer(remove("create_pending"), "a").await, "ok");
    assert_eq!(alpha.answer(get("create_pending"), "a").await, "none");
    assert_eq!(
        alpha.answer(remove("create_pending"), "a").await,
        "ok",
        "removing an absent record"
    );
}

#[tokio::test]
async fn a_receipt_survives_reopening_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = ReceiptStore::open(dir.path()).expect("store");
        let kind = At::kind("alpha", &store);
        assert_eq!(kind.answer(put("sandbox_ids", "i-1"), "a").await, "ok");
    }
    let store = ReceiptStore::open(dir.path()).expect("the store reopens once released");
    assert_eq!(
        At::kind("alpha", &store)
            .answer(get("sandbox_ids"), "a")
            .await,
        "i-1"
    );
}

#[tokio::test]
async fn keys_values_and_counts_are_bounded() {
    let (_dir, store) = receipt_store();
    let kind = At::kind("alpha", &store);
    for key in ["Upper", "1digit", "dash-ed", "", &"k".repeat(97)] {
        assert_eq!(
            kind.answer(put(key, "v"), "a").await,
            "invalid",
            "key {key:?}"
        );
    }
    let sized = |bytes: usize| json!({"action": "receipt-put", "receipt_key": "big", "receipt_bytes": bytes});
    assert_eq!(kind.answer(sized(4097), "a").await, "invalid");
    assert_eq!(kind.answer(get("big"), "a").await, "none");
    assert_eq!(kind.answer(sized(4096), "a").await, "ok");
    for index in 1..16 {
        assert_eq!(kind.answer(put(&format!("k{index}"), "v"), "a").await, "ok");
    }
    assert_eq!(
        kind.answer(put("seventeenth", "v"), "a").await,
        "full",
        "16 records per allocation"
    );
    assert_eq!(kind.answer(get("seventeenth"), "a").await, "none");
    assert_eq!(
        kind.answer(put("k1", "replaced"), "a").await,
        "ok",
        "replacing a held record adds none"
    );
    assert_eq!(
        kind.answer(put("k1", "v"), "b").await,
        "ok",
        "another allocation"
    );
}

#[tokio::test]
async fn a_kind_not_granted_receipts_and_a_batch_reach_none() {
    let (_dir, store) = receipt_store();
    let ungranted = At {
        registration: {
            let mut row = direct("ungranted");
            row.grants.receipts = false;
            row
        },
        ..At::kind("alpha", &store)
    };
    assert!(!ungranted.registration.grants.receipts);
    assert_eq!(
        ungranted.answer(put("create_pending", "v"), "a").await,
        "denied",
        "the binding's store is not reachable without the grant"
    );

    let mut binding = binding(
        None,
        json!({"declaration": "observing", "action": "receipt-get"}),
    );
    binding.receipts = Some(store.clone());
    let host = TestHost::one(direct("observer"), binding).loaded().await;
    let targets: Vec<Target> = ["a", "b"]
        .into_iter()
        .map(|allocation| Target {
            reference: reference(allocation),
            provider_id: Some("native-1".into()),
        })
        .collect();
    let answers = host
        .kind("observer")
        .expect("kind")
        .observe_batch(targets, Budget::from_millis(10_000).expect("budget"))
        .await
        .expect("a batch answer");
    assert_eq!(
        answers,
        vec![
            Err(Error::ObservationUnavailable),
            Err(Error::ObservationUnavailable)
        ],
        "a batch observation serves no single allocation: receipts are denied"
    );
}

/// Injects `fault` into every receipt write.
#[derive(Debug)]
struct FaultWrites(Fault);

impl NativeHook for FaultWrites {
    fn on_request(&self, request: &NativeRequest) -> Option<Fault> {
        (request.action.name() == "receipt-put").then_some(self.0)
    }
}

#[tokio::test]
async fn receipt_writes_cross_the_capability_boundary() {
    let (_dir, store) = receipt_store();
    let faulted = |fault| At {
        hook: Some(Arc::new(FaultWrites(fault))),
        ..At::kind("alpha", &store)
    };
    let plain = At::kind("alpha", &store);
    assert_eq!(
        faulted(Fault::FailBeforeDispatch)
            .answer(put("create_pending", "never"), "a")
            .await,
        "unavailable"
    );
    assert_eq!(plain.answer(get("create_pending"), "a").await, "none");
    assert_eq!(
        faulted(Fault::LoseResponse)
            .answer(put("create_pending", "landed"), "a")
            .await,
        "unconfirmed",
        "a write whose answer is lost is unknown, not failed"
    );
    assert_eq!(
        plain.answer(get("create_pending"), "a").await,
        "landed",
        "…and it may well have landed"
    );
}

/// The receipt written before a process is killed with SIGKILL is read
/// back by the next process on the same state directory.
#[test]
fn a_receipt_survives_kill_9_of_the_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let state = state.to_str().expect("utf-8 path");
    let call = |steering: Value| {
        let mut command = cli::call("steerable-direct", "get-info");
        command.args([
            "--budget-ms",
            "60000",
            "--state-dir",
            state,
            "--configuration",
            &format!("steerable-direct={steering}"),
        ]);
        command
    };
    let mut writer = call(json!({
        "action": "receipt-then-loop",
        "receipt_key": "create_pending",
        "receipt_value": "pending-before-the-effect",
    }))
    .env("RUST_LOG", "warn")
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("spawn the writer");
    let stderr = writer.stderr.take().expect("stderr");
    let mut written = None;
    for line in std::io::BufReader::new(stderr).lines() {
        let line = line.expect("stderr line");
        if line.contains("steerable_receipt_written") {
            written = Some(line);
            break;
        }
    }
    let written = written.expect("the writer reports its receipt written");
    assert!(written.contains(r#"outcome=\"ok\""#), "{written}");
    // The component now spins inside its call: kill the process mid-call.
    writer.kill().expect("SIGKILL");
    let status = writer.wait().expect("reaped");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "killed by SIGKILL, not finished");

    let reader = call(json!({"action": "receipt-get", "receipt_key": "create_pending"}))
        .output()
        .expect("run the reader");
    assert!(
        reader.status.success(),
        "{}",
        String::from_utf8_lossy(&reader.stderr)
    );
    let answer: Value = serde_json::from_slice(&reader.stdout).expect("JSON");
    assert_eq!(
        answer["ok"]["provider_id"], "pending-before-the-effect",
        "{answer}"
    );
}

/// A receipt is a component's bookkeeping, never settlement evidence:
/// GetInfo and Kill claiming a settled Create on one they read — found
/// there, forged in the same call, or written earlier by another call — are
/// unknown. (What does count, the host's record of a Create's own settled
/// answer, is in `evidence.rs`.)
#[tokio::test]
async fn a_receipt_is_never_settlement_evidence() {
    use sandbox_host::provider::SandboxProvider;
    let (_dir, store) = receipt_store();
    let claim = json!({"action": "receipt-settled-absence", "receipt_key": "create_rejected"});
    let load = |registration: Registration| {
        let mut binding = binding(None, claim.clone());
        binding.receipts = Some(store.clone());
        TestHost::one(registration, binding).load(Connect::Capabilities)
    };
    let budget = || Budget::from_millis(10_000).expect("budget");
    let unknown = |kind: &'static str| async move {
        let host = load(direct(kind)).await.expect("loads");
        let kind = host.kind(kind).expect("kind");
        (
            kind.get_info(reference("a"), budget()).await,
            kind.kill(reference("a"), budget())
                .await
                .map_err(|f| f.error),
        )
    };
    let expected = (
        Err(Error::ComputeUnconfirmed),
        Err(Error::ComputeUnconfirmed),
    );
    assert_eq!(unknown("alpha").await, expected, "no receipt");
    let mut forging = binding(
        None,
        json!({"action": "receipt-settled-absence", "receipt_key": "forged", "receipt_value": "forge"}),
    );
    forging.receipts = Some(store.clone());
    let forger = TestHost::one(direct("alpha"), forging).loaded().await;
    assert_eq!(
        forger
            .kind("alpha")
            .expect("kind")
            .get_info(reference("a"), budget())
            .await,
        Err(Error::ComputeUnconfirmed),
        "a receipt the call wrote itself"
    );
    drop(forger);
    let alpha = At::kind("alpha", &store);
    assert_eq!(alpha.answer(put("create_rejected", "400"), "a").await, "ok");
    assert_eq!(
        unknown("alpha").await,
        expected,
        "a receipt another call wrote before"
    );
}
