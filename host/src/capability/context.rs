//! The `context` import: what the host tells the component about the call
//! it serves (installation, the kind's own configuration, remaining budget).
//! No I/O.

use crate::bindings::oac::sandbox_provider::context;
use crate::capability::CallCapabilities;
use std::time::Instant;
use wasmtime::component::{HasSelf, Linker};

impl context::Host for CallCapabilities {
    async fn installation_id(&mut self) -> String {
        self.capabilities.installation_id.clone()
    }
    async fn configuration(&mut self) -> String {
        self.capabilities.configuration.clone()
    }
    async fn remaining_budget_ms(&mut self) -> u32 {
        let left = self.deadline.saturating_duration_since(Instant::now());
        u32::try_from(left.as_millis()).unwrap_or(u32::MAX)
    }
}

/// Links the `context` import.
pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> &mut CallCapabilities,
) -> wasmtime::Result<()> {
    context::add_to_linker::<T, HasSelf<CallCapabilities>>(linker, get)
}
