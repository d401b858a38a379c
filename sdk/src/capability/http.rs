//! Outbound HTTP over the standard `wasi:http/outgoing-handler`, under the
//! host's policy (see the `provider` world's documentation): allowed
//! origins only, no redirects, bounded bodies, the call's budget, and the
//! credential filled in by the host where a request asks for it — only on
//! the kind's credential origins (a request for it anywhere else is
//! [`HttpError::Denied`]). Configuration calls send nothing; probes,
//! observations, discovery and verification send only `GET`.
//!
//! [`send`] reads a whole response; [`open`] returns as soon as the
//! response head arrives and reads the body as it streams, so an adapter
//! can hold one response open (a server-streamed command) while it sends
//! other requests (its stdin).

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, IncomingResponse, Method as WasiMethod, OutgoingBody,
    OutgoingRequest, Scheme,
};
use wasip2::io::streams::{InputStream, StreamError};

pub use oac_contract::http::MAX_BODY_BYTES;
use oac_contract::http::{CREDENTIAL_FIELD_MARKER, CREDENTIAL_MARKER, CREDENTIAL_PREFIX_MARKER};

/// Request method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
}

/// A header the host fills in with the installation's credential, so the
/// credential never lives in guest memory or logs. Only a request to one of
/// the kind's credential origins may carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CredentialHeader {
    /// Header name, e.g. `x-api-key` or `authorization`.
    pub name: String,
    /// Text placed before the credential, e.g. `Bearer ` (may be empty).
    pub prefix: String,
    /// When the credential is a JSON object: the string field to fill in
    /// (e.g. `api_key`); `None` fills in the whole credential.
    pub field: Option<String>,
}

impl CredentialHeader {
    /// The whole credential in header `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            prefix: String::new(),
            field: None,
        }
    }

    /// The credential object's string `field` rather than the whole text.
    pub fn field(self, field: impl Into<String>) -> Self {
        Self {
            field: Some(field.into()),
            ..self
        }
    }

    /// Text before the credential, e.g. `Bearer `.
    pub fn prefix(self, prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            ..self
        }
    }
}

/// One request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Method.
    pub method: Method,
    /// Absolute `https://` (or allowlisted `http://`) URL.
    pub url: String,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// Body (at most 8 MiB); sent with its `content-length`.
    pub body: Vec<u8>,
    /// Attach the installation's credential as this header.
    pub credential: Option<CredentialHeader>,
}

impl Request {
    /// A request with no headers, body or credential.
    pub fn new(method: Method, url: impl Into<String>) -> Self {
        Request {
            method,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            credential: None,
        }
    }

    /// With `body` as JSON (and its `content-type`).
    pub fn json(mut self, body: &serde_json::Value) -> Self {
        self.body = body.to_string().into_bytes();
        self.headers
            .push(("content-type".into(), "application/json".into()));
        self
    }

    /// With the installation's credential in `header` (filled in by the
    /// host, on the kind's credential origins only).
    pub fn with_credential(mut self, header: CredentialHeader) -> Self {
        self.credential = Some(header);
        self
    }
}

impl Response {
    /// The body as JSON of type `T`; `None` when it is not.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// One whole response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// Body (at most 8 MiB).
    pub body: Vec<u8>,
}

/// Why a request has no response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// The host's policy refused the request (origin, method, header,
    /// credential); nothing was sent.
    Denied,
    /// The request was not sent (no connection).
    Unavailable,
    /// The request may have been received; the outcome is unknown.
    Unconfirmed,
    /// A body exceeded its bound.
    TooLarge,
}

impl From<ErrorCode> for HttpError {
    fn from(code: ErrorCode) -> Self {
        match code {
            ErrorCode::HttpRequestDenied => HttpError::Denied,
            ErrorCode::ConnectionRefused => HttpError::Unavailable,
            ErrorCode::HttpRequestBodySize(_) | ErrorCode::HttpResponseBodySize(_) => {
                HttpError::TooLarge
            }
            _ => HttpError::Unconfirmed,
        }
    }
}

/// A response whose body is read as it arrives.
pub struct Streaming {
    status: u16,
    headers: Vec<(String, String)>,
    source: Source,
    read: usize,
}

/// Where a streamed body comes from.
enum Source {
    /// The host's response. Dropped in this order: a stream before its
    /// body, a body before its response.
    Wasi {
        stream: InputStream,
        _body: IncomingBody,
        _response: IncomingResponse,
    },
    /// A whole body (the native test mock's answer), read in chunks.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    Whole(std::collections::VecDeque<u8>),
}

impl Streaming {
    /// HTTP status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Headers, in order.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The next bytes of the body (waiting for them), or `None` at its end.
    pub fn read(&mut self) -> Result<Option<Vec<u8>>, HttpError> {
        let stream = match &mut self.source {
            Source::Wasi { stream, .. } => stream,
            Source::Whole(rest) if rest.is_empty() => return Ok(None),
            Source::Whole(rest) => {
                let take = rest.len().min(64 * 1024);
                return Ok(Some(rest.drain(..take).collect()));
            }
        };
        match stream.blocking_read(64 * 1024) {
            Ok(bytes) => {
                self.read += bytes.len();
                if self.read > MAX_BODY_BYTES {
                    return Err(HttpError::TooLarge);
                }
                Ok(Some(bytes))
            }
            Err(StreamError::Closed) => Ok(None),
            Err(StreamError::LastOperationFailed(error)) => {
                Err(wasip2::http::types::http_error_code(&error)
                    .map_or(HttpError::Unconfirmed, HttpError::from))
            }
        }
    }
}

