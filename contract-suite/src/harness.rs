//! The component under test, loaded in the real host exactly as
//! production loads it, wired to a native-side fixture and the recorder.
//! Every call here is raw: the suite judges the component's own answers.

use crate::fixtures::{Engine, FixtureError, e2b_api};
use crate::recorder::{Call, Plan, Recorder};
use sandbox_host::capability::docker::policy::{ContainerPolicy, PolicySettings};
use sandbox_host::declaration::{Declaration, Inventory};
use sandbox_host::provider::SandboxProvider;
use sandbox_host::registry::{DigestSource, EndpointGrant, Grants, Mode, Policy, Registration};
use sandbox_host::testing::NativeRequest;
use sandbox_host::testing::TestNetwork;
use sandbox_host::types::{
    Bootstrap, Command, CommandResult, Error, Failure, Info, NetworkAccess, Reference,
};
use sandbox_host::{Budget, Host, Kind, NodeBinding, Runtime};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The credential every bootstrap carries; it must never show anywhere else.
pub const CREDENTIAL_CANARY: &str = "oac-suite-daemon-credential-5be1";
/// The installation the suite runs as.
pub const INSTALLATION: &str = "oac-contract-suite";
/// The kind name the component is loaded under.
pub const KIND: &str = "under-test";
/// A small seccomp profile for the fake engine, which never applies it: it
/// only has to be a confining profile the host accepts.
pub const FAKE_SECCOMP_PROFILE: &str = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]}"#;

/// The node's container policy the suite runs under: the fixture's runtime
/// image, no network, 1 CPU, 256 MiB, 128 processes.
pub fn container_policy(
    image: &str,
    seccomp_profile: &str,
) -> Result<ContainerPolicy, sandbox_host::capability::docker::policy::PolicyError> {
    ContainerPolicy::new(
        &policy_settings(image, PathBuf::new()),
        seccomp_profile.into(),
    )
}

/// The settings of [`container_policy`] as a node configuration writes
/// them, its profile in `seccomp_profile_file`: what a node started as a
/// process of its own is given, so that it polices as the suite's host.
pub fn policy_settings(image: &str, seccomp_profile_file: PathBuf) -> PolicySettings {
    PolicySettings {
        image: image.into(),
        network: "none".into(),
        seccomp_profile: seccomp_profile_file,
        cpus: 1.0,
        memory_mib: 256,
        pids_limit: 128,
        nested_sandbox: false,
    }
}

/// What to test.
#[derive(Clone, Debug)]
pub struct Target {
    /// The component file.
    pub component: PathBuf,
    /// `nodes` or `direct`.
    pub mode: Mode,
    /// The kind's own configuration (JSON text).
    pub configuration: String,
    /// The seccomp profile of the container policy (the real-engine tier
    /// needs the assembled profile; the fake engine takes any confining one).
    pub seccomp_profile: String,
    /// Budget of each call, in milliseconds.
    pub budget_ms: u32,
    /// The native side the component's capabilities reach.
    pub fixture: Fixture,
}

/// The native side of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fixture {
    /// The stateful fake Docker Engine.
    FakeEngine,
    /// A real Docker Engine at this socket (the real-engine tier).
    RealEngine(PathBuf),
    /// The fake vendor REST API, granted to the component over `http`; its
    /// origin replaces `${FIXTURE_ORIGIN}` in the configuration.
    FakeVendor,
    /// The fake E2B: a direct kind with E2B's endpoint grant (API URL and
    /// sandbox domain from the configuration), the fixture's API key as
    /// its credential, durable receipts in a fresh state directory, and
    /// the fixture's test network (its CA; every name to its address).
    FakeE2b,
}

/// Why the suite could not start.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The fixture did not start.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    /// The component file is unreadable or its path unusable.
    #[error("cannot read the component at {0}")]
    Component(PathBuf),
    /// The configuration is not a JSON object.
    #[error("the configuration is not a JSON object")]
    Configuration,
    /// The container policy is refused (e.g. the seccomp profile).
    #[error("the container policy is refused: {0}")]
    Policy(&'static str),
    /// The receipts' state directory could not be made.
    #[error("the receipt store could not be made")]
    State,
    /// The host refused the component (this is itself a failed case).
    #[error("the host refused the component: {0}")]
    Load(String),
}

/// A loaded component with its fixture.
pub struct Harness {
    /// The host.
    pub host: Host,
    /// The native-side fixture.
    pub engine: Engine,
    /// The state directory of the kind's receipts, while it runs.
    _state: Option<tempfile::TempDir>,
    /// What the host was loaded with, to load it again ([`Self::restarted`]).
    loaded: (Registration, NodeBinding, PathBuf),
    /// The recorder at the capability boundary.
    pub recorder: Arc<Recorder>,
    /// Every answer the component gave, rendered, for the leak checks.
    pub answers: Mutex<Vec<String>>,
    budget: Budget,
    allocations: AtomicUsize,
}

