//! The `log` capability: component events into `tracing`, bounded, with
//! event codes checked and the secrets the host knows of (the kind's
//! credential, the daemon credential of the Create being served) redacted.
//! A component determined to leak can still split or encode a secret; this
//! catches the accidental leak, the contract suite's leak clause the rest.

use crate::bindings::oac::sandbox_provider::log::{self, Level};
use crate::state::CallState;
use wasmtime::component::{HasSelf, Linker};

/// Fields kept per event.
pub const MAX_FIELDS: usize = 16;
/// Characters kept per field value.
pub const MAX_VALUE_CHARS: usize = 256;
/// Events one call may write; the next is replaced by one
/// `log_quota_exceeded` event and the rest are dropped, so a component
/// cannot flood the node's log.
pub const LOG_QUOTA: u32 = 256;
/// What a field holding a secret is written as (the contract suite reads it
/// as the component's attempt to log that secret).
pub const REDACTED: &str = "[redacted]";

/// Writes one component event. `kind` names the provider kind; a field
/// whose value contains one of `secrets` is written `[redacted]`.
pub fn emit(kind: &str, secrets: &[&str], level: Level, event: &str, fields: &[(String, String)]) {
    let event = if oac_contract::is_valid_reason(event) {
        event
    } else {
        "invalid_event_code"
    };
    let rendered: Vec<String> = fields
        .iter()
        .take(MAX_FIELDS)
        .map(|(key, value)| {
            let key = if oac_contract::is_valid_reason(key) {
                key.as_str()
            } else {
                "field"
            };
            let secret = secrets
                .iter()
                .any(|secret| !secret.is_empty() && value.contains(secret));
            let value = if secret {
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

impl log::Host for CallState {
    async fn emit(&mut self, severity: Level, event: String, fields: Vec<(String, String)>) {
        self.logged = self.logged.saturating_add(1);
        if self.logged > LOG_QUOTA {
            if self.logged == LOG_QUOTA + 1 {
                let kind = &self.capabilities.kind;
                tracing::warn!(target: "provider", kind, event = "log_quota_exceeded", "further events of this call dropped");
            }
            return;
        }
        let capabilities = &self.capabilities;
        let kind_credential = capabilities.credential();
        let secrets: Vec<&str> = kind_credential
            .iter()
            .chain(&self.http.credential)
            .chain(&self.secrets)
            .map(String::as_str)
            .collect();
        emit(&capabilities.kind, &secrets, severity, &event, &fields);
    }
}

/// Links the `log` import.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    log::add_to_linker::<CallState, HasSelf<CallState>>(linker, |state| state)
}
