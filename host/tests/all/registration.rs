//! Registration and binding validation happens before any component is read
//! or compiled: these rows point at components that do not exist, so any
//! error other than the registration error would show a later step ran.

use crate::support::*;
use sandbox_host::host::Connect;
use sandbox_host::loader::LoadError;
use sandbox_host::registry::{DigestSource, Mode, RegistrationError};
use sandbox_host::{Host, HostError, Registration};
use serde_json::json;
use std::collections::BTreeMap;

fn missing_component(kind: &str) -> Registration {
    Registration {
        component: "does-not-exist.wasm".into(),
        ..steerable(kind)
    }
}

async fn outcome(table: Vec<Registration>, socket: Option<&str>) -> Result<Host, HostError> {
    let bindings = table
        .iter()
        .map(|row| (row.kind.clone(), binding(socket.map(Into::into), json!({}))))
        .collect::<BTreeMap<_, _>>();
    TestHost::table(&table, &bindings)
        .load(Connect::Offline)
        .await
}

#[tokio::test]
async fn malformed_rows_are_rejected_before_any_component_is_read() {
    let cases: Vec<(Registration, RegistrationError)> = vec![
        (
            Registration {
                kind: "Bad Kind".into(),
                ..missing_component("x")
            },
            RegistrationError::InvalidKind,
        ),
        (
            Registration {
                component: "../escape.wasm".into(),
                ..missing_component("escape")
            },
            RegistrationError::InvalidField {
                kind: "escape".into(),
                field: "component",
            },
        ),
        (
            Registration {
                digest: DigestSource::Pinned("not-hex".into()),
                ..missing_component("pinned")
            },
            RegistrationError::InvalidField {
                kind: "pinned".into(),
                field: "digest",
            },
        ),
        (
            Registration {
                mode: Mode::Direct,
                ..missing_component("direct")
            },
            RegistrationError::InvalidField {
                kind: "direct".into(),
                field: "grants.docker",
            },
        ),
    ];
    for (row, expected) in cases {
        match outcome(vec![row], Some("/run/engine.sock")).await {
            Err(HostError::Registration(error)) => assert_eq!(error, expected),
            Err(other) => panic!("expected {expected}, got {other}"),
            Ok(_) => panic!("expected {expected}, loaded"),
        }
    }
}

#[tokio::test]
async fn a_duplicate_kind_is_rejected_before_loading() {
    let table = vec![missing_component("twice"), missing_component("twice")];
    assert!(matches!(
        outcome(table, Some("/run/engine.sock")).await,
        Err(HostError::Registration(RegistrationError::DuplicateKind(kind))) if kind == "twice"
    ));
}

#[tokio::test]
async fn a_bad_node_binding_is_rejected_before_loading() {
    // Offline loading needs no native binding; connecting needs each one
    // the kind is granted, checked before any component is read.
    let connecting = |binding: sandbox_host::NodeBinding| async move {
        let table = vec![missing_component("granted")];
        let bindings = BTreeMap::from([("granted".to_string(), binding)]);
        TestHost::table(&table, &bindings)
            .load(Connect::Capabilities)
            .await
    };
    assert!(matches!(
        connecting(binding(None, json!({}))).await,
        Err(HostError::Registration(RegistrationError::Missing { what, .. }))
            if what.contains("docker_socket")
    ));
    let mut without_policy = binding(Some("/run/engine.sock".into()), json!({}));
    without_policy.docker.policy = None;
    assert!(matches!(
        connecting(without_policy).await,
        Err(HostError::Registration(RegistrationError::Missing { what, .. }))
            if what.contains("container_policy")
    ));
    assert!(
        matches!(
            outcome(vec![missing_component("offline")], None).await,
            Err(HostError::Load(_))
        ),
        "offline, the binding passes and the missing component is what fails"
    );
    let table = vec![missing_component("unbound")];
    let outcome = TestHost::table(&table, &BTreeMap::new())
        .load(Connect::Offline)
        .await;
    assert!(matches!(outcome, Err(HostError::MissingBinding(kind)) if kind == "unbound"));
}

#[tokio::test]
async fn a_valid_row_reaches_the_loader() {
    // The same row with valid fields fails only when the file is read.
    assert!(matches!(
        outcome(vec![missing_component("valid")], Some("/run/engine.sock")).await,
        Err(HostError::Load(LoadError::Read {
            what: "component",
            ..
        }))
    ));
}

#[tokio::test]
async fn a_component_whose_digest_differs_is_refused() {
    let pinned = Registration {
        digest: DigestSource::Pinned("0".repeat(64)),
        ..steerable("pinned")
    };
    assert!(matches!(
        outcome(vec![pinned], Some("/run/engine.sock")).await,
        Err(HostError::Load(LoadError::Digest { .. }))
    ));
}

#[tokio::test]
async fn a_failing_kind_registers_nothing() {
    let good = steerable("good");
    let bad = Registration {
        digest: DigestSource::Pinned("0".repeat(64)),
        ..steerable("bad")
    };
    assert!(
        outcome(vec![good, bad], Some("/run/engine.sock"))
            .await
            .is_err()
    );
}
