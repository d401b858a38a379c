//! Waiting for a vendor's state to change (a sandbox to start, a command
//! to end) within the call's budget: a bounded loop of reads, never a
//! resend. When the budget runs out first the answer is `None`, which an
//! adapter must treat as unknown, never as a definite "no".

use crate::capability::context;

/// Calls `check` until it answers `Some`, waiting `interval_ms` between
/// calls, while more than `reserve_ms` of the call's budget is left (kept
/// for what the operation does after). `check` should only read.
pub fn poll<T, E>(
    interval_ms: u32,
    reserve_ms: u32,
    mut check: impl FnMut() -> Result<Option<T>, E>,
) -> Result<Option<T>, E> {
    loop {
        if let Some(found) = check()? {
            return Ok(Some(found));
        }
        if context::remaining_budget_ms() <= reserve_ms.saturating_add(interval_ms) {
            return Ok(None);
        }
        sleep(interval_ms);
    }
}

/// Waits `ms` milliseconds (the mock's budget shrinks instead, natively).
fn sleep(ms: u32) {
    #[cfg(target_arch = "wasm32")]
    wasip2::clocks::monotonic_clock::subscribe_duration(u64::from(ms) * 1_000_000).block();
    #[cfg(not(target_arch = "wasm32"))]
    crate::testing::elapse(ms);
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::testing::Mock;

    #[test]
    fn polling_stops_at_the_answer_or_at_the_budget() {
        let mut calls = 0;
        let (found, _) = Mock::new("i", "{}").run(|| {
            poll(100, 1_000, || -> Result<Option<u32>, ()> {
                calls += 1;
                Ok((calls == 3).then_some(7))
            })
        });
        assert_eq!((found, calls), (Ok(Some(7)), 3));
        let mut mock = Mock::new("i", "{}");
        mock.budget_ms = 2_000;
        let mut calls = 0;
        let (found, mock) = mock.run(|| {
            poll(100, 1_000, || -> Result<Option<u32>, ()> {
                calls += 1;
                Ok(None)
            })
        });
        assert_eq!(found, Ok(None));
        assert_eq!(calls, 10, "every 100 ms until 1 100 ms are left");
        assert!(mock.budget_ms <= 1_100);
    }
}
