//! What the host accepts as an operation's input. Every rule here is
//! checked before any instance runs, so input the contract refuses is
//! `invalid` with zero native requests, the same in process and through a
//! node. The bounds are in [`oac_contract::bounds`].

use crate::types::{
    Bootstrap, Command, Compute, NetworkAccess, Reference, ResumeRequest, SnapshotIdentity,
    SuspendRequest,
};
use oac_contract::bounds::{
    MAX_ALLOWED_DOMAINS, MAX_COMMAND_ARGS, MAX_COMMAND_ARGS_BYTES, MAX_CREDENTIAL_BYTES,
    MAX_DIRECTORY_BYTES, MAX_STDIN_BYTES, MAX_URL_BYTES,
};
use oac_contract::is_valid_identifier;

/// A reference: three identifiers, each in its one canonical spelling.
pub fn reference(reference: &Reference) -> bool {
    [
        &reference.tenant_id,
        &reference.environment_id,
        &reference.allocation_id,
    ]
    .into_iter()
    .all(|part| is_valid_identifier(part))
}

/// A command: 1..=[`MAX_COMMAND_ARGS`] arguments of at most
/// [`MAX_COMMAND_ARGS_BYTES`] together, none with a NUL; an absolute
/// directory without NUL or `..` components; stdin within its bound.
pub fn command(command: &Command) -> bool {
    let args_bytes: usize = command.args.iter().map(String::len).sum();
    let args = !command.args.is_empty()
        && command.args.len() <= MAX_COMMAND_ARGS
        && args_bytes <= MAX_COMMAND_ARGS_BYTES
        && command.args.iter().all(|arg| !arg.contains('\0'));
    let directory = command.directory.as_deref().is_none_or(|directory| {
        directory.starts_with('/')
            && directory.len() <= MAX_DIRECTORY_BYTES
            && !directory.contains('\0')
            && !directory.split('/').any(|part| part == "..")
    });
    let stdin = command.stdin.as_ref().map_or(0, Vec::len) <= MAX_STDIN_BYTES;
    args && directory && stdin
}

/// Create's input: a valid reference; session, device and harness
/// identifiers; an absolute `http(s)` Core URL with a host and without
/// user information or fragment; a non-empty daemon credential without
/// control characters; and allowed domains exactly when the network is
/// `restricted`.
pub fn bootstrap(bootstrap: &Bootstrap) -> bool {
    let identifiers = [
        &bootstrap.session_id,
        &bootstrap.device_id,
        &bootstrap.harness,
    ]
    .into_iter()
    .all(|id| is_valid_identifier(id));
    let credential = &bootstrap.daemon_credential;
    let credential = !credential.is_empty()
        && credential.len() <= MAX_CREDENTIAL_BYTES
        && !credential.chars().any(char::is_control);
    let domains = match bootstrap.network_access {
        NetworkAccess::Restricted => {
            bootstrap.allowed_domains.len() <= MAX_ALLOWED_DOMAINS
                && bootstrap.allowed_domains.iter().all(|d| domain(d))
        }
        NetworkAccess::Enabled | NetworkAccess::Disabled => bootstrap.allowed_domains.is_empty(),
    };
    reference(&bootstrap.reference)
        && identifiers
        && core_url(&bootstrap.core_url)
        && credential
        && domains
}

/// Most bytes of a name or id a provider gave and Core hands back.
const MAX_EVIDENCE_BYTES: usize = 1024;

/// Provider evidence handed back: bounded, without control characters.
fn evidence_text(text: &str) -> bool {
    text.len() <= MAX_EVIDENCE_BYTES && !text.chars().any(char::is_control)
}

/// A snapshot of `allocation`, captured by a suspend with an identifier
/// for its operation id.
pub fn snapshot(snapshot: &SnapshotIdentity, allocation: &Reference) -> bool {
    snapshot.reference == *allocation
        && is_valid_identifier(&snapshot.operation_id)
        && !snapshot.id.is_empty()
        && [
            &snapshot.id,
            &snapshot.digest,
            &snapshot.checkpoint_id,
            &snapshot.checkpoint_root,
            &snapshot.source_name,
            &snapshot.source_id,
        ]
        .into_iter()
        .all(|text| evidence_text(text))
}

/// An incarnation of `allocation`: a name, an id (empty until it exists)
/// and, when restored, a snapshot of the same allocation.
pub fn compute(compute: &Compute, allocation: &Reference) -> bool {
    !compute.name.is_empty()
        && evidence_text(&compute.name)
        && evidence_text(&compute.id)
        && compute
            .restored_from
            .as_ref()
            .is_none_or(|from| snapshot(from, allocation))
}

/// An incarnation that exists: [`compute`] with its native id.
pub fn existing_compute(incarnation: &Compute, allocation: &Reference) -> bool {
    compute(incarnation, allocation) && !incarnation.id.is_empty()
}

/// Suspend's input: an identifier for the operation, an existing source,
/// and any snapshot Core already holds being this operation's.
pub fn suspend(request: &SuspendRequest) -> bool {
    is_valid_identifier(&request.operation_id)
        && existing_compute(&request.source, &request.reference)
        && request.snapshot.as_ref().is_none_or(|known| {
            snapshot(known, &request.reference) && known.operation_id == request.operation_id
        })
}

/// Resume's input: an identifier for the operation, a snapshot of this
/// allocation, and a target to be restored from exactly that snapshot.
pub fn resume(request: &ResumeRequest) -> bool {
    is_valid_identifier(&request.operation_id)
        && snapshot(&request.snapshot, &request.reference)
        && compute(&request.target, &request.reference)
        && request.target.restored_from.as_ref() == Some(&request.snapshot)
}

