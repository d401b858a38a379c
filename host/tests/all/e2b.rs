//! The E2B kind through the real host against the fake E2B (REST API and
//! envd behind TLS under a test domain): one allocation's life, receipts
//! across a restart, settled refusals, and Kill's terminal proof.

use crate::support::*;
use oac_fixtures::e2b_api::{self, FakeE2b};
use sandbox_host::ReceiptStore;
use sandbox_host::testing::TestNetwork;
use sandbox_host::types::{
    Bootstrap, Command, Error, Failure, Info, LifecycleState, NetworkAccess, Reference,
};
use sandbox_host::{Budget, Host, NodeBinding, Registration};
use serde_json::json;

const CANARY: &str = "daemon-credential-canary-7f3e";

fn row() -> Registration {
    sandbox_host::registry::builtin()
        .into_iter()
        .find(|row| row.kind == "e2b")
        .expect("the builtin table has the e2b kind")
}

fn reference(allocation: &str) -> Reference {
    Reference::new("t", "e", allocation)
}

fn budget() -> Budget {
    Budget::from_millis(30_000).expect("budget")
}

/// The E2B kind bound to `fake`, keeping receipts in `store`.
async fn load(fake: &FakeE2b, store: &ReceiptStore) -> Host {
    let binding = NodeBinding {
        installation_id: INSTALLATION.into(),
        configuration: json!({
            "template": format!("{}:{}", e2b_api::TEMPLATE, e2b_api::BUILD),
            "api_url": e2b_api::API_URL,
            "domain": e2b_api::DOMAIN,
            "cpu_count": e2b_api::BUILD_RESOURCES.0,
            "memory_mb": e2b_api::BUILD_RESOURCES.1,
        }),
        credential: Some(json!({"api_key": e2b_api::API_KEY}).to_string()),
        receipts: Some(store.clone()),
        microsandbox: Default::default(),
        http_test_network: Some(TestNetwork {
            root_certificate_pem: fake.ca_pem().as_bytes().to_vec(),
            address: fake.address(),
        }),
        ..NodeBinding::default()
    };
    TestHost::one(row(), binding).loaded().await
}

/// The fake E2B with the kind loaded against it and its receipts.
struct World {
    fake: FakeE2b,
    host: Host,
    _state: tempfile::TempDir,
}

impl World {
    async fn start() -> Self {
        Self::around(FakeE2b::start().await.expect("fake E2B")).await
    }

    /// With the fake's sandboxes as containers on the test engine, when
    /// there is one (commands then run for real).
    async fn on_engine(test: &str) -> Self {
        let fake = match crate::support::engine_socket(test) {
            Some(socket) => FakeE2b::start_backed(socket.to_str().expect("UTF-8 socket path"))
                .await
                .expect("fake E2B on the engine"),
            None => FakeE2b::start().await.expect("fake E2B"),
        };
        Self::around(fake).await
    }

    async fn around(fake: FakeE2b) -> Self {
        let (state, store) = receipt_store();
        let host = load(&fake, &store).await;
        World {
            fake,
            host,
            _state: state,
        }
    }

    fn kind(&self) -> &sandbox_host::Kind {
        self.host.kind("e2b").expect("kind")
    }

    /// Creates `allocation`'s sandbox; its id.
    async fn created(&self, allocation: &str) -> String {
        created_id(self.kind(), allocation).await
    }
}

/// Creates `allocation`'s sandbox through `kind`; its id.
async fn created_id(kind: &sandbox_host::Kind, allocation: &str) -> String {
    kind.create(bootstrap(allocation), budget())
        .await
        .expect("created")
        .provider_id
        .expect("id")
}

fn bootstrap(allocation: &str) -> Bootstrap {
    Bootstrap {
        reference: reference(allocation),
        session_id: "session-1".into(),
        device_id: "device-1".into(),
        core_url: "https://core.example".into(),
        daemon_credential: CANARY.into(),
        harness: "harness-a".into(),
        network_access: NetworkAccess::Enabled,
        allowed_domains: Vec::new(),
    }
}

fn command(args: &[&str], stdin: Option<Vec<u8>>) -> Command {
    Command {
        args: args.iter().map(|arg| arg.to_string()).collect(),
        directory: None,
        stdin,
    }
}

