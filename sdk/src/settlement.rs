//! The Create recipe of a direct adapter, as typed steps over the call's
//! receipts. A Create is never replayed, and what later calls may claim
//! rests on the host's record of the Create's own answer, not on anything
//! the adapter writes. So:
//!
//! 1. [`prior`]: what an earlier attempt left decides first. An attempt
//!    that began and never ended is unknown: find its resource (by the
//!    recorded id, else by its labels) or answer `compute-unconfirmed` —
//!    never send a second create.
//! 2. [`begin`]: record the attempt *before* sending anything.
//! 3. Send the vendor's create **once**, then end the attempt with the
//!    step that matches its answer: [`Attempt::not_sent`] (nothing left the
//!    host: a later Create may try again), [`Attempt::refused`] (a definite
//!    refusal: settled absence, in this answer), [`Attempt::made`] (record
//!    the resource's id before anything else), and finally
//!    [`Attempt::ended`] (the resource is not usable: settled, with its
//!    info) or [`Attempt::running`] (settled success). An answer that
//!    proves nothing ends nothing: return `compute-unconfirmed`.
//! 4. Later calls read [`prior`] once: [`Prior::answered_settled`] says
//!    whether the Create answered settled (so GetInfo, Renew and Kill may
//!    claim `create-settled`, which the host checks against its record);
//!    [`Prior::refused`] lets GetInfo answer a refused Create's absence
//!    without asking the vendor.
//!
//! Each step maps a receipt failure to `compute-unconfirmed`: a record that
//! may not be on disk proves nothing.

// A `Failure` is the contract's shape, returned as the adapter returns it.
#![allow(clippy::result_large_err)]

use crate::capability::receipts;
use crate::types::{Error, Failure, Info, LifecycleState, Reference};

/// Receipt: an attempt began (its value: the adapter's identity bytes).
pub const PENDING: &str = "create_pending";
/// Receipt: the vendor's id (or any bytes) of what the attempt made.
pub const RESOURCE: &str = "create_resource";
/// Receipt: how the attempt ended ([`Ended::as_str`]).
pub const SETTLED: &str = "create_settled";

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Nothing was sent; the Create answered unknown, a later one may try.
    NotSent,
    /// The vendor definitely refused; nothing exists.
    Refused,
    /// Something was made that this Create will not use (it does not
    /// qualify); Kill removes it.
    Invalid,
    /// Made, but its bootstrap definitely failed; Kill removes it.
    BootstrapFailed,
    /// Made and bootstrapped.
    Running,
}

impl Ended {
    /// The receipt's text.
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::NotSent => "not_sent",
            Ended::Refused => "refused",
            Ended::Invalid => "invalid",
            Ended::BootstrapFailed => "bootstrap_failed",
            Ended::Running => "running",
        }
    }

    fn parse(text: &[u8]) -> Option<Self> {
        [
            Ended::NotSent,
            Ended::Refused,
            Ended::Invalid,
            Ended::BootstrapFailed,
            Ended::Running,
        ]
        .into_iter()
        .find(|ended| ended.as_str().as_bytes() == text)
    }
}

/// What earlier attempts left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prior {
    /// No attempt: a Create may begin.
    Fresh,
    /// An attempt began and nothing says how it ended. Never replay it.
    Unknown {
        /// What it recorded having made, if anything.
        resource: Option<Vec<u8>>,
    },
    /// An attempt ended.
    Ended {
        /// How.
        how: Ended,
        /// What it recorded having made, if anything.
        resource: Option<Vec<u8>>,
    },
}

impl Prior {
    /// True when a new attempt may begin: none before; one that sent
    /// nothing or was refused and made nothing; or one that ended and
    /// whose resource is gone (`nothing_found`: the adapter looked it up by
    /// its recorded id and its labels). An attempt whose outcome is unknown
    /// never allows another.
    pub fn may_begin(&self, nothing_found: bool) -> bool {
        match self {
            Prior::Fresh => true,
            Prior::Unknown { .. } => false,
            Prior::Ended {
                how: Ended::NotSent | Ended::Refused,
                resource: None,
            } => true,
            Prior::Ended { .. } => nothing_found,
        }
    }

