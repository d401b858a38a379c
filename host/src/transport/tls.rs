//! TLS for a node's TCP listener (rustls, aws-lc-rs): the node's
//! certificate and key, and optionally the CA whose client certificates it
//! requires (mTLS). The bearer token is still checked on every request.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// `[listen.tls]`: the files TLS is served from.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// The node's certificate chain (PEM), leaf first.
    pub certificate: PathBuf,
    /// The node's private key (PEM; a file private to its owner).
    pub key: PathBuf,
    /// When set, a client must present a certificate issued by this CA
    /// (PEM), or the handshake fails.
    pub client_ca: Option<PathBuf>,
}

/// Why TLS cannot be served. The files' contents are never shown.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read or is too large.
    #[error("listen.tls.{0}: cannot be read")]
    Read(&'static str),
    /// The key file is readable by group or others.
    #[error("listen.tls.key: must not be readable by group or others (chmod 600)")]
    KeyExposed,
    /// A file holds no usable PEM of the expected kind.
    #[error("listen.tls.{0}: holds no usable PEM certificate or key")]
    Pem(&'static str),
    /// rustls refused the combination (e.g. the key does not match the
    /// certificate).
    #[error("listen.tls: the certificate and key are refused: {0}")]
    Refused(String),
}

/// Largest file read for TLS, bytes.
const MAX_PEM_BYTES: u64 = 256 * 1024;

fn read(path: &Path, field: &'static str) -> Result<Vec<u8>, TlsError> {
    let metadata = std::fs::metadata(path).map_err(|_| TlsError::Read(field))?;
    if metadata.len() > MAX_PEM_BYTES {
        return Err(TlsError::Read(field));
    }
    std::fs::read(path).map_err(|_| TlsError::Read(field))
}

fn certificates(
    path: &Path,
    field: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path, field)?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| TlsError::Pem(field))?;
    if certificates.is_empty() {
        return Err(TlsError::Pem(field));
    }
    Ok(certificates)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The server side of TLS, built from `files`: TLS 1.2 and 1.3 with
/// rustls' safe defaults, HTTP/1.1 only.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    use std::os::unix::fs::PermissionsExt;
    let chain = certificates(&files.certificate, "certificate")?;
    let key_mode = std::fs::metadata(&files.key)
        .map_err(|_| TlsError::Read("key"))?
        .permissions()
        .mode();
    if key_mode & 0o077 != 0 {
        return Err(TlsError::KeyExposed);
    }
    let key = PrivateKeyDer::from_pem_slice(&read(&files.key, "key")?)
        .map_err(|_| TlsError::Pem("key"))?;
    let provider = provider();
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|error| TlsError::Refused(error.to_string()))?;
    let builder = match &files.client_ca {
        Some(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for certificate in certificates(path, "client_ca")? {
                roots
                    .add(certificate)
                    .map_err(|_| TlsError::Pem("client_ca"))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(|error| TlsError::Refused(error.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|error| TlsError::Refused(error.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
