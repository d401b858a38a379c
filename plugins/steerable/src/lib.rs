//! A provider component for the host's own tests, hostile on demand. Its
//! configuration (JSON, from the registry) steers which declaration it makes
//! and what its `create`/`get-info` do, so the host's rules are tested
//! against real Wasm:
//!
//! `{"declaration": "valid", "action": "volume-create", "volume": "name", "url": "..."}`
//!
//! Docker actions call one capability function with the steered arguments
//! (`container`, `volume`, `args`, `env`, `mounts`, `hosts`, `working_dir`,
//! `path`, `archive`; a name `@` is the host's name for the allocation's
//! container, `@<role>` for its volume of that role, and these are the
//! defaults: `@` and `@home`) and answer its result as the provider id: a component
//! that asks for whatever the contract lets it ask, so the tests can show
//! the host refuses what it must. `run` creates a container, starts it and
//! execs `args` in it, answering the command's stdout; `plant-then-upload`
//! does the same on a volume it creates (planting a link with `args`),
//! uploads `archive` at `path` into it, then replaces it by a second
//! container on that volume and uploads into that (answering `second,first`); `make-then-upload` makes a volume and a container on it
//! and uploads before any start, as the Docker adapter's Create does.
//!
//! `vendor` makes create, get-info, renew and kill the lifecycle of one
//! sandbox of the contract suite's fake vendor API at `url`, over `http`;
//! with `replay`, an unconfirmed Create is sent again (see `vendor.rs`).
//! With the declaration `checkpoint` too, the nine checkpoint operations
//! work on that API's sandboxes and snapshots, with `lie` and `cold_start`
//! to break their rules (see `checkpoint.rs`).
//!
//! The declaration `verifying` (direct kinds) supports credential
//! verification and selection discovery, each a GET of `url` with the
//! candidate's credential; `node-with-credential`, `node-credential` and
//! `discovery-mismatch` break the configuration rules the host checks at
//! load; `credential-required` (a valid declaration) requires a credential.
//!
//! `http-fetch` and `http-stream` answer a GET's status and body (or the
//! error), the second holding its response open while it sends another
//! request; `method` and `body` make `http-fetch` another request.
//! `http-flood` holds `count` requests to `url` open at once and answers
//! how many the host let it open.
//!
//! In the configuration adapter, `show-credential` answers what the call
//! was given of its credential (the handle) as its public object, and
//! `forge-handle` answers a credential handle it was never given.
//!
//! `names-of` asks the host for the names of allocation `target` (same
//! tenant and environment) and answers the container's.
//!
//! `answer` answers the steered `answer` text as its provider id, and
//! `log-steered` logs the steered `event` with the steered `fields`: what a
//! component that learned a secret would try to pass on. With action
//! `reach`, `decode-input` and the readiness probe try every capability
//! (a POST to `url`, a Docker `version`, a receipt write): `decode-input`
//! answers each outcome in its public object, the probe one diagnostic
//! per refusal.
//!
//! Actions `receipt-*` use the `receipts` capability (see `receipts.rs`),
//! action `vm` the `microsandbox` capability (see `vm.rs`).
//!
//! The declaration `observing` declares `observe` and `observe-batch`
//! supported: each target's observation runs the steered Docker action (or,
//! with `http-post`, a POST to `url`) for the target's allocation and
//! answers an empty sample, so the tests can show what a read-only call may
//! not do.
//!
//! Actions `error-<code>` make `create`/`get-info` fail with that fixed
//! code (`error-unsupported`: `unsupported`, contradicting the
//! declaration); `foreign-answer` makes them succeed about another
//! allocation; `log-credential` makes `create` log its whole request; `failure-*` make `create` fail with `exists` and an attached info
//! (settled absence, settled running with an id, unsettled, or absent with
//! an id), so the node transport's settlement rule can be tested; `huge-id`
//! answers with a 5 MiB provider id, larger than any transport frame;
//! `unready` makes the readiness probe report two diagnostics.
//!
//! `touch_before_unsupported` makes batch observation, where it is
//! unsupported, send a GET of `url` before answering so.

use oac_provider_sdk::__bindings::exports::oac::sandbox_provider as exports;
use oac_provider_sdk::__contract::{Interface, Operation};
use oac_provider_sdk::prelude::*;
use serde::Deserialize;

mod checkpoint;
mod receipts;
mod vendor;
mod vm;

struct Steerable;

