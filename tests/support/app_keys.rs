//! RSA key pairs for the GitHub App tests, made by the `openssl` CLI at test time (no key is
//! committed). Shared by the unit tests (`src/github/app/tests.rs`) and the fake GitHub.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

/// The two PEM forms of an App private key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyForm {
    /// `BEGIN RSA PRIVATE KEY`, as GitHub issues it.
    Pkcs1,
    /// `BEGIN PRIVATE KEY`.
    Pkcs8,
}

/// A 2048-bit key pair: the private key in its form, the public key as `BEGIN PUBLIC KEY`.
#[derive(Debug, Clone)]
pub struct TestKey {
    pub private_pem: String,
    pub public_pem: String,
}

/// One key of each form per test binary run (generating takes a moment).
pub fn test_key(form: KeyForm) -> &'static TestKey {
    static PKCS1: OnceLock<TestKey> = OnceLock::new();
    static PKCS8: OnceLock<TestKey> = OnceLock::new();
    let cell = match form {
        KeyForm::Pkcs1 => &PKCS1,
        KeyForm::Pkcs8 => &PKCS8,
    };
    cell.get_or_init(|| generate_key(form))
}

fn generate_key(form: KeyForm) -> TestKey {
    let dir = tempfile::tempdir().expect("tempdir");
    let private = dir.path().join("app.pem");
    let public = dir.path().join("app.pub.pem");
    let out = private.to_str().expect("utf-8 path");
    match form {
        KeyForm::Pkcs1 => openssl(&["genrsa", "-traditional", "-out", out, "2048"]),
        KeyForm::Pkcs8 => openssl(&[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            out,
        ]),
    }
    openssl(&[
        "rsa",
        "-in",
        out,
        "-pubout",
        "-out",
        public.to_str().expect("utf-8 path"),
    ]);
    let read = |p: &Path| std::fs::read_to_string(p).expect("read generated key");
    let key = TestKey {
        private_pem: read(&private),
        public_pem: read(&public),
    };
    let header = match form {
        KeyForm::Pkcs1 => "-----BEGIN RSA PRIVATE KEY-----",
        KeyForm::Pkcs8 => "-----BEGIN PRIVATE KEY-----",
    };
    assert!(
        key.private_pem.starts_with(header),
        "openssl made another key form"
    );
    key
}

/// Runs the `openssl` CLI; a missing `openssl` fails the test (it is a documented test tool).
fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("the App tests need the `openssl` CLI to make keys: {e}"));
    assert!(
        out.status.success(),
        "openssl {}: {}",
        args.first().unwrap_or(&""),
        String::from_utf8_lossy(&out.stderr)
    );
}