/// `text` percent-encoded for a path segment or a query value: every
/// byte but ASCII letters, digits and `-._~` as `%XX`.
pub fn encode_component(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// `scheme://authority/path?query`, split.
fn split_url(url: &str) -> Option<(Scheme, &str, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = match scheme {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        _ => return None,
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let path = match path {
        "" => "/".to_string(),
        query if query.starts_with('?') => format!("/{query}"),
        path => path.to_string(),
    };
    (!authority.is_empty()).then_some((scheme, authority, path))
}

/// Sends `request` and waits for the response head.
pub fn open(request: &Request) -> Result<Streaming, HttpError> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let response = crate::testing::send(request)?;
        Ok(Streaming {
            status: response.status,
            headers: response.headers,
            source: Source::Whole(response.body.into()),
            read: 0,
        })
    }
    #[cfg(target_arch = "wasm32")]
    open_wasi(request)
}

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn open_wasi(request: &Request) -> Result<Streaming, HttpError> {
    let (scheme, authority, path) = split_url(&request.url).ok_or(HttpError::Denied)?;
    let mut headers: Vec<(String, Vec<u8>)> = request
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone().into_bytes()))
        .collect();
    if !request.body.is_empty() {
        headers.push((
            "content-length".into(),
            request.body.len().to_string().into_bytes(),
        ));
    }
    if let Some(credential) = &request.credential {
        headers.push((
            CREDENTIAL_MARKER.into(),
            credential.name.clone().into_bytes(),
        ));
        if !credential.prefix.is_empty() {
            headers.push((
                CREDENTIAL_PREFIX_MARKER.into(),
                credential.prefix.clone().into_bytes(),
            ));
        }
        if let Some(field) = &credential.field {
            headers.push((CREDENTIAL_FIELD_MARKER.into(), field.clone().into_bytes()));
        }
    }
    let fields = Fields::from_list(&headers).map_err(|_| HttpError::Denied)?;
    let outgoing = OutgoingRequest::new(fields);
    let method = match request.method {
        Method::Get => WasiMethod::Get,
        Method::Post => WasiMethod::Post,
        Method::Put => WasiMethod::Put,
        Method::Patch => WasiMethod::Patch,
        Method::Delete => WasiMethod::Delete,
    };
    let set = outgoing.set_method(&method).is_ok()
        && outgoing.set_scheme(Some(&scheme)).is_ok()
        && outgoing.set_authority(Some(authority)).is_ok()
        && outgoing.set_path_with_query(Some(&path)).is_ok();
    if !set {
        return Err(HttpError::Denied);
    }
    let body = if request.body.is_empty() {
        None
    } else {
        Some(outgoing.body().map_err(|_| HttpError::Denied)?)
    };
    let future = outgoing_handler::handle(outgoing, None)?;
    if let Some(body) = body {
        let written = write_body(&body, &request.body)
            .and_then(|()| OutgoingBody::finish(body, None).map_err(HttpError::from));
        if let Err(error) = written {
            // The host may have refused the request before taking its
            // body (nothing sent): its answer says so, not the write.
            future.subscribe().block();
            return Err(match future.get() {
                Some(Ok(Err(code))) => code.into(),
                _ => error,
            });
        }
    }
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(code.into()),
        _ => return Err(HttpError::Unconfirmed),
    };
    let status = response.status();
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(name, value)| (name, String::from_utf8_lossy(&value).into_owned()))
        .collect();
    let body = response.consume().map_err(|_| HttpError::Unconfirmed)?;
    let stream = body.stream().map_err(|_| HttpError::Unconfirmed)?;
    Ok(Streaming {
        status,
        headers,
        source: Source::Wasi {
            stream,
            _body: body,
            _response: response,
        },
        read: 0,
    })
}

fn write_body(body: &OutgoingBody, bytes: &[u8]) -> Result<(), HttpError> {
    let stream = body.write().map_err(|_| HttpError::Unconfirmed)?;
    for chunk in bytes.chunks(4096) {
        stream
            .blocking_write_and_flush(chunk)
            .map_err(|error| match error {
                StreamError::LastOperationFailed(error) => {
                    wasip2::http::types::http_error_code(&error)
                        .map_or(HttpError::Unconfirmed, HttpError::from)
                }
                StreamError::Closed => HttpError::Unconfirmed,
            })?;
    }
    Ok(())
}

/// Sends `request` and reads its whole response; never retried.
pub fn send(request: &Request) -> Result<Response, HttpError> {
    let mut streaming = open(request)?;
    let mut body = Vec::new();
    while let Some(bytes) = streaming.read()? {
        body.extend_from_slice(&bytes);
    }
    Ok(Response {
        status: streaming.status,
        headers: std::mem::take(&mut streaming.headers),
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_percent_encoded() {
        assert_eq!(
            encode_component("io.oac.tenant:t 1/é"),
            "io.oac.tenant%3At%201%2F%C3%A9"
        );
    }

    #[test]
    fn urls_split_into_scheme_authority_and_path() {
        let split = |url| split_url(url).map(|(_, authority, path)| (authority.to_string(), path));
        let both = |authority: &str, path: &str| Some((authority.to_string(), path.to_string()));
        assert_eq!(
            split("https://api.example/sandboxes?x=1"),
            both("api.example", "/sandboxes?x=1")
        );
        assert_eq!(split("http://127.0.0.1:9000"), both("127.0.0.1:9000", "/"));
        assert_eq!(split("http://h?q"), both("h", "/?q"));
        assert_eq!(split("ftp://h/"), None);
        assert_eq!(split("https:///path"), None);
        assert_eq!(split("no-scheme"), None);
    }
}