/// The outcome of a raw mutation.
#[allow(clippy::result_large_err)] // `Failure` is the contract's shape
pub type Mutation = Result<Info, Failure>;

impl Harness {
    /// Starts the fixture and loads the component with the recorder as hook.
    pub async fn start(target: &Target) -> Result<Self, HarnessError> {
        // The image id for an engine, the origin for the vendor API.
        let (engine, image_or_origin) = match &target.fixture {
            Fixture::FakeEngine => Engine::fake().await?,
            Fixture::RealEngine(socket) => Engine::real(socket).await?,
            Fixture::FakeVendor => Engine::vendor().await?,
            Fixture::FakeE2b => (Engine::e2b().await?, String::new()),
        };
        let bytes = std::fs::read(&target.component)
            .map_err(|_| HarnessError::Component(target.component.clone()))?;
        let file = target
            .component
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or_else(|| HarnessError::Component(target.component.clone()))?;
        let dir = target
            .component
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let docker = target.mode == Mode::Nodes && engine.socket().is_some();
        let vendor = matches!(engine, Engine::Vendor(_));
        let e2b = match &engine {
            Engine::E2b(fake) => Some(fake),
            _ => None,
        };
        let registration = Registration {
            kind: KIND.into(),
            mode: target.mode,
            component: file.into(),
            digest: DigestSource::Pinned(sandbox_host::loader::sha256_hex(&bytes)),
            // E2B's credential is `{"api_key": …}`.
            credential_fields: e2b.map(|_| vec!["api_key".into()]).unwrap_or_default(),
            grants: Grants {
                docker,
                http_origins: if vendor {
                    vec![image_or_origin.clone()]
                } else {
                    Vec::new()
                },
                // A vendor's fake takes the credential at its one origin.
                credential_origins: if vendor {
                    vec![image_or_origin.clone()]
                } else {
                    Vec::new()
                },
                receipts: e2b.is_some(),
                http_endpoint: e2b.map(|_| EndpointGrant {
                    api_url_key: "api_url".into(),
                    domain_key: "domain".into(),
                    default_api_url: "https://api.e2b.app".into(),
                    default_domain: "e2b.app".into(),
                }),
            },
            policy: Policy {
                default_budget_ms: target.budget_ms,
                ..Policy::default()
            },
            node_artifacts: Vec::new(),
            suspension: None,
            // The suite judges whatever the component declares.
            unsupported: None,
        };
        let configuration = target
            .configuration
            .replace("${FIXTURE_ORIGIN}", &image_or_origin);
        let configuration: serde_json::Value =
            serde_json::from_str(&configuration).map_err(|_| HarnessError::Configuration)?;
        let policy = if docker {
            Some(
                container_policy(&image_or_origin, &target.seccomp_profile)
                    .map_err(|error| HarnessError::Policy(error.0))?,
            )
        } else {
            None
        };
        let recorder = Arc::new(Recorder::default());
        let state = match e2b {
            Some(_) => Some(tempfile::tempdir().map_err(|_| HarnessError::State)?),
            None => None,
        };
        let receipts = match &state {
            Some(dir) => Some(
                sandbox_host::ReceiptStore::open(dir.path()).map_err(|_| HarnessError::State)?,
            ),
            None => None,
        };
        let binding = NodeBinding {
            installation_id: INSTALLATION.into(),
            docker: sandbox_host::capability::docker::Binding {
                socket: engine.socket().filter(|_| docker).map(Path::to_path_buf),
                policy,
            },
            configuration,
            credential: e2b.map(|_| serde_json::json!({"api_key": e2b_api::API_KEY}).to_string()),
            receipts,
            http_test_network: e2b.map(|fake| TestNetwork {
                root_certificate_pem: fake.ca_pem().as_bytes().to_vec(),
                address: fake.address(),
            }),
            hook: Some(recorder.clone()),
        };
        let loaded = (registration, binding, dir);
        let host = Self::load(&loaded).await?;
        let budget =
            Budget::from_millis(target.budget_ms).map_err(|_| HarnessError::Configuration)?;
        Ok(Self {
            host,
            engine,
            _state: state,
            loaded,
            recorder,
            answers: Mutex::default(),
            budget,
            allocations: AtomicUsize::new(0),
        })
    }

    async fn load(loaded: &(Registration, NodeBinding, PathBuf)) -> Result<Host, HarnessError> {
        let (registration, binding, dir) = loaded;
        let runtime = Runtime::new().map_err(|error| HarnessError::Load(error.to_string()))?;
        sandbox_host::testing::load_unpoliced(
            runtime,
            std::slice::from_ref(registration),
            dir,
            &BTreeMap::from([(KIND.to_string(), binding.clone())]),
        )
        .await
        .map_err(|error| HarnessError::Load(error.to_string()))
    }

    /// The component loaded again by a new host on the same native side
    /// and the same receipts: what a restart of Core's process (or a node)
    /// leaves. Calls on it are recorded like the first host's.
    pub async fn restarted(&self) -> Result<Host, HarnessError> {
        Self::load(&self.loaded).await
    }

