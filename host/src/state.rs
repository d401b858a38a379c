//! The data of one call's store: an empty WASI context (no files, env or
//! network), memory limits, the call's deadline and the kind's capabilities.
//! A store lives for exactly one operation.

use crate::capability::SharedCapabilities;
use crate::capability::scope::CallScope;
use std::time::Instant;
use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Most WASI and `wasi:http` resources (pollables, streams, fields,
/// requests) one call may hold at once. A provider call needs a few dozen;
/// the default (a million) would let one component make the host hold
/// gigabytes of handles. Beyond it the import fails and the call traps.
pub const MAX_TABLE_ENTRIES: usize = 16_384;

/// Per-call store data.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: CallLimits,
    pub(crate) deadline: Instant,
    pub(crate) scope: CallScope,
    pub(crate) capabilities: SharedCapabilities,
    /// Values of this call's input that no log may carry (the daemon
    /// credential of a Create, a configuration's credential).
    pub(crate) secrets: Vec<String>,
    /// The `wasi:http` context and the host's hooks (policy, the call's
    /// credential).
    http_ctx: wasmtime_wasi_http::WasiHttpCtx,
    pub(crate) http: crate::capability::http::CallHttp,
    /// Events this call has logged (see [`crate::capability::log::LOG_QUOTA`]).
    pub(crate) logged: u32,
    /// What finds the call's secrets, built when first needed (every secret
    /// of a call is known before its component runs).
    call_secrets: Option<oac_provider_api::secrets::Secrets>,
    /// Containers this call has proven its own (inspected once per call).
    pub(crate) proven: crate::capability::docker::ProvenContainers,
    /// What this call made that nothing has run in yet (uploads go only
    /// there).
    pub(crate) fresh: crate::capability::docker::Fresh,
    /// The guest used the kind's CPU time per call (see [`crate::call`]).
    pub(crate) cpu_spent: bool,
    /// The call's native requests in flight (they run to their end).
    pub(crate) in_flight: crate::capability::boundary::InFlight,
}

impl CallState {
    /// State for one call serving `scope` that must end by `deadline`.
    pub(crate) fn new(
        capabilities: SharedCapabilities,
        scope: CallScope,
        deadline: Instant,
        max_memory_bytes: usize,
    ) -> Self {
        let in_flight = crate::capability::boundary::InFlight::default();
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
            deadline,
            http_ctx: wasmtime_wasi_http::WasiHttpCtx::new(),
            http: crate::capability::http::CallHttp::new(
                capabilities.clone(),
                deadline,
                scope.access(),
                in_flight.clone(),
            ),
            scope,
            capabilities,
            secrets: Vec::new(),
            logged: 0,
            call_secrets: None,
            proven: Default::default(),
            fresh: Default::default(),
            in_flight,
            cpu_spent: false,
        }
    }
}

impl CallState {
    /// What finds every secret of this call: the kind's credential, a
    /// candidate credential, the Create's daemon credential, a
    /// configuration's credential.
    pub(crate) fn secrets(&mut self) -> &oac_provider_api::secrets::Secrets {
        self.call_secrets.get_or_insert_with(|| {
            let kind = self.capabilities.credential();
            oac_provider_api::secrets::Secrets::new(
                kind.as_deref()
                    .into_iter()
                    .chain(self.http.credential())
                    .chain(self.secrets.iter().map(String::as_str)),
            )
        })
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
            hooks: &mut self.http,
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
