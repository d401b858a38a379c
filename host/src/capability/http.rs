//! The `http` capability: reqwest to the kind's allowlisted origins only.
//! No redirects are followed, bodies are bounded both ways, the deadline is
//! the call's remaining budget, and the installation's credential is filled
//! in by the host so the component never holds it.

use crate::bindings::oac::sandbox_provider::http::{HttpError, Method, Request, Response};
use std::time::Instant;

/// Largest request or response body: 8 MiB.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// The HTTP broker of one kind.
#[derive(Clone)]
pub struct HttpBroker {
    client: reqwest::Client,
    origins: Vec<reqwest::Url>,
    credential: Option<String>,
}

/// Headers the component may not set itself.
const RESERVED_HEADERS: [&str; 4] = ["host", "content-length", "transfer-encoding", "connection"];

impl HttpBroker {
    /// A broker for the registered origins (already validated).
    pub fn new(origins: &[String], credential: Option<String>) -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        let origins = origins
            .iter()
            .filter_map(|origin| crate::registry::parse_origin(origin))
            .collect();
        Self {
            client,
            origins,
            credential,
        }
    }

    fn allowed(&self, url: &reqwest::Url) -> bool {
        self.origins
            .iter()
            .any(|origin| origin.origin() == url.origin())
            && url.username().is_empty()
            && url.password().is_none()
    }

    /// Sends one request; never retried.
    pub async fn send(&self, request: Request, deadline: Instant) -> Result<Response, HttpError> {
        let url = reqwest::Url::parse(&request.url).map_err(|_| HttpError::Denied)?;
        let reserved = request
            .headers
            .iter()
            .any(|(name, _)| RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()));
        if !self.allowed(&url) || reserved || request.body.len() > MAX_BODY_BYTES {
            return Err(HttpError::Denied);
        }
        let method = match request.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Patch => reqwest::Method::PATCH,
            Method::Delete => reqwest::Method::DELETE,
        };
        let mut builder = self.client.request(method, url).body(request.body);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        if let Some(header) = &request.credential {
            let credential = self.credential.as_ref().ok_or(HttpError::Denied)?;
            builder = builder.header(&header.name, format!("{}{}", header.prefix, credential));
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(HttpError::Unavailable);
        }
        let built = builder
            .timeout(remaining)
            .build()
            .map_err(|_| HttpError::Denied)?;
        let mut response = self.client.execute(built).await.map_err(|error| {
            if error.is_connect() {
                HttpError::Unavailable
            } else {
                HttpError::Unconfirmed
            }
        })?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.to_string(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|_| HttpError::Unconfirmed)? {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(HttpError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_origins_are_allowed() {
        let broker = HttpBroker::new(
            &[
                "https://api.vendor.example".into(),
                "http://127.0.0.1:9000".into(),
            ],
            None,
        );
        let allowed = |url: &str| broker.allowed(&reqwest::Url::parse(url).expect("test url"));
        assert!(allowed("https://api.vendor.example/sandboxes?x=1"));
        assert!(allowed("http://127.0.0.1:9000/v1"));
        assert!(!allowed("http://api.vendor.example/sandboxes"));
        assert!(!allowed("https://api.vendor.example:444/"));
        assert!(!allowed("https://evil.example/"));
        assert!(!allowed("https://api.vendor.example.evil.example/"));
        assert!(!allowed("https://user:pw@api.vendor.example/"));
        assert!(!allowed("http://127.0.0.1:9001/"));
    }
}
