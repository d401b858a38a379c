//! One operation in one fresh instance, under a budget: the epoch deadline
//! bounds guest CPU, store limits bound memory, and a timeout around the
//! whole call bounds time spent in host imports. Nothing is retried.
//!
//! When the budget ends, the outcome is unknown, but a native request
//! already sent may still act: an engine or vendor does what it was asked
//! whether or not anyone waits. So the call goes on until no request of it
//! is in flight (the guest itself never runs again: the epoch check
//! interrupts it, and the boundary sends nothing new), for at most
//! as long again as its budget ([`overrun_bound`]); its caller holds the
//! allocation's turn until then.

use crate::capability::boundary::overrun_bound;
use crate::capability::{CallInput, SharedCapabilities};
use crate::exports::{Exports, Prepared};
use crate::state::CallState;
use std::time::Instant;
use wasmtime::{CallHook, Store, Trap, UpdateDeadline};

/// Why a call ended without the component's answer. Every case means the
/// outcome is unknown: callers report it as unconfirmed, never as success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Aborted {
    /// The budget ran out (guest CPU or waiting on a capability).
    Expired,
    /// The guest used the kind's CPU time per call.
    CpuLimit,
    /// The instance exceeded its memory limit.
    OutOfMemory,
    /// The guest trapped (panic, unreachable, …).
    Trapped,
    /// No instance could be created (pool exhausted, instantiation trap).
    Unavailable,
}

impl Aborted {
    /// A fixed code for logs.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Aborted::Expired => "budget_expired",
            Aborted::CpuLimit => "cpu_limit",
            Aborted::OutOfMemory => "memory_limit",
            Aborted::Trapped => "trapped",
            Aborted::Unavailable => "instance_unavailable",
        }
    }
}

/// Exceeding the memory limit surfaces as a plain error, not a `Trap`, so
/// the limiter's own record decides that case; an interrupt is the CPU
/// limit when the epoch callback said so.
fn classify(error: &wasmtime::Error, memory_exhausted: bool, cpu_spent: bool) -> Aborted {
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) if cpu_spent => Aborted::CpuLimit,
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
pub(crate) const HOSTCALL_FUEL: usize = oac_contract::bounds::MAX_STDIN_BYTES + (2 << 20);

/// Runs `call` against a fresh instance of `pre`, given `input`, to end by
/// `deadline` (native requests in flight then to theirs), and drops the
/// instance.
pub(crate) async fn run<R>(
    pre: &Prepared,
    capabilities: SharedCapabilities,
    input: CallInput,
    policy: &crate::registry::Policy,
    deadline: Instant,
    call: impl AsyncFnOnce(&Exports, &mut Store<CallState>) -> wasmtime::Result<R>,
) -> Result<R, Aborted> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Err(Aborted::Expired);
    }
    let given_up_at = deadline + overrun_bound(remaining);
    let mut store = Store::new(
        pre.engine(),
        CallState::new(capabilities, input, deadline, policy.max_memory_bytes),
    );
    store.limiter(|state| &mut state.limits);
    store.set_hostcall_fuel(HOSTCALL_FUEL);
    // Every epoch tick the guest yields to the executor, so a guest that
    // spins cannot hold a worker thread (and the node's other requests)
    // hostage; once the deadline has passed it is interrupted. Tokio's own
    // yield wakes the task only after its poll, so the node's connection
    // task (`own_wakes`) yields for real instead of polling again.
    //
    // Each callback is a tick the guest ran into: their count is its CPU
    // time, within a tick, and past the kind's bound it is interrupted
    // too (time spent waiting in host calls crosses no tick of its own).
    let cpu_ticks = policy
        .max_guest_cpu_ms
        .div_ceil(crate::loader::EPOCH_TICK.as_millis().max(1) as u32);
    let mut ticks = 0u32;
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |mut state| {
        ticks = ticks.saturating_add(1);
        if ticks > cpu_ticks {
            state.data_mut().cpu_spent = true;
            return Ok(UpdateDeadline::Interrupt);
        }
        Ok(if Instant::now() >= deadline {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::YieldCustom(1, Box::pin(tokio::task::yield_now()))
        })
    });
    // A host call that crossed a tick (a native request, a wait on a
    // pollable) is no guest CPU: on its return the next tick counts from
    // there. A shorter one masks nothing, so a guest cannot hide spinning
    // behind many cheap calls, and the deadline is still checked within a
    // tick of guest code.
    let mut entered = Instant::now();
    store.call_hook(move |mut context, hook| {
        match hook {
            CallHook::CallingHost => entered = Instant::now(),
            CallHook::ReturningFromHost if entered.elapsed() >= crate::loader::EPOCH_TICK => {
                context.set_epoch_deadline(1);
            }
            _ => {}
        }
        Ok(())
    });
    let in_flight = store.data().capabilities.call.in_flight.clone();
    let helpers = store.data().capabilities.call.helpers.clone();
    let work = async {
        let provider = pre
            .instantiate(&mut store)
            .await
            .map_err(|error| (error, true))?;
        call(&provider, &mut store)
            .await
            .map_err(|error| (error, false))
    };
    let outcome = {
        let mut work = std::pin::pin!(work);
        match tokio::time::timeout_at(deadline.into(), work.as_mut()).await {
            Ok(outcome) => Some(outcome),
            Err(_) => {
                // Unknown, whatever comes now: drive the call only until
                // no native request of it is in flight.
                let drained = async {
                    tokio::select! {
                        _ = work.as_mut() => {}
                        () = in_flight.idle() => {}
                    }
                };
                overrun(given_up_at, drained).await;
                None
            }
        }
    };
    // Requests that run in tasks of their own (HTTP) are waited for too.
    overrun(given_up_at, in_flight.idle()).await;
    // A helper process is never given up on: it may act however late, so
    // the call (and its allocation's turn) ends only once the last exits.
    if helpers.running() > 0 {
        tracing::warn!(
            event = "helper_outlives_budget",
            "a helper process outlived the call's budget; the allocation waits for it to exit"
        );
        helpers.idle().await;
    }
    let (exhausted, cpu_spent) = (store.data().limits.exhausted, store.data().cpu_spent);
    match outcome {
        Some(Ok(answer)) => Ok(answer),
        Some(Err((error, instantiating))) => match classify(&error, exhausted, cpu_spent) {
            Aborted::Trapped if instantiating => Err(Aborted::Unavailable),
            aborted => Err(aborted),
        },
        None => Err(Aborted::Expired),
    }
}

/// Waits for `work` until `given_up_at` at the latest.
async fn overrun(given_up_at: Instant, work: impl Future<Output = ()>) {
    if tokio::time::timeout_at(given_up_at.into(), work)
        .await
        .is_err()
    {
        tracing::warn!(
            event = "native_work_abandoned",
            "native requests still in flight long after the call's budget; no longer waited for"
        );
    }
}
