//! Finding a credential in text a component made: a request it sends, an
//! answer it gives, an event it logs. A credential leaves the host only in
//! its header on the origins its registration names; everywhere else the
//! host looks for every credential it holds for the call — the whole text,
//! each string field of a JSON credential object, and their obvious
//! encodings (JSON-escaped, hex, base64 and base64url at every alignment,
//! and any of these percent- or form-encoded, looked for in the decoded
//! text) — and refuses what carries one.
//!
//! Matching ignores ASCII case, so hex and percent-encoding in either case
//! are found; that also refuses a case-changed copy of the raw secret, the
//! safe side. Encoded forms shorter than [`MIN_ENCODED_CHARS`] are not
//! looked for (they would match ordinary text): the raw text always is.

use crate::types;
use aho_corasick::AhoCorasick;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use percent_encoding::percent_decode;

/// Shortest encoded form looked for.
pub const MIN_ENCODED_CHARS: usize = 8;

/// The credentials one call holds, ready to be found.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    matcher: Option<AhoCorasick>,
    longest: usize,
}

impl Secrets {
    /// The matcher for `credentials` (each a credential's whole text; a
    /// JSON object also gives each of its string fields). Empty texts are
    /// ignored.
    pub fn new<'a>(credentials: impl IntoIterator<Item = &'a str>) -> Self {
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        for credential in credentials {
            for secret in parts(credential) {
                forms(secret.as_bytes(), &mut patterns);
            }
        }
        patterns.sort();
        patterns.dedup();
        let longest = patterns.iter().map(Vec::len).max().unwrap_or(0);
        let matcher = (!patterns.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(&patterns)
                    .ok()
            })
            .flatten();
        Self { matcher, longest }
    }

    /// Whether there is nothing to look for.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// Whether `bytes` carry any form of any of the secrets, also once
    /// percent-decoded (`%xx`) or form-decoded (`+` as a space too).
    pub fn found_in(&self, bytes: &[u8]) -> bool {
        let Some(matcher) = &self.matcher else {
            return false;
        };
        if matcher.is_match(bytes) {
            return true;
        }
        let decoded = |bytes: &[u8]| -> Vec<u8> { percent_decode(bytes).collect() };
        (bytes.contains(&b'%') && matcher.is_match(&decoded(bytes)))
            || (bytes.contains(&b'+') && {
                let spaced: Vec<u8> = bytes
                    .iter()
                    .map(|&byte| if byte == b'+' { b' ' } else { byte })
                    .collect();
                matcher.is_match(&decoded(&spaced))
            })
    }

    /// Whether any of `texts` carries one.
    pub fn found_in_any<'a>(&self, texts: impl IntoIterator<Item = &'a [u8]>) -> bool {
        !self.is_empty() && texts.into_iter().any(|text| self.found_in(text))
    }

    /// Bytes a stream must hold back, unsent, behind what it has searched,
    /// so that no byte of a secret leaves before the whole of it has been
    /// seen: the longest form percent-encoded (three bytes for each).
    /// Search each window of held-back bytes plus new ones, send all but
    /// the last `hold_back` bytes of it.
    pub fn hold_back(&self) -> usize {
        3 * self.longest
    }
}

/// The texts of an answer that Core keeps, shows or logs: where no
/// credential may ever be. (A configuration's `credential` and a stored
/// configuration's `secret` are where the credential belongs, so they are
/// not among them.)
pub trait Shown {
    /// The texts, as bytes.
    fn shown(&self) -> Vec<&[u8]>;
}

impl Shown for () {
    fn shown(&self) -> Vec<&[u8]> {
        Vec::new()
    }
}

impl Shown for bool {
    fn shown(&self) -> Vec<&[u8]> {
        Vec::new()
    }
}

impl Shown for String {
    fn shown(&self) -> Vec<&[u8]> {
        vec![self.as_bytes()]
    }
}

