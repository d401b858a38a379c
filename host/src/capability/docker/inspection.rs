//! What the host reads of a container inspection: who the container is,
//! its state, and the settings the ownership and policy checks judge.
//! An engine's answer carries much more (network settings, the storage
//! driver's paths, the mounts as the engine resolved them, the host
//! settings no check reads); those parts are skipped unparsed, since every
//! container request inspects once.
//!
//! The security options are kept as the engine wrote them: one of them is
//! the whole seccomp profile (about 17 KB of escaped JSON for the runtime's),
//! and decoding it on every inspection cost more than the rest of the
//! answer. It is compared in its encoded form first and decoded only when
//! the engine encoded it differently.

use bollard_stubs::models::{
    ContainerConfig, ContainerState, DeviceMapping, DeviceRequest, HostConfig, HostConfigLogConfig,
    Mount, PortMap,
};
use serde::Deserialize;
use serde::de::{Deserializer, Error as _};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;

/// A container inspection (`GET /containers/{id}/json`), reduced to the
/// fields the host uses. Each field has the engine's name and bollard's
/// type, so it parses exactly as in bollard's `ContainerInspectResponse`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct InspectedContainer {
    /// The full id.
    #[serde(rename = "Id")]
    pub id: Option<String>,
    /// The name, with the engine's leading `/`.
    #[serde(rename = "Name")]
    pub name: Option<String>,
    /// The id of the image the container was created from.
    #[serde(rename = "Image")]
    pub image: Option<String>,
    /// Whether and since when it runs.
    #[serde(rename = "State")]
    pub state: Option<ContainerState>,
    /// Its configuration: user, image reference, command, labels.
    #[serde(rename = "Config")]
    pub config: Option<ContainerConfig>,
    /// Its isolation and resources, as the engine applied them.
    #[serde(rename = "HostConfig")]
    pub host_config: Option<InspectedHost>,
}

/// The host settings of an inspection that the policy judges or the
/// broker reports: bollard's `HostConfig` fields of the same names and
/// types, except the security options (see [`SecurityOption`]).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
#[allow(missing_docs, reason = "each field is the engine's field of that name")]
pub struct InspectedHost {
    pub binds: Option<Vec<String>>,
    pub cap_add: Option<Vec<String>>,
    pub cap_drop: Option<Vec<String>>,
    pub device_cgroup_rules: Option<Vec<String>>,
    pub device_requests: Option<Vec<DeviceRequest>>,
    pub devices: Option<Vec<DeviceMapping>>,
    pub extra_hosts: Option<Vec<String>>,
    pub init: Option<bool>,
    pub ipc_mode: Option<String>,
    pub log_config: Option<HostConfigLogConfig>,
    pub masked_paths: Option<Vec<String>>,
    pub memory: Option<i64>,
    pub mounts: Option<Vec<Mount>>,
    pub nano_cpus: Option<i64>,
    pub network_mode: Option<String>,
    pub pid_mode: Option<String>,
    pub pids_limit: Option<i64>,
    pub port_bindings: Option<PortMap>,
    pub privileged: Option<bool>,
    pub publish_all_ports: Option<bool>,
    pub readonly_paths: Option<Vec<String>>,
    pub readonly_rootfs: Option<bool>,
    pub security_opt: Option<Vec<SecurityOption>>,
    pub tmpfs: Option<HashMap<String, String>>,
    #[serde(rename = "UTSMode")]
    pub uts_mode: Option<String>,
    pub userns_mode: Option<String>,
    pub volumes_from: Option<Vec<String>>,
}

impl From<HostConfig> for InspectedHost {
    /// What an engine that applied `host` faithfully reports of it.
    fn from(host: HostConfig) -> Self {
        Self {
            binds: host.binds,
            cap_add: host.cap_add,
            cap_drop: host.cap_drop,
            device_cgroup_rules: host.device_cgroup_rules,
            device_requests: host.device_requests,
            devices: host.devices,
            extra_hosts: host.extra_hosts,
            init: host.init,
            ipc_mode: host.ipc_mode,
            log_config: host.log_config,
            masked_paths: host.masked_paths,
            memory: host.memory,
            mounts: host.mounts,
            nano_cpus: host.nano_cpus,
            network_mode: host.network_mode,
            pid_mode: host.pid_mode,
            pids_limit: host.pids_limit,
            port_bindings: host.port_bindings,
            privileged: host.privileged,
            publish_all_ports: host.publish_all_ports,
            readonly_paths: host.readonly_paths,
            readonly_rootfs: host.readonly_rootfs,
            security_opt: host.security_opt.map(|options| {
                options
                    .iter()
                    .map(|option| SecurityOption::new(option))
                    .collect()
            }),
            tmpfs: host.tmpfs,
            uts_mode: host.uts_mode,
            userns_mode: host.userns_mode,
            volumes_from: host.volumes_from,
        }
    }
}

/// One security option as the engine encoded it: a JSON string, checked to
/// be one but not decoded until it is compared.
#[derive(Debug, Clone)]
pub struct SecurityOption(Box<RawValue>);

impl SecurityOption {
    /// `text` encoded as [`encoded`] writes it.
    pub fn new(text: &str) -> Self {
        // A JSON string token is always a valid raw value.
        Self(RawValue::from_string(encoded(text)).unwrap_or_default())
    }