/// How many requests the fake got whose line ends with `tail`.
fn sent(fake: &FakeE2b, tail: &str) -> usize {
    fake.requests()
        .iter()
        .filter(|request| request.ends_with(tail))
        .count()
}

/// Creates sent: `POST /sandboxes`.
fn posts(fake: &FakeE2b) -> usize {
    sent(fake, "POST api /sandboxes")
}

/// A node serving the E2B kind bound to `fake`, keeping receipts in
/// `store`.
async fn served(fake: &FakeE2b, store: &ReceiptStore) -> TestNode {
    TestNode::builder(std::sync::Arc::new(load(fake, store).await))
        .start()
        .await
}

#[tokio::test]
async fn one_allocation_lives_and_dies_through_the_e2b_kind() {
    // Without an engine this runs on simulated commands (and says so).
    let world = World::on_engine("e2b lifecycle on containers").await;
    let (fake, kind) = (&world.fake, world.kind());

    let created = kind
        .create(bootstrap("a"), budget())
        .await
        .expect("created");
    let id = created.provider_id.clone().expect("an id");
    assert_eq!(
        (
            created.state,
            created.bootstrap_complete,
            created.create_settled
        ),
        (LifecycleState::Running, true, true)
    );
    let sandboxes = fake.sandboxes();
    assert_eq!(sandboxes.len(), 1);
    let sandbox = &sandboxes[0];
    assert_eq!(sandbox.id, id);
    // The pinned build, not the newer one the template's default tag
    // names; the kind's configuration names the template by an alias,
    // the sandbox shows its id and another alias, and qualifies.
    assert_eq!(sandbox.build_id, e2b_api::BUILD);
    assert_eq!(sandbox.template_id, e2b_api::TEMPLATE_ID);
    assert_eq!(
        sandbox.metadata,
        [
            ("oac_allocationid", "a"),
            ("oac_environmentid", "e"),
            ("oac_installationid", INSTALLATION),
            ("oac_tenantid", "t"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
    );
    let file = fake
        .file(&id, e2b_api::BOOTSTRAP_FILE)
        .await
        .expect("the bootstrap file");
    assert_eq!((file.mode, file.uid), (0o600, 1000));
    let record: serde_json::Value = serde_json::from_slice(&file.bytes).expect("JSON record");
    assert_eq!(record["daemon_credential"], CANARY);
    assert!(
        fake.requests()
            .iter()
            .all(|request| !request.contains(CANARY)),
        "the daemon credential travels only in stdin"
    );

    let info = kind.get_info(reference("a"), budget()).await.expect("info");
    assert_eq!(
        info,
        Info {
            reference: reference("a"),
            provider_id: Some(id.clone()),
            state: LifecycleState::Running,
            bootstrap_complete: true,
            create_settled: true,
        },
        "settled on the receipt the call read"
    );
    assert_eq!(
        kind.get_info(reference("b"), budget()).await,
        Err(Error::NotFound)
    );
    let renewed = kind.renew(reference("a"), budget()).await.expect("renewed");
    assert_eq!(renewed.provider_id.as_deref(), Some(id.as_str()));

    let sendinputs = || sent(fake, "/process.Process/SendInput");
    let before = sendinputs();
    let stdin: Vec<u8> = (0..200 * 1024).map(|i| (i % 251) as u8).collect();
    let echoed = kind
        .run_command(
            reference("a"),
            command(&["cat"], Some(stdin.clone())),
            budget(),
        )
        .await
        .expect("ran");
    assert_eq!((echoed.stdout, echoed.exit_code), (stdin, 0));
    assert_eq!(
        sendinputs() - before,
        4,
        "200 KiB of stdin in 64 KiB chunks"
    );
    let failed = kind
        .run_command(
            reference("a"),
            command(&["sh", "-c", "exit 3"], None),
            budget(),
        )
        .await
        .expect("a non-zero exit is a result");
    assert_eq!(failed.exit_code, 3);
    assert_eq!(
        kind.run_command(reference("a"), command(&["big-output"], None), budget())
            .await,
        Err(Error::CommandUnconfirmed),
        "more than 1 MiB on a stream"
    );

    let killed = kind.kill(reference("a"), budget()).await.expect("killed");
    assert_eq!(
        (killed.state, killed.provider_id, killed.create_settled),
        (LifecycleState::Absent, None, true)
    );
    assert!(fake.sandboxes().is_empty());
    assert_eq!(
        kind.get_info(reference("a"), budget())
            .await
            .map(|i| i.state),
        Ok(LifecycleState::Absent),
        "settled absence once the sandbox is gone"
    );
    assert_eq!(posts(fake), 1, "one sandbox, one create");
}

#[tokio::test]
async fn receipts_find_the_sandbox_after_a_restart() {
    let fake = FakeE2b::start().await.expect("fake E2B");
    let dir = tempfile::tempdir().expect("tempdir");
    let id = {
        let store = ReceiptStore::open(dir.path()).expect("store");
        let host = load(&fake, &store).await;
        let kind = host.kind("e2b").expect("kind");
        created_id(kind, "a").await
    };
    // Another host on the same state directory: the receipt names the
    // sandbox, so GetInfo reads it by id without listing.
    let store = ReceiptStore::open(dir.path()).expect("reopened");
    let host = load(&fake, &store).await;
    let before = fake.requests().len();
    let info = host
        .kind("e2b")
        .expect("kind")
        .get_info(reference("a"), budget())
        .await
        .expect("info");
    assert_eq!(info.provider_id.as_deref(), Some(id.as_str()));
    assert!(info.create_settled);
    let asked: Vec<String> = fake.requests()[before..].to_vec();
    assert!(
        asked.contains(&format!("GET api /sandboxes/{id}")),
        "{asked:?}"
    );
    assert!(
        !asked
            .iter()
            .any(|request| request.starts_with("GET api /v2/sandboxes")),
        "no list: {asked:?}"
    );
}

#[tokio::test]
async fn a_settled_refusal_proves_absence_without_asking_e2b() {
    let world = World::start().await;
    let (fake, kind) = (&world.fake, world.kind());
    fake.refuse_next("POST", "/sandboxes", 429);
    let refused = kind.create(bootstrap("a"), budget()).await;
    assert_eq!(
        refused,
        Err(Failure {
            error: Error::Invalid,
            info: Some(Info {
                reference: reference("a"),
                provider_id: None,
                state: LifecycleState::Absent,
                bootstrap_complete: false,
                create_settled: true,
            }),
        })
    );
    let before = fake.requests().len();
    let info = kind.get_info(reference("a"), budget()).await.expect("info");
    assert_eq!(
        (info.state, info.create_settled),
        (LifecycleState::Absent, true)
    );
    assert_eq!(fake.requests().len(), before, "no cloud call");
    assert!(fake.sandboxes().is_empty());
}

#[tokio::test]
async fn an_unknown_create_is_never_replayed_and_kill_needs_terminal_proof() {
    let world = World::start().await;
    let (fake, kind) = (&world.fake, world.kind());

    assert_eq!(
        kind.kill(reference("never"), budget())
            .await
            .map_err(|failure| failure.error),
        Err(Error::ComputeUnconfirmed),
        "no known id and no settled receipt: nothing proves absence"
    );

    // E2B makes the sandbox, then answers 503.
    fake.fail_next_create_after_commit(503);
    assert_eq!(
        kind.create(bootstrap("a"), budget())
            .await
            .map_err(|failure| failure.error),
        Err(Error::ComputeUnconfirmed)
    );
    assert_eq!(fake.sandboxes().len(), 1);
    // A second Create finds it by its labels: `exists`, no second POST.
    let again = kind.create(bootstrap("a"), budget()).await;
    let failure = again.expect_err("exists");
    assert_eq!(failure.error, Error::Exists);
    assert_eq!(posts(fake), 1, "never replayed");
    // GetInfo finds it by its labels, unsettled (the attempt's end is unknown).
    let info = kind.get_info(reference("a"), budget()).await.expect("info");
    assert_eq!(
        (info.state, info.bootstrap_complete, info.create_settled),
        (LifecycleState::Running, false, false)
    );
    // Kill removes it and proves nothing is left.
    let killed = kind.kill(reference("a"), budget()).await.expect("killed");
    assert_eq!(killed.state, LifecycleState::Absent);
    assert!(fake.sandboxes().is_empty());
}

#[tokio::test]
async fn a_foreign_sandbox_is_never_touched() {
    let world = World::start().await;
    let (fake, kind) = (&world.fake, world.kind());
    // Another installation's sandbox for the same reference.
    let foreign = fake.insert(
        [
            ("oac_installationid", "someone-else"),
            ("oac_tenantid", "t"),
            ("oac_environmentid", "e"),
            ("oac_allocationid", "a"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect(),
    );
    assert_eq!(
        kind.get_info(reference("a"), budget()).await,
        Err(Error::NotFound)
    );
    let created = kind
        .create(bootstrap("a"), budget())
        .await
        .expect("created");
    assert_ne!(created.provider_id.as_deref(), Some(foreign.as_str()));
    kind.kill(reference("a"), budget()).await.expect("killed");
    let left: Vec<String> = fake.sandboxes().into_iter().map(|s| s.id).collect();
    assert_eq!(left, vec![foreign], "only our sandbox was removed");
}

#[tokio::test]
async fn a_create_whose_answer_never_comes_is_unknown_and_never_resent() {
    let world = World::start().await;
    let (fake, kind) = (&world.fake, world.kind());
    for (step, status) in [(0, 504), (1, 0)] {
        // 504 after the sandbox is made; then a connection that never answers.
        let allocation = format!("lost-{step}");
        if status == 0 {
            fake.stall_next_create_after_commit();
        } else {
            fake.fail_next_create_after_commit(status);
        }
        let short = Budget::from_millis(3_000).expect("budget");
        assert_eq!(
            kind.create(bootstrap(&allocation), short)
                .await
                .map_err(|failure| failure.error),
            Err(Error::ComputeUnconfirmed),
            "status {status}"
        );
        let found = kind
            .get_info(reference(&allocation), budget())
            .await
            .expect("found by its labels");
        assert!(!found.create_settled, "an unknown outcome is never settled");
    }
    assert_eq!(posts(fake), 2, "one POST per Create, never resent");
}

#[tokio::test]
async fn a_sandbox_that_ends_early_is_settled_absence_and_a_reset_stream_is_unknown() {
    let world = World::start().await;
    let (fake, kind) = (&world.fake, world.kind());
    let id = world.created("a").await;

    fake.cut_next_command_stream();
    assert_eq!(
        kind.run_command(reference("a"), command(&["echo", "hi"], None), budget())
            .await,
        Err(Error::CommandUnconfirmed),
        "a stream that stops without its end is an unknown outcome"
    );
    assert_eq!(
        sent(fake, "/process.Process/Start"),
        2,
        "the init and the one command, never resent"
    );

    assert!(fake.vanish(&id), "the lease ran out early");
    assert_eq!(
        kind.run_command(reference("a"), command(&["echo", "hi"], None), budget())
            .await,
        Err(Error::NotFound)
    );
    let info = kind.get_info(reference("a"), budget()).await.expect("info");
    assert_eq!(
        (info.state, info.provider_id, info.create_settled),
        (LifecycleState::Absent, None, true),
        "the Create had ended (its receipt), and the sandbox is gone"
    );
    let killed = kind.kill(reference("a"), budget()).await.expect("killed");
    assert_eq!(killed.state, LifecycleState::Absent);
}

#[tokio::test]
async fn observation_discovery_and_verification_read_e2b() {
    use sandbox_host::provider::ConfigurationProvider;
    use sandbox_host::types::{Configuration, Target};
    let world = World::start().await;
    let (fake, kind) = (&world.fake, world.kind());
    let id = kind
        .create(bootstrap("a"), budget())
        .await
        .expect("created")
        .provider_id;

    let target = |allocation: &str| Target {
        reference: reference(allocation),
        provider_id: id.clone(),
    };
    let sample = kind.observe(target("a"), budget()).await.expect("a sample");
    assert_eq!(sample.memory_limit_bytes, 1024 << 20);
    assert_eq!(sample.cpus, 2.0, "capacity, not use");
    assert_eq!(sample.cpu_seconds, None, "E2B reports no CPU time");
    assert!(sample.started_at.is_some());
    let batch = kind
        .observe_batch(vec![target("a"), target("b"), target("a")], budget())
        .await
        .expect("a batch");
    assert_eq!(batch.len(), 3);
    assert!(batch[0].is_ok() && batch[2].is_ok(), "{batch:?}");
    assert!(batch[1].is_err(), "no sandbox for b: {batch:?}");

    let writes = || {
        fake.requests()
            .iter()
            .filter(|request| !request.starts_with("GET"))
            .count()
    };
    let writes_before = writes();
    let key = json!({"api_key": e2b_api::API_KEY}).to_string();
    let public = |template: &str| {
        json!({"template": template, "api_url": e2b_api::API_URL, "domain": e2b_api::DOMAIN})
            .to_string()
    };
    let candidate = |template: &str, key: &str| Configuration {
        public: public(template),
        credential: Some(key.to_string()),
    };
    let ready = format!("{}:{}", e2b_api::TEMPLATE, e2b_api::BUILD);
    let resolved = kind
        .discover_selection(candidate(&ready, &key), budget())
        .await
        .expect("resolved");
    let resolved: serde_json::Value = serde_json::from_str(&resolved.public).expect("JSON");
    assert_eq!(
        (&resolved["cpu_count"], &resolved["memory_mb"]),
        (&json!(2), &json!(1024)),
        "the build's resources adopted"
    );
    assert_eq!(
        resolved["template"],
        format!("{}:{}", e2b_api::TEMPLATE_ID, e2b_api::BUILD),
        "the alias resolved to the template's id, once"
    );
    for (template, build, refused) in [
        (
            e2b_api::FOREIGN_ALIAS,
            e2b_api::BUILD,
            "another team's template",
        ),
        (
            e2b_api::TEMPLATE,
            e2b_api::BUILDING,
            "a build that is not ready",
        ),
    ] {
        let selector = format!("{template}:{build}");
        assert_eq!(
            kind.discover_selection(candidate(&selector, &key), budget())
                .await,
            Err(Error::Invalid),
            "{refused}"
        );
    }

    let query = json!({"api_url": e2b_api::API_URL, "domain": e2b_api::DOMAIN}).to_string();
    let found = kind
        .discover_configuration(query, budget())
        .await
        .expect("discovered");
    assert_eq!(found.len(), 2, "the ready builds: {found:?}");
    assert!(found[0].contains(&format!("{}:{}", e2b_api::TEMPLATE_ID, e2b_api::BUILD)));
    // One build per page: discovery follows E2B's paging token.
    fake.set_page_size(1);
    let paged = kind
        .discover_configuration(
            json!({"api_url": e2b_api::API_URL, "domain": e2b_api::DOMAIN}).to_string(),
            budget(),
        )
        .await
        .expect("discovered");
    assert_eq!(paged, found, "every page");
    fake.set_page_size(100);

    assert_eq!(
        kind.verify_credential(candidate(&ready, &key), vec![reference("a")], budget())
            .await,
        Ok(())
    );
    let wrong = json!({"api_key": "e2b_ffffffffffffffffffffffffffffffffffffffff"}).to_string();
    assert_eq!(
        kind.verify_credential(candidate(&ready, &wrong), vec![reference("a")], budget())
            .await,
        Err(Error::Invalid),
        "a key E2B refuses"
    );
    // Another team's valid key lists none of these sandboxes (an empty
    // answer, not a refusal) and reads the template as 403.
    let other_team = json!({"api_key": e2b_api::FOREIGN_API_KEY}).to_string();
    for references in [vec![reference("a")], Vec::new()] {
        assert_eq!(
            kind.verify_credential(candidate(&ready, &other_team), references, budget())
                .await,
            Err(Error::Invalid),
            "another team's key"
        );
    }
    assert_eq!(
        writes(),
        writes_before,
        "discovery and verification only read"
    );
}

/// Served by a node to Core's side, E2B keeps the evidence it has in
/// process: after the node restarts on the same state directory, GetInfo
/// is settled on the host's own record (which the node sends with the
/// answer and the proxy believes because its own registry row keeps
/// records), and Kill ends the allocation with settled absence.
#[tokio::test]
async fn through_a_node_settlement_survives_a_restart_and_kill_succeeds() {
    use sandbox_host::provider::SandboxProvider;
    let fake = FakeE2b::start().await.expect("fake E2B");
    let dir = tempfile::tempdir().expect("tempdir");
    let id = {
        let store = ReceiptStore::open(dir.path()).expect("store");
        let node = served(&fake, &store).await;
        let proxy = node.proxy("e2b").await;
        let created = proxy
            .create(bootstrap("a"), budget())
            .await
            .expect("created");
        assert!(created.create_settled);
        let _ = node.stop().await;
        created.provider_id.expect("id")
    };
    let store = ReceiptStore::open(dir.path()).expect("reopened");
    let node = served(&fake, &store).await;
    let proxy = node.proxy("e2b").await;
    let info = proxy
        .get_info(reference("a"), budget())
        .await
        .expect("info");
    assert_eq!(info.provider_id.as_deref(), Some(id.as_str()));
    assert!(info.create_settled, "settled on the host's record");
    let killed = proxy.kill(reference("a"), budget()).await.expect("killed");
    assert_eq!(killed.state, LifecycleState::Absent);
    assert!(killed.create_settled);
    assert!(
        fake.requests()
            .contains(&format!("DELETE api /sandboxes/{id}")),
        "{:?}",
        fake.requests()
    );
    // Core's copy of the registry decides: a row that keeps no records
    // makes the same node answer unproved (and the two registries differ,
    // so the node is refused before anything is sent).
    let mut row = row();
    row.grants.receipts = false;
    let stranger = sandbox_host::registry::Registry::of(vec![row]).expect("registry");
    let refused =
        sandbox_host::transport::RemoteProvider::connect(node.client(), &stranger, "e2b", budget())
            .await;
    assert!(
        matches!(
            refused,
            Err(sandbox_host::transport::ProxyError::RegistryMismatch { .. })
        ),
        "a node on another registry is refused"
    );
    let _ = node.stop().await;
}

/// E2B answers set-timeout with 204 also when the team's maximum sandbox
/// length (1 h on its Base tier) keeps the end where it was: Renew reads
/// the end back and says the lease was not renewed.
#[tokio::test]
async fn a_renewal_the_teams_maximum_keeps_short_is_not_a_renewal() {
    let world = World::start().await;
    let (fake, kind) = (&world.fake, world.kind());
    fake.set_team_max(3600);
    let id = world.created("a").await;
    let renewed = kind.renew(reference("a"), budget()).await;
    assert!(
        renewed.is_ok(),
        "a fresh sandbox has a whole hour: {renewed:?}"
    );
    // Forty minutes on, the team's hour ends in twenty.
    assert!(fake.age(&id, 40 * 60));
    match kind.renew(reference("a"), budget()).await {
        Err(Failure {
            error: Error::Invalid,
            info: Some(info),
        }) => assert_eq!(
            (info.provider_id.as_deref(), info.state),
            (Some(id.as_str()), LifecycleState::Running)
        ),
        other => panic!("a renewal that did not move the end: {other:?}"),
    }
    assert_eq!(sent(fake, "/timeout"), 2, "each renewal sent once");
}

/// envd refuses a command whose directory is missing before starting a
/// process: HTTP 200 with the error in the end-of-stream message. That is
/// a definite answer (`invalid`), not an unknown outcome, and nothing is
/// resent.
#[tokio::test]
async fn a_command_envd_refuses_before_starting_is_invalid_and_sent_once() {
    let world = World::start().await;
    let (fake, kind) = (&world.fake, world.kind());
    world.created("a").await;
    let starts = || sent(fake, "/process.Process/Start");
    let before = starts();
    let mut elsewhere = command(&["echo", "never"], None);
    elsewhere.directory = Some("/no/such/directory".into());
    assert_eq!(
        kind.run_command(reference("a"), elsewhere, budget()).await,
        Err(Error::Invalid)
    );
    assert_eq!(starts() - before, 1);
    let mut home = command(&["echo", "here"], None);
    home.directory = Some("/home/runtime".into());
    let ran = kind
        .run_command(reference("a"), home, budget())
        .await
        .expect("ran");
    assert_eq!(ran.stdout, b"here\n");
}

/// The fake bounds what E2B bounds, with E2B's answers, and never drops a
/// connection on a bad parameter: list limits 1..=100, paging tokens of
/// its own making, at most 100 metric ids; set-timeout on a paused sandbox
/// is 404; envd's files need the sandbox's token.
#[tokio::test]
async fn the_fake_bounds_its_parameters_as_e2b_does() {
    let world = World::start().await;
    let fake = &world.fake;
    let id = world.created("a").await;
    let certificate = reqwest::Certificate::from_pem(fake.ca_pem().as_bytes()).expect("CA");
    let client = reqwest::Client::builder()
        .tls_certs_only([certificate])
        .resolve(&format!("api.{}", e2b_api::DOMAIN), fake.address())
        .resolve(&format!("49983-{id}.{}", e2b_api::DOMAIN), fake.address())
        .build()
        .expect("client");
    let status = |method: reqwest::Method, url: String| {
        let request = client
            .request(method, url)
            .header("x-api-key", e2b_api::API_KEY)
            .header("content-type", "application/json")
            .body(r#"{"timeout":60}"#);
        async move { request.send().await.expect("answered").status().as_u16() }
    };
    let api = e2b_api::API_URL;
    for (query, expected) in [
        ("limit=0", 400),
        ("limit=101", 400),
        ("limit=x", 400),
        ("limit=1", 200),
        ("nextToken=not-a-token", 400),
    ] {
        let url = format!("{api}/v2/sandboxes?{query}");
        assert_eq!(status(reqwest::Method::GET, url).await, expected, "{query}");
    }
    let many: Vec<String> = (0..101).map(|i| format!("i{i}")).collect();
    let url = format!("{api}/sandboxes/metrics?sandbox_ids={}", many.join(","));
    assert_eq!(status(reqwest::Method::GET, url).await, 400);
    assert!(fake.set_state(&id, "paused"));
    let url = format!("{api}/sandboxes/{id}/timeout");
    assert_eq!(status(reqwest::Method::POST, url).await, 404, "paused");
    assert!(fake.set_state(&id, "running"));
    let files = format!(
        "https://49983-{id}.{}/files?path={}",
        e2b_api::DOMAIN,
        e2b_api::READY_RECORD
    );
    let without = client.get(&files).send().await.expect("answered");
    assert_eq!(without.status().as_u16(), 401, "no token");
}

/// A credential replacement takes effect only once the kind verified the
/// candidate: another team's valid key is refused and the kind keeps
/// working with its own.
#[tokio::test]
async fn a_replacement_credential_is_verified_before_it_takes_effect() {
    let world = World::start().await;
    let kind = world.kind();
    let other_team = json!({"api_key": e2b_api::FOREIGN_API_KEY}).to_string();
    assert_eq!(
        kind.replace_credential(Some(other_team)).await,
        Err(Error::Invalid)
    );
    world.created("a").await;
    let same = json!({"api_key": e2b_api::API_KEY}).to_string();
    assert_eq!(kind.replace_credential(Some(same)).await, Ok(()));
    assert!(kind.get_info(reference("a"), budget()).await.is_ok());
}

/// A sandbox whose metrics E2B has not collected yet (absent from its
/// answer) keeps its place in a batch answer: `observation-unavailable`
/// there, never dropped, while the others are sampled.
#[tokio::test]
async fn a_sandbox_without_metrics_yet_is_unavailable_in_its_place() {
    use sandbox_host::types::Target;
    let world = World::start().await;
    let (fake, kind) = (&world.fake, world.kind());
    let first = world.created("a").await;
    let second = world.created("b").await;
    fake.withhold_metrics(&first);
    let target = |allocation: &str, id: &str| Target {
        reference: reference(allocation),
        provider_id: Some(id.to_string()),
    };
    let batch = kind
        .observe_batch(vec![target("a", &first), target("b", &second)], budget())
        .await
        .expect("a batch");
    assert_eq!(batch.len(), 2);
    assert_eq!(batch[0], Err(Error::ObservationUnavailable));
    assert!(batch[1].is_ok(), "{batch:?}");
}