    /// True when the Create answered settled, so the host recorded it: its
    /// attempt ended, except one that sent nothing. GetInfo, Renew and
    /// Kill may claim `create-settled` then (the host checks the claim).
    pub fn answered_settled(&self) -> bool {
        matches!(self, Prior::Ended { how, .. } if *how != Ended::NotSent)
    }

    /// True when the Create was definitely refused and made nothing:
    /// GetInfo may answer settled absence without asking the vendor.
    pub fn refused(&self) -> bool {
        matches!(
            self,
            Prior::Ended {
                how: Ended::Refused,
                resource: None
            }
        )
    }

    /// What the attempt recorded having made.
    pub fn resource(&self) -> Option<&[u8]> {
        match self {
            Prior::Fresh => None,
            Prior::Unknown { resource } | Prior::Ended { resource, .. } => resource.as_deref(),
        }
    }

    /// [`Self::resource`] as text (the vendor's id, as [`Attempt::made`]
    /// recorded it).
    pub fn resource_id(&self) -> Option<String> {
        self.resource()
            .map(|id| String::from_utf8_lossy(id).into_owned())
    }
}

fn unconfirmed<T>(_: T) -> Error {
    Error::ComputeUnconfirmed
}

/// What earlier attempts of this allocation left.
pub fn prior() -> Result<Prior, Error> {
    let pending = receipts::get(PENDING).map_err(unconfirmed)?;
    let resource = receipts::get(RESOURCE).map_err(unconfirmed)?;
    let settled = receipts::get(SETTLED).map_err(unconfirmed)?;
    Ok(match (pending, settled) {
        (None, None) if resource.is_none() => Prior::Fresh,
        (_, Some(text)) => match Ended::parse(&text) {
            Some(how) => Prior::Ended { how, resource },
            // A record this adapter does not understand proves nothing.
            None => Prior::Unknown { resource },
        },
        (_, None) => Prior::Unknown { resource },
    })
}

/// An attempt in progress: recorded before anything was sent.
#[derive(Debug)]
#[must_use = "an attempt ends with one of its steps"]
pub struct Attempt {
    reference: Reference,
}

/// Records a new attempt for `reference` (with `identity`, e.g. its
/// labels, as the pending receipt) when `prior` allows one
/// ([`Prior::may_begin`]); otherwise `exists` when the earlier attempt's
/// resource is still there, `compute-unconfirmed` when its outcome is
/// unknown.
pub fn begin(
    reference: &Reference,
    identity: &[u8],
    prior: &Prior,
    nothing_found: bool,
) -> Result<Attempt, Error> {
    if !prior.may_begin(nothing_found) {
        return Err(match prior {
            Prior::Ended { .. } => Error::Exists,
            _ => Error::ComputeUnconfirmed,
        });
    }
    receipts::put(PENDING, identity).map_err(unconfirmed)?;
    receipts::remove(SETTLED).map_err(unconfirmed)?;
    receipts::remove(RESOURCE).map_err(unconfirmed)?;
    Ok(Attempt {
        reference: reference.clone(),
    })
}

impl Attempt {
    fn settle(&self, how: Ended) -> bool {
        receipts::put(SETTLED, how.as_str().as_bytes()).is_ok()
    }

    /// Nothing left the host (the request was denied or never connected):
    /// answers `compute-unconfirmed`, claiming nothing, and lets a later
    /// Create try again.
    pub fn not_sent(self) -> Failure {
        let _ = self.settle(Ended::NotSent);
        Error::ComputeUnconfirmed.into()
    }

    /// The vendor definitely refused (see [`crate::status::Status`]):
    /// `error`, with settled absence when the receipt is on disk.
    pub fn refused(self, error: Error) -> Failure {
        let info = self.settle(Ended::Refused).then(|| Info {
            reference: self.reference.clone(),
            provider_id: None,
            state: LifecycleState::Absent,
            bootstrap_complete: false,
            create_settled: true,
        });
        Failure { error, info }
    }

