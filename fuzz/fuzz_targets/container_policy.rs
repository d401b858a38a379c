//! The container-policy check: any inspected container (as an engine, or
//! something posing as one, reports it) is judged without a panic, and one
//! judged conforming really is isolated as the policy says: the runtime
//! user, a read-only root, every capability dropped and none added, not
//! privileged, the policy's network, image, limits and seccomp profile.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_host::capability::docker::inspection::InspectedContainer;
use sandbox_host::capability::docker::policy::{ContainerPolicy, PolicySettings, RUNTIME_USER};
use std::sync::LazyLock;

const IMAGE: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const PROFILE: &str = r#"{"defaultAction":"SCMP_ACT_ERRNO"}"#;

static POLICY: LazyLock<ContainerPolicy> = LazyLock::new(|| {
    let settings = PolicySettings {
        image: IMAGE.into(),
        network: "none".into(),
        seccomp_profile: "unused".into(),
        cpus: 1.5,
        memory_mib: 512,
        pids_limit: 128,
        nested_sandbox: false,
    };
    ContainerPolicy::new(&settings, PROFILE.into()).expect("a valid policy")
});

fuzz_target!(|bytes: &[u8]| {
    let Ok(container) = serde_json::from_slice::<InspectedContainer>(bytes) else {
        return;
    };
    if POLICY.nonconformity(&container).is_some() {
        return;
    }
    let config = container.config.clone().unwrap_or_default();
    let host = container.host_config.clone().unwrap_or_default();
    assert_eq!(config.user.as_deref(), Some(RUNTIME_USER));
    assert_eq!(config.image.as_deref(), Some(IMAGE));
    assert_eq!(container.image.as_deref(), Some(IMAGE));
    assert_eq!(host.readonly_rootfs, Some(true));
    assert_eq!(host.cap_drop.as_deref(), Some(&["ALL".to_string()][..]));
    assert!(host.cap_add.unwrap_or_default().is_empty());
    assert_ne!(host.privileged, Some(true));
    assert_eq!(host.network_mode.as_deref(), Some("none"));
    assert_eq!(host.memory, Some(512 << 20));
    assert_eq!(host.nano_cpus, Some(1_500_000_000));
    assert_eq!(host.pids_limit, Some(128));
    // Decoded here, apart from the policy's comparison of encoded forms.
    let security: Vec<String> = host
        .security_opt
        .unwrap_or_default()
        .iter()
        .map(|option| option.decoded().expect("a conforming option decodes"))
        .collect();
    assert!(security.iter().any(|option| option == "no-new-privileges"));
    assert!(
        security
            .iter()
            .any(|option| option == &format!("seccomp={PROFILE}"))
    );
    assert!(
        !security
            .iter()
            .any(|option| option.contains("unconfined") && option.starts_with("seccomp"))
    );
    for mode in [&host.pid_mode, &host.ipc_mode, &host.uts_mode] {
        assert!(
            mode.as_deref().is_none_or(|mode| mode != "host"),
            "{mode:?}"
        );
    }
    assert!(host.devices.unwrap_or_default().is_empty());
    assert!(host.binds.unwrap_or_default().is_empty());
});
