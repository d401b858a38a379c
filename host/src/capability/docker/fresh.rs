//! What one call made itself and nothing has run in yet. An archive upload
//! is extracted by the engine, which follows links already in the
//! destination; a link planted by a process of the container (or of an
//! earlier one on the same volumes) could send it anywhere, the read-only
//! root included. So the host uploads only into a container this call
//! created and has not started, whose every volume this call created (it
//! found no volume of the name before): no process has ever run on them,
//! so nothing can have planted a link. The Docker adapter's Create does
//! exactly that: volumes, container, uploads, then start.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// The call's fresh volumes and containers.
#[derive(Debug, Default)]
pub(crate) struct Fresh(Mutex<Made>);

#[derive(Debug, Default)]
struct Made {
    /// Volumes this call created that no started container mounts.
    volumes: HashSet<String>,
    /// Containers this call created, with the volumes they mount.
    containers: HashMap<String, Vec<String>>,
}

impl Fresh {
    fn made(&self) -> std::sync::MutexGuard<'_, Made> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// This call created volume `name` (none of the name existed).
    pub(crate) fn volume_created(&self, name: &str) {
        self.made().volumes.insert(name.to_string());
    }

    /// This call created container `id` mounting `volumes`.
    pub(crate) fn container_created<'a>(
        &self,
        id: &str,
        volumes: impl IntoIterator<Item = &'a str>,
    ) {
        let volumes = volumes.into_iter().map(str::to_string).collect();
        self.made().containers.insert(id.to_string(), volumes);
    }

    /// Container `id` is (or may be) started: neither it nor its volumes
    /// (nor another container on them) are fresh any more.
    pub(crate) fn started(&self, id: &str) {
        let mut made = self.made();
        if let Some(volumes) = made.containers.remove(id) {
            for volume in volumes {
                made.volumes.remove(&volume);
            }
        }
    }

    /// Whether nothing has run in container `id` or on its volumes: this
    /// call created it and them, and started nothing on them.
    pub(crate) fn is_fresh(&self, id: &str) -> bool {
        let made = self.made();
        made.containers
            .get(id)
            .is_some_and(|volumes| volumes.iter().all(|volume| made.volumes.contains(volume)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_container_made_here_on_volumes_made_here_and_not_started_is_fresh() {
        let fresh = Fresh::default();
        fresh.volume_created("home");
        fresh.volume_created("environment");
        fresh.container_created("c1", ["home", "environment"]);
        assert!(fresh.is_fresh("c1"));
        fresh.container_created("c2", ["home", "retained"]);
        assert!(!fresh.is_fresh("c2"), "a volume this call did not make");
        assert!(
            !fresh.is_fresh("elsewhere"),
            "a container this call did not make"
        );
        fresh.container_created("c3", ["home"]);
        assert!(fresh.is_fresh("c3"));
        fresh.started("c1");
        assert!(!fresh.is_fresh("c1"), "started");
        assert!(
            !fresh.is_fresh("c3"),
            "its volume is mounted by a started container"
        );
    }
}