/// The steering input, read from the kind's configuration.
#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct Steering {
    declaration: String,
    action: String,
    /// `names-of`: the allocation (same tenant and environment) whose
    /// names are asked for.
    target: Option<String>,
    volume: Option<String>,
    container: Option<String>,
    url: Option<String>,
    args: Vec<String>,
    cmd: Vec<String>,
    env: Vec<String>,
    mounts: Vec<SteeredMount>,
    hosts: Vec<(String, String)>,
    working_dir: Option<String>,
    path: String,
    archive: Vec<u8>,
    /// `plant-then-upload`: an archive uploaded at `setup_path` before the
    /// container starts (a directory the runtime user may write).
    setup: Vec<u8>,
    setup_path: String,
    replay: bool,
    /// Batch observation, declared unsupported, first sends a GET of `url`:
    /// the I/O before `unsupported` that an SDK adapter cannot write.
    touch_before_unsupported: bool,
    lie: String,
    cold_start: bool,
    /// The header `http-get` asks the host to fill the credential into.
    credential_header: Option<String>,
    /// `http-fetch` and `http-stream`: the credential object's field to
    /// fill in, extra request headers, and the URL `http-stream` sends to
    /// while its response is open.
    credential_field: Option<String>,
    headers: Vec<(String, String)>,
    release_url: Option<String>,
    /// `table-flood`: how many pollables to hold; `log-flood`: how many
    /// events to log; `log-wide`: how many fields to log in one event.
    count: Option<u32>,
    /// `http-fetch`: the method (default GET) and body to send.
    method: Option<String>,
    body: Option<String>,
    /// `answer`: the provider id to answer.
    answer: Option<String>,
    /// `log-steered`: the event code and fields to log.
    event: Option<String>,
    fields: Vec<(String, String)>,
    /// Receipt actions (see `receipts.rs`).
    receipt_key: Option<String>,
    receipt_value: Option<String>,
    receipt_bytes: Option<usize>,
    /// `vm`: the microsandbox steps of create and get-info, and of kill
    /// (see `vm.rs`).
    vm_steps: Vec<vm::VmStep>,
    vm_kill_steps: Vec<vm::VmStep>,
}

/// A GET of the steered `url`, with the credential in the steered header:
/// the response's status.
fn steered_get(steering: &Steering) -> Result<u16, Error> {
    steered_request(steering, http::Method::Get)
}

/// [`steered_get`] with `method`.
fn steered_request(steering: &Steering, method: http::Method) -> Result<u16, Error> {
    let url = steering.url.clone().unwrap_or_default();
    let mut request = http::Request::new(method, url);
    request.credential = steered_credential(steering);
    http::send(&request)
        .map(|response| response.status)
        .map_err(|error| match error {
            http::HttpError::Denied => Error::Invalid,
            _ => Error::ComputeUnconfirmed,
        })
}

/// The steered credential header, from the steered field if one is named.
fn steered_credential(steering: &Steering) -> Option<http::CredentialHeader> {
    steering.credential_header.clone().map(|name| {
        let header = http::CredentialHeader::new(name);
        match &steering.credential_field {
            Some(field) => header.field(field),
            None => header,
        }
    })
}

/// `http-fetch`: a GET of `url` with the steered headers and credential,
/// answered as `<status>:<body>` or `error:<name>`. `http-stream` opens the
/// response, sends a GET to `release_url` while it is open, then reads the
/// streamed body to its end.
fn fetched(steering: &Steering) -> String {
    let method = match steering.method.as_deref() {
        Some("POST") => http::Method::Post,
        Some("PUT") => http::Method::Put,
        Some("DELETE") => http::Method::Delete,
        _ => http::Method::Get,
    };
    let mut request = http::Request::new(method, steering.url.clone().unwrap_or_default());
    request.headers = steering.headers.clone();
    request.body = steering.body.clone().unwrap_or_default().into();
    request.credential = steered_credential(steering);
    let answer = (|| -> Result<String, http::HttpError> {
        let mut streaming = http::open(&request)?;
        if steering.action == "http-stream" {
            let release = http::Request::new(
                http::Method::Get,
                steering.release_url.clone().unwrap_or_default(),
            );
            http::send(&release)?;
        }
        let mut body = Vec::new();
        while let Some(bytes) = streaming.read()? {
            body.extend_from_slice(&bytes);
        }
        let shown = if body.len() > 64 {
            format!("{} bytes", body.len())
        } else {
            String::from_utf8_lossy(&body).into_owned()
        };
        Ok(format!("{}:{shown}", streaming.status()))
    })();
    answer.unwrap_or_else(|error| format!("error:{error:?}"))
}

/// One volume mount of a steered container spec.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SteeredMount {
    volume: String,
    target: String,
    subpath: Option<String>,
}

fn steering() -> Steering {
    serde_json::from_str(&context::configuration()).unwrap_or_default()
}

const NO_CHECKPOINT: &str = "steerable_has_no_checkpoints";
const NO_OBSERVATION: &str = "steerable_has_no_observation";
const NODE_KIND: &str = "steerable_is_a_node_kind";

fn reasoned(operation: &str) -> Error {
    let checkpoint = Operation::from_name(operation)
        .is_some_and(|op| op.interface() == Interface::CheckpointProvider);
    let reason = if checkpoint {
        NO_CHECKPOINT
    } else if matches!(operation, "with-credential" | "discover-configuration") {
        NODE_KIND
    } else {
        NO_OBSERVATION
    };
    Error::Unsupported(UnsupportedOperation {
        operation: operation.into(),
        reason: reason.into(),
    })
}

fn entry(operation: &str, support: Support) -> OperationDeclaration {
    OperationDeclaration {
        operation: operation.into(),
        support,
    }
}

