//! One operation at a time per reference. A kind runs the operations on one
//! allocation in turn, so a GetInfo or a Kill can never run during the
//! Create (or any other operation) before it: an observation made while a
//! Create is still making resources would be evidence of nothing. A turn is
//! held by the operation's task, not by its caller, so an operation whose
//! caller left keeps its turn until it ends.

use oac_provider_api::types::Reference;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{Mutex as TurnLock, OwnedMutexGuard};

/// The turns of one kind's references. Only references with an operation
/// running or waiting have an entry.
#[derive(Default)]
pub(crate) struct Turns {
    locks: Mutex<HashMap<Reference, Arc<TurnLock<()>>>>,
}

/// A reference's turn: while it is held, no other operation on the
/// reference runs. Dropping it passes the turn on (waiters are served in
/// the order they asked).
pub(crate) struct Turn {
    turns: Arc<Turns>,
    reference: Reference,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Turns {
    /// Waits for `reference`'s turn. Bound the wait by the caller's budget:
    /// an operation that gives up waiting has not run at all.
    pub(crate) async fn take(self: &Arc<Self>, reference: &Reference) -> Turn {
        let lock = self
            .locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(reference.clone())
            .or_default()
            .clone();
        Turn {
            turns: self.clone(),
            reference: reference.clone(),
            guard: Some(lock.lock_owned().await),
        }
    }

    /// References with an operation running or waiting.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut locks = self
            .turns
            .locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Every waiter holds a clone taken under this mutex: only the map's
        // own reference left means nobody is running or waiting.
        if locks
            .get(&self.reference)
            .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            locks.remove(&self.reference);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn reference(allocation: &str) -> Reference {
        Reference::new("t", "e", allocation)
    }

    #[tokio::test]
    async fn one_reference_takes_turns_and_others_do_not_wait() {
        let turns = Arc::new(Turns::default());
        let first = turns.take(&reference("a")).await;
        let (a, b) = (reference("a"), reference("b"));
        let waiting = tokio::time::timeout(Duration::from_millis(50), turns.take(&a));
        assert!(waiting.await.is_err(), "a second operation waits its turn");
        let other = tokio::time::timeout(Duration::from_millis(50), turns.take(&b));
        let other = other.await.expect("another reference does not wait");
        drop(first);
        let next = turns.take(&reference("a")).await;
        drop((next, other));
        assert_eq!(turns.len(), 0, "finished turns leave nothing behind");
    }

    #[tokio::test]
    async fn a_waiter_keeps_the_entry_alive() {
        let turns = Arc::new(Turns::default());
        let first = turns.take(&reference("a")).await;
        let waiter = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take(&reference("a")).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(first);
        let second = waiter.await.expect("the waiter gets its turn");
        assert_eq!(turns.len(), 1);
        drop(second);
        assert_eq!(turns.len(), 0);
    }
}
