//! Names of an allocation's three resources: the host's (`docker::names`),
//! which a container or volume is only ever created under. Ownership is
//! decided by the labels the host puts on and checks, never by the name.

use oac_provider_sdk::capability::docker;
use oac_provider_sdk::types::{Error, Reference};

/// The container and volume names of one allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Container name.
    pub container: String,
    /// Volume mounted at /home (role `home`).
    pub home: String,
    /// Volume mounted at /environment (and its `workspace` at /workspace;
    /// role `environment`).
    pub environment: String,
}

impl Identity {
    /// The names the host gives `allocation`'s resources. A kind whose
    /// policy lists no `home` or `environment` volume cannot run this
    /// adapter: `invalid`.
    pub fn of(allocation: &Reference) -> Result<Self, Error> {
        let names = docker::names(allocation).map_err(|_| Error::ComputeUnconfirmed)?;
        Self::from_names(names)
    }

    fn from_names(names: docker::AllocationNames) -> Result<Self, Error> {
        let volume = |role: &str| {
            names
                .volumes
                .iter()
                .find(|volume| volume.role == role)
                .map(|volume| volume.name.clone())
                .ok_or(Error::Invalid)
        };
        Ok(Identity {
            home: volume("home")?,
            environment: volume("environment")?,
            container: names.container,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(roles: &[&str]) -> docker::AllocationNames {
        docker::AllocationNames {
            container: "oac-c".into(),
            volumes: roles
                .iter()
                .map(|role| docker::VolumeName {
                    role: (*role).into(),
                    name: format!("oac-c-{role}"),
                })
                .collect(),
        }
    }

    #[test]
    fn the_adapter_needs_a_home_and_an_environment_volume() {
        assert_eq!(
            Identity::from_names(names(&["environment", "home"])),
            Ok(Identity {
                container: "oac-c".into(),
                home: "oac-c-home".into(),
                environment: "oac-c-environment".into(),
            })
        );
        assert_eq!(Identity::from_names(names(&["home"])), Err(Error::Invalid));
    }
}
