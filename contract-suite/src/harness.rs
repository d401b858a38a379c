//! The component under test, loaded in the real host exactly as
//! production loads it, wired to a native-side fixture and the recorder.
//! Every call here is raw: the suite judges the component's own answers.

use crate::cases::Declared;
use crate::fixtures::{Engine, FixtureError};
use crate::profile::{Class, Classifier, HttpProfile};
use crate::recorder::{Call, Plan, Recorder};
use crate::vendor_fake::VendorFake;
use sandbox_host::capability::docker::policy::{ContainerPolicy, PolicySettings};
use sandbox_host::capability::microsandbox::{
    self,
    policy::{GuestProfile, NetworkSetting, VmPolicy, VmPolicySettings},
    readiness::RuntimePin,
};
use sandbox_host::declaration::{Declaration, Inventory};
use sandbox_host::provider::SandboxProvider;
use sandbox_host::registry::{DigestSource, Grants, Mode, Policy, Registration};
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
    /// Budget of each call, in milliseconds.
    pub budget_ms: u32,
    /// The native side its capabilities reach.
    pub tier: Tier,
}

/// The native side of a run.
#[derive(Clone, Debug)]
pub enum Tier {
    /// A node kind granted the Docker capability, against the fake Docker
    /// Engine or a real one.
    Docker(DockerTier),
    /// A kind that reaches its vendor over `http`, against the vendor's
    /// own fake, described by its profile.
    Http(Box<HttpProfile>),
    /// A node kind granted the microsandbox capability, against the fake
    /// helper run as a process (as the host runs the real one) over a fake
    /// runtime in a private home.
    Microsandbox(MicrosandboxTier),
}

/// The microsandbox tier's settings.
#[derive(Clone, Debug)]
pub struct MicrosandboxTier {
    /// The fake helper: program and arguments (`oac-fake
    /// microsandbox-helper`); the host runs it once per call.
    pub helper: Vec<String>,
}

/// The suite's VM policy for the microsandbox tier: a runtime image by
/// digest, 1 vCPU, 512 MiB, a 1 GiB root disk and 256 MiB `/environment`,
/// no network, the restricted guest profile.
pub fn vm_policy() -> Result<VmPolicy, &'static str> {
    VmPolicy::new(VmPolicySettings {
        image: format!("oac-runtime@sha256:{}", "2".repeat(64)),
        cpus: 1,
        memory_mib: 512,
        root_disk_mib: 1024,
        environment_disk_mib: 256,
        network: NetworkSetting::None,
        guest_profile: GuestProfile::Restricted,
    })
    .map_err(|_| "the suite's VM policy")
}

/// The Docker tier's settings.
#[derive(Clone, Debug)]
pub struct DockerTier {
    /// A real Docker Engine at this socket (the real-engine tier), or the
    /// fake engine.
    pub engine: Option<PathBuf>,
    /// The kind's own configuration (JSON text).
    pub configuration: String,
    /// The seccomp profile of the container policy (the real-engine tier
    /// needs the assembled profile; the fake engine takes any confining one).
    pub seccomp_profile: String,
}

/// Why the suite could not start.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The fixture did not start.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    /// The vendor's fake did not start or answer.
    #[error(transparent)]
    VendorFake(#[from] crate::vendor_fake::VendorFakeError),
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
    /// The host refused the component (this is itself a failed case), with
    /// the component's own declaration when it could be read.
    #[error("the host refused the component: {0}")]
    Load(String, Option<Box<Declared>>),
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
    /// How the clauses classify native requests.
    pub classifier: Arc<Classifier>,
    /// Every answer the component gave, rendered, for the leak checks.
    pub answers: Mutex<Vec<String>>,
    /// The definite refusal status of the vendor (HTTP tier).
    pub refusal_status: u16,
    /// The component's declaration as it gave it.
    pub declared: Declared,
    budget: Budget,
    allocations: AtomicUsize,
}

/// The outcome of a raw mutation.
#[allow(clippy::result_large_err)] // `Failure` is the contract's shape
pub type Mutation = Result<Info, Failure>;

/// What a tier grants and binds, besides what every run shares.
struct Wiring {
    mode: Mode,
    grants: Grants,
    credential_fields: Vec<String>,
    credential: Option<String>,
    configuration: serde_json::Value,
    policy: Option<ContainerPolicy>,
    microsandbox: microsandbox::Binding,
    test_network: Option<TestNetwork>,
    classifier: Classifier,
    refusal_status: u16,
}

