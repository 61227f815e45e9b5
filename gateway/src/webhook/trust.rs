//! The certificates a receiver's chain may end in, and the TLS client
//! configuration built on them.
//!
//! | Source | A bad entry |
//! |--------|-------------|
//! | the platform's roots (`rustls-native-certs`: the system store, `SSL_CERT_FILE`, `SSL_CERT_DIR`) | skipped: one unusable system certificate must not stop the gateway |
//! | a CA file ([`ca_file`](super::HttpsDeliverBuilder::ca_file)) | [`TrustError::Read`], [`TrustError::Pem`] or [`TrustError::Certificate`]: the operator named it |
//! | PEM bytes ([`extra_roots`](super::HttpsDeliverBuilder::extra_roots)) | [`TrustError::Pem`] or [`TrustError::Certificate`] |
//! | none of them gave a root | [`TrustError::NoRoots`] |
//!
//! The crypto provider is aws-lc-rs, named explicitly (not the process
//! default): the gateway already builds it for `jsonwebtoken` and for
//! reqwest's rustls, so it costs no second crypto library, and an explicit
//! provider works whichever other provider a dependency enables.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{ClientConfig, RootCertStore};

/// Why the trusted certificates could not be assembled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// A CA file could not be read.
    #[error("cannot read the CA file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A CA file or PEM block is not PEM, or holds no certificate.
    #[error("{origin}: {reason}")]
    Pem {
        /// The file, or "extra roots" for PEM bytes.
        origin: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A certificate parsed as PEM is not one a root can be made of.
    #[error("{origin}: not a usable CA certificate: {reason}")]
    Certificate {
        /// The file, or "extra roots" for PEM bytes.
        origin: String,
        /// What rustls said of it.
        reason: String,
    },
    /// No root at all: the platform has none (or they were left out) and
    /// none was added.
    #[error("no trusted root certificate: the platform has none and no CA file was given")]
    NoRoots,
    /// The TLS configuration could not be built.
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// The roots: the platform's (when asked for) and every added CA.
pub(super) fn roots(
    platform: bool,
    files: &[PathBuf],
    pems: &[Vec<u8>],
) -> Result<RootCertStore, TrustError> {
    let mut store = RootCertStore::empty();
    if platform {
        let found = rustls_native_certs::load_native_certs();
        if !found.errors.is_empty() {
            tracing::warn!(errors = ?found.errors, "some platform root certificates could not be loaded");
        }
        let (_added, skipped) = store.add_parsable_certificates(found.certs);
        if skipped > 0 {
            tracing::debug!(skipped, "platform root certificates skipped");
        }
    }
    for path in files {
        let pem = std::fs::read(path).map_err(|source| TrustError::Read {
            path: path.clone(),
            source,
        })?;
        add_pem(&mut store, &pem, &path.display().to_string())?;
    }
    for pem in pems {
        add_pem(&mut store, pem, "extra roots")?;
    }
    if store.is_empty() {
        return Err(TrustError::NoRoots);
    }
    Ok(store)
}

/// Adds every certificate of one PEM text; at least one is required.
fn add_pem(store: &mut RootCertStore, pem: &[u8], origin: &str) -> Result<(), TrustError> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TrustError::Pem {
            origin: origin.to_owned(),
            reason: error.to_string(),
        })?;
    if certificates.is_empty() {
        return Err(TrustError::Pem {
            origin: origin.to_owned(),
            reason: "no CERTIFICATE block".to_owned(),
        });
    }
    for certificate in certificates {
        store
            .add(certificate)
            .map_err(|error| TrustError::Certificate {
                origin: origin.to_owned(),
                reason: error.to_string(),
            })?;
    }
    Ok(())
}

/// A client configuration over aws-lc-rs that trusts `roots`, offers
/// HTTP/1.1 over ALPN and presents no client certificate.
pub(super) fn client_config(roots: RootCertStore) -> Result<ClientConfig, TrustError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| TrustError::Config(error.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}
