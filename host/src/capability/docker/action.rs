//! The Engine requests the broker sends, as the boundary's hook sees them.

/// A Docker Engine request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // each is the Engine API request of the same name
pub enum DockerAction {
    Version,
    Info,
    ImageInspect,
    ContainerInspect,
    ContainerList,
    ContainerCreate,
    ContainerStart,
    ContainerRemove,
    ContainerStats,
    VolumeInspect,
    VolumeList,
    VolumeCreate,
    VolumeRemove,
    ArchiveUpload,
    ExecCreate,
    ExecStart,
    ExecInspect,
}

impl DockerAction {
    /// A stable name, e.g. `container-create`.
    pub fn name(self) -> &'static str {
        use DockerAction::*;
        match self {
            Version => "version",
            Info => "info",
            ImageInspect => "image-inspect",
            ContainerInspect => "container-inspect",
            ContainerList => "container-list",
            ContainerCreate => "container-create",
            ContainerStart => "container-start",
            ContainerRemove => "container-remove",
            ContainerStats => "container-stats",
            VolumeInspect => "volume-inspect",
            VolumeList => "volume-list",
            VolumeCreate => "volume-create",
            VolumeRemove => "volume-remove",
            ArchiveUpload => "archive-upload",
            ExecCreate => "exec-create",
            ExecStart => "exec-start",
            ExecInspect => "exec-inspect",
        }
    }

    /// True for requests that only read engine state.
    pub fn is_read(self) -> bool {
        use DockerAction::*;
        matches!(
            self,
            Version
                | Info
                | ImageInspect
                | ContainerInspect
                | ContainerList
                | ContainerStats
                | VolumeInspect
                | VolumeList
                | ExecInspect
        )
    }

    /// True for requests that delete something (cleanup).
    pub fn is_removal(self) -> bool {
        matches!(
            self,
            DockerAction::ContainerRemove | DockerAction::VolumeRemove
        )
    }
}