impl Wiring {
    /// A node tier: what `grants` binds, and no credential, test network,
    /// request classes or refusal status of a vendor's.
    fn node(
        grants: Grants,
        configuration: serde_json::Value,
        policy: Option<ContainerPolicy>,
        microsandbox: microsandbox::Binding,
    ) -> Self {
        Wiring {
            mode: Mode::Nodes,
            grants,
            credential_fields: Vec::new(),
            credential: None,
            configuration,
            policy,
            microsandbox,
            test_network: None,
            classifier: Classifier::default(),
            refusal_status: 0,
        }
    }
}

/// The Docker tier: the engine's socket and the suite's container policy.
async fn docker_wiring(tier: &DockerTier) -> Result<(Engine, Wiring), HarnessError> {
    let (engine, image) = match &tier.engine {
        None => Engine::fake().await?,
        Some(socket) => Engine::real(socket).await?,
    };
    let configuration =
        serde_json::from_str(&tier.configuration).map_err(|_| HarnessError::Configuration)?;
    let policy = container_policy(&image, &tier.seccomp_profile)
        .map_err(|error| HarnessError::Policy(error.0))?;
    let grants = Grants {
        docker: true,
        ..Grants::default()
    };
    let wiring = Wiring::node(
        grants,
        configuration,
        Some(policy),
        microsandbox::Binding::default(),
    );
    Ok((engine, wiring))
}

/// The HTTP tier: the fake's origin (or the configured endpoint), the
/// profile's credential and receipts.
async fn http_wiring(profile: &HttpProfile) -> Result<(Engine, Wiring), HarnessError> {
    let fake = VendorFake::start(&profile.fake, &profile.native_error_marker).await?;
    let origin = fake.announcement.origin.clone();
    let configuration = profile
        .configuration
        .to_string()
        .replace("${FIXTURE_ORIGIN}", origin.as_deref().unwrap_or_default());
    let configuration =
        serde_json::from_str(&configuration).map_err(|_| HarnessError::Configuration)?;
    let origins = match (&profile.endpoint, origin) {
        (None, Some(origin)) => vec![origin],
        _ => Vec::new(),
    };
    let test_network = match &fake.announcement.tls {
        Some(tls) => Some(TestNetwork {
            root_certificate_pem: tls.ca_pem.as_bytes().to_vec(),
            address: tls.address.parse().map_err(|_| {
                crate::vendor_fake::VendorFakeError::Announcement(
                    "tls.address is not an address".into(),
                )
            })?,
        }),
        None => None,
    };
    let wiring = Wiring {
        mode: if profile.mode == "nodes" {
            Mode::Nodes
        } else {
            Mode::Direct
        },
        grants: Grants {
            docker: false,
            http_origins: origins.clone(),
            // The fake takes the credential at its one origin.
            credential_origins: origins,
            receipts: profile.receipts,
            http_endpoint: profile.endpoint.clone(),
            microsandbox: false,
        },
        credential_fields: profile
            .credential
            .iter()
            .flat_map(|credential| credential.keys().cloned())
            .collect(),
        credential: profile
            .credential
            .as_ref()
            .map(|credential| serde_json::Value::Object(credential.clone()).to_string()),
        configuration,
        policy: None,
        microsandbox: microsandbox::Binding::default(),
        test_network,
        classifier: Classifier::new(profile.requests.clone()),
        refusal_status: profile.refusal_status,
    };
    Ok((Engine::Http(Box::new(fake)), wiring))
}

/// The microsandbox tier: a fake runtime, the helper that reaches it, and
/// the suite's VM policy.
fn microsandbox_wiring(tier: &MicrosandboxTier) -> Result<(Engine, Wiring), HarnessError> {
    let fake = crate::fixtures::FakeVms::start(&tier.helper)?;
    let binding = microsandbox::Binding {
        helper: Some(fake.helper().to_path_buf()),
        runtime: Some(fake.runtime.runtime()),
        pin: RuntimePin {
            version: "0.7.11".into(),
            sha256: oac_fixtures::microsandbox_helper::FAKE_RUNTIME_SHA256.into(),
        },
        policy: Some(vm_policy().map_err(HarnessError::Policy)?),
    };
    let grants = Grants {
        microsandbox: true,
        ..Grants::default()
    };
    let wiring = Wiring::node(grants, serde_json::json!({}), None, binding);
    Ok((Engine::Microsandbox(Box::new(fake)), wiring))
}

