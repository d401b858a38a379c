//! The time a caller grants one operation.

use oac_contract::bounds::{MAX_BUDGET_MS, MIN_BUDGET_MS};
use std::time::{Duration, Instant};

/// A validated budget (1 ..= 120 000 ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget(u32);

/// The budget is outside 1 ..= 120 000 ms.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("budget must be between 1 and 120000 milliseconds")]
pub struct InvalidBudget;

impl Budget {
    /// The largest budget.
    pub const MAX: Budget = Budget(MAX_BUDGET_MS);

    /// Accepts 1 ..= 120 000 ms.
    pub fn from_millis(millis: u32) -> Result<Self, InvalidBudget> {
        (MIN_BUDGET_MS..=MAX_BUDGET_MS)
            .contains(&millis)
            .then_some(Self(millis))
            .ok_or(InvalidBudget)
    }

    /// The budget in milliseconds.
    pub fn millis(self) -> u32 {
        self.0
    }

    /// The budget as a duration.
    pub fn duration(self) -> Duration {
        Duration::from_millis(u64::from(self.0))
    }

    /// The instant this budget runs out if it starts now.
    pub fn deadline_from_now(self) -> Instant {
        Instant::now() + self.duration()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive() {
        assert_eq!(Budget::from_millis(0), Err(InvalidBudget));
        assert_eq!(Budget::from_millis(1).map(Budget::millis), Ok(1));
        assert_eq!(
            Budget::from_millis(120_000).map(Budget::millis),
            Ok(120_000)
        );
        assert_eq!(Budget::from_millis(120_001), Err(InvalidBudget));
    }
}
