//! How a component's outgoing HTTP speaks to the host's send hook: the
//! marker headers that ask for the credential, and the body bound. The
//! host reads them; the SDK writes them.

/// Marker header naming the header the host fills with the credential.
pub const CREDENTIAL_MARKER: &str = "oac-credential";
/// Marker header: text placed before the credential (e.g. `Bearer `).
pub const CREDENTIAL_PREFIX_MARKER: &str = "oac-credential-prefix";
/// Marker header: the credential is a JSON object; fill in this string
/// field of it (e.g. `api_key`) rather than the whole text.
pub const CREDENTIAL_FIELD_MARKER: &str = "oac-credential-field";
/// Largest request or response body the host lets through: 8 MiB.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
