//! E2B's REST API (the control plane), over the host's HTTP capability
//! with the API key filled in by the host (`X-API-Key`, the credential's
//! `api_key`). Every function sends one request and never retries it; the
//! caller decides what an error means.

use oac_provider_sdk::capability::http::{self, CredentialHeader, HttpError, Method, Request};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The four ownership keys of a sandbox's metadata (E2B refuses dotted
/// keys, so these are not the `io.oac.*` labels).
pub const INSTALLATION_KEY: &str = "oac_installationid";
/// Tenant key.
pub const TENANT_KEY: &str = "oac_tenantid";
/// Environment key.
pub const ENVIRONMENT_KEY: &str = "oac_environmentid";
/// Allocation key.
pub const ALLOCATION_KEY: &str = "oac_allocationid";

/// A lease renewed by Create and Renew, seconds.
pub const LEASE_SECONDS: u32 = 3600;

/// How a request ended without the answer the caller wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failed {
    /// Nothing was sent (refused by the host's policy, or no connection).
    NotSent,
    /// The request may have been received; the outcome is unknown.
    Unknown,
    /// E2B answered with this status.
    Status(u16),
    /// E2B answered 2xx with a body this adapter does not understand.
    Malformed,
}

impl From<HttpError> for Failed {
    fn from(error: HttpError) -> Self {
        match error {
            HttpError::Denied | HttpError::Unavailable => Failed::NotSent,
            HttpError::Unconfirmed | HttpError::TooLarge => Failed::Unknown,
        }
    }
}

/// The API's base URL and the sandbox domain.
#[derive(Clone, Debug)]
pub struct Api {
    /// `https://host`.
    pub base: String,
}

/// The body of a created sandbox (`201` of `POST /sandboxes`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    /// E2B's id.
    #[serde(rename = "sandboxID")]
    pub sandbox_id: String,
    /// The template it was made from.
    #[serde(rename = "templateID")]
    pub template_id: String,
    /// The domain its traffic goes to, when E2B names one.
    #[serde(default)]
    pub domain: Option<String>,
    /// The token envd requires (`X-Access-Token`), when secured.
    #[serde(default)]
    pub envd_access_token: Option<String>,
}

/// A sandbox as `GET /sandboxes/{id}` and the list show it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Sandbox {
    /// E2B's id.
    #[serde(rename = "sandboxID")]
    pub sandbox_id: String,
    /// Template.
    #[serde(rename = "templateID")]
    pub template_id: String,
    /// Template alias, when any.
    #[serde(default)]
    pub alias: Option<String>,
    /// `running` or `paused`.
    pub state: String,
    /// vCPUs.
    pub cpu_count: u32,
    /// Memory, MiB.
    #[serde(rename = "memoryMB")]
    pub memory_mb: u32,
    /// RFC 3339 start.
    pub started_at: String,
    /// Ownership metadata.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// RFC 3339 end: when E2B ends it (its lease, at most the team's
    /// maximum sandbox length from its start).
    #[serde(default)]
    pub end_at: Option<String>,
    /// The domain its traffic goes to (detail only; often null: then the
    /// configured domain).
    #[serde(default)]
    pub domain: Option<String>,
    /// envd's token (detail only).
    #[serde(default)]
    pub envd_access_token: Option<String>,
}

/// One sandbox's latest metrics.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Metric {
    /// vCPUs.
    pub cpu_count: u32,
    /// CPU use, percent of capacity.
    pub cpu_used_pct: f64,
    /// Memory in use, bytes.
    pub mem_used: u64,
    /// Memory capacity, bytes.
    pub mem_total: u64,
}

/// A template and its newest ready build.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Template {
    /// Template id.
    #[serde(rename = "templateID")]
    pub template_id: String,
    /// Its names (`namespace/alias`).
    #[serde(default)]
    pub names: Vec<String>,
    /// Its aliases.
    #[serde(default)]
    pub aliases: Vec<String>,
}

