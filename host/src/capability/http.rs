//! The `http` capability: reqwest to the kind's allowlisted origins only.
//! No redirects are followed, bodies are bounded both ways, the deadline is
//! the call's remaining budget, the installation's credential is filled in
//! by the host so the component never holds it, and every request crosses
//! the capability boundary (recorded, faults injected, never retried).

use crate::bindings::oac::sandbox_provider::http::{self, HttpError, Method, Request, Response};
use crate::capability::boundary::{Action, Boundary, Crossing, Decided, HttpAction};
use crate::state::CallState;
use std::time::Instant;
use wasmtime::component::{HasSelf, Linker};

/// Largest request or response body: 8 MiB.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// The HTTP broker of one kind.
#[derive(Clone)]
pub(crate) struct HttpBroker {
    client: reqwest::Client,
    origins: Vec<reqwest::Url>,
    installation: String,
    boundary: Boundary,
}

/// Headers the component may not set itself, nor name as its credential
/// header: the target and framing of the request, and the hop-by-hop
/// headers (RFC 9110 §7.6.1), which are the transport's business.
const RESERVED_HEADERS: [&str; 12] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "expect",
];

impl HttpBroker {
    /// A broker for the registered origins (already validated).
    pub fn new(
        origins: &[String],
        installation: &str,
        boundary: Boundary,
    ) -> Result<Self, reqwest::Error> {
        // No redirect is followed and no proxy is taken from the
        // environment: a request goes to the allowed origin it names, once.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()?;
        let origins = origins
            .iter()
            .filter_map(|origin| crate::registry::parse_origin(origin))
            .collect();
        Ok(Self {
            client,
            origins,
            installation: installation.to_string(),
            boundary,
        })
    }

    /// Shows the boundary's hook a call the component made.
    pub fn note_call(&self, target: &str) {
        self.boundary.note_call("http", "send", target);
    }

    fn allowed(&self, url: &reqwest::Url) -> bool {
        self.origins
            .iter()
            .any(|origin| origin.origin() == url.origin())
            && url.username().is_empty()
            && url.password().is_none()
    }

    /// Sends one request, filling in `credential` where the component asks
    /// for it; never retried.
    pub async fn send(
        &self,
        request: Request,
        credential: Option<&str>,
        deadline: Instant,
    ) -> Result<Response, HttpError> {
        let url = reqwest::Url::parse(&request.url).map_err(|_| HttpError::Denied)?;
        let reserved = request
            .headers
            .iter()
            .map(|(name, _)| name)
            .chain(request.credential.as_ref().map(|header| &header.name))
            .any(|name| RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()));
        if !self.allowed(&url) || reserved || request.body.len() > MAX_BODY_BYTES {
            return Err(HttpError::Denied);
        }
        let (method, action) = match request.method {
            Method::Get => (reqwest::Method::GET, HttpAction::Get),
            Method::Post => (reqwest::Method::POST, HttpAction::Post),
            Method::Put => (reqwest::Method::PUT, HttpAction::Put),
            Method::Patch => (reqwest::Method::PATCH, HttpAction::Patch),
            Method::Delete => (reqwest::Method::DELETE, HttpAction::Delete),
        };
        let decided = self
            .boundary
            .decide(Action::Http(action), url.path(), false);
        let mut builder = self.client.request(method, url).body(request.body);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        if let Some(header) = &request.credential {
            let credential = credential.ok_or(HttpError::Denied)?;
            let mut value =
                reqwest::header::HeaderValue::from_str(&format!("{}{}", header.prefix, credential))
                    .map_err(|_| HttpError::Denied)?;
            // Kept out of any debug rendering of the request.
            value.set_sensitive(true);
            builder = builder.header(&header.name, value);
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        let built = builder
            .timeout(remaining)
            .build()
            .map_err(|_| HttpError::Denied)?;
        let exchange = async {
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
        };
        let mut response = self
            .boundary
            .dispatch(&decided, deadline, exchange)
            .await
            .map_err(|crossing| match crossing {
                Crossing::NotSent | Crossing::CleanupFailed => HttpError::Unavailable,
                Crossing::Lost => HttpError::Unconfirmed,
                Crossing::Native(error) => error,
            })?;
        self.show_foreign(&decided, &mut response);
        Ok(response)
    }

    /// Under an injected foreign-ownership fault, every mention of this
    /// installation in the response names another one: whatever ownership
    /// record the vendor echoes back (metadata, tags) then looks foreign.
    fn show_foreign(&self, decided: &Decided, response: &mut Response) {
        let ours = self.installation.as_bytes();
        let mentioned = !ours.is_empty()
            && response
                .body
                .windows(ours.len())
                .any(|window| window == ours);
        if mentioned {
            self.boundary.ownership_shown(decided);
        }
        if !decided.shows_foreign() || !mentioned {
            return;
        }
        let foreign = b"foreign-installation";
        let mut rewritten = Vec::with_capacity(response.body.len());
        let mut rest = response.body.as_slice();
        while let Some(at) = rest.windows(ours.len()).position(|window| window == ours) {
            rewritten.extend_from_slice(&rest[..at]);
            rewritten.extend_from_slice(foreign);
            rest = &rest[at + ours.len()..];
        }
        rewritten.extend_from_slice(rest);
        response.body = rewritten;
    }
}

impl http::Host for CallState {
    async fn send(&mut self, request: Request) -> Result<Response, HttpError> {
        let broker = &self.capabilities.http;
        broker.note_call(&request.url);
        // A call that may only read sends only GET.
        if !matches!(request.method, Method::Get) && !self.scope.may_change() {
            return Err(HttpError::Denied);
        }
        broker
            .send(request, self.credential.as_deref(), self.deadline)
            .await
    }
}

/// Links the `http` import.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    http::add_to_linker::<CallState, HasSelf<CallState>>(linker, |state| state)
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
            "inst",
            Boundary::default(),
        )
        .expect("client");
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

    #[tokio::test]
    async fn reserved_headers_are_denied_also_as_the_credential_header() {
        let broker = HttpBroker::new(&["http://127.0.0.1:9".into()], "inst", Boundary::default())
            .expect("client");
        let request = |headers: Vec<(String, String)>, credential: Option<&str>| Request {
            method: Method::Get,
            url: "http://127.0.0.1:9/x".into(),
            headers,
            body: Vec::new(),
            credential: credential.map(|name| http::CredentialHeader {
                name: name.into(),
                prefix: String::new(),
            }),
        };
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let mut refused: Vec<Request> = RESERVED_HEADERS
            .iter()
            .flat_map(|name| {
                let shouted = name.to_ascii_uppercase();
                [
                    request(vec![(shouted.clone(), "x".into())], None),
                    request(Vec::new(), Some(&shouted)),
                ]
            })
            .collect();
        refused.push(request(vec![("Host".into(), "elsewhere".into())], None));
        for refused in refused {
            let answer = broker.send(refused, Some("secret"), deadline).await;
            assert!(matches!(answer, Err(HttpError::Denied)), "{answer:?}");
        }
        // The same request with an ordinary credential header is sent (and
        // finds nothing listening).
        let sent = broker
            .send(
                request(Vec::new(), Some("x-api-key")),
                Some("secret"),
                deadline,
            )
            .await;
        assert!(matches!(sent, Err(HttpError::Unavailable)), "{sent:?}");
    }
}
