//! Whether a node can run VMs, judged by the host from what the helper's
//! probe reads: the CPU's virtualisation flags (opening `/dev/kvm` is not
//! enough: without `vmx` or `svm` VMs die at guest entry), the runtime's
//! own diagnosis, its version and digest, and its home's mode. The first
//! failing fact is the reason, a fixed code.

use oac_helper_protocol::Probe;

/// The runtime version the helper links (`microsandbox = "=0.7.11"`).
pub const RUNTIME_VERSION: &str = "0.7.11";
/// The SHA-256 of `msb` 0.7.11 for x86_64 Linux, as the PyPI wheel
/// `microsandbox-0.7.11` bundles it (`scripts/microsandbox-runtime.sh`).
pub const RUNTIME_SHA256: &str = "02230b0d0ccab4da487c96282ef06bc366a603f0b95201e999cf9e13df31767e";

/// The runtime a node must have: its version and the digest of its `msb`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimePin {
    /// `msb --version`'s version.
    pub version: String,
    /// SHA-256 of the `msb` executable, lowercase hex.
    pub sha256: String,
}

impl Default for RuntimePin {
    fn default() -> Self {
        Self {
            version: RUNTIME_VERSION.into(),
            sha256: RUNTIME_SHA256.into(),
        }
    }
}

/// The judgement: ready, or the first reason not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    /// The reason code when not ready.
    pub reason: Option<&'static str>,
}

impl Readiness {
    /// Ready.
    pub const READY: Readiness = Readiness { reason: None };

    /// Not ready, for `reason`.
    pub fn not(reason: &'static str) -> Self {
        Self {
            reason: Some(reason),
        }
    }

    /// True when VMs can boot.
    pub fn is_ready(&self) -> bool {
        self.reason.is_none()
    }
}

/// The helper could not tell (it did not start, or did not answer).
pub const HELPER_UNAVAILABLE: &str = "helper_unavailable";

/// Judges `probe` against `pin`.
pub fn judge(probe: &Probe, pin: &RuntimePin) -> Readiness {
    // `msb --version` prints the program's name, then the version.
    let version = probe
        .runtime_version
        .split_whitespace()
        .last()
        .map(|version| version.trim_start_matches('v'));
    let facts = [
        (probe.cpu_virtualisation, "no_cpu_virtualisation"),
        (probe.doctor_passed, "runtime_doctor_failed"),
        (
            version == Some(pin.version.as_str()),
            "runtime_version_mismatch",
        ),
        (
            probe.runtime_sha256 == pin.sha256,
            "runtime_digest_mismatch",
        ),
        (probe.home_mode == Some(0o700), "runtime_home_not_private"),
    ];
    match facts.into_iter().find(|(holds, _)| !holds) {
        Some((_, reason)) => Readiness::not(reason),
        None => Readiness::READY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready_probe() -> Probe {
        Probe {
            cpu_virtualisation: true,
            doctor_passed: true,
            runtime_version: "msb 0.7.11".into(),
            runtime_sha256: RUNTIME_SHA256.into(),
            home_mode: Some(0o700),
        }
    }

    #[test]
    fn every_fact_must_hold_and_the_first_that_fails_is_the_reason() {
        let pin = RuntimePin::default();
        assert_eq!(judge(&ready_probe(), &pin), Readiness::READY);
        type Change = fn(&mut Probe);
        let cases: [(Change, &str); 6] = [
            (|p| p.cpu_virtualisation = false, "no_cpu_virtualisation"),
            (|p| p.doctor_passed = false, "runtime_doctor_failed"),
            (
                |p| p.runtime_version = "msb 0.7.12".into(),
                "runtime_version_mismatch",
            ),
            (|p| p.runtime_version.clear(), "runtime_version_mismatch"),
            (
                |p| p.runtime_sha256 = "00".repeat(32),
                "runtime_digest_mismatch",
            ),
            (|p| p.home_mode = Some(0o755), "runtime_home_not_private"),
        ];
        for (change, reason) in cases {
            let mut probe = ready_probe();
            change(&mut probe);
            let judged = judge(&probe, &pin);
            assert_eq!(judged.reason, Some(reason));
            assert!(oac_contract::is_valid_reason(reason));
        }
        // No virtualisation and a failed diagnosis: the CPU is named first.
        let mut here = ready_probe();
        here.cpu_virtualisation = false;
        here.doctor_passed = false;
        assert_eq!(judge(&here, &pin).reason, Some("no_cpu_virtualisation"));
        assert_eq!(
            judge(
                &Probe {
                    runtime_version: "v0.7.11".into(),
                    ..ready_probe()
                },
                &pin
            ),
            Readiness::READY
        );
    }
}