/// One build of a template.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Build {
    /// Build id (a UUID).
    #[serde(rename = "buildID")]
    pub build_id: String,
    /// `building`, `waiting`, `ready` or `error`.
    pub status: String,
    /// vCPUs.
    pub cpu_count: u32,
    /// Memory, MiB.
    #[serde(rename = "memoryMB")]
    pub memory_mb: u32,
}

#[derive(Deserialize)]
struct WithBuilds {
    builds: Vec<Build>,
}

#[derive(Deserialize)]
struct Alias {
    #[serde(rename = "templateID")]
    template_id: String,
}

#[derive(Deserialize)]
struct Metrics {
    sandboxes: BTreeMap<String, Metric>,
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
fn encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// E2B's metadata filter as one query value, as its SDKs send it: each
/// key and value percent-encoded, the pairs form-encoded into `k=v&k=v`
/// (encoding them again), and that string encoded as the parameter. E2B
/// decodes it three times over.
pub fn metadata_filter(pairs: &[(&str, &str)]) -> String {
    let joined: Vec<String> = pairs
        .iter()
        .map(|(key, value)| format!("{}={}", encode(&encode(key)), encode(&encode(value))))
        .collect();
    encode(&joined.join("&"))
}

impl Api {
    fn request(&self, method: Method, path: &str) -> Request {
        let mut request = Request::new(method, format!("{}{path}", self.base));
        request.credential = Some(CredentialHeader::new("x-api-key").field("api_key"));
        request
            .headers
            .push(("accept".into(), "application/json".into()));
        request
    }

    fn json<T: DeserializeOwned>(
        &self,
        request: &Request,
        expected: u16,
    ) -> Result<(T, Vec<(String, String)>), Failed> {
        let response = http::send(request)?;
        if response.status != expected {
            return Err(Failed::Status(response.status));
        }
        let value = serde_json::from_slice(&response.body).map_err(|_| Failed::Malformed)?;
        Ok((value, response.headers))
    }

    fn status(&self, request: &Request) -> Result<u16, Failed> {
        crate::mutant::before_mutation(request)?;
        Ok(http::send(request)?.status)
    }

    /// `POST /sandboxes` from `template`, `<template>:<build UUID>`: E2B
    /// resolves a build id given as the tag to exactly that build.
    pub fn create(
        &self,
        template: &str,
        metadata: &BTreeMap<String, String>,
        internet: bool,
    ) -> Result<Created, Failed> {
        let mut request = self.request(Method::Post, "/sandboxes");
        let body = serde_json::json!({
            "templateID": template,
            "timeout": LEASE_SECONDS,
            "metadata": metadata,
            "envVars": {},
            // Killed, not paused, when the lease runs out; never resumed
            // by traffic.
            "autoPause": false,
            "autoResume": {"enabled": false},
            "secure": true,
            "allow_internet_access": internet,
        });
        request.body = serde_json::to_vec(&body)
            .map_err(|_| Failed::NotSent)?
            .into();
        request
            .headers
            .push(("content-type".into(), "application/json".into()));
        self.json(&request, 201).map(|(created, _)| created)
    }

    /// `GET /sandboxes/{id}`: `None` for 404. A pure read: it never
    /// resumes a paused sandbox.
    pub fn get(&self, id: &str) -> Result<Option<Sandbox>, Failed> {
        let request = self.request(Method::Get, &format!("/sandboxes/{}", encode(id)));
        match self.json(&request, 200) {
            Ok((sandbox, _)) => Ok(Some(sandbox)),
            Err(Failed::Status(404)) => Ok(None),
            Err(failed) => Err(failed),
        }
    }

