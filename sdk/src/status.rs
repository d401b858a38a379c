//! A vendor's HTTP status, classified into what it proves, and the
//! contract's error code it becomes for each operation. The line that
//! matters: a definite answer (the vendor did nothing, or the thing is not
//! there) may be said so; anything else — a 5xx, an unexpected status, no
//! answer at all — proves nothing, and the operation's outcome stays
//! unknown. `docs/writing-an-adapter.md` has the table.

use crate::types::Error;
/// The contract's operations, which [`Status::error`] maps for.
pub use oac_contract::Operation;

/// What a status proves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 2xx: done.
    Success,
    /// 404 (and 410): the resource is not there.
    Absent,
    /// 409: the resource is in a state that does not allow the request;
    /// nothing was done.
    Conflict,
    /// 400, 401, 403, 405, 413, 415, 422: refused before any effect;
    /// nothing was done.
    Refused,
    /// 429: refused for now (rate limited); nothing was done.
    Throttled,
    /// Anything else (5xx, 1xx, 3xx, other 4xx): the request may have acted.
    Unknown,
}

impl Status {
    /// Classifies `status`.
    pub fn of(status: u16) -> Self {
        match status {
            200..=299 => Status::Success,
            404 | 410 => Status::Absent,
            409 => Status::Conflict,
            400 | 401 | 403 | 405 | 413 | 415 | 422 => Status::Refused,
            429 => Status::Throttled,
            _ => Status::Unknown,
        }
    }

    /// True when the vendor's answer settles what happened (everything but
    /// [`Status::Unknown`]).
    pub fn is_definite(self) -> bool {
        self != Status::Unknown
    }

    /// The contract's code for this status as the failure of `operation`
    /// (`None` for a success). For Create, a refusal, a throttle or an
    /// absent template is `invalid` (and settled absence: see
    /// [`crate::settlement`]), a conflict is `exists`; for the other
    /// operations an absent resource is `not-found` (Kill treats it as done
    /// before asking), a conflict means the compute is not in a running
    /// state, and a throttle is as unknown as no answer. An unknown outcome
    /// is `command-unconfirmed` for commands and `compute-unconfirmed`
    /// otherwise.
    pub fn error(self, operation: Operation) -> Option<Error> {
        let command = matches!(
            operation,
            Operation::RunCommand | Operation::RunCommandCompute
        );
        match (self, operation) {
            (Status::Success, _) => None,
            (Status::Throttled, Operation::Create) => Some(Error::Invalid),
            (Status::Unknown | Status::Throttled, _) if command => Some(Error::CommandUnconfirmed),
            (Status::Unknown | Status::Throttled, _) => Some(Error::ComputeUnconfirmed),
            (Status::Refused, _) => Some(Error::Invalid),
            (Status::Absent, Operation::Create) => Some(Error::Invalid),
            (Status::Absent, _) => Some(Error::NotFound),
            (Status::Conflict, Operation::Create) => Some(Error::Exists),
            (Status::Conflict, Operation::GetInfo | Operation::Kill) => {
                Some(Error::ComputeUnconfirmed)
            }
            (Status::Conflict, _) => Some(Error::RuntimeNotRunning),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_definite_answers_prove_anything() {
        for status in [500, 502, 503, 504, 302, 418, 100] {
            assert_eq!(Status::of(status), Status::Unknown, "{status}");
            assert_eq!(
                Status::of(status).error(Operation::Create),
                Some(Error::ComputeUnconfirmed)
            );
            assert_eq!(
                Status::of(status).error(Operation::RunCommand),
                Some(Error::CommandUnconfirmed)
            );
        }
        for (status, operation, error) in [
            (204, Operation::Kill, None),
            (429, Operation::Create, Some(Error::Invalid)),
            (404, Operation::Renew, Some(Error::NotFound)),
            (409, Operation::Create, Some(Error::Exists)),
            (409, Operation::Renew, Some(Error::RuntimeNotRunning)),
        ] {
            assert_eq!(
                Status::of(status).error(operation),
                error,
                "{status} {operation:?}"
            );
        }
        assert!(Status::of(401).is_definite() && !Status::of(503).is_definite());
    }
}
