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
//! other requests (its stdin). A request [`Body`] may carry bytes that are
//! base64-encoded only as they are written, so a command's whole stdin
//! (50 MiB) goes in one request without an encoded copy in guest memory.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, IncomingResponse, Method as WasiMethod, OutgoingBody,
    OutgoingRequest, Scheme,
};
use wasip2::io::streams::{InputStream, StreamError};

use oac_contract::http::{CREDENTIAL_FIELD_MARKER, CREDENTIAL_MARKER, CREDENTIAL_PREFIX_MARKER};
pub use oac_contract::http::{MAX_REQUEST_BODY_BYTES, MAX_RESPONSE_BODY_BYTES};

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

/// A request body, written to the host in slices as it is sent: parts
/// sent as given, and parts base64-encoded (standard alphabet, padded) on
/// the way, so a large payload is never held encoded in guest memory. At
/// most [`MAX_REQUEST_BODY_BYTES`] as sent; sent with its `content-length`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Body {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Bytes(Vec<u8>),
    Base64(Vec<u8>),
}

/// Input bytes base64-encoded at a time: 4 KiB of text, a whole number of
/// three-byte groups, so only a part's last slice is padded.
const BASE64_SLICE: usize = 3 * 1024;

impl Body {
    /// An empty body.
    pub fn new() -> Self {
        Self::default()
    }

    /// This body followed by `bytes`, as given.
    pub fn bytes(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.parts.push(Part::Bytes(bytes.into()));
        self
    }

    /// This body followed by `bytes` base64-encoded as they are sent.
    pub fn base64(mut self, bytes: Vec<u8>) -> Self {
        self.parts.push(Part::Base64(bytes));
        self
    }

    /// Its length as sent.
    pub fn len(&self) -> usize {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Bytes(bytes) => bytes.len(),
                Part::Base64(bytes) => bytes.len().div_ceil(3) * 4,
            })
            .sum()
    }

    /// Whether nothing is sent.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole body as sent (for tests and mocks: it holds an encoded
    /// copy).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut whole = Vec::with_capacity(self.len());
        let _ = self.write(|slice| {
            whole.extend_from_slice(slice);
            Ok::<(), ()>(())
        });
        whole
    }

    /// Hands the body to `sink` in slices of at most 4 KiB, in order.
    fn write<E>(&self, mut sink: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        use base64::Engine as _;
        let mut text = [0u8; BASE64_SLICE / 3 * 4];
        for part in &self.parts {
            match part {
                Part::Bytes(bytes) => bytes.chunks(4096).try_for_each(&mut sink)?,
                Part::Base64(bytes) => {
                    for slice in bytes.chunks(BASE64_SLICE) {
                        let written = base64::engine::general_purpose::STANDARD
                            .encode_slice(slice, &mut text)
                            .unwrap_or_default();
                        sink(&text[..written])?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Self {
        Body::new().bytes(bytes)
    }
}

impl From<String> for Body {
    fn from(text: String) -> Self {
        Body::new().bytes(text.into_bytes())
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
    /// Body, sent with its `content-length`.
    pub body: Body,
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
            body: Body::new(),
            credential: None,
        }
    }

    /// With `body` as JSON (and its `content-type`).
    pub fn json(mut self, body: &serde_json::Value) -> Self {
        self.body = body.to_string().into();
        self.headers
            .push(("content-type".into(), "application/json".into()));
        self
    }

    /// With a JSON object of `fields` and, last, the string field `field`
    /// holding `bytes` base64-encoded as they are sent (and its
    /// `content-type`): e.g. a command's whole stdin in one exec request.
    pub fn json_with_base64(
        mut self,
        fields: serde_json::Map<String, serde_json::Value>,
        field: &str,
        bytes: Vec<u8>,
    ) -> Self {
        let object = serde_json::Value::Object(fields).to_string();
        let open = &object[..object.len() - 1];
        let comma = if open.len() > 1 { "," } else { "" };
        let name = serde_json::Value::from(field).to_string();
        self.body = Body::new()
            .bytes(format!("{open}{comma}{name}:\""))
            .base64(bytes)
            .bytes(&b"\"}"[..]);
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
    /// Body (at most [`MAX_RESPONSE_BODY_BYTES`]).
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
                if self.read > MAX_RESPONSE_BODY_BYTES {
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

fn write_body(body: &OutgoingBody, whole: &Body) -> Result<(), HttpError> {
    let stream = body.write().map_err(|_| HttpError::Unconfirmed)?;
    whole.write(|slice| {
        stream
            .blocking_write_and_flush(slice)
            .map_err(|error| match error {
                StreamError::LastOperationFailed(error) => {
                    wasip2::http::types::http_error_code(&error)
                        .map_or(HttpError::Unconfirmed, HttpError::from)
                }
                StreamError::Closed => HttpError::Unconfirmed,
            })
    })
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
    fn a_base64_part_is_encoded_in_slices_as_one_text() {
        use base64::Engine as _;
        let stdin: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 256) as u8).collect();
        let mut fields = serde_json::Map::new();
        fields.insert("argv".into(), serde_json::json!(["cat"]));
        let request = Request::new(Method::Post, "https://api.example/exec").json_with_base64(
            fields,
            "stdin",
            stdin.clone(),
        );
        let whole = request.body.to_vec();
        assert_eq!(request.body.len(), whole.len());
        let parsed: serde_json::Value = serde_json::from_slice(&whole).expect("JSON");
        assert_eq!(parsed["argv"][0], "cat");
        let encoded = parsed["stdin"].as_str().expect("a string");
        assert_eq!(
            base64::engine::general_purpose::STANDARD.decode(encoded),
            Ok(stdin)
        );
        let mut slices = Vec::new();
        let _ = request.body.write(|slice| {
            slices.push(slice.len());
            Ok::<(), ()>(())
        });
        assert!(slices.iter().all(|&len| len <= 4096), "{slices:?}");
        let empty = Request::new(Method::Post, "https://api.example/exec").json_with_base64(
            serde_json::Map::new(),
            "stdin",
            Vec::new(),
        );
        assert_eq!(empty.body.to_vec(), b"{\"stdin\":\"\"}".to_vec());
    }

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
