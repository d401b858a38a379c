//! The HTTP capability: the standard `wasi:http/outgoing-handler`, with
//! the host's policy in its send hook. A component builds requests with
//! `wasi:http` and may hold a streamed response open while it sends other
//! requests; the host decides, before anything is sent:
//!
//! - only the kind's allowed origins are reached (exact scheme, host and
//!   port; no user information), with no redirect followed and no proxy
//!   taken from the environment;
//! - a call that may only read sends only `GET`;
//! - the framing, hop-by-hop and `host` headers are the transport's;
//! - the credential is filled in by the host where the component asks for
//!   it with the `oac-credential*` marker headers, so it never enters guest
//!   memory, and only on the kind's exact credential origins;
//! - no credential the call holds goes anywhere else: a request whose URL,
//!   headers or body carry one, in any obvious encoding
//!   ([`oac_provider_api::secrets`]), is refused. A body shorter than
//!   [`MAX_WHOLE_REQUEST_BODY_BYTES`] is read whole, and checked, before
//!   anything is sent; a longer one (a command's stdin may be 50 MiB)
//!   streams, checked as it goes with enough held back that no byte of a
//!   credential leaves before the whole of it is seen, and is cut off
//!   when one is found;
//! - bodies are bounded both ways, the request bytes a call holds and the
//!   requests a call and a kind hold open at once are bounded, and the
//!   whole exchange by the call's deadline;
//! - every request crosses the capability boundary (recorded, faults
//!   injected, never retried).
//!
//! Errors are fixed `wasi:http` codes: `HTTP-request-denied` (refused:
//! nothing sent, or a streamed body cut off before its end), `connection-refused` (not sent), `HTTP-request-body-size`
//! / `HTTP-response-body-size` (a bound), and otherwise a code that means
//! the request may have been received (`connection-terminated`,
//! `connection-timeout`, `connection-read-timeout`).

mod body;
mod hooks;

pub(crate) use hooks::State;

use crate::capability::Unbuilt;
use crate::capability::boundary::{Action, Boundary, Crossing, InFlight, NativeHook};
use body::{Scan, Watched, rewrite_installation};
use bytes::Bytes;
use hooks::Admitted;
use http_body_util::BodyExt;
use std::sync::Arc;
use std::time::Instant;
use wasmtime_wasi_http::{DEFAULT_FORBIDDEN_HEADERS, Error as HttpError};

pub use oac_contract::http::{
    CREDENTIAL_FIELD_MARKER, CREDENTIAL_MARKER, CREDENTIAL_PREFIX_MARKER, MAX_REQUEST_BODY_BYTES,
    MAX_RESPONSE_BODY_BYTES,
};

/// Requests one call may hold open at once (sent or being sent, until its
/// response body is read or dropped); beyond it a request is refused
/// before it is sent. A provider call needs a handful. The default of a
/// kind's `policy.max_open_requests_per_call`.
pub const MAX_OPEN_REQUESTS_PER_CALL: usize =
    oac_provider_api::registry::DEFAULT_OPEN_REQUESTS_PER_CALL as usize;

/// Requests all calls of one kind may hold open at once, so that one kind
/// cannot take every descriptor of the node. The default of a kind's
/// `policy.max_open_requests_per_kind`.
pub const MAX_OPEN_REQUESTS_PER_KIND: usize =
    oac_provider_api::registry::DEFAULT_OPEN_REQUESTS_PER_KIND as usize;

/// A request body shorter than this is read whole, and checked, before
/// anything of its request is sent (so a refusal sends nothing): 1 MiB,
/// more than any ordinary API request. A longer body streams.
pub const MAX_WHOLE_REQUEST_BODY_BYTES: usize = 1 << 20;

/// Request body bytes one call may hold in the host at once (bodies read
/// whole, and what streamed bodies hold back); past it a request fails
/// with `HTTP-request-body-size`. Counted in the node's memory budget.
pub const MAX_HELD_REQUEST_BYTES_PER_CALL: usize = 4 << 20;

