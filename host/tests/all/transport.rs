//! The node transport over real sockets: `Node::serve` with the steerable
//! component on one side, the raw client and the Core-side proxy on the
//! other, and a recording fake Docker Engine behind the node to show what
//! ran natively.

use crate::support::*;
use sandbox_host::node_config::Listen;
use sandbox_host::provider::SandboxProvider;
use sandbox_host::transport::wire::{
    self, Call, MAX_REQUEST_BYTES, Outcome, PROTOCOL_HEADER, PROTOCOL_VERSION, READ_TIMEOUT,
    reasons,
};
use sandbox_host::transport::{
    ConnectionLimits, Endpoint, Node, NodeClient, RemoteProvider, TransportError,
};
use sandbox_host::types::{
    Bootstrap, Command, Error, Failure, Info, LifecycleState, Reference, UnsupportedOperation,
};
use sandbox_host::{Kind, types::Diagnostic, types::Target};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod sessions;

const TOKEN: &str = "transport-test-token-0123456789";

/// A node serving steerable kinds on a Unix socket, with its fake engine.
type Served = EngineNode;

/// Serves steerable kinds, each steered by its configuration.
async fn serve(kinds: &[(&str, serde_json::Value)], max_in_flight: u32) -> Served {
    serve_on(kinds, max_in_flight, None, READ_TIMEOUT).await
}

/// Serves one kind, `probe`, whose GetInfo inspects a volume: what ran
/// natively shows in the engine's record.
async fn serve_probe() -> Served {
    serve(&[("probe", steer("volume-inspect"))], 8).await
}

/// Serves one steerable kind per action, named by it and [`steer`]ed to it.
async fn serve_actions(actions: &[&str]) -> Served {
    let kinds: Vec<(&str, serde_json::Value)> = actions
        .iter()
        .map(|action| (*action, steer(action)))
        .collect();
    serve(&kinds, 8).await
}

async fn serve_on(
    kinds: &[(&str, serde_json::Value)],
    max_in_flight: u32,
    tcp: Option<std::net::SocketAddr>,
    read_timeout: Duration,
) -> Served {
    serve_set_up(kinds, max_in_flight, tcp, move |node| {
        node.with_read_timeout(read_timeout)
    })
    .await
}

/// [`serve_on`], with the node set up by `set_up`.
async fn serve_set_up(
    kinds: &[(&str, serde_json::Value)],
    max_in_flight: u32,
    tcp: Option<std::net::SocketAddr>,
    set_up: impl FnOnce(Node) -> Node + 'static,
) -> Served {
    let engine = FakeEngine::start().await;
    let host = Arc::new(steered(&engine.socket, kinds).loaded().await);
    let node = TestNode::builder(host)
        .token(TOKEN)
        .max_in_flight(max_in_flight)
        .set_up(set_up)
        .listen(move |_| {
            tcp.map(|address| Listen {
                tcp: Some(address),
                ..Listen::default()
            })
        })
        .ready(move |_| tcp.map(Endpoint::Tcp))
        .start()
        .await;
    EngineNode { node, engine }
}

impl EngineNode {
    fn local(&self, kind: &str) -> &Kind {
        self.host.kind(kind).expect("local kind")
    }

