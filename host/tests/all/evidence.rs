//! Evidence is what the host recorded or saw itself, never what a component
//! wrote: a `create-settled` claim from GetInfo, Renew or Kill stands only
//! on the host's record of a Create's own settled answer, and agrees with
//! it; a Docker kind's absence after Kill is checked on the engine. The
//! steerable component plays the hostile adapter, through real Wasm.

use crate::support::*;
use sandbox_host::types::{Bootstrap, Error, Failure, Info, LifecycleState, Reference};
use sandbox_host::{Host, ReceiptStore, Registration};
use serde_json::{Value, json};

fn reference(allocation: &str) -> Reference {
    Reference::new("t", "e", allocation)
}

fn bootstrap(allocation: &str) -> Bootstrap {
    sandbox_host::testing::bootstrap(reference(allocation), "daemon-credential-0123")
}

/// The direct steerable test row (receipts granted).
fn direct_row() -> Registration {
    let row = sandbox_host::testing::steerable_direct_row();
    Registration {
        kind: "recorded".into(),
        ..row
    }
}

/// The direct kind steered by `steering` over `store` (one host per
/// steering, as a node restarted with another configuration would be).
async fn on(store: &ReceiptStore, steering: Value) -> Host {
    let mut binding = binding(None, steering);
    binding.receipts = Some(store.clone());
    TestHost::one(direct_row(), binding).loaded().await
}

async fn get_info(store: &ReceiptStore, steering: Value, allocation: &str) -> Result<Info, Error> {
    on(store, steering)
        .await
        .kind("recorded")
        .expect("kind")
        .get_info(reference(allocation), budget(5_000))
        .await
}

/// Creates `allocation` on the direct kind steered by `steering`, within
/// `ms`.
async fn create_within(
    store: &ReceiptStore,
    steering: Value,
    allocation: &str,
    ms: u32,
) -> Result<Info, Failure> {
    on(store, steering)
        .await
        .kind("recorded")
        .expect("kind")
        .create(bootstrap(allocation), budget(ms))
        .await
}

/// [`create_within`] 5 s.
async fn create(store: &ReceiptStore, steering: Value, allocation: &str) -> Result<Info, Failure> {
    create_within(store, steering, allocation, 5_000).await
}

/// Creates allocation `refused`, which the component refuses at once:
/// settled absence, which the host records.
async fn refused_create(store: &ReceiptStore) -> Result<Info, Failure> {
    create(
        store,
        json!({ "action": "failure-settled-absent" }),
        "refused",
    )
    .await
}

/// The attack: a Create writes its "pending" receipt and never answers
/// (unknown); a later GetInfo reads that receipt and claims settled
/// absence. Nothing the host recorded says the Create settled, so the
/// claim is the unknown outcome, and so is a claim resting on a receipt a
/// GetInfo planted itself.
#[tokio::test]
async fn a_components_own_receipt_is_no_evidence() {
    let (_dir, store) = receipt_store();
    let crashed = create_within(&store, json!({ "action": "receipt-then-loop" }), "a", 300).await;
    assert_eq!(crashed.map_err(|f| f.error), Err(Error::ComputeUnconfirmed));
    let claimed = get_info(&store, json!({ "action": "receipt-settled-absence" }), "a").await;
    assert_eq!(
        claimed,
        Err(Error::ComputeUnconfirmed),
        "read the pending receipt"
    );
    let planted = get_info(
        &store,
        json!({ "action": "receipt-settled-absence", "receipt_key": "create_settled",
                "receipt_value": "forge" }),
        "b",
    )
    .await;
    assert_eq!(planted, Err(Error::ComputeUnconfirmed), "planted its own");
}