impl Harness {
    /// Starts the fixture and loads the component with the recorder as hook.
    pub async fn start(target: &Target) -> Result<Self, HarnessError> {
        let (engine, wiring) = match &target.tier {
            Tier::Docker(tier) => docker_wiring(tier).await?,
            Tier::Http(profile) => http_wiring(profile).await?,
            Tier::Microsandbox(tier) => microsandbox_wiring(tier)?,
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
        let registration = Registration {
            kind: KIND.into(),
            mode: wiring.mode,
            component: file.into(),
            digest: DigestSource::Pinned(sandbox_host::loader::sha256_hex(&bytes)),
            credential_fields: wiring.credential_fields,
            grants: wiring.grants,
            policy: Policy {
                default_budget_ms: target.budget_ms,
                ..Policy::default()
            },
            node_artifacts: Vec::new(),
            suspension: None,
            // The suite judges whatever the component declares.
            unsupported: None,
        };
        if !wiring.configuration.is_object() {
            return Err(HarnessError::Configuration);
        }
        let classifier = Arc::new(wiring.classifier);
        let recorder = Arc::new(Recorder::new(classifier.clone()));
        let state = match registration.grants.receipts {
            true => Some(tempfile::tempdir().map_err(|_| HarnessError::State)?),
            false => None,
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
                socket: engine.socket().map(Path::to_path_buf),
                policy: wiring.policy,
            },
            configuration: wiring.configuration,
            credential: wiring.credential,
            receipts,
            microsandbox: wiring.microsandbox,
            http_test_network: wiring.test_network,
            hook: Some(recorder.clone()),
        };
        let loaded = (registration, binding, dir);
        let declared = Self::declared(&loaded).await;
        let host = match Self::load(&loaded).await {
            Ok(host) => host,
            Err(HarnessError::Load(observed, _)) => {
                return Err(HarnessError::Load(observed, declared.ok().map(Box::new)));
            }
            Err(other) => return Err(other),
        };
        let declared = declared.map_err(|error| HarnessError::Load(error, None))?;
        let budget =
            Budget::from_millis(target.budget_ms).map_err(|_| HarnessError::Configuration)?;
        Ok(Self {
            host,
            engine,
            _state: state,
            loaded,
            recorder,
            classifier,
            answers: Mutex::default(),
            refusal_status: wiring.refusal_status,
            declared,
            budget,
            allocations: AtomicUsize::new(0),
        })
    }

    /// The component's declaration as it gives it, before any check.
    async fn declared(loaded: &(Registration, NodeBinding, PathBuf)) -> Result<Declared, String> {
        let (registration, binding, dir) = loaded;
        let runtime = Runtime::new().map_err(|error| error.to_string())?;
        sandbox_host::testing::declared(&runtime, registration, binding, dir)
            .await
            .map_err(|error| error.to_string())
    }

    async fn load(loaded: &(Registration, NodeBinding, PathBuf)) -> Result<Host, HarnessError> {
        let (registration, binding, dir) = loaded;
        let runtime =
            Runtime::new().map_err(|error| HarnessError::Load(error.to_string(), None))?;
        sandbox_host::testing::load_unpoliced(
            runtime,
            std::slice::from_ref(registration),
            dir,
            &BTreeMap::from([(KIND.to_string(), binding.clone())]),
        )
        .await
        .map_err(|error| HarnessError::Load(error.to_string(), None))
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

    /// True for requests that change native state (by the tier's classes).
    pub fn is_mutation(&self, request: &NativeRequest) -> bool {
        self.classifier.class(request).is_mutation()
    }

    /// The class of `request`.
    pub fn class(&self, request: &NativeRequest) -> Class {
        self.classifier.class(request)
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
        self.run_command_within(reference, args, stdin, self.budget)
            .await
    }

    /// [`Self::run_command`] within `budget` (a command with the largest
    /// stdin is given the time to move it).
    pub async fn run_command_within(
        &self,
        reference: &Reference,
        args: &[&str],
        stdin: Option<Vec<u8>>,
        budget: Budget,
    ) -> Result<CommandResult, Error> {
        let command = Command {
            args: args.iter().map(|arg| arg.to_string()).collect(),
            directory: None,
            stdin,
        };
        let answer = self
            .kind()
            .run_command(reference.clone(), command, budget)
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
