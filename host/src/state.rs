//! The data of one call's store: an empty WASI context (no files, env or
//! network), memory limits, the call's deadline and the kind's capabilities.
//! A store lives for exactly one operation.

use crate::capability::SharedCapabilities;
use std::time::Instant;
use wasmtime::component::ResourceTable;
use wasmtime::{StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Per-call store data.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: StoreLimits,
    pub(crate) deadline: Instant,
    pub(crate) capabilities: SharedCapabilities,
}

impl CallState {
    /// State for one call that must end by `deadline`.
    pub fn new(capabilities: SharedCapabilities, deadline: Instant, max_memory_bytes: usize) -> Self {
        Self {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(max_memory_bytes)
                .instances(8)
                .tables(32)
                .memories(8)
                .trap_on_grow_failure(true)
                .build(),
            deadline,
            capabilities,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}
