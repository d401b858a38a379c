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
    use serde_json::json;

    /// An inspection as Docker Engine 26.1 writes it (API 1.45), with every
    /// top-level part the host skips present and filled.
    fn engine_answer() -> serde_json::Value {
        json!({
            "Id": "1bbcae002f4c134cce825b613900cc7f62a62d173d70aa504acfd3e5c7a5ec22",
            "Created": "2026-12-03T18:38:32.900143857Z",
            "Path": "sleep",
            "Args": ["1000"],
            "State": {
                "Status": "running", "Running": true, "Paused": false,
                "Restarting": false, "OOMKilled": false, "Dead": false,
                "Pid": 26834, "ExitCode": 0, "Error": "",
                "StartedAt": "2026-12-03T18:38:33.261338194Z",
                "FinishedAt": "0001-01-01T00:00:00Z"
            },
            "Image": "sha256:95c14376d69eb0e420a129ca62f750990223ee3db4afdcfa4e658815ac21db38",
            "ResolvConfPath": "/var/lib/docker/containers/1bbc/resolv.conf",
            "HostnamePath": "/var/lib/docker/containers/1bbc/hostname",
            "HostsPath": "/var/lib/docker/containers/1bbc/hosts",
            "LogPath": "/var/lib/docker/containers/1bbc/1bbc-json.log",
            "Name": "/sample",
            "RestartCount": 0,
            "Driver": "overlay2",
            "Platform": "linux",
            "MountLabel": "",
            "ProcessLabel": "",
            "AppArmorProfile": "",
            "ExecIDs": ["e1"],
            "HostConfig": {
                "Binds": ["samplevol:/workspace"],
                "NetworkMode": "none",
                "CapDrop": ["ALL"],
                "CapAdd": null,
                "Privileged": false,
                "ReadonlyRootfs": true,
                "SecurityOpt": ["no-new-privileges"],
                "Memory": 536870912,
                "NanoCpus": 1000000000,
                "PidsLimit": 256,
                "MaskedPaths": ["/proc/kcore"],
                "ReadonlyPaths": ["/proc/sys"],
                "LogConfig": { "Type": "json-file", "Config": {} },
                "Mounts": [{ "Type": "volume", "Source": "v", "Target": "/home" }]
            },
            "GraphDriver": {
                "Data": { "LowerDir": "/a", "MergedDir": "/b", "UpperDir": "/c", "WorkDir": "/d" },
                "Name": "overlay2"
            },
            "Mounts": [{
                "Type": "volume", "Name": "samplevol", "Source": "/v/_data",
                "Destination": "/workspace", "Driver": "local", "Mode": "z",
                "RW": true, "Propagation": ""
            }],
            "Config": {
                "Hostname": "1bbcae002f4c",
                "User": "65534:65534",
                "Env": ["PATH=/usr/bin"],
                "Cmd": ["sleep", "1000"],
                "Image": "oac-sample:1",
                "Labels": { "oac.installation": "i1", "oac.allocation": "a1" }
            },
            "NetworkSettings": {
                "Bridge": "", "SandboxID": "5e1d", "SandboxKey": "/var/run/docker/netns/5e1d",
                "Ports": {},
                "Networks": { "none": {
                    "NetworkID": "b7", "EndpointID": "c8", "Gateway": "", "IPAddress": "",
                    "IPPrefixLen": 0, "MacAddress": "", "DriverOpts": null, "DNSNames": null
                } }
            }
        })
    }

    /// Every field the host reads parses to what bollard's full type
    /// parses it to: the names and types are the engine's, not a guess.
    #[test]
    fn the_fields_read_parse_as_in_the_full_inspection() {
        let answer = engine_answer().to_string();
        let full: ContainerInspectResponse = serde_json::from_str(&answer).expect("full");
        let read: InspectedContainer = serde_json::from_str(&answer).expect("reduced");
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
        assert!(read.id.is_some() && read.name.is_some() && read.image.is_some());
        let host = read.host_config.expect("host config");
        assert_eq!(host.cap_drop, Some(vec!["ALL".to_string()]));
        assert_eq!(host.readonly_rootfs, Some(true));
        assert_eq!(host.memory, Some(536_870_912));
        let config = read.config.expect("config");
        assert_eq!(config.user.as_deref(), Some("65534:65534"));
        assert!(config.labels.is_some_and(|labels| labels.len() == 2));
        assert!(read.state.is_some_and(|state| state.running == Some(true)));
    }

    /// A setting the host judges is parsed as strictly as before: a wrong
    /// type there is still a malformed answer.
    #[test]
    fn a_malformed_judged_field_is_refused() {
        let mut answer = engine_answer();
        answer["HostConfig"]["Privileged"] = json!("yes");
        assert!(serde_json::from_value::<InspectedContainer>(answer).is_err());
        let mut answer = engine_answer();
        answer["Config"]["Labels"] = json!(["oac.installation=i1"]);
        assert!(serde_json::from_value::<InspectedContainer>(answer).is_err());
        let duplicated = engine_answer()
            .to_string()
            .replacen("\"Id\":", "\"Id\":\"0\",\"Id\":", 1);
        assert!(serde_json::from_str::<InspectedContainer>(&duplicated).is_err());
    }
}
