//! A private CA and a webhook receiver's certificate from it, made at test
//! time (no `openssl` command needed), for the gateway's webhook tests.
#![allow(dead_code)]

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};

/// A private CA and a receiver's certificate from it.
pub struct Pki {
    /// The CA's certificate, PEM.
    pub ca_pem: String,
    /// The leaf's certificate, PEM.
    pub leaf_pem: String,
    /// The leaf's private key, PEM (PKCS#8).
    pub key_pem: String,
    /// The leaf's chain, DER.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's private key, DER.
    pub key: PrivatePkcs8KeyDer<'static>,
}

/// A CA, and a leaf certificate for `names` signed by it.
pub fn ca_and_leaf(names: &[&str]) -> Pki {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "webhook receivers' test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("a CA key"))
        .expect("a CA certificate");
    let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    let mut leaf = CertificateParams::new(names).expect("leaf parameters");
    leaf.distinguished_name
        .push(DnType::CommonName, "webhook receiver");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().expect("a leaf key");
    let leaf = leaf.signed_by(&key, &ca).expect("a leaf certificate");
    Pki {
        ca_pem: ca.pem(),
        leaf_pem: leaf.pem(),
        key_pem: key.serialize_pem(),
        chain: vec![leaf.der().clone()],
        key: PrivatePkcs8KeyDer::from(key.serialize_der()),
    }
}