/// What a Create answered settled is what later claims must agree with.
#[tokio::test]
async fn a_later_claim_stands_on_the_hosts_record_of_the_create_and_agrees_with_it() {
    let (_dir, store) = receipt_store();
    let refused = refused_create(&store).await;
    assert!(
        matches!(&refused, Err(f) if f.info.as_ref().is_some_and(|i| i.create_settled)),
        "{refused:?}"
    );
    let absence = get_info(
        &store,
        json!({ "action": "receipt-settled-absence" }),
        "refused",
    )
    .await
    .expect("settled absence, as recorded");
    assert!(absence.create_settled && absence.state == LifecycleState::Absent);
    // Compute where the record says the Create made none: unknown.
    assert_eq!(
        get_info(
            &store,
            json!({ "action": "settle-on-observation" }),
            "refused"
        )
        .await,
        Err(Error::ComputeUnconfirmed)
    );

    // Create ended with compute `native-1`, settled.
    let created = create(&store, json!({ "action": "settle-on-observation" }), "made")
        .await
        .expect("created, settled");
    assert_eq!(created.provider_id.as_deref(), Some("native-1"));
    let again = get_info(&store, json!({ "action": "settle-on-observation" }), "made")
        .await
        .expect("the recorded compute, settled");
    assert_eq!(again.provider_id.as_deref(), Some("native-1"));
}

/// A record survives the host: a node restarted on the same store still
/// has it (the suite's `receipts.restart` case, through the host alone).
#[tokio::test]
async fn the_record_survives_reopening_the_store() {
    let dir = tempfile::tempdir().expect("dir").keep();
    {
        let store = ReceiptStore::open(&dir).expect("store");
        create(&store, json!({ "action": "settle-on-observation" }), "kept")
            .await
            .expect("created");
    }
    let store = ReceiptStore::open(&dir).expect("reopened");
    let info = get_info(&store, json!({ "action": "settle-on-observation" }), "kept")
        .await
        .expect("settled on the kept record");
    assert!(info.create_settled);
}

/// The attack: Kill answers absence while the allocation's container (or
/// volume) still exists. The host lists what carries the allocation's
/// labels and answers unknown; with nothing left the absence stands.
#[tokio::test]
async fn kill_absence_is_checked_on_the_engine() {
    let engine = FakeEngine::start().await;
    engine.insert_image("oac-test-runtime:test", NO_IMAGE);
    let host = |steering: Value| {
        let socket = engine.socket.clone();
        async move {
            TestHost::one(steerable("steerable"), binding(Some(socket), steering))
                .loaded()
                .await
        }
    };
    let make = |allocation: &'static str, steering: Value| {
        let host = host(steering);
        async move {
            host.await
                .kind("steerable")
                .expect("kind")
                .get_info(reference(allocation), budget(5_000))
                .await
                .expect("made")
        }
    };
    make("with-container", json!({ "action": "container-create" })).await;
    make("with-volume", json!({ "action": "volume-create" })).await;
    // Steered to do nothing, Kill answers absence.
    let killer = host(json!({})).await;
    let kind = killer.kind("steerable").expect("kind");
    for allocation in ["with-container", "with-volume"] {
        assert_eq!(
            kind.kill(reference(allocation), budget(5_000))
                .await
                .map_err(|f| f.error),
            Err(Error::ComputeUnconfirmed),
            "{allocation}: absence with resources left"
        );
    }
    let nothing = kind
        .kill(reference("nothing"), budget(5_000))
        .await
        .expect("nothing is left");
    assert_eq!(nothing.state, LifecycleState::Absent);
}

/// Through a node the same record decides: the node sends it with the
/// answer, and Core's proxy judges the claim by it as the host does in
/// process. A claim without a record stays the unknown outcome.
#[tokio::test]
async fn through_a_node_a_claim_stands_on_the_same_record() {
    use crate::support::node::TestNode;
    use sandbox_host::provider::SandboxProvider;
    let (_dir, store) = receipt_store();
    let refused = refused_create(&store).await;
    assert!(refused.is_err(), "settled absence, recorded");
    let host = on(&store, json!({ "action": "receipt-settled-absence" })).await;
    let node = TestNode::builder(std::sync::Arc::new(host)).start().await;
    let proxy = node.proxy("recorded").await;
    let absence = proxy
        .get_info(reference("refused"), budget(5_000))
        .await
        .expect("settled absence, as recorded, through the node");
    assert!(absence.create_settled && absence.state == LifecycleState::Absent);
    let killed = proxy
        .kill(reference("refused"), budget(5_000))
        .await
        .expect("the record settles the Kill too");
    assert!(killed.create_settled && killed.state == LifecycleState::Absent);
    assert_eq!(
        proxy.get_info(reference("never"), budget(5_000)).await,
        Err(Error::ComputeUnconfirmed),
        "no Create recorded: the claim proves nothing"
    );
    let _ = node.stop().await;
}
