//! A vendor's fake as the HTTP tier drives it: started from the profile's
//! command (or already running), and reached through its control routes
//! (`oac_fixtures::control`) to seed, list and refuse.

use crate::profile::FakeSource;
use oac_fixtures::control::{Announcement, Owner, Refusal, Resource};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

/// How long a fake may take to print its announcement.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one control request may take.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the fake is unusable.
#[derive(Debug, thiserror::Error)]
pub enum VendorFakeError {
    /// The command could not be started.
    #[error("the fake's command `{0}` could not be started")]
    Spawn(String),
    /// It printed no valid announcement in time.
    #[error("the fake printed no announcement line within 30 s: {0}")]
    Announcement(String),
    /// A control request failed.
    #[error("the fake's control route {route} failed: {why}")]
    Control {
        /// The route, e.g. `POST /seed`.
        route: &'static str,
        /// What went wrong.
        why: String,
    },
}

/// A running fake.
pub struct VendorFake {
    /// What it announced.
    pub announcement: Announcement,
    /// Text every error body of the fake carries.
    pub native_error_marker: String,
    client: reqwest::Client,
    /// The started process, killed when the run ends.
    _child: Option<tokio::process::Child>,
}

impl VendorFake {
    /// Starts (or connects to) the fake.
    pub async fn start(source: &FakeSource, marker: &str) -> Result<Self, VendorFakeError> {
        let (announcement, child) = match source {
            FakeSource::Running(announcement) => (announcement.clone(), None),
            FakeSource::Command { command } => {
                let shown = command.join(" ");
                let mut child = tokio::process::Command::new(&command[0])
                    .args(&command[1..])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .kill_on_drop(true)
                    .spawn()
                    .map_err(|_| VendorFakeError::Spawn(shown.clone()))?;
                let stdout = child
                    .stdout
                    .take()
                    .ok_or_else(|| VendorFakeError::Spawn(shown.clone()))?;
                let mut lines = tokio::io::BufReader::new(stdout).lines();
                let line = tokio::time::timeout(START_TIMEOUT, lines.next_line())
                    .await
                    .map_err(|_| VendorFakeError::Announcement("timed out".into()))?
                    .map_err(|error| VendorFakeError::Announcement(error.to_string()))?
                    .ok_or_else(|| VendorFakeError::Announcement("it exited".into()))?;
                let announcement = serde_json::from_str(&line)
                    .map_err(|error| VendorFakeError::Announcement(error.to_string()))?;
                (announcement, Some(child))
            }
        };
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(CONTROL_TIMEOUT)
            .build()
            .map_err(|error| VendorFakeError::Announcement(error.to_string()))?;
        Ok(Self {
            announcement,
            native_error_marker: marker.to_string(),
            client,
            _child: child,
        })
    }

    fn url(&self, route: &str) -> String {
        format!(
            "{}/{route}",
            self.announcement.control.trim_end_matches('/')
        )
    }

    /// Sends `request` to `route` and reads its JSON answer.
    async fn answer<T: serde::de::DeserializeOwned>(
        route: &'static str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, VendorFakeError> {
        let failed = |error: &dyn std::fmt::Display| VendorFakeError::Control {
            route,
            why: error.to_string(),
        };
        let body = request
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|error| failed(&error))?
            .bytes()
            .await
            .map_err(|error| failed(&error))?;
        serde_json::from_slice(&body).map_err(|error| failed(&error))
    }

    /// Makes a resource labelled for `owner`; returns its id.
    pub async fn seed(&self, owner: &Owner) -> Result<String, VendorFakeError> {
        const ROUTE: &str = "POST /seed";
        let request = self
            .client
            .post(self.url("seed"))
            .body(serde_json::to_string(owner).unwrap_or_default());
        let seeded: serde_json::Value = Self::answer(ROUTE, request).await?;
        seeded["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| VendorFakeError::Control {
                route: ROUTE,
                why: "the answer has no id".into(),
            })
    }

    /// Every resource with its owner labels.
    pub async fn resources(&self) -> Result<Vec<Resource>, VendorFakeError> {
        Self::answer("GET /resources", self.client.get(self.url("resources"))).await
    }

    /// The next request of `method` on exactly `path` answers `status`.
    pub async fn refuse_next(
        &self,
        method: &str,
        path: &str,
        status: u16,
    ) -> Result<(), VendorFakeError> {
        let refusal = Refusal {
            method: method.into(),
            path: path.into(),
            status,
        };
        self.client
            .post(self.url("refuse"))
            .body(serde_json::to_string(&refusal).unwrap_or_default())
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map(drop)
            .map_err(|error| VendorFakeError::Control {
                route: "POST /refuse",
                why: error.to_string(),
            })
    }
}