    /// The vendor made `resource` (its id): recorded before anything else,
    /// so a later call finds it. When the record may not be on disk the
    /// Create answers `compute-unconfirmed` (Kill still finds the resource
    /// by its labels).
    pub fn made(&self, resource: &[u8]) -> Result<(), Failure> {
        receipts::put(RESOURCE, resource).map_err(|_| Error::ComputeUnconfirmed.into())
    }

    /// The made resource will not be used (`how` is
    /// [`Ended::Invalid`] or [`Ended::BootstrapFailed`]): `error` with
    /// `info` (settled, not bootstrapped) when the receipt is on disk.
    pub fn ended(self, how: Ended, error: Error, info: Info) -> Failure {
        let info = self.settle(how).then_some(Info {
            create_settled: true,
            bootstrap_complete: false,
            ..info
        });
        Failure { error, info }
    }

    /// The Create succeeded: `info` (settled), or `compute-unconfirmed`
    /// when the receipt may not be on disk (nothing could prove it later).
    pub fn running(self, info: Info) -> Result<Info, Failure> {
        if self.settle(Ended::Running) {
            Ok(Info {
                create_settled: true,
                ..info
            })
        } else {
            Err(Error::ComputeUnconfirmed.into())
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::testing::{Mock, reference};

    /// Begins after whatever `receipts` say, the resource found or not.
    fn begin_after(receipts: &[(&str, &[u8])], nothing_found: bool) -> Result<(), Error> {
        let receipts: Vec<(&str, &[u8])> = receipts.to_vec();
        let (begun, _) = Mock::new("i", "{}").with_receipts(receipts).run(|| {
            let prior = prior()?;
            begin(&reference(), b"l", &prior, nothing_found).map(drop)
        });
        begun
    }

    #[test]
    fn an_attempt_that_began_is_never_begun_again_until_it_ended() {
        let (begun, mock) = Mock::new("i", "{}").run(|| {
            let prior = prior().expect("reads");
            begin(&reference(), b"labels", &prior, true).is_ok()
        });
        assert!(begun);
        assert_eq!(mock.receipts[PENDING], b"labels");
        // Unknown outcome: never again, found or not.
        assert_eq!(
            begin_after(&[(PENDING, b"l")], true),
            Err(Error::ComputeUnconfirmed)
        );
        assert_eq!(
            begin_after(&[(PENDING, b"l"), (SETTLED, b"garbled")], true),
            Err(Error::ComputeUnconfirmed)
        );
        let made: [(&str, &[u8]); 3] =
            [(PENDING, b"l"), (RESOURCE, b"box-1"), (SETTLED, b"running")];
        assert_eq!(begin_after(&made, false), Err(Error::Exists));
        assert_eq!(begin_after(&made, true), Ok(()), "its resource is gone");
        assert_eq!(
            begin_after(&[(PENDING, b"l"), (SETTLED, b"not_sent")], false),
            Ok(()),
            "an attempt that sent nothing may be followed by another"
        );
    }

    #[test]
    fn each_ending_claims_only_what_its_receipt_proves() {
        let ((failure, settled, refused), _) = Mock::new("i", "{}").run(|| {
            let attempt = begin(&reference(), b"l", &Prior::Fresh, true).expect("begins");
            let failure = attempt.refused(Error::Invalid);
            let prior = prior().expect("reads");
            (failure, prior.answered_settled(), prior.refused())
        });
        let info = failure.info.expect("settled absence");
        assert!(info.create_settled && info.state == LifecycleState::Absent);
        assert!(settled && refused);
        let ((failure, settled), _) = Mock::new("i", "{}").run(|| {
            let attempt = begin(&reference(), b"l", &Prior::Fresh, true).expect("begins");
            (
                attempt.not_sent(),
                prior().expect("reads").answered_settled(),
            )
        });
        assert_eq!(
            (failure.error, failure.info, settled),
            (Error::ComputeUnconfirmed, None, false)
        );
        // A receipt that cannot be written claims nothing.
        let (attempt, mut mock) = Mock::new("i", "{}")
            .run(|| begin(&reference(), b"l", &Prior::Fresh, true).expect("begins"));
        mock.receipts_error = Some(receipts::ReceiptsError::Unavailable);
        let (failure, _) = mock.run(|| attempt.refused(Error::Invalid));
        assert_eq!(failure.info, None);
    }
}