/// Headers the component may not set, nor name as its credential header:
/// the target and framing of the request, and the hop-by-hop headers
/// (RFC 9110 §7.6.1), which are the transport's business. A request's
/// `content-length` is the component's, checked against its body.
const RESERVED_HEADERS: [&str; 11] = [
    "host",
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

fn is_reserved(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    RESERVED_HEADERS.contains(&name.as_str())
        || DEFAULT_FORBIDDEN_HEADERS
            .iter()
            .any(|forbidden| forbidden.as_str() == name)
}

/// A private test network for fixtures that speak TLS under a test domain:
/// the client trusts only `root_certificate_pem` and resolves every name to
/// `address`. Never set in production (no configuration file has it).
#[derive(Clone, Debug)]
pub struct TestNetwork {
    /// The test CA's certificate (PEM).
    pub root_certificate_pem: Vec<u8>,
    /// Where every name resolves.
    pub address: std::net::SocketAddr,
}

/// Resolves every name to one address (a [`TestNetwork`]).
struct ResolveAll(std::net::SocketAddr);

impl reqwest::dns::Resolve for ResolveAll {
    fn resolve(&self, _: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let address = self.0;
        Box::pin(async move {
            let addresses: reqwest::dns::Addrs = Box::new(std::iter::once(address));
            Ok(addresses)
        })
    }
}

/// Where a kind's requests may go: the registry's origins, exactly, and
/// the configured endpoint (its API origin, and every `https` host within
/// its domain on the default port). Requests to anywhere else are refused
/// before anything is sent. The credential goes only to the exact
/// credential origins: the registry's, and the endpoint's API origin.
#[derive(Clone, Debug)]
pub struct OriginPolicy {
    origins: Arc<[reqwest::Url]>,
    credential_origins: Arc<[reqwest::Url]>,
    /// Every `https://` host within this domain (default port) is allowed.
    domain: Option<String>,
}

impl OriginPolicy {
    /// The policy for `origins` and `credential_origins` (registry origins;
    /// one that does not parse as an origin allows nothing) and `endpoint`
    /// (`(api_url, domain)`, already resolved).
    pub fn new(
        origins: &[String],
        credential_origins: &[String],
        endpoint: Option<(String, String)>,
    ) -> Self {
        let parsed = |origins: &[String]| -> Vec<reqwest::Url> {
            origins
                .iter()
                .filter_map(|origin| parse_origin(origin))
                .collect()
        };
        let (mut origins, mut credential_origins) = (parsed(origins), parsed(credential_origins));
        let mut domain = None;
        if let Some((api_url, within)) = endpoint {
            let api = reqwest::Url::parse(&api_url).ok();
            origins.extend(api.clone());
            credential_origins.extend(api);
            domain = Some(within);
        }
        Self {
            origins: origins.into(),
            credential_origins: credential_origins.into(),
            domain,
        }
    }

    /// Whether a request to `url` (already admitted) may carry the
    /// credential: its origin is exactly a credential origin.
    pub fn takes_credential(&self, url: &reqwest::Url) -> bool {
        self.credential_origins
            .iter()
            .any(|origin| origin.origin() == url.origin())
    }

    /// The URL a request for `target` is sent to, when the policy allows
    /// it: it parses, is not too long (as written and as it will be sent:
    /// percent-encoding may triple it), carries no user information, and
    /// its origin is allowed.
    pub fn admit(&self, target: &str) -> Option<reqwest::Url> {
        let bound = oac_contract::bounds::MAX_URL_BYTES;
        if target.len() > bound {
            return None;
        }
        let url = reqwest::Url::parse(target).ok()?;
        (url.as_str().len() <= bound && self.allowed(&url)).then_some(url)
    }

    fn allowed(&self, url: &reqwest::Url) -> bool {
        let listed = self
            .origins
            .iter()
            .any(|origin| origin.origin() == url.origin());
        let within = self.domain.as_deref().is_some_and(|domain| {
            url.scheme() == "https"
                && url.port().is_none()
                && matches!(url.host(), Some(url::Host::Domain(host))
                    if oac_contract::endpoint::is_within(host, domain))
        });
        (listed || within) && url.username().is_empty() && url.password().is_none()
    }
}

/// The HTTP broker of one kind: its client and allowed origins.
#[derive(Clone)]
pub(crate) struct Broker {
    client: reqwest::Client,
    origins: OriginPolicy,
    installation: String,
    boundary: Boundary,
    /// The kind's open requests ([`MAX_OPEN_REQUESTS_PER_KIND`] unless
    /// its policy says otherwise).
    open: Arc<tokio::sync::Semaphore>,
    /// How many requests one call may hold open.
    open_per_call: usize,
}

impl Broker {
    /// The broker of a kind granted `grants` (its origins, credential
    /// origins and configured endpoint) whose configuration is
    /// `configuration`, holding at most `open` requests at once (per call,
    /// per kind). An endpoint the rule refuses names its field.
    pub(crate) fn build(
        grants: &crate::capability::Grants,
        configuration: &serde_json::Value,
        installation: &str,
        (per_call, per_kind): (usize, usize),
        hook: Option<Arc<dyn NativeHook>>,
        test_network: Option<&TestNetwork>,
    ) -> Result<Self, Unbuilt> {
        let endpoint = grants
            .http_endpoint
            .as_ref()
            .map(|grant| grant.resolve(configuration))
            .transpose()
            .map_err(|error| Unbuilt::Endpoint(error.field()))?;
        let broker = Self::new(
            &grants.http_origins,
            &grants.credential_origins,
            endpoint,
            installation,
            Boundary::new(hook),
            test_network,
        )
        .map_err(|_| Unbuilt::Http)?;
        Ok(broker.with_open_limits(per_call, per_kind))
    }

    /// This broker with the kind's bounds on requests open at once: per
    /// call and for the whole kind.
    pub(crate) fn with_open_limits(self, per_call: usize, per_kind: usize) -> Self {
        Self {
            open: Arc::new(tokio::sync::Semaphore::new(per_kind)),
            open_per_call: per_call,
            ..self
        }
    }

    /// A broker for the registered origins and credential origins
    /// (already validated) and the configured endpoint `(api_url, domain)`
    /// (already resolved).
    pub(crate) fn new(
        origins: &[String],
        credential_origins: &[String],
        endpoint: Option<(String, String)>,
        installation: &str,
        boundary: Boundary,
        test_network: Option<&TestNetwork>,
    ) -> Result<Self, reqwest::Error> {
        // No redirect is followed and no proxy is taken from the
        // environment: a request goes to the allowed origin it names, once.
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        if let Some(network) = test_network {
            let certificate = reqwest::Certificate::from_pem(&network.root_certificate_pem)?;
            builder = builder
                .tls_certs_only([certificate])
                .dns_resolver(Arc::new(ResolveAll(network.address)));
        }
        let client = builder.build()?;
        Ok(Self {
            client,
            origins: OriginPolicy::new(origins, credential_origins, endpoint),
            installation: installation.to_string(),
            boundary,
            open: Arc::new(tokio::sync::Semaphore::new(MAX_OPEN_REQUESTS_PER_KIND)),
            open_per_call: MAX_OPEN_REQUESTS_PER_CALL,
        })
    }

    /// Sends an admitted request within `deadline`, its body checked (whole
    /// before anything is sent, or as it streams): its response head now,
    /// its body as the component reads it.
    async fn exchange(
        &self,
        admitted: Admitted,
        deadline: Instant,
        in_flight: &InFlight,
    ) -> Result<http::Response<wasmtime_wasi_http::WasiBody>, HttpError> {
        let Admitted {
            head,
            url,
            action,
            mut body,
            open,
        } = admitted;
        // Not sent: the component never finished its first bytes in time.
        tokio::time::timeout_at(deadline.into(), body.fill(MAX_WHOLE_REQUEST_BODY_BYTES))
            .await
            .map_err(|_| HttpError::ConnectionRefused)??;
        if body.carries_credential() {
            tracing::warn!(target: "provider", event = "credential_in_request", "request refused");
            return Err(HttpError::HttpRequestDenied);
        }
        let cut_off = body.cut_off();
        let (body, _share) = match body.into_whole() {
            Ok((whole, share)) => (reqwest::Body::from(whole), Some(share)),
            Err(streamed) => (reqwest::Body::wrap(streamed), None),
        };
        // The hook sees the query too: two uploads to one path with
        // different parameters are two requests, not one sent twice.
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        let decided = self.boundary.decide(Action::Http(action), &target, false);
        let mut request = reqwest::Request::new(head.method, url);
        *request.headers_mut() = head.headers;
        *request.body_mut() = Some(body);
        let sending = self.client.execute(request);
        let response = self
            .boundary
            .dispatch_judged(&decided, deadline, in_flight, sending, |response| {
                response.status().is_success()
            })
            .await
            .map_err(|crossing| match (cut_off.reason(), crossing) {
                // A streamed body cut off: the request never ended.
                (Some(cut), _) => cut.error(),
                (None, Crossing::NotSent | Crossing::CleanupFailed) => HttpError::ConnectionRefused,
                (None, Crossing::Lost) => HttpError::ConnectionTerminated,
                (None, Crossing::Native(error)) if error.is_connect() => {
                    HttpError::ConnectionRefused
                }
                (None, Crossing::Native(error)) if error.is_timeout() => {
                    HttpError::ConnectionTimeout
                }
                (None, Crossing::Native(_)) => HttpError::ConnectionTerminated,
            })?;
        let response: http::Response<reqwest::Body> = response.into();
        let (head, body) = response.into_parts();
        let watched = Watched {
            inner: body,
            read: 0,
            deadline: Box::pin(tokio::time::sleep_until(deadline.into())),
            scan: Scan::new(&self.installation, self.boundary.clone(), decided.clone()),
            _open: open,
        };
        let body = if decided.shows_foreign() {
            // An injected foreign-ownership fault: the whole (bounded) body,
            // with every mention of this installation naming another one.
            let whole = watched.collect().await?.to_bytes();
            let rewritten = rewrite_installation(&whole, self.installation.as_bytes());
            http_body_util::Full::new(Bytes::from(rewritten))
                .map_err(|never| match never {})
                .boxed_unsync()
        } else {
            watched.boxed_unsync()
        };
        Ok(http::Response::from_parts(head, body))
    }
}

/// An HTTP request, by method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // each is the method of the same name
pub enum HttpAction {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl HttpAction {
    /// A stable name, e.g. `http-post`.
    pub fn name(self) -> &'static str {
        match self {
            HttpAction::Get => "http-get",
            HttpAction::Post => "http-post",
            HttpAction::Put => "http-put",
            HttpAction::Patch => "http-patch",
            HttpAction::Delete => "http-delete",
        }
    }
}

/// The grant of origins a kind's configuration names: a vendor's API URL
/// and the domain its sandboxes are reached under (the registry's type).
pub use oac_provider_api::registry::EndpointGrant;

/// An origin the HTTP capability may be granted (the registry's rule).
pub(crate) use oac_provider_api::registry::parse_origin;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_origins_are_allowed() {
        let broker = Broker::new(
            &[
                "https://api.vendor.example".into(),
                "http://127.0.0.1:9000".into(),
            ],
            &[],
            None,
            "inst",
            Boundary::default(),
            None,
        )
        .expect("client");
        let allowed = |url: &str| broker.origins.admit(url).is_some();
        assert!(allowed("https://api.vendor.example/sandboxes?x=1"));
        assert!(allowed("http://127.0.0.1:9000/v1"));
        assert!(!allowed("http://api.vendor.example/sandboxes"));
        assert!(!allowed("https://api.vendor.example:444/"));
        assert!(!allowed("https://evil.example/"));
        assert!(!allowed("https://api.vendor.example.evil.example/"));
        assert!(!allowed("https://user:pw@api.vendor.example/"));
        assert!(!allowed("http://127.0.0.1:9001/"));
        // Found by the http_origin fuzz target: the bound holds for the URL
        // as sent, after percent-encoding, not only as written.
        let bound = oac_contract::bounds::MAX_URL_BYTES;
        let root = "https://api.vendor.example/";
        let fits = format!("{root}{}", "a".repeat(bound - root.len()));
        assert!(allowed(&fits));
        let expands = format!("{root}{}", "<".repeat(bound / 2));
        assert!(expands.len() <= bound && !allowed(&expands));
    }

    #[test]
    fn a_configured_endpoint_allows_its_api_and_https_hosts_within_its_domain() {
        let broker = Broker::new(
            &[],
            &[],
            Some(("https://api.sbx.example".into(), "sbx.example".into())),
            "inst",
            Boundary::default(),
            None,
        )
        .expect("client");
        let allowed = |url: &str| broker.origins.admit(url).is_some();
        assert!(allowed("https://api.sbx.example/sandboxes"));
        assert!(allowed(
            "https://49983-i1.sbx.example/process.Process/Start"
        ));
        assert!(allowed("https://sbx.example/"));
        assert!(allowed("https://A.SBX.EXAMPLE/"), "URLs are lowercased");
        // Found by the http_origin fuzz target: a URL host may hold
        // characters no DNS name has; such a host is refused.
        for odd in [
            "+pi", "a;b", "a!b", "a*b", "a$b", "a(b)", "a,b", "a=b", "a_b",
        ] {
            assert!(!allowed(&format!("https://{odd}.sbx.example/")), "{odd}");
        }
        assert!(!allowed("http://49983-i1.sbx.example/"), "https only");
        assert!(
            !allowed("https://49983-i1.sbx.example:8443/"),
            "default port only"
        );
        assert!(!allowed("https://evilsbx.example/"));
        assert!(!allowed("https://sbx.example.evil.example/"));
        assert!(!allowed("https://u@i1.sbx.example/"));
        assert!(!allowed("https://127.0.0.1/"));
        let takes = |url: &str| {
            broker
                .origins
                .takes_credential(&reqwest::Url::parse(url).expect("url"))
        };
        assert!(takes("https://api.sbx.example/sandboxes"));
        for other in [
            "https://49983-i1.sbx.example/",
            "https://sbx.example/",
            "https://api.sbx.example:8443/",
            "http://api.sbx.example/",
        ] {
            assert!(!takes(other), "{other}");
        }
    }

    #[test]
    fn reserved_headers_include_the_hop_by_hop_set_and_host() {
        for name in RESERVED_HEADERS {
            assert!(is_reserved(name));
            assert!(is_reserved(&name.to_ascii_uppercase()));
        }
        assert!(!is_reserved("x-api-key"));
        assert!(!is_reserved("content-length"));
        assert!(!is_reserved(CREDENTIAL_MARKER));
    }
}
