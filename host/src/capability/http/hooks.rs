//! One call's `wasi:http` hooks, the capability's per-call state: what the
//! call may send (its access, the origins, the credential markers), the
//! credential it carries and every secret it must not carry elsewhere, and
//! its open requests and held bodies.

use super::body::{Checked, HeldBodies, OpenRequest, RequestBody};
use super::{
    CREDENTIAL_FIELD_MARKER, CREDENTIAL_MARKER, CREDENTIAL_PREFIX_MARKER, HttpAction,
    MAX_REQUEST_BODY_BYTES, is_reserved,
};
use crate::capability::boundary::{Effect, ImportCall, InFlight};
use crate::capability::scope::Access;
use crate::capability::{CallCredential, SharedCapabilities};
use std::sync::Arc;
use std::time::Instant;
use wasmtime_wasi_http::{
    Error as HttpError, ForbiddenHeaderFilter, RequestOptions, WasiHttpHooks,
};

/// A request the policy admitted: its head checked, its body still to be
/// read from the component and checked on its way out.
pub(super) struct Admitted {
    pub(super) head: http::request::Parts,
    pub(super) url: reqwest::Url,
    pub(super) action: HttpAction,
    pub(super) body: Checked,
    pub(super) open: OpenRequest,
}

/// One call's HTTP hooks: what `wasi:http` asks the host while the call
/// runs.
pub(crate) struct State {
    capabilities: SharedCapabilities,
    deadline: Instant,
    access: Access,
    /// The credential this call's requests carry: the kind's, or a
    /// candidate's (selection discovery, credential verification).
    credential: Option<String>,
    /// Every credential the call holds, to be found where it must not go.
    secrets: Arc<oac_provider_api::secrets::Secrets>,
    /// The call's open requests (the kind's per-call bound).
    open: Arc<tokio::sync::Semaphore>,
    held: HeldBodies,
    /// The call's native requests in flight.
    in_flight: InFlight,
    /// When the host gives up on the call's requests still in flight.
    given_up_at: Instant,
}

impl State {
    /// Hooks for a call that ends by `deadline` and carries `credential`:
    /// the kind's, or a candidate's (selection discovery, credential
    /// verification), in which case both stay out of everything else the
    /// call sends.
    pub(crate) fn new(
        capabilities: SharedCapabilities,
        deadline: Instant,
        access: Access,
        in_flight: InFlight,
        credential: &CallCredential,
    ) -> Self {
        let (credential, secrets) = match credential {
            CallCredential::Kind => (capabilities.credential(), capabilities.secrets()),
            CallCredential::Candidate(candidate) => {
                let kind = capabilities.credential();
                let secrets = oac_provider_api::secrets::Secrets::new(
                    kind.iter().chain(candidate).map(String::as_str),
                );
                (candidate.clone(), Arc::new(secrets))
            }
        };
        Self {
            credential,
            secrets,
            open: Arc::new(tokio::sync::Semaphore::new(capabilities.http.open_per_call)),
            capabilities,
            deadline,
            access,
            held: HeldBodies::default(),
            in_flight,
            given_up_at: deadline
                + crate::capability::boundary::overrun_bound(
                    deadline.saturating_duration_since(Instant::now()),
                ),
        }
    }

    /// [`crate::capability::refused`] for the HTTP policy.
    fn refused(&self, rule: &'static str) -> HttpError {
        crate::capability::refused("http", rule, HttpError::HttpRequestDenied)
    }

    /// The policy: the request as it will be sent, or why it is refused
    /// (nothing is sent).
    fn admit(
        &self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
    ) -> Result<Admitted, HttpError> {
        let broker = &self.capabilities.http;
        let (mut head, body) = request.into_parts();
        let target = head.uri.to_string();
        let effect = match head.method {
            http::Method::GET | http::Method::HEAD => Effect::Reads,
            http::Method::DELETE => Effect::Removes,
            _ => Effect::Changes,
        };
        broker.boundary.note_call(ImportCall {
            capability: "http",
            function: "send",
            target: &target,
            effect,
        });
        let action = match head.method {
            http::Method::GET => HttpAction::Get,
            http::Method::POST => HttpAction::Post,
            http::Method::PUT => HttpAction::Put,
            http::Method::PATCH => HttpAction::Patch,
            http::Method::DELETE => HttpAction::Delete,
            _ => return Err(self.refused("method")),
        };
        // A pure call sends nothing; one that may only read sends only GET.
        match self.access {
            Access::Pure => return Err(self.refused("pure_call_sends_nothing")),
            Access::Read if action != HttpAction::Get => {
                return Err(self.refused("reading_call_sends_only_get"));
            }
            Access::Read | Access::Change => {}
        }
        let url = broker
            .origins
            .admit(&target)
            .ok_or_else(|| self.refused("origin_not_granted"))?;
        // The transport sets `host` from the URL.
        head.headers.remove(http::header::HOST);
        if head.headers.keys().any(|name| is_reserved(name.as_str())) {
            return Err(self.refused("reserved_header"));
        }
        let length = match head.headers.get(http::header::CONTENT_LENGTH) {
            Some(value) => Some(
                value
                    .to_str()
                    .ok()
                    .and_then(|text| text.parse::<usize>().ok())
                    .ok_or_else(|| self.refused("content_length"))?,
            ),
            None => None,
        };
        if length.is_some_and(|length| length > MAX_REQUEST_BODY_BYTES) {
            self.refused("body_bound");
            return Err(HttpError::HttpRequestBodySize(length.map(|n| n as u64)));
        }
        // No credential in the target or any header but the one the host
        // fills in below.
        let carried = self.secrets.found_in(url.as_str().as_bytes())
            || head.headers.iter().any(|(name, value)| {
                self.secrets.found_in(name.as_str().as_bytes())
                    || self.secrets.found_in(value.as_bytes())
            });
        if carried {
            return Err(self.refused("credential_in_request"));
        }
        self.fill_credential(&mut head.headers, &url)?;
        let open = self.open_request()?;
        let body = Checked::new(
            RequestBody(sync_wrapper::SyncWrapper::new(body)),
            self.secrets.clone(),
            &self.held,
        );
        Ok(Admitted {
            head,
            url,
            action,
            body,
            open,
        })
    }

