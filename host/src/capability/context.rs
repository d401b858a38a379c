//! The `context` import: what the host tells the component about the call
//! it serves (installation, the kind's own configuration, remaining budget).
//! No grant, no binding, no broker and no I/O: it reads only the [`Call`].

use crate::bindings::oac::sandbox_provider::context;
use crate::capability::Call;
use std::time::Instant;

/// What a `context` import sees of its call.
pub(crate) struct View<'a> {
    pub(crate) call: &'a Call,
}

impl context::Host for View<'_> {
    async fn installation_id(&mut self) -> String {
        self.call.capabilities.installation_id.clone()
    }
    async fn configuration(&mut self) -> String {
        self.call.capabilities.configuration.clone()
    }
    async fn remaining_budget_ms(&mut self) -> u32 {
        let left = self.call.deadline.saturating_duration_since(Instant::now());
        u32::try_from(left.as_millis()).unwrap_or(u32::MAX)
    }
}

linked_through_view!(Context, context);