/// An absolute `http` or `https` URL with a host, no user information and
/// no fragment, written without whitespace or control characters (which a
/// URL parser would silently drop).
fn core_url(text: &str) -> bool {
    if text.len() > MAX_URL_BYTES || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let Ok(url) = url::Url::parse(text) else {
        return false;
    };
    matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some_and(|host| !host.is_empty())
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none()
}

/// A lowercase DNS name (labels of 1..=63 `[a-z0-9-]` without edge dashes,
/// at most 253 bytes), optionally under a leading `*.` wildcard.
fn domain(text: &str) -> bool {
    let name = text.strip_prefix("*.").unwrap_or(text);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_of(tenant: &str, environment: &str, allocation: &str) -> Reference {
        Reference {
            tenant_id: tenant.into(),
            environment_id: environment.into(),
            allocation_id: allocation.into(),
        }
    }

    fn bootstrap_with(change: impl FnOnce(&mut Bootstrap)) -> Bootstrap {
        let mut bootstrap = Bootstrap {
            reference: reference_of("t", "e", "a"),
            session_id: "session-1".into(),
            device_id: "device-1".into(),
            core_url: "https://core.example.com:8443/base".into(),
            daemon_credential: "secret".into(),
            harness: "claude-code".into(),
            network_access: NetworkAccess::Enabled,
            allowed_domains: vec![],
        };
        change(&mut bootstrap);
        bootstrap
    }

    #[test]
    fn references_are_three_identifiers() {
        assert!(reference(&reference_of("t", "e-1", "a.b:c_d")));
        for bad in [
            reference_of("", "e", "a"),
            reference_of("t", "", "a"),
            reference_of("t", "e", ""),
            reference_of("t/x", "e", "a"),
            reference_of("t", "e", &"a".repeat(129)),
            reference_of("T ", "e", "a"),
        ] {
            assert!(!reference(&bad), "{bad:?}");
        }
    }

    #[test]
    fn bootstraps_are_checked_field_by_field() {
        assert!(bootstrap(&bootstrap_with(|_| {})));
        assert!(bootstrap(&bootstrap_with(|b| {
            b.network_access = NetworkAccess::Restricted;
            b.allowed_domains = vec!["example.com".into(), "*.pkg.dev".into()];
        })));
        type Change = Box<dyn FnOnce(&mut Bootstrap)>;
        let restricted = |domains: Vec<String>| -> Change {
            Box::new(move |b| {
                b.network_access = NetworkAccess::Restricted;
                b.allowed_domains = domains;
            })
        };
        let cases: Vec<(&str, Change)> = vec![
            ("reference", Box::new(|b| b.reference.tenant_id.clear())),
            ("session", Box::new(|b| b.session_id.clear())),
            ("device", Box::new(|b| b.device_id = "a b".into())),
            ("harness", Box::new(|b| b.harness = "../x".into())),
            (
                "credential empty",
                Box::new(|b| b.daemon_credential.clear()),
            ),
            (
                "credential newline",
                Box::new(|b| b.daemon_credential = "a\nb".into()),
            ),
            (
                "credential long",
                Box::new(|b| b.daemon_credential = "a".repeat(4097)),
            ),
            ("url relative", Box::new(|b| b.core_url = "/core".into())),
            ("url scheme", Box::new(|b| b.core_url = "ftp://core".into())),
            (
                "url userinfo",
                Box::new(|b| b.core_url = "https://u:p@core".into()),
            ),
            (
                "url fragment",
                Box::new(|b| b.core_url = "https://core/#x".into()),
            ),
            (
                "url tab",
                Box::new(|b| b.core_url = "https://co\tre/".into()),
            ),
            (
                "url space",
                Box::new(|b| b.core_url = " https://core/".into()),
            ),
            ("url no host", Box::new(|b| b.core_url = "https://".into())),
            (
                "url not special",
                Box::new(|b| b.core_url = "mailto:core@x".into()),
            ),
            (
                "domains unrestricted",
                Box::new(|b| b.allowed_domains = vec!["a.com".into()]),
            ),
            ("domain uppercase", restricted(vec!["A.com".into()])),
            ("domain empty label", restricted(vec!["a..com".into()])),
            ("domain edge dash", restricted(vec!["-a.com".into()])),
            ("too many domains", restricted(vec!["a.com".into(); 257])),
        ];
        for (name, change) in cases {
            assert!(!bootstrap(&bootstrap_with(change)), "{name}");
        }
    }

    #[test]
    fn commands_are_bounded_and_free_of_nul() {
        let command_of = |args: &[&str], directory: Option<&str>| Command {
            args: args.iter().map(|a| a.to_string()).collect(),
            directory: directory.map(Into::into),
            stdin: None,
        };
        assert!(command(&command_of(
            &["sh", "-c", "true"],
            Some("/workspace")
        )));
        assert!(command(&command_of(&["true"], None)));
        let long_arg = "a".repeat(MAX_COMMAND_ARGS_BYTES + 1);
        let many = vec!["a"; MAX_COMMAND_ARGS + 1];
        for (name, bad) in [
            ("no args", command_of(&[], None)),
            ("nul arg", command_of(&["a\0b"], None)),
            (
                "relative directory",
                command_of(&["true"], Some("workspace")),
            ),
            ("nul directory", command_of(&["true"], Some("/a\0"))),
            ("dotdot directory", command_of(&["true"], Some("/a/../etc"))),
            ("args too long", command_of(&[long_arg.as_str()], None)),
            ("too many args", command_of(&many, None)),
        ] {
            assert!(!command(&bad), "{name}");
        }
        let mut big = command_of(&["cat"], None);
        big.stdin = Some(vec![0; MAX_STDIN_BYTES + 1]);
        assert!(!command(&big));
        big.stdin = Some(vec![0; MAX_STDIN_BYTES]);
        assert!(command(&big));
    }
}