    /// A place for one more open request, or a refusal (nothing is sent)
    /// when the call or the kind holds as many as it may.
    fn open_request(&self) -> Result<OpenRequest, HttpError> {
        let call = self.open.clone().try_acquire_owned();
        let kind = self.capabilities.http.open.clone().try_acquire_owned();
        match (call, kind) {
            (Ok(call), Ok(kind)) => Ok(OpenRequest {
                _call: call,
                _kind: kind,
            }),
            _ => Err(self.refused("open_request_bound")),
        }
    }

    /// Replaces the `oac-credential*` markers with the credential header,
    /// only for a request to a credential origin.
    fn fill_credential(
        &self,
        headers: &mut http::HeaderMap,
        url: &reqwest::Url,
    ) -> Result<(), HttpError> {
        let mut marker = |name: &str| -> Result<Option<String>, HttpError> {
            let values: Vec<_> = headers.get_all(name).iter().cloned().collect();
            headers.remove(name);
            match values.as_slice() {
                [] => Ok(None),
                [value] => value
                    .to_str()
                    .map(|text| Some(text.to_string()))
                    .map_err(|_| HttpError::HttpRequestDenied),
                _ => Err(HttpError::HttpRequestDenied),
            }
        };
        let name = marker(CREDENTIAL_MARKER)?;
        let prefix = marker(CREDENTIAL_PREFIX_MARKER)?;
        let field = marker(CREDENTIAL_FIELD_MARKER)?;
        let Some(name) = name else {
            return if prefix.is_some() || field.is_some() {
                Err(HttpError::HttpRequestDenied)
            } else {
                Ok(())
            };
        };
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| HttpError::HttpRequestDenied)?;
        if is_reserved(name.as_str())
            || name.as_str().starts_with(CREDENTIAL_MARKER)
            || headers.contains_key(&name)
        {
            return Err(HttpError::HttpRequestDenied);
        }
        if !self.capabilities.http.origins.takes_credential(url) {
            return Err(self.refused("credential_off_its_origins"));
        }
        let credential = self
            .credential
            .as_deref()
            .ok_or(HttpError::HttpRequestDenied)?;
        let secret = match field {
            None => credential.to_string(),
            Some(field) => serde_json::from_str::<serde_json::Value>(credential)
                .ok()
                .and_then(|object| object.get(&field)?.as_str().map(str::to_string))
                .ok_or(HttpError::HttpRequestDenied)?,
        };
        let mut value =
            http::HeaderValue::from_str(&format!("{}{secret}", prefix.unwrap_or_default()))
                .map_err(|_| HttpError::HttpRequestDenied)?;
        // Kept out of any debug rendering of the request.
        value.set_sensitive(true);
        headers.insert(name, value);
        Ok(())
    }
}

impl WasiHttpHooks for State {
    fn forbidden_header_filter(&mut self) -> ForbiddenHeaderFilter {
        Arc::new(|name| is_reserved(name.as_str()))
    }

    fn default_scheme(&mut self) -> Option<http::uri::Scheme> {
        // A request names its scheme; the allowlist decides.
        None
    }

    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        _options: Option<RequestOptions>,
        _response_errors: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<wasmtime_wasi_http::WasiBody>,
                        Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                    ),
                    HttpError,
                >,
            > + Send,
    > {
        let admitted = self.admit(request);
        let capabilities = self.capabilities.clone();
        let (deadline, in_flight) = (self.deadline, self.in_flight.clone());
        let given_up_at = self.given_up_at;
        // A task of its own, not the guest's: once sent, the request runs
        // to its end even when the call stops waiting for it (the call then
        // keeps its allocation's turn until it has, see `crate::call`), up
        // to the time the host gives up on the call's native work.
        let exchange = tokio::spawn(async move {
            let exchange = capabilities.http.exchange(admitted?, deadline, &in_flight);
            tokio::time::timeout_at(given_up_at.into(), exchange)
                .await
                .unwrap_or(Err(HttpError::ConnectionTimeout))
        });
        Box::new(async move {
            let response = exchange
                .await
                .map_err(|_| HttpError::ConnectionTerminated)??;
            let done: Box<dyn Future<Output = Result<(), HttpError>> + Send> =
                Box::new(async { Ok(()) });
            Ok((response, done))
        })
    }
}
