//! The adapters' configuration decoders, through the host: `decode-input`
//! of the `docker` and `e2b` components (from `OAC_PLUGIN_DIR`, default
//! `../target/plugins`) on any public text and credential. The component
//! answers a configuration or `invalid`; never a trap, a
//! budget overrun or an answer the host rejects (which come back as other
//! codes); and a configuration it accepts decodes to itself again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_host::capability::docker::policy::{ContainerPolicy, PolicySettings};
use sandbox_host::host::Connect;
use sandbox_host::provider::ConfigurationProvider;
use sandbox_host::NodeBinding;
use sandbox_host::registry;
use sandbox_host::types::Error;
use sandbox_host::{Budget, Host, Runtime};
use std::collections::BTreeMap;
use std::sync::LazyLock;

fn policy() -> ContainerPolicy {
    let settings = PolicySettings {
        image: "sha256:1111111111111111111111111111111111111111111111111111111111111111".into(),
        network: "none".into(),
        seccomp_profile: "unused".into(),
        cpus: 1.0,
        memory_mib: 256,
        pids_limit: 128,
        nested_sandbox: false,
    };
    ContainerPolicy::new(&settings, r#"{"defaultAction":"SCMP_ACT_ERRNO"}"#.into())
        .expect("a valid policy")
}

struct Loaded {
    runtime: tokio::runtime::Runtime,
    host: Host,
}

static LOADED: LazyLock<Loaded> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let plugins = std::env::var("OAC_PLUGIN_DIR").unwrap_or_else(|_| "../target/plugins".into());
    let table: Vec<_> = registry::builtin()
        .into_iter()
        .filter(|row| row.kind == "docker" || row.kind == "e2b")
        .collect();
    let bindings: BTreeMap<String, NodeBinding> = table
        .iter()
        .map(|row| {
            (
                row.kind.clone(),
                NodeBinding {
                    installation_id: "fuzz".into(),
                    // Never reached: decode-input does no native I/O.
                    docker: sandbox_host::capability::docker::Binding {
                        socket: (row.kind == "docker").then(|| "/nonexistent/docker.sock".into()),
                        policy: (row.kind == "docker").then(policy),
                    },
                    credential: (row.kind == "e2b").then(|| r#"{"api_key":"e2b_fuzz"}"#.into()),
                    configuration: if row.kind == "e2b" {
                        serde_json::json!({ "template": "oac-runtime" })
                    } else {
                        serde_json::json!({})
                    },
                    ..NodeBinding::default()
                },
            )
        })
        .collect();
    let host = runtime
        .block_on(Host::load(
            Runtime::new().expect("engine"),
            &table,
            std::path::Path::new(&plugins),
            &bindings,
            Connect::Offline,
        ))
        .expect("the docker and e2b components load");
    Loaded { runtime, host }
});

// Input: `d` or `e` (the docker or the e2b kind), then the public text,
// then optionally a NUL and the credential.
fuzz_target!(|bytes: &[u8]| {
    let Some((&selector, rest)) = bytes.split_first() else {
        return;
    };
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let (public, credential) = match rest.split_once('\0') {
        Some((public, credential)) => (public, Some(credential)),
        None => (rest, None),
    };
    let loaded = &*LOADED;
    let kind = loaded
        .host
        .kind(if selector == b'e' { "e2b" } else { "docker" })
        .expect("a loaded kind");
    let budget = Budget::from_millis(10_000).expect("budget");
    let decoded = loaded.runtime.block_on(kind.decode_input(
        public.to_string(),
        credential.map(str::to_string),
        budget,
    ));
    match decoded {
        Err(Error::Invalid) => {}
        Err(other) => panic!("decode-input answered {other:?}"),
        Ok(configuration) => {
            let again = loaded.runtime.block_on(kind.decode_input(
                configuration.public.clone(),
                configuration.credential.clone(),
                budget,
            ));
            assert_eq!(again, Ok(configuration), "canonical form decodes to itself");
        }
    }
});
