//! Unit-testing an adapter's operations natively, without the host: a
//! [`Mock`] stands in for the call context, the logs, the receipts and
//! HTTP, so `cargo test` (for the build machine's target, not Wasm) can
//! drive `create`, `kill` and the rest against scripted vendor answers.
//!
//! ```text
//! let mock = Mock::new("inst-1", r#"{"api_url": "https://api.example"}"#)
//!     .respond(|request| match (request.method, request.url.as_str()) {
//!         (Method::Post, "https://api.example/v1/boxes") => Ok(Response::json(201, r#"{"id":"b1"}"#)),
//!         _ => Ok(Response::json(404, "{}")),
//!     });
//! let done = mock.run(|| MyProvider::create(bootstrap));
//! assert_eq!(done.requests.len(), 1);
//! ```
//!
//! The mock answers only what the script says: a request it has no answer
//! for is [`HttpError::Unconfirmed`] (as a lost response is). The host's
//! policies (origins, bounds, the credential filled in) are not simulated:
//! the contract suite judges those, through the real host.

use crate::capability::http::{HttpError, Request, Response};
use crate::capability::log::Level;
use crate::capability::receipts::ReceiptsError;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// Scripted answers to the adapter's requests.
type Responder = Box<dyn FnMut(&Request) -> Result<Response, HttpError>>;

/// One log event: level, event name, fields.
pub type LogEvent = (Level, String, Vec<(String, String)>);

/// The native stand-in for the host during one test.
pub struct Mock {
    /// What `context::installation_id` answers.
    pub installation: String,
    /// What `context::configuration` answers.
    pub configuration: String,
    /// What `context::remaining_budget_ms` answers.
    pub budget_ms: u32,
    /// The allocation's receipts (what a previous call left, and what this
    /// one writes).
    pub receipts: BTreeMap<String, Vec<u8>>,
    /// When set, every receipt call fails with it.
    pub receipts_error: Option<ReceiptsError>,
    /// Every request the adapter sent, in order.
    pub requests: Vec<Request>,
    /// Every log event: level, event, fields.
    pub logs: Vec<LogEvent>,
    responder: Responder,
}

impl Mock {
    /// A mock for `installation` with the kind's `configuration` (JSON), a
    /// 30 s budget, no receipts, and no answer to any request.
    pub fn new(installation: &str, configuration: &str) -> Self {
        Mock {
            installation: installation.into(),
            configuration: configuration.into(),
            budget_ms: 30_000,
            receipts: BTreeMap::new(),
            receipts_error: None,
            requests: Vec::new(),
            logs: Vec::new(),
            responder: Box::new(|_| Err(HttpError::Unconfirmed)),
        }
    }

    /// Answers requests with `responder`.
    pub fn respond(
        mut self,
        responder: impl FnMut(&Request) -> Result<Response, HttpError> + 'static,
    ) -> Self {
        self.responder = Box::new(responder);
        self
    }

    /// Starts with these receipts (what an earlier call wrote).
    pub fn with_receipts<'a>(
        mut self,
        receipts: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Self {
        self.receipts = receipts
            .into_iter()
            .map(|(key, value)| (key.to_string(), value.to_vec()))
            .collect();
        self
    }

    /// Runs `operation` with this mock as its host; returns what it
    /// answered and the mock as the operation left it (its requests, logs
    /// and receipts).
    pub fn run<T>(self, operation: impl FnOnce() -> T) -> (T, Mock) {
        let previous = MOCK.with(|cell| cell.borrow_mut().replace(self));
        let answer = operation();
        let mock = MOCK
            .with(|cell| std::mem::replace(&mut *cell.borrow_mut(), previous))
            .expect("the mock is in place while its operation runs");
        (answer, mock)
    }
}

impl Response {
    /// A response with a JSON body.
    pub fn json(status: u16, body: &str) -> Self {
        Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        }
    }
}

/// The reference `t/e/a`, for tests that need one.
pub fn reference() -> crate::types::Reference {
    crate::types::Reference {
        tenant_id: "t".into(),
        environment_id: "e".into(),
        allocation_id: "a".into(),
    }
}

thread_local! {
    static MOCK: RefCell<Option<Mock>> = const { RefCell::new(None) };
}

/// The mock of this thread's running operation.
fn with<T>(f: impl FnOnce(&mut Mock) -> T) -> T {
    MOCK.with(|cell| {
        let mut mock = cell.borrow_mut();
        let mock = mock
            .as_mut()
            .expect("a capability was called natively outside `Mock::run` (the host is not there)");
        f(mock)
    })
}

pub(crate) mod context {
    pub(crate) fn installation_id() -> String {
        super::with(|mock| mock.installation.clone())
    }

    pub(crate) fn configuration() -> String {
        super::with(|mock| mock.configuration.clone())
    }

    pub(crate) fn remaining_budget_ms() -> u32 {
        super::with(|mock| mock.budget_ms)
    }
}

pub(crate) mod log {
    use super::Level;

    pub(crate) fn emit(severity: Level, event: &str, fields: &[(String, String)]) {
        super::with(|mock| mock.logs.push((severity, event.into(), fields.to_vec())));
    }
}

pub(crate) mod receipts {
    use super::ReceiptsError;

    pub(crate) fn get(key: &str) -> Result<Option<Vec<u8>>, ReceiptsError> {
        super::with(|mock| match mock.receipts_error {
            Some(error) => Err(error),
            None => Ok(mock.receipts.get(key).cloned()),
        })
    }

    pub(crate) fn put(key: &str, value: &[u8]) -> Result<(), ReceiptsError> {
        super::with(|mock| match mock.receipts_error {
            Some(error) => Err(error),
            None => {
                mock.receipts.insert(key.into(), value.to_vec());
                Ok(())
            }
        })
    }

    pub(crate) fn remove(key: &str) -> Result<(), ReceiptsError> {
        super::with(|mock| match mock.receipts_error {
            Some(error) => Err(error),
            None => {
                mock.receipts.remove(key);
                Ok(())
            }
        })
    }
}

/// One request through the script.
pub(crate) fn send(request: &Request) -> Result<Response, HttpError> {
    // The script runs outside the mock's borrow (it may call the SDK).
    let mut responder = with(|mock| {
        mock.requests.push(request.clone());
        std::mem::replace(
            &mut mock.responder,
            Box::new(|_| Err(HttpError::Unconfirmed)),
        )
    });
    let answer = responder(request);
    with(|mock| mock.responder = responder);
    answer
}

/// Time passing in a poll: the budget shrinks by `ms`.
pub(crate) fn elapse(ms: u32) {
    with(|mock| mock.budget_ms = mock.budget_ms.saturating_sub(ms));
}