impl<T: Shown> Shown for Option<T> {
    fn shown(&self) -> Vec<&[u8]> {
        self.iter().flat_map(Shown::shown).collect()
    }
}

impl<T: Shown> Shown for Vec<T> {
    fn shown(&self) -> Vec<&[u8]> {
        self.iter().flat_map(Shown::shown).collect()
    }
}

impl<T: Shown, E: Shown> Shown for Result<T, E> {
    fn shown(&self) -> Vec<&[u8]> {
        match self {
            Ok(answer) => answer.shown(),
            Err(error) => error.shown(),
        }
    }
}

impl Shown for types::Reference {
    fn shown(&self) -> Vec<&[u8]> {
        vec![
            self.tenant_id.as_bytes(),
            self.environment_id.as_bytes(),
            self.allocation_id.as_bytes(),
        ]
    }
}

impl Shown for types::Info {
    fn shown(&self) -> Vec<&[u8]> {
        let mut shown = self.reference.shown();
        shown.extend(self.provider_id.shown());
        shown
    }
}

impl Shown for types::Error {
    fn shown(&self) -> Vec<&[u8]> {
        match self {
            types::Error::Unsupported(unsupported) => vec![
                unsupported.operation.as_bytes(),
                unsupported.reason.as_bytes(),
            ],
            _ => Vec::new(),
        }
    }
}

impl Shown for types::Failure {
    fn shown(&self) -> Vec<&[u8]> {
        let mut shown = self.error.shown();
        shown.extend(self.info.shown());
        shown
    }
}

impl Shown for types::CommandResult {
    fn shown(&self) -> Vec<&[u8]> {
        vec![&self.stdout, &self.stderr]
    }
}

impl Shown for types::Sample {
    fn shown(&self) -> Vec<&[u8]> {
        self.started_at.shown()
    }
}

impl Shown for types::SnapshotIdentity {
    fn shown(&self) -> Vec<&[u8]> {
        let mut shown = self.reference.shown();
        shown.extend(
            [
                &self.id,
                &self.digest,
                &self.checkpoint_id,
                &self.checkpoint_root,
                &self.operation_id,
                &self.source_name,
                &self.source_id,
            ]
            .map(|text| text.as_bytes()),
        );
        shown
    }
}

impl Shown for types::Compute {
    fn shown(&self) -> Vec<&[u8]> {
        let mut shown = vec![self.name.as_bytes(), self.id.as_bytes()];
        shown.extend(self.restored_from.shown());
        shown
    }
}

impl Shown for types::ComputeState {
    fn shown(&self) -> Vec<&[u8]> {
        let mut shown = self.compute.shown();
        shown.extend(self.snapshot.shown());
        shown
    }
}

impl Shown for types::Diagnostic {
    fn shown(&self) -> Vec<&[u8]> {
        Vec::new()
    }
}

impl Shown for types::Configuration {
    fn shown(&self) -> Vec<&[u8]> {
        vec![self.public.as_bytes()]
    }
}

impl Shown for types::StoredConfiguration {
    fn shown(&self) -> Vec<&[u8]> {
        vec![self.public.as_bytes(), self.metadata.as_bytes()]
    }
}

/// The secrets of one credential: its whole text and, when it is a JSON
/// object, every string value in it (at any depth).
fn parts(credential: &str) -> Vec<String> {
    fn strings(value: &serde_json::Value, into: &mut Vec<String>) {
        match value {
            serde_json::Value::String(text) => into.push(text.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|item| strings(item, into)),
            serde_json::Value::Object(map) => map.values().for_each(|item| strings(item, into)),
            _ => {}
        }
    }
    let mut found = vec![credential.to_string()];
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(credential) {
        strings(&value, &mut found);
    }
    found.retain(|secret| !secret.is_empty());
    found
}

