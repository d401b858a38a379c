//! The registry the host loads from: one explicit table, the rows built
//! into this binary ([`builtin`]: the shipped adapters) and an operator's
//! registry file ([`file`]), validated before anything is compiled or
//! called. It lives in `oac_provider_api::registry` (no WebAssembly
//! runtime), because Core's side reads the same table.

pub use oac_provider_api::registry::*;
