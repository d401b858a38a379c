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
/// Largest request body the host lets through: a command's whole stdin
/// ([`crate::bounds::MAX_STDIN_BYTES`]) base64-encoded, plus 1 MiB for the
/// rest of the request (about 67.7 MiB). So an exec endpoint that takes
/// stdin in one request can take all the contract allows. A body this
/// large is streamed to the origin, never held whole.
pub const MAX_REQUEST_BODY_BYTES: usize =
    crate::bounds::MAX_STDIN_BYTES.div_ceil(3) * 4 + (1 << 20);
/// Largest response body the host lets through: 8 MiB (a command's two
/// output streams, 1 MiB each, fit base64-encoded several times over).
pub const MAX_RESPONSE_BODY_BYTES: usize = 8 * 1024 * 1024;

#[cfg(test)]
mod tests {
    #[test]
    fn a_whole_stdin_fits_one_request_base64_encoded() {
        // The figure the WIT documents.
        assert_eq!(super::MAX_REQUEST_BODY_BYTES, 70_953_688);
        let encoded = crate::bounds::MAX_STDIN_BYTES.div_ceil(3) * 4;
        assert!(encoded + 64 * 1024 < super::MAX_REQUEST_BODY_BYTES);
    }
}