/// Every form of `secret` looked for, appended to `into`.
fn forms(secret: &[u8], into: &mut Vec<Vec<u8>>) {
    into.push(secret.to_vec());
    let mut encoded: Vec<String> = Vec::new();
    if let Ok(text) = std::str::from_utf8(secret)
        && let Ok(quoted) = serde_json::to_string(text)
    {
        encoded.push(quoted[1..quoted.len() - 1].to_string());
    }
    encoded.push(hex::encode(secret));
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for offset in 0..3 {
            encoded.extend(base64_middle(engine, secret, offset));
        }
    }
    into.extend(
        encoded
            .into_iter()
            .filter(|form| form.len() >= MIN_ENCODED_CHARS)
            .map(String::into_bytes),
    );
}

/// The base64 characters that `secret` alone decides when it starts
/// `offset` bytes into a three-byte group: what any base64 text carrying
/// it contains, whatever comes before and after.
fn base64_middle(
    engine: &base64::engine::GeneralPurpose,
    secret: &[u8],
    offset: usize,
) -> Option<String> {
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(secret);
    let text = engine.encode(&padded);
    // Characters holding bits of the leading filler, and a last character
    // holding bits of whatever follows.
    let skip = [0, 2, 3][offset];
    let partial = usize::from(!padded.len().is_multiple_of(3));
    let end = text.len().checked_sub(partial)?;
    (end > skip).then(|| text[skip..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};

    const KEY: &str = "e2b_53cr3t-k3y/with+odd=chars\"q";

    fn secrets() -> Secrets {
        Secrets::new([format!(r#"{{"api_key":{}}}"#, serde_json::json!(KEY)).as_str()])
    }

    #[test]
    fn every_obvious_encoding_of_a_field_is_found() {
        let secrets = secrets();
        let key = KEY.as_bytes();
        let mut carriers: Vec<String> = vec![
            format!("x{KEY}y"),
            KEY.to_uppercase(),
            serde_json::json!({ "leak": KEY }).to_string(),
            hex::encode(key),
            hex::encode_upper(key),
            key.iter().map(|b| format!("%{b:02x}")).collect(),
            url::form_urlencoded::byte_serialize(key).collect(),
            format!("https://x.example/{}", hex::encode(key)),
            url::Url::parse(&format!("https://x.example/p/{KEY}?q={KEY}"))
                .expect("url")
                .to_string(),
        ];
        for prefix in ["", "a", "ab", "abc"] {
            let mut bytes = prefix.as_bytes().to_vec();
            bytes.extend_from_slice(key);
            bytes.extend_from_slice(b"tail");
            carriers.push(STANDARD.encode(&bytes));
            carriers.push(URL_SAFE.encode(&bytes));
        }
        for carrier in carriers {
            assert!(secrets.found_in(carrier.as_bytes()), "{carrier}");
        }
    }

    #[test]
    fn the_whole_credential_text_is_a_secret_too() {
        let credential = r#"{"api_key":"e2b_0123456789"}"#;
        let secrets = Secrets::new([credential]);
        assert!(secrets.found_in(hex::encode(credential).as_bytes()));
        assert!(secrets.found_in(b"Bearer e2b_0123456789"));
    }

    #[test]
    fn ordinary_text_is_not_a_secret() {
        let secrets = secrets();
        for text in [
            "{\"template\":\"oac-runtime\",\"cpu_count\":2}",
            "POST /sandboxes HTTP/1.1",
            "e2b_53cr3",
            "",
        ] {
            assert!(!secrets.found_in(text.as_bytes()), "{text}");
        }
        assert!(Secrets::new([""]).is_empty());
        assert!(!Secrets::default().found_in(b"anything"));
    }

    #[test]
    fn short_secrets_are_looked_for_raw_only() {
        let secrets = Secrets::new(["s3cr"]);
        assert!(secrets.found_in(b"xs3cry"));
        assert!(!secrets.found_in(STANDARD.encode("s3cr").as_bytes()));
        assert!(secrets.found_in(b"%73%33%63%72"), "percent-decoded");
        assert_eq!(secrets.hold_back(), 3 * "73336372".len());
    }
}
