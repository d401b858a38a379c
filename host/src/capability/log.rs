//! The `log` capability: component events into `tracing`, bounded, with
//! event codes checked and the secrets the host knows of (the kind's
//! credential, a candidate credential, the daemon credential of the Create
//! being served) redacted wherever they appear — event code, field key or
//! value — in any obvious encoding ([`oac_provider_api::secrets`]). A
//! component determined to leak can still split or encrypt a secret; the
//! contract suite's leak clause judges that.

use crate::bindings::oac::sandbox_provider::log::{self, Level};
use crate::capability::Call;
use oac_provider_api::secrets::Secrets;

/// Fields kept per event.
pub(crate) const MAX_FIELDS: usize = 16;
/// Characters kept per field value.
pub(crate) const MAX_VALUE_CHARS: usize = 256;
/// Events one call may write; the next is replaced by one
/// `log_quota_exceeded` event and the rest are dropped, so a component
/// cannot flood the node's log.
pub(crate) const LOG_QUOTA: u32 = 256;
/// What a field holding a secret is written as (the contract suite reads it
/// as the component's attempt to log that secret).
pub const REDACTED: &str = "[redacted]";

/// What an event code or field key carrying a secret is written as (a
/// valid code, unlike [`REDACTED`]).
pub(crate) const REDACTED_NAME: &str = "redacted";

/// Writes one component event. `kind` names the provider kind; an event
/// code, field key or field value carrying one of `secrets` is written
/// [`REDACTED_NAME`] or [`REDACTED`].
pub(crate) fn emit(
    kind: &str,
    secrets: &Secrets,
    level: Level,
    event: &str,
    fields: &[(String, String)],
) {
    let event = if !oac_contract::is_valid_reason(event) {
        "invalid_event_code"
    } else if secrets.found_in(event.as_bytes()) {
        REDACTED_NAME
    } else {
        event
    };
    let rendered: Vec<String> = fields
        .iter()
        .take(MAX_FIELDS)
        .map(|(key, value)| {
            let key = if !oac_contract::is_valid_reason(key) {
                "field"
            } else if secrets.found_in(key.as_bytes()) {
                REDACTED_NAME
            } else {
                key.as_str()
            };
            let value = if secrets.found_in(value.as_bytes()) {
                REDACTED.to_string()
            } else {
                value.chars().take(MAX_VALUE_CHARS).collect()
            };
            format!("{key}={value:?}")
        })
        .collect();
    let fields = rendered.join(" ");
    match level {
        Level::Debug => tracing::debug!(target: "provider", kind, event, fields),
        Level::Info => tracing::info!(target: "provider", kind, event, fields),
        Level::Warn => tracing::warn!(target: "provider", kind, event, fields),
        Level::Error => tracing::error!(target: "provider", kind, event, fields),
    }
}

/// What one call has logged (see [`LOG_QUOTA`]).
#[derive(Default)]
pub(crate) struct State {
    logged: u32,
}

/// What a `log` import sees of its call.
pub(crate) struct View<'a> {
    pub(crate) call: &'a Call,
    pub(crate) state: &'a mut State,
}

impl log::Host for View<'_> {
    async fn emit(&mut self, severity: Level, event: String, fields: Vec<(String, String)>) {
        // A pure call (configuration) reaches nothing, not even the
        // node's log.
        if !self.call.scope.may_reach() {
            return;
        }
        let kind = &self.call.capabilities.kind;
        self.state.logged = self.state.logged.saturating_add(1);
        if self.state.logged > LOG_QUOTA {
            if self.state.logged == LOG_QUOTA + 1 {
                tracing::warn!(target: "provider", kind, event = "log_quota_exceeded", "further events of this call dropped");
            }
            return;
        }
        emit(kind, self.call.secrets(), severity, &event, &fields);
    }
}

linked_through_view!(Log, log);

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What `emit` wrote, through a subscriber of this thread only.
    fn written(secrets: &Secrets, event: &str, fields: &[(String, String)]) -> String {
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("lock").extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            emit("k", secrets, Level::Info, event, fields);
        });
        let bytes = buffer.0.lock().expect("lock").clone();
        String::from_utf8(bytes).expect("utf-8")
    }

    #[test]
    fn a_secret_is_redacted_as_event_code_field_key_and_value() {
        let key = "e2b_0123456789abcdef";
        let secrets = Secrets::new([format!(r#"{{"api_key":"{key}"}}"#).as_str()]);
        let hex = hex::encode(key);
        let line = written(
            &secrets,
            &format!("k_{hex}"),
            &[
                (format!("f_{hex}"), "v".into()),
                ("plain".into(), format!("x {key} y")),
                ("encoded".into(), hex.clone()),
                ("kept".into(), "visible".into()),
            ],
        );
        assert!(!line.contains(&hex) && !line.contains(key), "{line}");
        assert!(
            line.contains("event=\"redacted\"") || line.contains("event=redacted"),
            "{line}"
        );
        assert!(line.contains("redacted=\\\"v\\\""), "{line}");
        assert_eq!(line.matches(REDACTED).count(), 2, "{line}");
        assert!(line.contains("visible"), "{line}");
    }
}