    /// Every page of a paged list: `path` is the first page's path (with
    /// its query), each next page adds E2B's `nextToken`; `items` takes a
    /// page's items out of its body.
    fn pages<P: DeserializeOwned, T>(
        &self,
        path: &str,
        items: impl Fn(P) -> Vec<T>,
    ) -> Result<Vec<T>, Failed> {
        let mut all = Vec::new();
        let mut token: Option<String> = None;
        // Bounded: a caller never needs more than a few pages.
        for _ in 0..50 {
            let page_path = match &token {
                Some(token) => format!("{path}&nextToken={}", encode(token)),
                None => path.to_string(),
            };
            let (page, headers): (P, _) = self.json(&self.request(Method::Get, &page_path), 200)?;
            all.extend(items(page));
            token = headers
                .into_iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("x-next-token"))
                .map(|(_, value)| value)
                .filter(|value| !value.is_empty());
            if token.is_none() {
                return Ok(all);
            }
        }
        Err(Failed::Malformed)
    }

    /// `GET /v2/sandboxes` of running and paused sandboxes whose metadata
    /// holds all of `pairs`, every page.
    pub fn list(&self, pairs: &[(&str, &str)]) -> Result<Vec<Sandbox>, Failed> {
        let path = format!(
            "/v2/sandboxes?state=running,paused&limit=100&metadata={}",
            metadata_filter(pairs)
        );
        self.pages(&path, |page: Vec<Sandbox>| page)
    }

    /// `POST /sandboxes/{id}/timeout`: the lease from now.
    pub fn set_timeout(&self, id: &str) -> Result<u16, Failed> {
        let mut request = self.request(Method::Post, &format!("/sandboxes/{}/timeout", encode(id)));
        request.body = format!("{{\"timeout\":{LEASE_SECONDS}}}").into();
        request
            .headers
            .push(("content-type".into(), "application/json".into()));
        self.status(&request)
    }

    /// `DELETE /sandboxes/{id}`: 204, or 404 when already gone.
    pub fn delete(&self, id: &str) -> Result<u16, Failed> {
        self.status(&self.request(Method::Delete, &format!("/sandboxes/{}", encode(id))))
    }

    /// `GET /sandboxes/metrics` for up to 100 sandboxes.
    pub fn metrics(&self, ids: &[&str]) -> Result<BTreeMap<String, Metric>, Failed> {
        let joined: Vec<String> = ids.iter().map(|id| encode(id)).collect();
        let path = format!("/sandboxes/metrics?sandbox_ids={}", joined.join(","));
        let (metrics, _): (Metrics, _) = self.json(&self.request(Method::Get, &path), 200)?;
        Ok(metrics.sandboxes)
    }

    /// `GET /v2/templates`, every page.
    pub fn templates(&self) -> Result<Vec<Template>, Failed> {
        self.pages("/v2/templates?limit=100", |page: Vec<Template>| page)
    }

    /// `GET /templates/{id}`: every build of the template `id` (E2B looks
    /// it up by id only: an alias is 404; another team's is 403).
    pub fn builds(&self, id: &str) -> Result<Vec<Build>, Failed> {
        let path = format!("/templates/{}?limit=100", encode(id));
        self.pages(&path, |page: WithBuilds| page.builds)
    }

    /// `GET /templates/aliases/{name}`: the id of the template `name` (an
    /// alias, `namespace/alias`, or the id itself) names. 403 when it is
    /// another team's, 404 when it is nobody's.
    pub fn template_id(&self, name: &str) -> Result<String, Failed> {
        let path = format!("/templates/aliases/{}", encode(name));
        let (alias, _): (Alias, _) = self.json(&self.request(Method::Get, &path), 200)?;
        Ok(alias.template_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_filter_is_encoded_as_e2b_decodes_it() {
        assert_eq!(
            metadata_filter(&[("user", "abc"), ("app", "prod")]),
            "user%3Dabc%26app%3Dprod"
        );
        // `=`, `&` and `%` inside a value survive the three decodings.
        assert_eq!(
            metadata_filter(&[("k", "a=b&c%")]),
            "k%3Da%25253Db%252526c%252525"
        );
    }
}
