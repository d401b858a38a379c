//! The data of one call's store: an empty WASI context (no files, env or
//! network), memory limits, the call's deadline and the kind's capabilities.
//! A store lives for exactly one operation.

use crate::capability::{CallCapabilities, CallInput, HoldsCapabilities, SharedCapabilities};
use std::time::Instant;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Most WASI and `wasi:http` resources (pollables, streams, fields,
/// requests) one call may hold at once. A provider call needs a few dozen;
/// the default (a million) would let one component make the host hold
/// gigabytes of handles. Beyond it the import fails and the call traps.
pub(crate) const MAX_TABLE_ENTRIES: usize = 16_384;

/// Per-call store data: the WASI context, the limits, and the call's
/// capabilities ([`CallCapabilities`]).
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: CallLimits,
    /// The `wasi:http` context (the hooks are the call's capabilities').
    http_ctx: wasmtime_wasi_http::WasiHttpCtx,
    /// The guest used the kind's CPU time per call (see [`crate::call`]).
    pub(crate) cpu_spent: bool,
    /// What the call may reach, and what it holds of each capability.
    pub(crate) capabilities: CallCapabilities,
}

impl CallState {
    /// State for one call given `input` that must end by `deadline`.
    pub(crate) fn new(
        capabilities: SharedCapabilities,
        input: CallInput,
        deadline: Instant,
        max_memory_bytes: usize,
    ) -> Self {
        Self {
            wasi: WasiCtx::builder().build(),
            table: {
                let mut table = ResourceTable::new();
                table.set_max_capacity(MAX_TABLE_ENTRIES);
                table
            },
            limits: CallLimits {
                inner: StoreLimitsBuilder::new()
                    .memory_size(max_memory_bytes)
                    .instances(16)
                    .tables(32)
                    .memories(8)
                    .trap_on_grow_failure(true)
                    .build(),
                exhausted: false,
            },
            http_ctx: wasmtime_wasi_http::WasiHttpCtx::new(),
            cpu_spent: false,
            capabilities: CallCapabilities::new(capabilities, input, deadline),
        }
    }
}

/// Links WASI, `wasi:http` (its sends go through the call's hooks) and
/// every capability import of the contract into `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    crate::capability::add_to_linker(linker)
}

impl HoldsCapabilities for CallState {
    fn capabilities(&mut self) -> &mut CallCapabilities {
        &mut self.capabilities
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wasmtime_wasi_http::WasiHttpView for CallState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut self.http_ctx,
            table: &mut self.table,
            hooks: &mut self.capabilities.http,
        }
    }
}

/// Store limits that remember a refused growth, so a call that fails
/// because of it is reported as out of memory rather than a plain trap.
pub(crate) struct CallLimits {
    inner: StoreLimits,
    pub(crate) exhausted: bool,
}

impl ResourceLimiter for CallLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let decision = self.inner.memory_growing(current, desired, maximum);
        self.exhausted |= !matches!(decision, Ok(true));
        decision
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let decision = self.inner.table_growing(current, desired, maximum);
        self.exhausted |= !matches!(decision, Ok(true));
        decision
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}
