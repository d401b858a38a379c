//! The `log` capability: component events into `tracing`, bounded, with
//! event codes checked and the installation's credential redacted.

use crate::bindings::oac::sandbox_provider::log::Level;

/// Fields kept per event.
pub const MAX_FIELDS: usize = 16;
/// Characters kept per field value.
pub const MAX_VALUE_CHARS: usize = 256;

/// Writes one component event. `kind` names the provider kind.
pub fn emit(
    kind: &str,
    credential: Option<&str>,
    level: Level,
    event: &str,
    fields: &[(String, String)],
) {
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
            let value = match credential {
                Some(secret) if !secret.is_empty() && value.contains(secret) => {
                    "[redacted]".to_string()
                }
                _ => value.chars().take(MAX_VALUE_CHARS).collect(),
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
