//! The node-local configuration, decoded strictly: unknown keys, wrong
//! types and unsafe values are `invalid`, and the error never echoes input.

use oac_provider_sdk::types::Error;
use serde::Deserialize;

/// Resources every container of this node gets.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// CPUs (fractional allowed), > 0.
    pub cpus: f64,
    /// Memory in MiB, ≥ 16.
    pub memory_mib: u64,
}

/// The Docker kind's node configuration.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeConfiguration {
    /// Runtime image by digest: `name@sha256:<64 hex>` or an image id `sha256:<64 hex>`.
    pub image: String,
    /// Network to attach (never `host` or `container:*`).
    pub network: String,
    /// The seccomp profile JSON (the assembled `seccomp.json`).
    pub seccomp_profile: String,
    /// Extra `/etc/hosts` entries, `name:address`.
    #[serde(default)]
    pub extra_hosts: Vec<String>,
    /// Lift /proc masks and run an init, so the sandbox can nest sandboxes.
    #[serde(default)]
    pub nested_sandbox: bool,
    /// CPU and memory.
    pub resources: Resources,
}

fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl NodeConfiguration {
    /// Decodes and checks the configuration.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let configuration: Self = serde_json::from_str(text).map_err(|_| Error::Invalid)?;
        configuration.check()?;
        Ok(configuration)
    }

    fn check(&self) -> Result<(), Error> {
        let image_ok = is_digest(&self.image)
            || self
                .image
                .rsplit_once('@')
                .is_some_and(|(name, digest)| !name.is_empty() && is_digest(digest));
        let network_ok = !self.network.is_empty()
            && self.network != "host"
            && !self.network.starts_with("container:");
        let hosts_ok = self.extra_hosts.iter().all(|entry| {
            entry
                .split_once(':')
                .is_some_and(|(n, a)| !n.is_empty() && !a.is_empty())
        });
        let profile_ok = serde_json::from_str::<serde_json::Value>(&self.seccomp_profile)
            .is_ok_and(|v| v.is_object());
        let resources_ok = self.resources.cpus.is_finite()
            && self.resources.cpus > 0.0
            && self.resources.cpus <= 1024.0
            && (16..=1 << 24).contains(&self.resources.memory_mib);
        if image_ok && network_ok && hosts_ok && profile_ok && resources_ok {
            Ok(())
        } else {
            Err(Error::Invalid)
        }
    }

    /// CPU quota in 10^-9 CPUs.
    pub fn nano_cpus(&self) -> u64 {
        (self.resources.cpus * 1e9).round() as u64
    }

    /// Memory limit in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.resources.memory_mib * 1024 * 1024
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> serde_json::Value {
        serde_json::json!({
            "image": format!("sha256:{}", "a".repeat(64)),
            "network": "none",
            "seccomp_profile": "{\"defaultAction\":\"SCMP_ACT_ERRNO\"}",
            "resources": { "cpus": 1.5, "memory_mib": 512 }
        })
    }

    #[test]
    fn a_valid_configuration_decodes() {
        let parsed = NodeConfiguration::parse(&valid().to_string()).expect("valid");
        assert_eq!(parsed.nano_cpus(), 1_500_000_000);
        assert_eq!(parsed.memory_bytes(), 512 << 20);
    }

    #[test]
    fn unsafe_or_unknown_input_is_invalid() {
        let spoil: Vec<Box<dyn Fn(&mut serde_json::Value)>> = vec![
            Box::new(|v| v["image"] = "busybox:latest".into()),
            Box::new(|v| v["image"] = format!("busybox@sha256:{}", "A".repeat(64)).into()),
            Box::new(|v| v["network"] = "host".into()),
            Box::new(|v| v["network"] = "container:abc".into()),
            Box::new(|v| v["seccomp_profile"] = "not json".into()),
            Box::new(|v| v["resources"]["cpus"] = 0.into()),
            Box::new(|v| v["resources"]["memory_mib"] = 1.into()),
            Box::new(|v| v["extra_hosts"] = serde_json::json!(["nocolon"])),
            Box::new(|v| v["socket"] = "/var/run/docker.sock".into()),
        ];
        for (index, change) in spoil.iter().enumerate() {
            let mut value = valid();
            change(&mut value);
            assert_eq!(
                NodeConfiguration::parse(&value.to_string()),
                Err(Error::Invalid),
                "case {index}"
            );
        }
    }
}
