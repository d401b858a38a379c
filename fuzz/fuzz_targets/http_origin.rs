//! The HTTP origin allowlist: a request target the policy admits is sent
//! to an allowlisted origin and nowhere else. The connection target
//! (scheme, host, port) of every admitted URL equals a registered origin's
//! or the configured endpoint's, or is an `https` host within the
//! configured domain on port 443; it carries no user information, and its
//! text parses back to itself. Only the exact credential origins (the
//! registered one, the endpoint's API origin) take the credential: never a
//! host within the domain. Inputs come as the request line would: the
//! fuzzer's bytes are a URI (userinfo, trailing dots, IDNA, IPv4
//! shorthand, IPv6-mapped addresses, ports, backslashes, percent-encoding).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_host::capability::http::OriginPolicy;
use std::sync::LazyLock;

const ORIGINS: [(&str, &str, u16); 3] = [
    ("https", "api.vendor.example", 443),
    ("http", "127.0.0.1", 9000),
    ("https", "api.e2b.app", 443),
];

static POLICY: LazyLock<OriginPolicy> = LazyLock::new(|| {
    OriginPolicy::new(
        &[
            "https://api.vendor.example".into(),
            "http://127.0.0.1:9000".into(),
        ],
        &["https://api.vendor.example".into()],
        Some(("https://api.e2b.app".into(), "e2b.app".into())),
    )
});

fuzz_target!(|target: &str| {
    let Some(url) = POLICY.admit(target) else {
        return;
    };
    let scheme = url.scheme();
    let host = url.host_str().expect("an admitted URL has a host");
    let port = url
        .port_or_known_default()
        .expect("an admitted URL has a port");
    let listed = ORIGINS.contains(&(scheme, host, port));
    let within = scheme == "https"
        && port == 443
        && (host == "e2b.app" || host.ends_with(".e2b.app"))
        && !host.ends_with('.')
        && host
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    assert!(listed || within, "{target:?} admitted as {url}");
    let credential_origin = matches!(
        (scheme, host, port),
        ("https", "api.vendor.example" | "api.e2b.app", 443)
    );
    assert_eq!(
        POLICY.takes_credential(&url),
        credential_origin,
        "{target:?} as {url}"
    );
    assert!(
        url.username().is_empty() && url.password().is_none(),
        "{target:?}"
    );
    assert_eq!(
        POLICY.admit(url.as_str()).as_ref(),
        Some(&url),
        "{target:?}"
    );
});