    /// A raw request, to send what the client never would.
    async fn raw(
        &self,
        method: reqwest::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> (u16, serde_json::Value) {
        let http = reqwest::Client::builder()
            .unix_socket(self.socket.as_path())
            .build()
            .expect("raw client");
        let mut request = http
            .request(method, format!("http://node{path}"))
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("answered");
        let status = response.status().as_u16();
        let body = response.bytes().await.expect("body");
        (status, serde_json::from_slice(&body).expect("JSON body"))
    }
}

fn reference(allocation: &str) -> Reference {
    Reference::new("tenant", "env", allocation)
}

fn bootstrap(allocation: &str) -> Bootstrap {
    sandbox_host::testing::bootstrap(reference(allocation), "credential")
}

/// A command of `args`, in the default directory, with `stdin`.
fn command(args: &[&str], stdin: Option<Vec<u8>>) -> Command {
    Command {
        args: args.iter().map(|arg| arg.to_string()).collect(),
        directory: None,
        stdin,
    }
}

fn steer(action: &str) -> serde_json::Value {
    serde_json::json!({ "declaration": "valid", "action": action, "volume": "vol-x" })
}

fn get_info_body(kind: &str, timeout_ms: u32) -> serde_json::Value {
    serde_json::json!({
        "kind": kind,
        "timeout_ms": timeout_ms,
        "call": { "get_info": { "tenant_id": "t", "environment_id": "e", "allocation_id": "a" } },
    })
}

const GOOD: [(&str, &str); 2] = [
    (PROTOCOL_HEADER, PROTOCOL_VERSION),
    ("authorization", "Bearer transport-test-token-0123456789"),
];

#[tokio::test]
async fn refused_requests_get_fixed_codes_and_run_nothing() {
    let node = serve_probe().await;
    let post = reqwest::Method::POST;
    let body = |value: serde_json::Value| serde_json::to_vec(&value).expect("json");
    let refused = |status: u16, code: &str| (status, serde_json::json!({ "refused": code }));
    // A well-formed get-info with `headers`.
    let get_info_with = async |headers: &[(&str, &str)]| {
        let sent = body(get_info_body("probe", 1000));
        node.raw(post.clone(), "/call", headers, sent).await
    };

    let wrong_version = [
        (PROTOCOL_HEADER, "oac-node/1"),
        ("authorization", GOOD[1].1),
    ];
    let answer = get_info_with(&wrong_version).await;
    assert_eq!(answer, refused(400, "version_mismatch"));
    let no_version = [("authorization", GOOD[1].1)];
    let answer = get_info_with(&no_version).await;
    assert_eq!(answer, refused(400, "version_mismatch"));

    for tokens in [
        &["Bearer wrong-token-0123456789abcd"][..],
        &["Bearer transport-test-token-0123456788"],
        &["Bearer transport-test-token-012345678"],
        &["Bearer transport-test-token-01234567890"],
        &["bearer transport-test-token-0123456789"],
        &["Bearer "],
        &["transport-test-token-0123456789"],
        &["Bearer transport-test-token-0123456789", "Bearer wrong"],
        &["Bearer wrong", "Bearer transport-test-token-0123456789"],
        &[GOOD[1].1, GOOD[1].1],
    ] {
        let mut headers = vec![(PROTOCOL_HEADER, PROTOCOL_VERSION)];
        headers.extend(tokens.iter().map(|token| ("authorization", *token)));
        let answer = get_info_with(&headers).await;
        assert_eq!(answer, refused(401, "unauthorized"), "tokens {tokens:?}");
    }

    // Only the head is sent: the node refuses by the declared length and
    // closes the connection, and a client still writing the body could
    // lose the answer to the close.
    let mut stream = tokio::net::UnixStream::connect(&node.socket)
        .await
        .expect("connect");
    let head = format!(
        "POST /call HTTP/1.1\r\nhost: node\r\n{}: {}\r\n{}: {}\r\ncontent-length: {}\r\n\r\n",
        GOOD[0].0,
        GOOD[0].1,
        GOOD[1].0,
        GOOD[1].1,
        MAX_REQUEST_BYTES + 1
    );
    let answer = answered_and_closed(&mut stream, head.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");
    assert!(answer.ends_with(r#"{"refused":"too_large"}"#), "{answer}");

    let mut unknown = get_info_body("probe", 1000);
    unknown["priority"] = serde_json::json!("high");
    let duplicate = br#"{"kind":"probe","kind":"probe","timeout_ms":1000,"call":{"get_info":{"tenant_id":"t","environment_id":"e","allocation_id":"a"}}}"#.to_vec();
    let null = body(
        serde_json::json!({ "kind": "probe", "timeout_ms": null, "call": get_info_body("probe", 1)["call"] }),
    );
    for (what, sent) in [
        ("unknown field", body(unknown)),
        ("duplicate field", duplicate),
        ("null", null),
        ("budget 0", body(get_info_body("probe", 0))),
        ("budget 120001", body(get_info_body("probe", 120_001))),
        ("not JSON", b"get-info please".to_vec()),
    ] {
        let answer = node.raw(post.clone(), "/call", &GOOD, sent).await;
        assert_eq!(answer, refused(400, "invalid"), "{what}");
    }
    let answer = node
        .raw(reqwest::Method::GET, "/call", &GOOD, Vec::new())
        .await;
    assert_eq!(answer, refused(404, "no_such_endpoint"));

    assert!(
        node.engine.recorded().is_empty(),
        "no refused request reached the engine: {:?}",
        node.engine.recorded()
    );
    // The same request, well-formed, does run.
    let answer = node
        .raw(post, "/call", &GOOD, body(get_info_body("probe", 120_000)))
        .await;
    assert_eq!(answer.0, 200);
    assert_eq!(
        node.engine.recorded().len(),
        1,
        "the accepted request ran once"
    );
    node.stop().await;
}

#[tokio::test]
async fn an_unsupported_operation_is_refused_by_the_node_before_native_io() {
    let node = serve_probe().await;
    let outcome = node
        .client()
        .call("probe", budget(5_000), Call::Initial(reference("a")))
        .await
        .expect("answered");
    let expected = Error::Unsupported(UnsupportedOperation {
        operation: "initial".into(),
        reason: "steerable_has_no_checkpoints".into(),
    });
    match outcome {
        Outcome::Error {
            error, info: None, ..
        } => assert_eq!(error, expected),
        other => panic!("expected unsupported, got {other:?}"),
    }
    assert!(node.engine.recorded().is_empty(), "zero native requests");
    node.stop().await;
}

#[tokio::test]
async fn every_error_code_is_mapped_back_identically() {
    let codes = [
        ("invalid", Error::Invalid),
        ("ownership", Error::Ownership),
        ("exists", Error::Exists),
        ("not-found", Error::NotFound),
        ("compute-unconfirmed", Error::ComputeUnconfirmed),
        ("command-unconfirmed", Error::CommandUnconfirmed),
        ("observation-unavailable", Error::ObservationUnavailable),
        ("runtime-not-running", Error::RuntimeNotRunning),
    ];
    let kinds: Vec<(String, serde_json::Value)> = codes
        .iter()
        .map(|(code, _)| (format!("e-{code}"), steer(&format!("error-{code}"))))
        .collect();
    let borrowed: Vec<(&str, serde_json::Value)> = kinds
        .iter()
        .map(|(kind, configuration)| (kind.as_str(), configuration.clone()))
        .collect();
    let node = serve(&borrowed, 8).await;
    let mut seen = Vec::new();
    for (code, expected) in codes {
        let kind = format!("e-{code}");
        let remote = node
            .proxy(&kind)
            .await
            .get_info(reference("a"), budget(5_000))
            .await;
        let local = node
            .local(&kind)
            .get_info(reference("a"), budget(5_000))
            .await;
        assert_eq!(
            remote,
            Err(expected.clone()),
            "{code} through the transport"
        );
        assert_eq!(remote, local, "{code}: remote and local agree");
        seen.push(expected.code());
    }
    // The ninth code: the node's own `unsupported`, through the raw client,
    // and the proxy's, which never reaches the node.
    let outcome = node
        .client()
        .call(
            "e-invalid",
            budget(5_000),
            Call::Observe(Target {
                reference: reference("a"),
                provider_id: None,
            }),
        )
        .await
        .expect("answered");
    let Outcome::Error { error, .. } = outcome else {
        panic!("observe is declared unsupported")
    };
    let unsupported = error;
    assert_eq!(
        unsupported,
        Error::Unsupported(UnsupportedOperation {
            operation: "observe".into(),
            reason: "steerable_has_no_observation".into(),
        })
    );
    let target = sandbox_host::types::Target {
        reference: reference("a"),
        provider_id: None,
    };
    let remote = node
        .proxy("e-invalid")
        .await
        .observe(target.clone(), budget(5_000))
        .await;
    let local = node.local("e-invalid").observe(target, budget(5_000)).await;
    assert_eq!(remote, Err(unsupported.clone()));
    assert_eq!(remote, local);
    seen.push(unsupported.code());
    seen.sort_unstable();
    assert_eq!(
        seen,
        [
            "command_unconfirmed",
            "exists",
            "invalid",
            "not_found",
            "observation_unavailable",
            "ownership",
            "runtime_not_running",
            "unconfirmed",
            "unsupported"
        ],
        "all nine fixed codes"
    );
    node.stop().await;
}

/// One evidence table, run through the in-process kind and through the node
/// and the proxy: both keep a failed mutation's info only when it is
/// settlement evidence for the exact reference (settled, and absent with no
/// id or present with one).
#[tokio::test]
async fn a_failed_mutation_keeps_only_exact_reference_settlement_evidence() {
    let evidence = |state, id: Option<&str>| Info {
        reference: reference("a"),
        provider_id: id.map(Into::into),
        state,
        bootstrap_complete: false,
        create_settled: true,
    };
    let table = [
        (
            "failure-settled-absent",
            Some(evidence(LifecycleState::Absent, None)),
        ),
        (
            "failure-settled-running",
            Some(evidence(LifecycleState::Running, Some("native-1"))),
        ),
        ("failure-unsettled", None),
        ("failure-absent-with-id", None),
    ];
    let actions: Vec<&str> = table.iter().map(|(action, _)| *action).collect();
    let node = serve_actions(&actions).await;
    for (action, kept) in table {
        let expected = Err(Failure {
            error: Error::Exists,
            info: kept,
        });
        let local = node
            .local(action)
            .create(bootstrap("a"), budget(5_000))
            .await;
        assert_eq!(local, expected, "{action}: in-process");
        let remote = node
            .proxy(action)
            .await
            .create(bootstrap("a"), budget(5_000))
            .await;
        assert_eq!(remote, expected, "{action}: through the node");
    }
    node.stop().await;
}

/// Answers that are not evidence, run through the in-process kind and
/// through the node and the proxy: a success about another allocation and
/// `unsupported` from an operation declared supported are unknown outcomes
/// on both paths.
#[tokio::test]
async fn contradicting_answers_are_unknown_on_both_paths() {
    let actions = ["foreign-answer", "error-unsupported"];
    let node = serve_actions(&actions).await;
    for action in actions {
        let remote = node.proxy(action).await;
        let local = node.local(action);
        for (path, read, mutation) in [
            (
                "in-process",
                local.get_info(reference("a"), budget(5_000)).await,
                local.create(bootstrap("a"), budget(5_000)).await,
            ),
            (
                "through the node",
                remote.get_info(reference("a"), budget(5_000)).await,
                remote.create(bootstrap("a"), budget(5_000)).await,
            ),
        ] {
            assert_eq!(
                read,
                Err(Error::ComputeUnconfirmed),
                "{action}: get-info {path}"
            );
            assert_eq!(
                mutation,
                Err(Failure::from(Error::ComputeUnconfirmed)),
                "{action}: create {path}"
            );
        }
    }
    node.stop().await;
}

/// Observations that claim what an observation cannot have: settlement of
/// a Create, or present compute without its native id. Unknown on both
/// paths; the same answer from Create (which may claim settlement) stands.
#[tokio::test]
async fn evidence_an_observation_cannot_have_is_unknown_on_both_paths() {
    let actions = ["settle-on-observation", "no-id"];
    let node = serve_actions(&actions).await;
    for action in actions {
        let remote = node.proxy(action).await;
        let local = node.local(action);
        for (path, answer) in [
            (
                "in-process",
                local.get_info(reference("a"), budget(5_000)).await,
            ),
            (
                "through the node",
                remote.get_info(reference("a"), budget(5_000)).await,
            ),
        ] {
            assert_eq!(answer, Err(Error::ComputeUnconfirmed), "{action}: {path}");
        }
    }
    let settled = node
        .local("settle-on-observation")
        .create(bootstrap("a"), budget(5_000))
        .await
        .expect("Create may claim settlement");
    assert!(settled.create_settled);
    node.stop().await;
}

/// A command outside the contract (no program, stdin over the bound) is
/// `invalid` on both paths, before anything is sent: the proxy does not
/// turn a request the node would refuse as too large into an unknown
/// outcome.
#[tokio::test]
async fn a_command_outside_the_contract_is_invalid_on_both_paths() {
    let node = serve(&[("plain", steer("none"))], 8).await;
    let bound = sandbox_host::contract::bounds::MAX_STDIN_BYTES;
    let over = |bytes: usize| command(&["cat"], Some(vec![0u8; bytes]));
    // Just over the bound, and over what a request frame can carry.
    let table = [over(bound + 1), over(60 << 20), command(&[], None)];
    let remote = node.proxy("plain").await;
    for command in table {
        let args = (command.args.clone(), command.stdin.as_ref().map(Vec::len));
        let local = node
            .local("plain")
            .run_command(reference("a"), command.clone(), budget(5_000))
            .await;
        assert_eq!(local, Err(Error::Invalid), "{args:?}: in-process");
        let through = remote
            .run_command(reference("a"), command, budget(5_000))
            .await;
        assert_eq!(through, Err(Error::Invalid), "{args:?}: through the node");
    }
    node.stop().await;
}

#[tokio::test]
async fn an_answer_too_large_for_a_frame_is_unconfirmed_at_the_node() {
    let node = serve(&[("huge", steer("huge-id"))], 8).await;
    let outcome = node
        .client()
        .call("huge", budget(10_000), Call::GetInfo(reference("a")))
        .await;
    let Ok(Outcome::Error {
        error, info: None, ..
    }) = outcome
    else {
        panic!("expected an error outcome, got {outcome:?}")
    };
    assert_eq!(error.code(), "unconfirmed");
    let local = node
        .local("huge")
        .get_info(reference("a"), budget(10_000))
        .await;
    assert!(
        local.is_ok(),
        "in-process the answer is fine; only the frame is too large"
    );
    node.stop().await;
}

#[tokio::test]
async fn a_lost_response_is_unconfirmed_and_never_sent_again() {
    let node = serve_probe().await;
    let lossy = crate::support::proxy::Proxy::start(node.socket.clone()).await;
    let client = NodeClient::new(&Endpoint::Unix(lossy.socket.clone()), node.token.expose())
        .expect("client");
    let provider =
        RemoteProvider::connect(client, &node.host.loaded_registry(), "probe", budget(5_000))
            .await
            .expect("proxy");
    lossy.lose_response_of("FRAME", "create");
    let created = provider.create(bootstrap("a"), budget(5_000)).await;
    assert_eq!(created, Err(Failure::from(Error::ComputeUnconfirmed)));
    lossy.lose_response_of("FRAME", "run_command");
    let ran = provider
        .run_command(reference("a"), command(&["true"], None), budget(5_000))
        .await;
    assert_eq!(ran, Err(Error::CommandUnconfirmed));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        (
            lossy.count("FRAME", "create"),
            lossy.count("FRAME", "run_command")
        ),
        (1, 1),
        "each call was sent exactly once"
    );
    assert_eq!(
        lossy.count("GET", "/frames"),
        2,
        "a session that lost an answer is not used again"
    );
    assert_eq!(
        node.engine.recorded().len(),
        1,
        "create ran once on the node (its effect applied, its answer lost)"
    );
    node.stop().await;
}

#[tokio::test]
async fn the_budget_counts_from_receipt_and_expiry_proves_nothing() {
    let node = serve(&[("spin", steer("loop"))], 8).await;
    let provider = node.proxy("spin").await;
    let started = Instant::now();
    let created = provider.create(bootstrap("a"), budget(300)).await;
    assert_eq!(created, Err(Failure::from(Error::ComputeUnconfirmed)));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the wait ends with the budget"
    );
    // The node answers its own expiry as `unconfirmed` when the client
    // waits a little longer than the budget it sent.
    let client = node.client();
    let outcome = client.call("spin", budget(300), Call::GetInfo(reference("a")));
    let outcome = tokio::time::timeout(Duration::from_secs(5), outcome)
        .await
        .expect("the node answers");
    assert!(
        matches!(
            outcome,
            Ok(Outcome::Error { ref error, info: None, .. }) if error.code() == "unconfirmed"
        ) || outcome == Err(TransportError::Expired),
        "{outcome:?}"
    );
    node.stop().await;
}

/// Starts a `get-info` of the `spin` kind (a guest that loops until its
/// budget of `budget_ms` ends) and gives it 300 ms to reach the node and
/// take an in-flight slot; its outcome, once it ends.
async fn spin_in_background(
    client: &NodeClient,
    budget_ms: u32,
) -> tokio::task::JoinHandle<Result<Outcome, TransportError>> {
    let client = client.clone();
    let spinning = tokio::spawn(async move {
        client
            .call("spin", budget(budget_ms), Call::GetInfo(reference("a")))
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    spinning
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_the_in_flight_limit_requests_are_refused_clearly() {
    let node = serve(&[("spin", steer("loop")), ("quick", steer("none"))], 1).await;
    let client = node.client();
    let busy_call = spin_in_background(&client, 1_500).await;
    let refused = client
        .call("quick", budget(1_000), Call::GetInfo(reference("a")))
        .await;
    assert_eq!(refused, Err(TransportError::Refused("busy")));
    let spun = busy_call.await.expect("task");
    // Either side may notice the expiry first; neither is a success.
    assert!(
        matches!(spun, Ok(Outcome::Error { ref error, .. }) if error.code() == "unconfirmed")
            || spun == Err(TransportError::Expired),
        "{spun:?}"
    );
    // Once the node has finished the spinning call, its slot is free again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answered = client
        .call("quick", budget(1_000), Call::GetInfo(reference("a")))
        .await;
    assert!(matches!(answered, Ok(Outcome::Ok(_))), "{answered:?}");
    node.stop().await;
}

/// A `quick` call is refused `busy` while the spinning operation holds the
/// node's one slot (`why` it does), and answered once `ends` has passed.
async fn slot_held_until_it_ends(client: &NodeClient, ends: Duration, why: &str) {
    let quick = || client.call("quick", budget(1_000), Call::GetInfo(reference("a")));
    assert_eq!(quick().await, Err(TransportError::Refused("busy")), "{why}");
    tokio::time::sleep(ends).await;
    assert!(
        matches!(quick().await, Ok(Outcome::Ok(_))),
        "the slot is free once it ended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_whose_caller_left_keeps_its_slot_until_it_ends() {
    let node = serve(&[("spin", steer("loop")), ("quick", steer("none"))], 1).await;
    let client = node.client();
    let call = client.call("spin", budget(1_500), Call::GetInfo(reference("a")));
    let gave_up = tokio::time::timeout(Duration::from_millis(300), call).await;
    assert!(gave_up.is_err(), "the caller leaves before the answer");
    let why = "the abandoned operation still runs and holds its slot";
    slot_held_until_it_ends(&client, Duration::from_millis(1_600), why).await;
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_outlives_the_connection_dropped_under_it() {
    // The node drops a connection at its hard lifetime even mid-request
    // (here after 300 ms); the operation on it goes on to its own end and
    // keeps its slot meanwhile.
    let limits = ConnectionLimits {
        max_lifetime: Duration::from_millis(200),
        hard_lifetime: Duration::from_millis(300),
        ..ConnectionLimits::default()
    };
    let node = serve_set_up(
        &[("spin", steer("loop")), ("quick", steer("none"))],
        1,
        None,
        move |node| node.with_limits(limits),
    )
    .await;
    let client = node.client();
    let spun = client
        .call("spin", budget(1_500), Call::GetInfo(reference("a")))
        .await;
    assert_eq!(
        spun,
        Err(TransportError::Lost),
        "its connection was dropped"
    );
    let why = "the operation still runs and holds its slot";
    slot_held_until_it_ends(&client, Duration::from_millis(2_500), why).await;
    node.stop().await;
}

#[tokio::test]
async fn the_proxy_declares_what_it_forwards_and_exposes_checkpoints_only_when_declared() {
    let node = serve(
        &[
            ("plain", steer("none")),
            (
                "checkpointed",
                serde_json::json!({ "declaration": "checkpoint" }),
            ),
        ],
        8,
    )
    .await;
    let plain = node.proxy("plain").await;
    assert!(plain.checkpoint().is_none());
    assert!(node.proxy("checkpointed").await.checkpoint().is_some());
    let decision = |operation: &str| {
        let operation =
            sandbox_host::contract::Operation::from_name(operation).expect("an operation");
        plain.declaration().decision(operation).cloned()
    };
    use sandbox_host::declaration::Decision;
    assert_eq!(
        decision("observe-batch"),
        Some(Decision::Unsupported(reasons::BATCH.into()))
    );
    assert_eq!(
        decision("discover-selection"),
        Some(Decision::Unsupported(reasons::DISCOVERY.into()))
    );
    assert_eq!(
        decision("verify-credential"),
        Some(Decision::Unsupported(reasons::VERIFICATION.into()))
    );
    // Not forwarded: answered by the proxy even when the node is gone.
    node.stop().await;
    let batch = plain.observe_batch(Vec::new(), budget(1_000)).await;
    assert_eq!(
        batch,
        Err(Error::Unsupported(UnsupportedOperation {
            operation: "observe-batch".into(),
            reason: reasons::BATCH.into(),
        }))
    );
    let verified = plain
        .verify_credential(
            sandbox_host::types::Configuration::without_credential("{}"),
            vec![reference("a")],
            budget(1_000),
        )
        .await;
    assert!(matches!(verified, Err(Error::Unsupported(_))));
    // A forwarded operation to a node that is gone is unknown, not an error.
    assert_eq!(
        plain.kill(reference("a"), budget(1_000)).await,
        Err(Failure::from(Error::ComputeUnconfirmed))
    );
}

#[tokio::test]
async fn health_and_a_full_walk_over_tcp() {
    let address = free_address();
    let node = serve_on(&[("plain", steer("none"))], 8, Some(address), READ_TIMEOUT).await;
    let client = node.client_at(&Endpoint::Tcp(address));
    let health = client.health(budget(5_000)).await.expect("health");
    assert!(health.ready);
    assert_eq!(health.kinds["plain"], Vec::<Diagnostic>::new());
    let provider =
        RemoteProvider::connect(client, &node.host.loaded_registry(), "plain", budget(5_000))
            .await
            .expect("proxy");
    let info = provider
        .create(bootstrap("a"), budget(5_000))
        .await
        .expect("created");
    assert_eq!(info.reference, reference("a"));
    assert_eq!(info.state, LifecycleState::Pending);
    let stdin: Vec<u8> = (0..=255).collect();
    let result = provider
        .run_command(
            reference("a"),
            command(&["cat"], Some(stdin.clone())),
            budget(5_000),
        )
        .await
        .expect("ran");
    assert_eq!(
        result.stdout, stdin,
        "bytes and their order survive the wire"
    );
    let killed: Info = provider
        .kill(reference("a"), budget(5_000))
        .await
        .expect("killed");
    assert_eq!(killed.state, LifecycleState::Absent);
    node.stop().await;
}

#[tokio::test]
async fn health_reports_each_kinds_probe_diagnostics() {
    let node = serve(
        &[("plain", steer("none")), ("unready", steer("unready"))],
        8,
    )
    .await;
    let health = node.client().health(budget(5_000)).await.expect("health");
    assert!(!health.ready);
    assert_eq!(health.kinds["plain"], vec![]);
    assert_eq!(
        health.kinds["unready"],
        vec![
            Diagnostic::ProviderUnavailable,
            Diagnostic::ImageUnavailable
        ]
    );
    let (status, body) = node
        .raw(reqwest::Method::GET, "/health", &GOOD, Vec::new())
        .await;
    assert_eq!(status, 503, "not ready is 503 for orchestrators");
    assert_eq!(
        body["kinds"]["unready"],
        serde_json::json!(["provider_unavailable", "image_unavailable"])
    );
    node.stop().await;
}

#[tokio::test]
async fn an_answer_that_is_not_a_frame_is_unknown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("garbage.sock");
    let listener = tokio::net::UnixListener::bind(&socket).expect("bind");
    let registry = sandbox_host::registry::Registry::of(vec![crate::support::steerable("plain")])
        .expect("registry");
    let kinds = serde_json::to_string(&wire::Kinds {
        registry: registry.digest(),
        node: "garbage".into(),
        components: BTreeMap::new(),
        kinds: BTreeMap::from([(
            "plain".to_string(),
            wire::KindDeclaration {
                operations: [
                    "create",
                    "get-info",
                    "renew",
                    "kill",
                    "run-command",
                    "observe",
                ]
                .into_iter()
                .map(|op| (op.to_string(), wire::Support::Supported))
                .chain(
                    sandbox_host::contract::Operation::of(
                        sandbox_host::contract::Interface::CheckpointProvider,
                    )
                    .map(|op| {
                        (
                            op.name().to_string(),
                            wire::Support::Unsupported("none".into()),
                        )
                    }),
                )
                .collect(),
            },
        )]),
    })
    .expect("json");
    // Answers /kinds properly and opens framed sessions; each operation
    // gets one kind of bad answer frame, except observe, the control, which
    // gets a good one. Every answer is its session's last.
    let info = r#"{"reference":{"tenant_id":"tenant","environment_id":"env","allocation_id":"a"},"state":"running","provider_id":"p","bootstrap_complete":true,"create_settled":true}"#;
    let answers: Vec<(&str, String)> = vec![
        // (operation key, answer frame's body)
        // An outcome, as `POST /call` answers it, not an answer frame.
        ("\"get_info\"", format!(r#"{{"ok":{{"info":{info}}}}}"#)),
        ("\"run_command\"", r#"{"outcome":{"ok":{"sample":"not one"}}}"#.into()),
        (
            "\"renew\"",
            r#"{"outcome":{"error":{"error":{"code":"unsupported","operation":"renew","reason":"x"}}}}"#.into(),
        ),
        ("\"kill\"", r#"{"outcome":{"error":{"error":{"code":"teapot"}}}}"#.into()),
        (
            "\"create\"",
            format!(r#"{{"outcome":{{"ok":{{"info":{}}}}}}}"#, info.replace("\"p\"", &format!("\"{}\"", "p".repeat(5 << 20)))),
        ),
        (
            "\"observe\"",
            r#"{"outcome":{"ok":{"sample":{"cpu_seconds":1.0,"memory_bytes":2,"memory_limit_bytes":3,"cpus":1.0}}}}"#.into(),
        ),
        ("\"initial\"", r#"{"refused":"teapot"}"#.into()),
    ];
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut stream, _)) = listener.accept().await {
            let (kinds, answers) = (kinds.clone(), answers.clone());
            tokio::spawn(async move {
                let request = read_message(&mut stream).await;
                if request.starts_with("GET /kinds") {
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{PROTOCOL_HEADER}: {PROTOCOL_VERSION}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{kinds}",
                        kinds.len()
                    );
                    let _ = stream.write_all(answer.as_bytes()).await;
                } else {
                    assert!(request.starts_with("GET /frames"), "{request}");
                    let upgraded = format!(
                        "HTTP/1.1 101 Switching Protocols\r\nupgrade: oac-frames\r\nconnection: upgrade\r\n{PROTOCOL_HEADER}: {PROTOCOL_VERSION}\r\n\r\n"
                    );
                    let _ = stream.write_all(upgraded.as_bytes()).await;
                    let length = stream.read_u32().await.expect("a request frame") as usize;
                    let mut frame = vec![0; length];
                    stream.read_exact(&mut frame).await.expect("its body");
                    let frame = String::from_utf8(frame).expect("JSON");
                    let body = answers
                        .into_iter()
                        .find(|(key, _)| frame.contains(key))
                        .map(|(_, body)| body)
                        .expect("a known operation");
                    let prefix = (body.len() as u32) | wire::frame::LAST;
                    let _ = stream.write_all(&prefix.to_be_bytes()).await;
                    let _ = stream.write_all(body.as_bytes()).await;
                }
                let _ = stream.shutdown().await;
                let mut rest = Vec::new();
                let _ = stream.read_to_end(&mut rest).await;
            });
        }
    });
    let token = token_in(dir.path(), TOKEN);
    let client = NodeClient::new(&Endpoint::Unix(socket.clone()), token.expose()).expect("client");
    let provider = RemoteProvider::connect(client, &registry, "plain", budget(5_000))
        .await
        .expect("the kinds frame is fine");
    let target = sandbox_host::types::Target {
        reference: reference("a"),
        provider_id: None,
    };
    assert!(
        provider.observe(target, budget(2_000)).await.is_ok(),
        "control: a good frame is accepted"
    );
    assert_eq!(
        provider.get_info(reference("a"), budget(2_000)).await,
        Err(Error::ComputeUnconfirmed),
        "an outcome that is not an answer frame"
    );
    assert_eq!(
        provider.renew(reference("a"), budget(2_000)).await,
        Err(Failure::from(Error::ComputeUnconfirmed)),
        "unsupported from an operation declared supported"
    );
    assert_eq!(
        provider.kill(reference("a"), budget(2_000)).await,
        Err(Failure::from(Error::ComputeUnconfirmed)),
        "a code outside the fixed set"
    );
    assert_eq!(
        provider.create(bootstrap("a"), budget(5_000)).await,
        Err(Failure::from(Error::ComputeUnconfirmed)),
        "an answer over the frame bound"
    );
    let raw = NodeClient::new(&Endpoint::Unix(socket.clone()), token.expose()).expect("client");
    assert_eq!(
        raw.call("plain", budget(2_000), Call::Initial(reference("a")))
            .await,
        Err(TransportError::BadFrame),
        "a refusal code outside the fixed set"
    );
    assert_eq!(
        provider
            .run_command(reference("a"), command(&["true"], None), budget(2_000))
            .await,
        Err(Error::CommandUnconfirmed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_clients_hold_no_connection_slot_or_shutdown() {
    use tokio::io::AsyncWriteExt;
    let read_timeout = Duration::from_millis(400);
    let patience = Duration::from_secs(10);
    let node = serve_on(&[("probe", steer("volume-inspect"))], 1, None, read_timeout).await;
    let connect = || tokio::net::UnixStream::connect(&node.socket);

    // A connection that never sends anything is closed as idle.
    let mut idle = connect().await.expect("connect");
    let closed = until_closed(&mut idle, patience).await;
    assert!(closed.is_some(), "an idle connection is closed");

    // A head that never ends is cut off, unanswered.
    let mut slow_head = connect().await.expect("connect");
    slow_head
        .write_all(b"POST /call HTTP/1.1\r\nhost: node\r\n")
        .await
        .expect("write");
    let closed = until_closed(&mut slow_head, patience).await;
    assert!(closed.is_some(), "a stalled head is cut off");

    // A body that never ends is refused `too_slow`, and its in-flight slot
    // (the only one) is free again afterwards.
    let mut slow_body = connect().await.expect("connect");
    let head = format!(
        "POST /call HTTP/1.1\r\nhost: node\r\n{}: {}\r\nauthorization: {}\r\n\
         content-type: application/json\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{{\"kind\"",
        GOOD[0].0, GOOD[0].1, GOOD[1].1
    );
    slow_body.write_all(head.as_bytes()).await.expect("write");
    let answer = until_closed(&mut slow_body, patience)
        .await
        .expect("a stalled body is answered and closed");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.ends_with(r#"{"refused":"too_slow"}"#), "{answer}");
    let answered = node
        .client()
        .call("probe", budget(2_000), Call::GetInfo(reference("a")))
        .await;
    assert!(answered.is_ok(), "the slot is free again: {answered:?}");
    assert_eq!(
        node.engine.recorded().len(),
        1,
        "only the complete request ran natively"
    );

    // Shutdown waits for no stalled client: it ends within the read timeout.
    let mut stalled = connect().await.expect("connect");
    stalled
        .write_all(b"GET /kinds HTTP/1.1\r\n")
        .await
        .expect("write");
    let stopping = Instant::now();
    tokio::time::timeout(patience, node.stop())
        .await
        .expect("shutdown is not held by a stalled client");
    assert!(stopping.elapsed() < patience);
    drop(stalled);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pooled_connection_the_node_closed_is_never_reused() {
    // The node closes connections idle for 300 ms; the client keeps its
    // pooled ones for 15 s. A call after the node closed the connection
    // must open a new one, not send into the closed one (that request
    // would be lost, and its outcome unknown).
    let served = serve_on(
        &[("steerable", serde_json::json!({ "action": "none" }))],
        8,
        None,
        Duration::from_millis(300),
    )
    .await;
    let client = served.client();
    let call = || {
        client.call(
            "steerable",
            budget(5_000),
            Call::GetInfo(Reference::new("t", "e", "reused")),
        )
    };
    for _ in 0..3 {
        assert!(matches!(call().await, Ok(Outcome::Ok(_))));
        tokio::time::sleep(Duration::from_millis(800)).await;
    }
    served.stop().await;
}
