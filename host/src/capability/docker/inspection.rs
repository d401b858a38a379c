//! What the host reads of a container inspection: who the container is,
//! its state, and the settings the ownership and policy checks judge.
//! An engine's answer carries much more (network settings, the storage
//! driver's paths, the mounts as the engine resolved them); those parts are
//! skipped unparsed, since every container request inspects once.

use bollard_stubs::models::{ContainerConfig, ContainerState, HostConfig};
use serde::Deserialize;

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
    pub host_config: Option<HostConfig>,
}

#[cfg(test)]
mod tests {
    use super::InspectedContainer;
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
                host_config: full.host_config,
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
        for spoiled in [privileged, labels] {
            assert!(serde_json::from_value::<InspectedContainer>(spoiled).is_err());
        }
        let repeated = ANSWER.replacen("\"Id\":", "\"Id\":\"0\",\"Id\":", 1);
        assert_ne!(repeated, ANSWER);
        assert!(serde_json::from_str::<InspectedContainer>(&repeated).is_err());
    }
}
