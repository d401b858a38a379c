//! A vendor endpoint given in a kind's configuration: an API URL and the
//! domain its sandboxes live under (E2B's `api_url` and `domain`). The host
//! derives the HTTP allowlist from it and the adapter validates the same
//! configuration with the same rule, so neither trusts the other.
//!
//! Both empty means the vendor's defaults; otherwise both are required. The
//! API URL is exactly `https://host`: no port, path (not even `/`), query
//! (not even an empty one), fragment, user information, uppercase or
//! whitespace, at most 512 bytes, and its host is the domain or under it.
//! The domain is a lowercase DNS name of at least two labels, each 1..63 of
//! `[a-z0-9-]` without a dash at either end, at most 253 bytes, neither an
//! IP address nor `localhost`, `*.localhost`, `local` or `*.local`.

/// Longest API URL, bytes.
pub const MAX_API_URL_BYTES: usize = 512;
/// Longest domain, bytes.
pub const MAX_DOMAIN_BYTES: usize = 253;

/// Why an endpoint is refused; names the field, never its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointError {
    /// One of the two is given without the other.
    Incomplete,
    /// The API URL is not exactly `https://host`.
    ApiUrl,
    /// The domain is not an allowed DNS name.
    Domain,
    /// The API URL's host is neither the domain nor under it.
    ApiUrlOutsideDomain,
}

impl EndpointError {
    /// The field at fault, for messages.
    pub const fn field(self) -> &'static str {
        match self {
            EndpointError::Incomplete => "api_url and domain",
            EndpointError::ApiUrl | EndpointError::ApiUrlOutsideDomain => "api_url",
            EndpointError::Domain => "domain",
        }
    }
}

/// True for a DNS name this rule allows as a domain or API host.
pub fn is_allowed_domain(domain: &str) -> bool {
    if domain.is_empty() || domain.len() > MAX_DOMAIN_BYTES {
        return false;
    }
    let mut labels = 0;
    let mut all_numeric = true;
    for label in domain.split('.') {
        labels += 1;
        let bytes = label.as_bytes();
        let shaped = !bytes.is_empty()
            && bytes.len() <= 63
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-';
        if !shaped {
            return false;
        }
        all_numeric &= bytes.iter().all(u8::is_ascii_digit);
    }
    let local = domain == "localhost"
        || domain.ends_with(".localhost")
        || domain == "local"
        || domain.ends_with(".local");
    // A name of digits only in every label is an IPv4 address (IPv6 has
    // colons, which no label may hold).
    labels >= 2 && !all_numeric && !local
}

/// True when `host` is `domain` or a name under it, itself a DNS name
/// this rule allows (letters, digits and hyphens in each label): a URL
/// host may hold other characters (`+`, `;`, `!`…) that no DNS name has.
pub fn is_within(host: &str, domain: &str) -> bool {
    is_allowed_domain(host)
        && (host == domain
            || (host.len() > domain.len()
                && host.ends_with(domain)
                && host.as_bytes()[host.len() - domain.len() - 1] == b'.'))
}

/// The endpoint to use: the given `(api_url, domain)`, or the defaults when
/// both are empty.
pub fn resolve<'a>(
    api_url: &'a str,
    domain: &'a str,
    default_api_url: &'a str,
    default_domain: &'a str,
) -> Result<(&'a str, &'a str), EndpointError> {
    let (api_url, domain) = match (api_url.is_empty(), domain.is_empty()) {
        (true, true) => (default_api_url, default_domain),
        (false, false) => (api_url, domain),
        _ => return Err(EndpointError::Incomplete),
    };
    if !is_allowed_domain(domain) {
        return Err(EndpointError::Domain);
    }
    let host = api_url
        .strip_prefix("https://")
        .filter(|_| api_url.len() <= MAX_API_URL_BYTES)
        .ok_or(EndpointError::ApiUrl)?;
    // Any port, path, query, fragment, user information, uppercase or
    // whitespace leaves a character no DNS label may hold.
    if !is_allowed_domain(host) {
        return Err(EndpointError::ApiUrl);
    }
    if !is_within(host, domain) {
        return Err(EndpointError::ApiUrlOutsideDomain);
    }
    Ok((api_url, domain))
}
