//! The `context` import: what the host tells the component about the call
//! it serves (installation, the kind's own configuration, remaining budget).
//! No grant, no binding, no broker and no I/O: it reads only the [`Call`].

use crate::bindings::oac::sandbox_provider::context;
use crate::capability::Call;
use std::time::Instant;
use wasmtime::component::{HasData, Linker};

/// What a `context` import sees of its call.
pub(crate) struct View<'a> {
    pub(crate) call: &'a Call,
}

/// The [`HasData`] marker that links the imports to a [`View`].
pub(crate) struct Context;

impl HasData for Context {
    type Data<'a> = View<'a>;
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

/// Links the `context` import, reaching each call's view through `get`.
pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> View<'_>,
) -> wasmtime::Result<()> {
    context::add_to_linker::<T, Context>(linker, get)
}
