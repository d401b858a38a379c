//! One operation in one fresh instance, under a budget: the epoch deadline
//! bounds guest CPU, store limits bound memory, and a timeout around the
//! whole call bounds time spent in host imports. Nothing is retried.

use crate::capability::SharedCapabilities;
use crate::capability::scope::CallScope;
use crate::exports::{Exports, Prepared};
use crate::state::CallState;
use std::time::Instant;
use wasmtime::{Store, Trap, UpdateDeadline};

/// Why a call ended without the component's answer. Every case means the
/// outcome is unknown: callers report it as unconfirmed, never as success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aborted {
    /// The budget ran out (guest CPU or waiting on a capability).
    Expired,
    /// The instance exceeded its memory limit.
    OutOfMemory,
    /// The guest trapped (panic, unreachable, …).
    Trapped,
    /// No instance could be created (pool exhausted, instantiation trap).
    Unavailable,
}

impl Aborted {
    /// A fixed code for logs.
    pub fn code(self) -> &'static str {
        match self {
            Aborted::Expired => "budget_expired",
            Aborted::OutOfMemory => "memory_limit",
            Aborted::Trapped => "trapped",
            Aborted::Unavailable => "instance_unavailable",
        }
    }
}

/// Exceeding the memory limit surfaces as a plain error, not a `Trap`, so
/// the limiter's own record decides that case.
fn classify(error: &wasmtime::Error, memory_exhausted: bool) -> Aborted {
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Aborted::Expired,
        _ if memory_exhausted => Aborted::OutOfMemory,
        _ => Aborted::Trapped,
    }
}

/// Bytes the host may allocate lifting one import call's arguments (strings
/// and lists, counted as the host holds them): the largest legitimate
/// transfer, a command's stdin, plus room for the rest of its arguments.
/// Past it the call traps before the host holds the data (wasmtime's
/// default is 128 MiB, which a component's empty strings can reach from
/// far less of its own memory).
pub const HOSTCALL_FUEL: usize = oac_contract::bounds::MAX_STDIN_BYTES + (2 << 20);

/// Runs `call` against a fresh instance of `pre`, serving `scope`, to end by
/// `deadline`, and drops the instance.
pub async fn run<R>(
    pre: &Prepared,
    capabilities: SharedCapabilities,
    scope: CallScope,
    max_memory_bytes: usize,
    deadline: Instant,
    call: impl AsyncFnOnce(&Exports, &mut Store<CallState>) -> wasmtime::Result<R>,
) -> Result<R, Aborted> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Err(Aborted::Expired);
    }
    let mut store = Store::new(
        pre.engine(),
        CallState::new(capabilities, scope, deadline, max_memory_bytes),
    );
    store.limiter(|state| &mut state.limits);
    store.set_hostcall_fuel(HOSTCALL_FUEL);
    // Every epoch tick the guest yields to the executor, so a guest that
    // spins cannot hold a worker thread (and the node's other requests)
    // hostage; once the deadline has passed it is interrupted. Tokio's own
    // yield wakes the task only after its poll, so the node's connection
    // task (`own_wakes`) yields for real instead of polling again.
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        Ok(if Instant::now() >= deadline {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::YieldCustom(1, Box::pin(tokio::task::yield_now()))
        })
    });
    let work = async {
        let provider = pre
            .instantiate(&mut store)
            .await
            .map_err(|error| (error, true))?;
        call(&provider, &mut store)
            .await
            .map_err(|error| (error, false))
    };
    let outcome = tokio::time::timeout_at(deadline.into(), work).await;
    let exhausted = store.data().limits.exhausted;
    match outcome {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err((error, instantiating))) => match classify(&error, exhausted) {
            Aborted::Trapped if instantiating => Err(Aborted::Unavailable),
            aborted => Err(aborted),
        },
        Err(_) => Err(Aborted::Expired),
    }
}