    /// The option's text. When the engine encoded it exactly as [`encoded`]
    /// encodes one of `wanted`, that entry of `wanted` (the fast path: the
    /// engine wrote the option's bytes as serde_json does); else decoded.
    /// `None` when it does not decode to a string. `wanted_encoded[i]` is
    /// `encoded(&wanted[i])`.
    pub fn text_among<'a>(
        &'a self,
        wanted: &'a [String],
        wanted_encoded: &[String],
    ) -> Option<Cow<'a, str>> {
        let raw = self.0.get();
        if let Some(index) = wanted_encoded.iter().position(|encoded| encoded == raw) {
            return wanted.get(index).map(|text| Cow::Borrowed(text.as_str()));
        }
        self.decoded().map(Cow::Owned)
    }

    /// The option's text, decoded; `None` when it is no string's encoding
    /// (a lone surrogate escape).
    pub fn decoded(&self) -> Option<String> {
        serde_json::from_str(self.0.get()).ok()
    }
}

/// `text` as a JSON string token, as serde_json writes it.
pub fn encoded(text: &str) -> String {
    // Serialising a string into a String cannot fail.
    serde_json::to_string(text).unwrap_or_default()
}

impl PartialEq for SecurityOption {
    /// Equal when they decode to the same text.
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
            || matches!((self.decoded(), other.decoded()), (Some(one), Some(two)) if one == two)
    }
}

impl<'de> Deserialize<'de> for SecurityOption {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        // Only a string is an option; its escapes were validated while it
        // was read.
        if raw.get().starts_with('"') {
            Ok(Self(raw))
        } else {
            Err(D::Error::custom("a security option is a string"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{InspectedContainer, InspectedHost, SecurityOption};
    use bollard_stubs::models::ContainerInspectResponse;
    use serde_json::{Value, json};

    /// An inspection Docker Engine 26.1.5 (API 1.45) wrote for a running
    /// container with the runtime's kind of settings: every top-level part
    /// the host skips is present and filled.
    const ANSWER: &str = include_str!("../../../tests/data/container-inspect.json");

    /// Every field the host reads parses to what bollard's full type
    /// parses it to: the names and types are the engine's, not a guess.
    #[test]
    fn the_fields_read_parse_as_in_the_full_inspection() {
        let full: ContainerInspectResponse = serde_json::from_str(ANSWER).expect("full");
        assert!(full.network_settings.is_some() && full.graph_driver.is_some());
        let read: InspectedContainer = serde_json::from_str(ANSWER).expect("reduced");
        assert_eq!(
            read,
            InspectedContainer {
                id: full.id,
                name: full.name,
                image: full.image,
                state: full.state,
                config: full.config,
                host_config: full.host_config.map(InspectedHost::from),
            }
        );
        // Nothing is vacuously equal: each field was present and parsed.
        assert!(read.id.is_some_and(|id| id.len() == 64));
        assert_eq!(read.name.as_deref(), Some("/sample"));
        assert!(read.image.is_some_and(|image| image.starts_with("sha256:")));
        assert!(read.state.is_some_and(|state| state.running == Some(true)));
        let config = read.config.expect("config");
        assert_eq!(config.user.as_deref(), Some("65534:65534"));
        assert!(config.labels.is_some_and(|labels| labels.len() == 4));
        let host = read.host_config.expect("host config");
        assert_eq!(host.cap_drop, Some(vec!["ALL".to_string()]));
        assert_eq!(host.readonly_rootfs, Some(true));
        assert_eq!(host.memory, Some(512 << 20));
        assert!(host.masked_paths.is_some_and(|paths| !paths.is_empty()));
    }

    /// A setting the host judges is parsed as strictly as before: a wrong
    /// type there, or a repeated field, is still a malformed answer.
    #[test]
    fn a_malformed_judged_field_is_refused() {
        let answer = || serde_json::from_str::<Value>(ANSWER).expect("JSON");
        let mut privileged = answer();
        privileged["HostConfig"]["Privileged"] = json!("yes");
        let mut labels = answer();
        labels["Config"]["Labels"] = json!(["oac.installation=i1"]);
        let mut option = answer();
        option["HostConfig"]["SecurityOpt"] = json!(["no-new-privileges", 1]);
        let mut options = answer();
        options["HostConfig"]["SecurityOpt"] = json!({"no-new-privileges": true});
        for spoiled in [privileged, labels, option, options] {
            assert!(serde_json::from_value::<InspectedContainer>(spoiled).is_err());
        }
        let repeated = ANSWER.replacen("\"Id\":", "\"Id\":\"0\",\"Id\":", 1);
        assert_ne!(repeated, ANSWER);
        assert!(serde_json::from_str::<InspectedContainer>(&repeated).is_err());
    }

    /// An option is matched in its encoded form when the engine wrote it as
    /// the policy's encoding, and decoded when it wrote it otherwise; one
    /// that is no string's encoding matches nothing.
    #[test]
    fn a_security_option_is_compared_by_its_text() {
        let wanted = [
            "no-new-privileges".to_string(),
            "seccomp={\"a\":1}".to_string(),
        ];
        let encoded = wanted.each_ref().map(|text| super::encoded(text));
        let parse = |token: &str| serde_json::from_str::<SecurityOption>(token).expect("a string");
        let same = parse(&encoded[1]);
        assert!(matches!(
            same.text_among(&wanted, &encoded),
            Some(std::borrow::Cow::Borrowed(text)) if text == wanted[1]
        ));
        // The same text with other escapes, as another encoder may write it.
        let other = parse(r#""seccomp={\u0022a\"\u003a1}""#);
        assert_eq!(
            other.text_among(&wanted, &encoded).as_deref(),
            Some(wanted[1].as_str())
        );
        assert_eq!(other, SecurityOption::new(&wanted[1]));
        let foreign = parse(r#""label=disable""#);
        assert_eq!(
            foreign.text_among(&wanted, &encoded).as_deref(),
            Some("label=disable")
        );
        // A lone surrogate is read as a string but decodes to none.
        let broken = parse(r#""seccomp=\ud800""#);
        assert_eq!(broken.text_among(&wanted, &encoded), None);
    }
}
