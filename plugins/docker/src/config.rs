//! The adapter's own node configuration, decoded strictly: unknown keys,
//! wrong types and malformed values are `invalid`, and the error never
//! echoes input. Everything that isolates a container (image, network,
//! seccomp, limits, nested sandbox) is the host's container policy, not
//! this configuration.

use oac_provider_sdk::capability::docker::HostEntry;
use oac_provider_sdk::types::Error;
use serde::Deserialize;
use std::net::IpAddr;

/// The Docker kind's configuration.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfiguration {
    /// Extra `/etc/hosts` entries, `name:address` with a literal IP address
    /// (e.g. how the Runtime reaches Core on a private network).
    pub extra_hosts: Vec<String>,
}

impl NodeConfiguration {
    /// Decodes and checks the configuration.
    pub fn parse(text: &str) -> Result<Self, Error> {
        // An object, not any JSON a derived struct would also accept (`[]`).
        let object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(text).map_err(|_| Error::Invalid)?;
        let configuration: Self = serde_json::from_value(serde_json::Value::Object(object))
            .map_err(|_| Error::Invalid)?;
        configuration.hosts()?;
        Ok(configuration)
    }

    /// The extra hosts as the Docker capability takes them.
    pub fn hosts(&self) -> Result<Vec<HostEntry>, Error> {
        self.extra_hosts
            .iter()
            .map(|entry| {
                let (name, address) = entry.split_once(':').ok_or(Error::Invalid)?;
                let literal = address.parse::<IpAddr>().is_ok();
                if name.is_empty() || !literal {
                    return Err(Error::Invalid);
                }
                Ok(HostEntry {
                    name: name.into(),
                    address: address.into(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_configuration_decodes() {
        assert_eq!(
            NodeConfiguration::parse("{}"),
            Ok(NodeConfiguration::default())
        );
        let parsed =
            NodeConfiguration::parse(r#"{"extra_hosts":["core.internal:10.0.0.1","v6:fd00::1"]}"#)
                .expect("valid");
        let hosts = parsed.hosts().expect("hosts");
        assert_eq!(
            (hosts[0].name.as_str(), hosts[0].address.as_str()),
            ("core.internal", "10.0.0.1")
        );
        assert_eq!(
            (hosts[1].name.as_str(), hosts[1].address.as_str()),
            ("v6", "fd00::1")
        );
    }

    #[test]
    fn unknown_or_malformed_input_is_invalid() {
        for bad in [
            r#"{"extra_hosts":["nocolon"]}"#,
            r#"{"extra_hosts":["core:host-gateway"]}"#,
            r#"{"extra_hosts":[":10.0.0.1"]}"#,
            r#"{"image":"busybox"}"#,
            r#"{"seccomp_profile":"{}"}"#,
            r#"[]"#,
        ] {
            assert_eq!(NodeConfiguration::parse(bad), Err(Error::Invalid), "{bad}");
        }
    }
}