    /// The component's validated declaration and inventory.
    pub fn declaration(&self) -> (&Declaration, &Inventory) {
        let kind = self.host.kind(KIND).expect("the kind under test is loaded");
        (&kind.declaration, &kind.inventory)
    }

    /// A reference no other case uses.
    pub fn allocation(&self, case: &str) -> Reference {
        let n = self.allocations.fetch_add(1, Ordering::Relaxed);
        Reference::new("suite-tenant", "suite-env", format!("{case}-{n}"))
    }

    /// A bootstrap for `reference` carrying the credential canary.
    pub fn bootstrap(&self, reference: &Reference) -> Bootstrap {
        Bootstrap {
            reference: reference.clone(),
            session_id: "suite-session".into(),
            device_id: "suite-device".into(),
            core_url: "https://core.invalid".into(),
            daemon_credential: CREDENTIAL_CANARY.into(),
            harness: "suite-harness".into(),
            network_access: NetworkAccess::Disabled,
            allowed_domains: Vec::new(),
        }
    }

    fn remember<T: std::fmt::Debug>(&self, answer: &T) {
        self.answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{answer:?}"));
    }

    /// True when the kind under test keeps durable receipts (and so the
    /// host keeps its settlement records beside them).
    pub fn keeps_receipts(&self) -> bool {
        self.kind().registration.grants.receipts
    }

    /// True when `info`, an answer of `operation` (GetInfo, Renew, Kill),
    /// claims `create-settled` only as the host's record of the Create's
    /// own answer allows: the recorded compute, or settled absence where
    /// absence was recorded. A component's own receipts are no evidence.
    pub async fn claim_agrees(
        &self,
        operation: sandbox_host::contract::Operation,
        info: &Info,
    ) -> bool {
        let evidence = self.kind().settlement_evidence(&info.reference).await;
        !info.create_settled
            || sandbox_host::police::may_claim_settlement(operation, &evidence, info)
    }

    /// The budget of one call.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The component under test, with policing off: every operation
    /// reaches it and its answers come back as it gave them (a call that
    /// ends without its answer is the operation's unknown outcome).
    pub fn kind(&self) -> &Kind {
        self.host.kind(KIND).expect("the kind under test is loaded")
    }

    /// Raw `create`.
    pub async fn create(&self, reference: &Reference) -> Mutation {
        let answer = self
            .kind()
            .create(self.bootstrap(reference), self.budget)
            .await;
        self.remember(&answer);
        answer
    }

    /// Raw `get-info`.
    pub async fn get_info(&self, reference: &Reference) -> Result<Info, Error> {
        let answer = self.kind().get_info(reference.clone(), self.budget).await;
        self.remember(&answer);
        answer
    }

    /// Raw `renew`.
    pub async fn renew(&self, reference: &Reference) -> Mutation {
        let answer = self.kind().renew(reference.clone(), self.budget).await;
        self.remember(&answer);
        answer
    }

    /// Raw `kill`.
    pub async fn kill(&self, reference: &Reference) -> Mutation {
        let answer = self.kind().kill(reference.clone(), self.budget).await;
        self.remember(&answer);
        answer
    }

    /// Raw `run-command`.
    pub async fn run_command(
        &self,
        reference: &Reference,
        args: &[&str],
        stdin: Option<Vec<u8>>,
    ) -> Result<CommandResult, Error> {
        let command = Command {
            args: args.iter().map(|arg| arg.to_string()).collect(),
            directory: None,
            stdin,
        };
        let answer = self
            .kind()
            .run_command(reference.clone(), command, self.budget)
            .await;
        self.remember(
            &answer
                .as_ref()
                .map(|c| (c.exit_code, c.stdout.len(), c.stderr.len())),
        );
        answer
    }

    /// Runs `operation` with `plan` armed; returns its outcome and the
    /// native requests it made.
    pub async fn with_fault<T>(
        &self,
        plan: Option<Plan>,
        operation: impl AsyncFnOnce() -> T,
    ) -> (T, Vec<NativeRequest>) {
        let (outcome, requests, _) = self.observed(plan, operation).await;
        (outcome, requests)
    }

    /// Like [`Harness::with_fault`], also returning the capability calls
    /// the component made (including ones the host refused).
    pub async fn observed<T>(
        &self,
        plan: Option<Plan>,
        operation: impl AsyncFnOnce() -> T,
    ) -> (T, Vec<NativeRequest>, Vec<Call>) {
        let mark = self.recorder.mark();
        if let Some(plan) = plan {
            self.recorder.arm(plan);
        }
        let outcome = operation().await;
        self.recorder.disarm();
        let (requests, calls) = self.recorder.since(mark);
        (outcome, requests, calls)
    }

    /// Kills `reference` without faults (cleanup after a case).
    pub async fn cleanup(&self, reference: &Reference) {
        let _ = self.kill(reference).await;
    }
}