/// Every operation: the required five, the probe and the configuration
/// adapter supported; observation, discovery and verification unsupported;
/// checkpoint as asked.
fn valid_declaration(checkpoint: bool) -> Vec<OperationDeclaration> {
    use Operation::*;
    Operation::ALL
        .iter()
        .map(|operation| {
            let support = match operation {
                _ if operation.interface() == Interface::CheckpointProvider => {
                    if checkpoint {
                        Support::Supported
                    } else {
                        Support::Unsupported(NO_CHECKPOINT.into())
                    }
                }
                Observe | ObserveBatch | DiscoverSelection | VerifyCredential => {
                    Support::Unsupported(NO_OBSERVATION.into())
                }
                WithCredential | DiscoverConfiguration => Support::Unsupported(NODE_KIND.into()),
                _ => Support::Supported,
            };
            entry(operation.name(), support)
        })
        .collect()
}

fn set(all: &mut [OperationDeclaration], operation: &str, support: Support) {
    for entry in all.iter_mut().filter(|entry| entry.operation == operation) {
        entry.support = support.clone();
    }
}

impl exports::readiness::Guest for Steerable {
    fn probe() -> Vec<Diagnostic> {
        let steering = steering();
        match steering.action.as_str() {
            "unready" => vec![
                Diagnostic::ProviderUnavailable,
                Diagnostic::ImageUnavailable,
            ],
            // A probe that tries to change things: each refusal is a
            // diagnostic, so the test sees what the host let through.
            "reach" => reach(&steering)
                .into_iter()
                .filter(|(_, outcome)| outcome != "ok")
                .map(|_| Diagnostic::ProviderUnavailable)
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Action `reach`: a POST to `url`, a Docker `version` and a receipt
/// write, each with its outcome (`ok` or why not).
fn reach(steering: &Steering) -> Vec<(String, String)> {
    let mut post = http::Request::new(http::Method::Post, steering.url.clone().unwrap_or_default());
    post.body = b"reach".to_vec().into();
    let http = match http::send(&post) {
        Ok(_) => "ok".to_string(),
        Err(error) => format!("{error:?}"),
    };
    let docker = match docker::version() {
        Ok(_) => "ok",
        Err(docker::DockerError::Denied) => "Denied",
        Err(_) => "failed",
    }
    .to_string();
    let receipt = receipts::put_outcome("create_pending", b"planted");
    vec![
        ("http".into(), http),
        ("docker".into(), docker),
        ("receipt".into(), receipt),
    ]
}

impl exports::declarations::Guest for Steerable {
    fn operations() -> Vec<OperationDeclaration> {
        let steering = steering();
        let mut all = valid_declaration(steering.declaration == "checkpoint");
        match steering.declaration.as_str() {
            "missing-op" => all.retain(|entry| entry.operation != "kill-compute"),
            "unknown-op" => all.push(entry("teleport", Support::Supported)),
            "duplicate" => all.push(entry("get-info", Support::Supported)),
            "required-unsupported" => {
                set(&mut all, "renew", Support::Unsupported("no_renew".into()))
            }
            "infallible-unsupported" => set(
                &mut all,
                "requirements",
                Support::Unsupported("no_requirements".into()),
            ),
            "partial-checkpoint" => {
                all = valid_declaration(true);
                set(
                    &mut all,
                    "suspend",
                    Support::Unsupported(NO_CHECKPOINT.into()),
                );
            }
            "batch-without-observe" => set(&mut all, "observe-batch", Support::Supported),
            "observing" => {
                set(&mut all, "observe", Support::Supported);
                set(&mut all, "observe-batch", Support::Supported);
            }
            "node-with-credential" => set(&mut all, "with-credential", Support::Supported),
            "verifying" => {
                set(&mut all, "verify-credential", Support::Supported);
                set(&mut all, "discover-selection", Support::Supported);
            }
            "invalid-reason" => set(
                &mut all,
                "observe",
                Support::Unsupported("Not Valid".into()),
            ),
            "loop" => spin_forever(),
            _ => {}
        }
        all
    }
}

fn spin_forever() -> ! {
    let mut counter = 0u64;
    loop {
        counter = std::hint::black_box(counter.wrapping_add(1));
    }
}

/// The native id of the compute a plain answer describes.
const NATIVE_ID: &str = "native-1";

fn info(allocation: Reference, provider_id: Option<String>) -> Info {
    Info {
        reference: allocation,
        provider_id,
        state: LifecycleState::Pending,
        bootstrap_complete: false,
        create_settled: false,
    }
}

fn from_docker(error: docker::DockerError) -> Error {
    match error {
        docker::DockerError::Invalid | docker::DockerError::Denied => Error::Invalid,
        docker::DockerError::Ownership => Error::Ownership,
        docker::DockerError::Conflict => Error::Exists,
        docker::DockerError::NotFound => Error::NotFound,
        _ => Error::ComputeUnconfirmed,
    }
}

/// The container spec the steering asks for: only what the contract lets a
/// component decide.
fn steered_spec(
    steering: &Steering,
    container: &str,
    allocation: &Reference,
) -> docker::ContainerSpec {
    docker::ContainerSpec {
        cmd: steering.cmd.clone(),
        env: steering.env.clone(),
        working_dir: steering.working_dir.clone(),
        mounts: steering
            .mounts
            .iter()
            .map(|mount| docker::VolumeMount {
                subpath: mount.subpath.clone(),
                ..docker::VolumeMount::new(
                    resolved_name(allocation, &mount.volume),
                    mount.target.clone(),
                )
            })
            .collect(),
        extra_hosts: steering
            .hosts
            .iter()
            .map(|(name, address)| docker::HostEntry {
                name: name.clone(),
                address: address.clone(),
            })
            .collect(),
        ..docker::ContainerSpec::new(container)
    }
}

fn exec_spec(steering: &Steering) -> docker::ExecSpec {
    docker::ExecSpec {
        args: steering.args.clone(),
        working_dir: steering.working_dir.clone(),
        stdin: None,
        output_limit_bytes: oac_provider_sdk::bounds::MAX_OUTPUT_BYTES,
    }
}

/// The stdout of an exec that completed within its bound.
fn completed(output: docker::ExecOutput) -> Result<String, Error> {
    match output.exit_code {
        Some(_) if !output.overflowed => Ok(String::from_utf8_lossy(&output.stdout).into_owned()),
        _ => Err(Error::CommandUnconfirmed),
    }
}

/// A tar of one regular file `data` of `bytes` bytes (mode 0644, owned by
/// 1000:1000), written in place: no second copy in guest memory.
fn one_file_archive(bytes: usize) -> Vec<u8> {
    let padded = bytes.div_ceil(512) * 512;
    let mut archive = vec![0u8; 512 + padded + 1024];
    let header = &mut archive[..512];
    header[..4].copy_from_slice(b"data");
    let octal = |field: &mut [u8], value: u64| {
        let text = format!("{value:0width$o}", width = field.len() - 1);
        field[..text.len()].copy_from_slice(text.as_bytes());
    };
    octal(&mut header[100..108], 0o644);
    octal(&mut header[108..116], 1000);
    octal(&mut header[116..124], 1000);
    octal(&mut header[124..136], bytes as u64);
    octal(&mut header[136..148], 0);
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].fill(b' ');
    let sum: u64 = header.iter().map(|&byte| u64::from(byte)).sum();
    let text = format!("{sum:06o}\0 ");
    header[148..156].copy_from_slice(text.as_bytes());
    archive[512..512 + bytes].fill(b'x');
    archive
}

/// A steered resource name: `@` is the host's name for the allocation's
/// container, `@<role>` for its volume of that role (`docker::names`);
/// anything else is taken as it is.
fn resolved_name(allocation: &Reference, name: &str) -> String {
    let Some(role) = name.strip_prefix('@') else {
        return name.to_string();
    };
    let Ok(names) = docker::names(allocation) else {
        return name.to_string();
    };
    if role.is_empty() {
        return names.container;
    }
    names
        .volumes
        .into_iter()
        .find(|volume| volume.role == role)
        .map_or_else(|| name.to_string(), |volume| volume.name)
}

/// One steered Docker action; `None` when the action is not a Docker one.
fn docker_action(steering: &Steering, allocation: &Reference) -> Option<Result<String, Error>> {
    let named = |name: &Option<String>, default: &str| {
        resolved_name(allocation, name.as_deref().unwrap_or(default))
    };
    let volume = named(&steering.volume, "@home");
    let container = named(&steering.container, "@");
    let answer = match steering.action.as_str() {
        "version" => docker::version().map(|version| version.api_version),
        "names-of" => {
            let target = Reference {
                allocation_id: steering.target.clone().unwrap_or_default(),
                ..allocation.clone()
            };
            docker::names(&target).map(|names| names.container)
        }
        "runtime-image" => docker::runtime_image().map(|image| image.id),
        "volume-create" => docker::volume_create(&volume).map(|()| volume),
        "volume-inspect" => docker::volume_inspect(&volume).map(|()| volume),
        "volume-remove" => docker::volume_remove(&volume).map(|()| String::new()),
        "volume-list" => docker::volume_list().map(|names| names.join(",")),
        "container-create" => {
            docker::container_create(&steered_spec(steering, &container, allocation))
        }
        "container-inspect" => docker::container_inspect(&container)
            .map(|found| format!("{} conforms={}", found.id, found.conforms)),
        "container-start" => docker::container_start(&container).map(|()| String::new()),
        "container-remove" => docker::container_remove(&container, true).map(|()| String::new()),
        "container-stats" => docker::container_stats(&container).map(|s| s.online_cpus.to_string()),
        "container-list" => docker::container_list().map(|names| names.join(",")),
        "archive-upload" => docker::archive_upload(&container, &steering.path, &steering.archive)
            .map(|()| String::new()),
        "exec" => {
            return Some(
                docker::exec(&container, &exec_spec(steering))
                    .map_err(from_docker)
                    .and_then(completed),
            );
        }
        // What the Docker adapter's Create does: a volume, a container on
        // it, then `archive` uploaded at `path` before any start (with
        // `count`, instead an archive of one file of that many bytes, made
        // here).
        "make-then-upload" => {
            let make = || -> Result<String, Error> {
                docker::volume_create(&volume).map_err(from_docker)?;
                let id = docker::container_create(&steered_spec(steering, &container, allocation))
                    .map_err(from_docker)?;
                let generated = steering.count.map(|bytes| one_file_archive(bytes as usize));
                let archive = generated.as_deref().unwrap_or(&steering.archive);
                docker::archive_upload(&id, &steering.path, archive).map_err(from_docker)?;
                Ok(id)
            };
            return Some(make());
        }
        // The planted-link attack in one call: a volume and a container on
        // it (`setup` uploaded first), started, `args` run in it (to plant
        // a link; failing, the answer is `runtime-not-running`), `archive`
        // uploaded at `path` into it, then a second container in its place
        // on the same volume and the upload into that. Answers each
        // upload's outcome, `second,first` (`ok` or the error).
        "plant-then-upload" => {
            let plant = || -> Result<String, Error> {
                docker::volume_create(&volume).map_err(from_docker)?;
                let id = docker::container_create(&steered_spec(steering, &container, allocation))
                    .map_err(from_docker)?;
                docker::archive_upload(&id, &steering.setup_path, &steering.setup)
                    .map_err(from_docker)?;
                docker::container_start(&id).map_err(from_docker)?;
                let planted = docker::exec(&id, &exec_spec(steering)).map_err(from_docker)?;
                if planted.exit_code != Some(0) {
                    return Err(Error::RuntimeNotRunning);
                }
                let upload = |into: &str| match docker::archive_upload(
                    into,
                    &steering.path,
                    &steering.archive,
                ) {
                    Ok(()) => "ok".to_string(),
                    Err(error) => format!("{:?}", from_docker(error)),
                };
                let first = upload(&id);
                // An allocation has one container: the second takes the
                // first one's place, on the same volume.
                docker::container_remove(&id, true).map_err(from_docker)?;
                let second =
                    docker::container_create(&steered_spec(steering, &container, allocation))
                        .map_err(from_docker)?;
                Ok(format!("{},{first}", upload(&second)))
            };
            return Some(plant());
        }
        "run" => {
            let run = || -> Result<String, Error> {
                let id = docker::container_create(&steered_spec(steering, &container, allocation))
                    .map_err(from_docker)?;
                docker::container_start(&id).map_err(from_docker)?;
                completed(docker::exec(&id, &exec_spec(steering)).map_err(from_docker)?)
            };
            return Some(run());
        }
        _ => return None,
    };
    Some(answer.map_err(from_docker))
}

fn act(steering: &Steering, allocation: Reference) -> Result<Info, Error> {
    if let Some(answer) = docker_action(steering, &allocation) {
        return answer.map(|id| info(allocation, Some(id)));
    }
    if steering.action == "receipt-settled-absence" {
        return Ok(receipts::settled_absence(steering, allocation));
    }
    if let Some(outcome) = receipts::act(steering, &allocation) {
        return Ok(info(allocation, Some(outcome)));
    }
    match steering.action.as_str() {
        "" | "none" => Ok(info(allocation, Some(NATIVE_ID.into()))),
        "vm" => {
            let outcomes = vm::run(&steering.vm_steps, &allocation);
            Ok(info(allocation, Some(outcomes)))
        }
        // An observation that claims to settle a Create.
        "settle-on-observation" => Ok(Info {
            create_settled: true,
            ..info(allocation, Some(NATIVE_ID.into()))
        }),
        // Present compute without its native id.
        "no-id" => Ok(info(allocation, None)),
        // A success about another allocation.
        "foreign-answer" => {
            let other = Reference {
                allocation_id: format!("{}-other", allocation.allocation_id),
                ..allocation
            };
            Ok(info(other, Some(NATIVE_ID.into())))
        }
        code if code.starts_with("error-") => Err(steered_error(code)),
        // An answer larger than any transport frame.
        "huge-id" => Ok(info(allocation, Some("x".repeat(5 << 20)))),
        "loop" => spin_forever(),
        // Holds `count` (default two million) WASI pollables at once.
        "table-flood" => {
            let mut held = Vec::new();
            for _ in 0..steering.count.unwrap_or(2_000_000) {
                held.push(wasip2::clocks::monotonic_clock::subscribe_duration(1 << 40));
            }
            Ok(info(allocation, Some(held.len().to_string())))
        }
        "allocate" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![1u8; 1 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        "panic" => panic!("steered to panic"),
        "naps" => {
            // `count` waits of 25 ms on the host's clock: no CPU at all.
            for _ in 0..steering.count.unwrap_or(1) {
                wasip2::clocks::monotonic_clock::subscribe_duration(25_000_000).block();
            }
            Ok(info(allocation, Some("napped".into())))
        }
        "count" => {
            // Guest state: a fresh instance per call always answers 1.
            static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let calls = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            Ok(info(allocation, Some(calls.to_string())))
        }
        "http-get" => {
            let status = steered_get(steering)?;
            Ok(info(allocation, Some(status.to_string())))
        }
        "http-fetch" | "http-stream" => Ok(info(allocation, Some(fetched(steering)))),
        "http-flood" => {
            let request =
                http::Request::new(http::Method::Get, steering.url.clone().unwrap_or_default());
            let mut open = Vec::new();
            for _ in 0..steering.count.unwrap_or(3_000) {
                match http::open(&request) {
                    Ok(response) => open.push(response),
                    Err(_) => break,
                }
            }
            Ok(info(allocation, Some(open.len().to_string())))
        }
        "answer" => Ok(info(allocation, steering.answer.clone())),
        "log-steered" => {
            log::emit(
                log::Level::Info,
                steering.event.as_deref().unwrap_or("steerable_event"),
                &steering.fields,
            );
            Ok(info(allocation, Some(NATIVE_ID.into())))
        }
        // Logs `count` (default ten thousand) events.
        "log-flood" => {
            for _ in 0..steering.count.unwrap_or(10_000) {
                log::emit(
                    log::Level::Info,
                    "steerable_flood",
                    &[("allocation".into(), allocation.allocation_id.clone())],
                );
            }
            Ok(info(allocation, Some(NATIVE_ID.into())))
        }
        // One event with `count` (default 1.2 million) empty fields: more
        // for the host to lift than its hostcall fuel allows.
        "log-wide" => {
            let fields =
                vec![(String::new(), String::new()); steering.count.unwrap_or(1_200_000) as usize];
            log::emit(log::Level::Info, "steerable_wide", &fields);
            Ok(info(allocation, Some(NATIVE_ID.into())))
        }
        "log" => {
            log::emit(
                log::Level::Info,
                "steerable_event",
                &[("allocation".into(), allocation.allocation_id.clone())],
            );
            Ok(info(allocation, None))
        }
        _ => Err(Error::Invalid),
    }
}

/// `error-<code>`: that fixed error (`invalid` for an unknown code).
fn steered_error(action: &str) -> Error {
    match action {
        "error-ownership" => Error::Ownership,
        "error-exists" => Error::Exists,
        "error-not-found" => Error::NotFound,
        "error-compute-unconfirmed" => Error::ComputeUnconfirmed,
        "error-command-unconfirmed" => Error::CommandUnconfirmed,
        "error-observation-unavailable" => Error::ObservationUnavailable,
        "error-runtime-not-running" => Error::RuntimeNotRunning,
        // A supported operation answering as if it were not.
        "error-unsupported" => Error::Unsupported(UnsupportedOperation {
            operation: "get-info".into(),
            reason: "steered_to_contradict".into(),
        }),
        _ => Error::Invalid,
    }
}

/// `failure-*`: a failed create carrying info, to test who keeps it.
fn steered_failure(action: &str, allocation: Reference) -> Option<Failure> {
    let settled = |state, id: Option<&str>, create_settled| Info {
        state,
        create_settled,
        ..info(allocation.clone(), id.map(Into::into))
    };
    let info = match action {
        "failure-settled-absent" => settled(LifecycleState::Absent, None, true),
        "failure-settled-running" => settled(LifecycleState::Running, Some("native-1"), true),
        "failure-unsettled" => settled(LifecycleState::Pending, Some("native-1"), false),
        "failure-absent-with-id" => settled(LifecycleState::Absent, Some("native-1"), true),
        _ => return None,
    };
    Some(Failure {
        error: Error::Exists,
        info: Some(info),
    })
}

/// The vendor API's base URL when steered to `vendor`.
fn vendor_base(steering: &Steering) -> Option<String> {
    (steering.action == "vendor").then(|| steering.url.clone().unwrap_or_default())
}

impl exports::sandbox_provider::Guest for Steerable {
    fn create(request: Bootstrap) -> Result<Info, Failure> {
        let steering = steering();
        if let Some(base) = vendor_base(&steering) {
            return vendor::create(&base, steering.replay, request.reference);
        }
        if let Some(failure) = steered_failure(&steering.action, request.reference.clone()) {
            return Err(failure);
        }
        if steering.action == "log-credential" {
            // The leak the host's log redaction is there for.
            let line = format!("bootstrap {request:?}");
            log::emit(
                log::Level::Info,
                "steerable_bootstrap",
                &[("request".into(), line)],
            );
            return Ok(info(request.reference, Some(NATIVE_ID.into())));
        }
        act(&steering, request.reference).map_err(Failure::from)
    }
    fn get_info(allocation: Reference) -> Result<Info, Error> {
        let steering = steering();
        match vendor_base(&steering) {
            Some(base) => vendor::get_info(&base, allocation),
            None => act(&steering, allocation),
        }
    }
    fn renew(allocation: Reference) -> Result<Info, Failure> {
        match vendor_base(&steering()) {
            Some(base) => vendor::get_info(&base, allocation).map_err(Failure::from),
            None => Ok(info(allocation, Some(NATIVE_ID.into()))),
        }
    }
    fn kill(allocation: Reference) -> Result<Info, Failure> {
        let steering = steering();
        if steering.action == "receipt-settled-absence" {
            return Ok(receipts::settled_absence(&steering, allocation));
        }
        if steering.action == "vm" {
            let outcomes = vm::run(&steering.vm_kill_steps, &allocation);
            return Ok(Info {
                state: LifecycleState::Absent,
                ..info(allocation, Some(outcomes))
            });
        }
        match vendor_base(&steering) {
            Some(base) => vendor::kill(&base, allocation),
            None => Ok(Info {
                state: LifecycleState::Absent,
                ..info(allocation, None)
            }),
        }
    }
    fn run_command(_allocation: Reference, request: Command) -> Result<CommandResult, Error> {
        Ok(CommandResult {
            stdout: request.stdin.unwrap_or_default(),
            stderr: Vec::new(),
            exit_code: 0,
        })
    }
}

/// The vendor's base URL when steered to checkpoints against it; else
/// `operation` is unsupported.
fn checkpointing(operation: &str) -> Result<(String, Steering), Error> {
    let steering = steering();
    match vendor_base(&steering) {
        Some(base) if steering.declaration == "checkpoint" => Ok((base, steering)),
        _ => Err(reasoned(operation)),
    }
}

impl exports::checkpoint_provider::Guest for Steerable {
    fn initial(allocation: Reference) -> Result<Compute, Error> {
        checkpointing("initial").map(|_| checkpoint::initial(allocation))
    }
    fn new_compute(
        allocation: Reference,
        generation: u64,
        restored_from: Option<SnapshotIdentity>,
    ) -> Result<Compute, Error> {
        let (_, steering) = checkpointing("new-compute")?;
        let mut compute = checkpoint::new_compute(allocation, generation, restored_from);
        if steering.lie == "provenance" {
            compute.restored_from = None;
        }
        Ok(compute)
    }
    fn get_compute(allocation: Reference, incarnation: Compute) -> Result<ComputeState, Error> {
        let (base, steering) = checkpointing("get-compute")?;
        checkpoint::get_compute(&base, allocation, incarnation, &steering.lie)
    }
    fn suspend(request: SuspendRequest) -> Result<ComputeState, Error> {
        let (base, steering) = checkpointing("suspend")?;
        checkpoint::suspend(&base, request, &steering.lie)
    }
    fn resume(request: ResumeRequest) -> Result<ComputeState, Error> {
        let (base, steering) = checkpointing("resume")?;
        checkpoint::resume(&base, request, &steering.lie)
    }
    fn resume_compute(allocation: Reference, incarnation: Compute) -> Result<ComputeState, Error> {
        let (base, steering) = checkpointing("resume-compute")?;
        checkpoint::resume_compute(&base, allocation, incarnation, steering.cold_start)
    }
    fn kill_compute(allocation: Reference, incarnation: Compute) -> Result<(), Error> {
        let (base, _) = checkpointing("kill-compute")?;
        checkpoint::kill_compute(&base, allocation, incarnation)
    }
    fn delete_snapshot(_allocation: Reference, snapshot: SnapshotIdentity) -> Result<(), Error> {
        let (base, _) = checkpointing("delete-snapshot")?;
        checkpoint::delete_snapshot(&base, snapshot)
    }
    fn run_command_compute(
        allocation: Reference,
        incarnation: Compute,
        request: Command,
    ) -> Result<CommandResult, Error> {
        let (base, _) = checkpointing("run-command-compute")?;
        checkpoint::run_command_compute(&base, allocation, incarnation, request)
    }
}

/// One steered observation of `allocation` (declaration `observing`).
fn observed(steering: &Steering, allocation: &Reference) -> Result<Sample, Error> {
    let answer = match steering.action.as_str() {
        "http-post" => {
            let url = steering.url.clone().unwrap_or_default();
            http::send(&http::Request::new(http::Method::Post, url))
                .map(|_| String::new())
                .map_err(|error| match error {
                    http::HttpError::Denied => Error::Invalid,
                    _ => Error::ComputeUnconfirmed,
                })
        }
        // A batch observation reaches no receipt.
        action if action.starts_with("receipt-") => {
            match receipts::act(steering, allocation).as_deref() {
                Some("denied") => Err(Error::ObservationUnavailable),
                _ => Ok(String::new()),
            }
        }
        _ => docker_action(steering, allocation).unwrap_or(Ok(String::new())),
    };
    answer.map(|_| Sample {
        cpu_seconds: None,
        memory_bytes: 0,
        memory_limit_bytes: 0,
        cpus: 0.0,
        started_at: None,
    })
}

impl exports::observation_source::Guest for Steerable {
    fn observe(of: Target) -> Result<Sample, Error> {
        let steering = steering();
        if steering.declaration != "observing" {
            return Err(reasoned("observe"));
        }
        observed(&steering, &of.reference)
    }
}

impl exports::batch_observation_source::Guest for Steerable {
    fn observe_batch(targets: Vec<Target>) -> Result<Vec<Result<Sample, Error>>, Error> {
        let steering = steering();
        if steering.declaration != "observing" {
            if steering.touch_before_unsupported {
                let _ = steered_get(&steering);
            }
            return Err(reasoned("observe-batch"));
        }
        Ok(targets
            .iter()
            .map(|target| observed(&steering, &target.reference))
            .collect())
    }
}

/// Declaration `verifying`: both reach the steered `url` with the
/// candidate's credential (which the host fills in): a GET, or a POST with
/// action `http-post` (which a read-only call may not send).
fn verifying_request(steering: &Steering) -> Result<u16, Error> {
    match steering.action.as_str() {
        "http-post" => steered_request(steering, http::Method::Post),
        _ => steered_get(steering),
    }
}

impl exports::selection_discoverer::Guest for Steerable {
    fn discover_selection(candidate: String) -> Result<String, Error> {
        let steering = steering();
        if steering.declaration != "verifying" {
            return Err(reasoned("discover-selection"));
        }
        verifying_request(&steering).map(|_| candidate)
    }
}

impl exports::credential_verifier::Guest for Steerable {
    fn verify_credential(_candidate: String, _references: Vec<Reference>) -> Result<(), Error> {
        let steering = steering();
        if steering.declaration != "verifying" {
            return Err(reasoned("verify-credential"));
        }
        match verifying_request(&steering)? {
            200 => Ok(()),
            _ => Err(Error::Invalid),
        }
    }
}

/// Everything the component was given of a credential, as JSON: what
/// action `show-credential` shows (the host hands it a handle, so this is
/// all a configuration call could pass on).
fn shown_credential(credential: &Option<Credential>) -> String {
    let fields: Option<Vec<serde_json::Value>> = credential.as_ref().map(|credential| {
        credential
            .fields
            .iter()
            .map(|field| serde_json::json!({ "name": field.name, "length": field.length }))
            .collect()
    });
    let handle = credential.as_ref().map(|credential| credential.handle);
    serde_json::json!({ "handle": handle, "fields": fields }).to_string()
}

/// The credential `action` answers with: `forge-handle` names one the call
/// was never given.
fn kept(credential: Option<Credential>, action: &str) -> Option<Credential> {
    match (credential, action) {
        (Some(credential), "forge-handle") => Some(Credential {
            handle: credential.handle + 1,
            ..credential
        }),
        (credential, _) => credential,
    }
}

/// A plain configuration: the public object and credential as given
/// (action `show-credential` answers what it was given of the credential
/// as its public object; `forge-handle` answers a handle it was not given).
impl exports::configuration_adapter::Guest for Steerable {
    fn requirements() -> ConfigurationRequirements {
        let declaration = steering().declaration;
        ConfigurationRequirements {
            credential: if matches!(
                declaration.as_str(),
                "node-credential" | "credential-required"
            ) {
                Requirement::Required
            } else {
                Requirement::NotRequired
            },
            public_origin: Requirement::NotRequired,
            configuration_discovery: declaration == "discovery-mismatch",
        }
    }
    fn decode_input(
        public: String,
        credential: Option<Credential>,
    ) -> Result<Configuration, Error> {
        let steering = steering();
        if steering.action == "reach" {
            let outcomes: serde_json::Map<String, serde_json::Value> = reach(&steering)
                .into_iter()
                .map(|(capability, outcome)| (capability, outcome.into()))
                .collect();
            let public = serde_json::Value::Object(outcomes).to_string();
            return Ok(Configuration { public, credential });
        }
        if steering.action == "show-credential" {
            let public = shown_credential(&credential);
            return Ok(Configuration { public, credential });
        }
        let credential = kept(credential, &steering.action);
        Ok(Configuration { public, credential })
    }
    fn encode(configuration: Configuration) -> Result<StoredConfiguration, Error> {
        let action = steering().action;
        let metadata = if action == "show-credential" {
            shown_credential(&configuration.credential)
        } else {
            "{}".into()
        };
        Ok(StoredConfiguration {
            public: configuration.public,
            metadata,
            secret: kept(configuration.credential, &action),
        })
    }
    fn decode(stored: StoredConfiguration) -> Result<Configuration, Error> {
        Ok(Configuration {
            public: stored.public,
            credential: stored.secret,
        })
    }
    fn normalize(configuration: Configuration) -> Result<Configuration, Error> {
        Ok(configuration)
    }
    fn resolve_change(
        next: Configuration,
        _previous: Configuration,
    ) -> Result<Configuration, Error> {
        Ok(next)
    }
    fn equal(left: Configuration, right: Configuration) -> Result<bool, Error> {
        Ok(left == right)
    }
    fn with_credential(
        _owner: Configuration,
        _candidate: Credential,
    ) -> Result<Configuration, Error> {
        Err(reasoned("with-credential"))
    }
    fn discover_configuration(_query: String) -> Result<Vec<String>, Error> {
        Err(reasoned("discover-configuration"))
    }
}

// A test component speaks the raw contract: it must be able to declare
// what the SDK would never let an adapter declare.
oac_provider_sdk::__bindings::__export_provider_world!(
    Steerable with_types_in oac_provider_sdk::__bindings
);

#[unsafe(link_section = "oac:contract-version")]
#[used]
static CONTRACT_VERSION: [u8; oac_provider_sdk::__contract::VERSION.len()] =
    oac_provider_sdk::__contract::VERSION_STAMP;
