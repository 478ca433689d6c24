//! Webhook authentication: HMAC-SHA256 of the exact raw body, keyed with the webhook secret, in
//! `X-Hub-Signature-256: sha256=<hex>`. Several secrets may be configured so one can be rotated
//! without dropping deliveries; any one of them signing the body is enough.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The configured webhook secrets, each already keyed into an HMAC (cloned per delivery, so the
/// key is not hashed again for every request). Debug shows how many, never what.
#[derive(Clone)]
pub struct WebhookSecrets {
    keyed: Vec<HmacSha256>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretsError {
    #[error("REVIEWBOT_WEBHOOK_SECRET holds no secret")]
    Empty,
}

/// Why a signature was refused. Every case gets the same answer on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the signature is not `sha256=` and 64 hex digits")]
    Malformed,
    #[error("no configured secret signed this body")]
    Mismatch,
}

impl WebhookSecrets {
    /// `REVIEWBOT_WEBHOOK_SECRET`: one secret, or several separated by commas (rotation).
    /// Blanks around each are dropped; at least one must remain.
    pub fn from_list(list: &str) -> Result<Self, SecretsError> {
        Self::new(list.split(',').map(str::trim).filter(|s| !s.is_empty()))
    }

    pub fn new<S: AsRef<[u8]>>(secrets: impl IntoIterator<Item = S>) -> Result<Self, SecretsError> {
        let keyed: Vec<HmacSha256> = secrets
            .into_iter()
            .map(|s| {
                HmacSha256::new_from_slice(s.as_ref()).expect("HMAC takes a key of any length")
            })
            .collect();
        if keyed.is_empty() {
            return Err(SecretsError::Empty);
        }
        Ok(Self { keyed })
    }

    pub fn len(&self) -> usize {
        self.keyed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keyed.is_empty()
    }

    /// Checks an `X-Hub-Signature-256` value against `body`, in constant time per secret.
    pub fn verify(&self, header: &[u8], body: &[u8]) -> Result<(), SignatureError> {
        let digest = header
            .strip_prefix(b"sha256=")
            .and_then(decode_hex32)
            .ok_or(SignatureError::Malformed)?;
        let signed = self.keyed.iter().any(|keyed| {
            let mut mac = keyed.clone();
            mac.update(body);
            mac.verify_slice(&digest).is_ok()
        });
        signed.then_some(()).ok_or(SignatureError::Mismatch)
    }

    /// The header value GitHub would send for `body` signed with the first secret (tests,
    /// benchmarks).
    pub fn sign(&self, body: &[u8]) -> String {
        let mut mac = self.keyed[0].clone();
        mac.update(body);
        let digest = mac.finalize().into_bytes();
        let mut out = String::with_capacity(7 + 64);
        out.push_str("sha256=");
        for b in digest {
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
        out
    }
}

impl fmt::Debug for WebhookSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WebhookSecrets({} configured)", self.keyed.len())
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Exactly 64 hex digits (either case) → 32 bytes; anything else (short, long, odd) → `None`.
fn decode_hex32(hex: &[u8]) -> Option<[u8; 32]> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "It's a Secret to Everybody";
    const VECTOR: &str = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    fn secrets() -> WebhookSecrets {
        WebhookSecrets::from_list(SECRET).unwrap()
    }

    #[test]
    fn githubs_published_test_vector() {
        assert_eq!(secrets().sign(b"Hello, World!"), VECTOR);
        assert_eq!(
            secrets().verify(VECTOR.as_bytes(), b"Hello, World!"),
            Ok(())
        );
        let upper = format!("sha256={}", VECTOR[7..].to_ascii_uppercase());
        assert_eq!(secrets().verify(upper.as_bytes(), b"Hello, World!"), Ok(()));
    }

    #[test]
    fn the_vector_over_a_real_payload() {
        let body = crate::github::events::tests::fixture("pull_request/opened.payload.json");
        assert_eq!(body.len(), 28_011);
        let sig = "sha256=9dc478d9f168340c18752a2c72bfbec57a9230b5a8af4e1b5cd19e4469a0e55a";
        assert_eq!(secrets().verify(sig.as_bytes(), &body), Ok(()));
        // Re-serialised JSON is not the signed bytes.
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let reserialised = serde_json::to_vec(&value).unwrap();
        assert_eq!(
            secrets().verify(sig.as_bytes(), &reserialised),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn anything_but_a_matching_sha256_digest_is_refused() {
        let body = b"Hello, World!";
        let s = secrets();
        let malformed = [
            "",
            "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59",
            "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
            "sha256=",
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e1",
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17a",
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e1z",
            "SHA256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
            " sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        ];
        for header in malformed {
            assert_eq!(
                s.verify(header.as_bytes(), body),
                Err(SignatureError::Malformed),
                "{header:?}"
            );
        }
        let other = WebhookSecrets::from_list("another secret").unwrap();
        assert_eq!(
            s.verify(other.sign(body).as_bytes(), body),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            s.verify(VECTOR.as_bytes(), b"Hello, World?"),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn any_configured_secret_signs() {
        let both = WebhookSecrets::from_list(" old-secret , It's a Secret to Everybody,").unwrap();
        assert_eq!(both.len(), 2);
        let old = WebhookSecrets::from_list("old-secret").unwrap();
        let body = b"Hello, World!";
        assert_eq!(both.verify(VECTOR.as_bytes(), body), Ok(()));
        assert_eq!(both.verify(old.sign(body).as_bytes(), body), Ok(()));
        let retired = WebhookSecrets::from_list("retired").unwrap();
        assert_eq!(
            both.verify(retired.sign(body).as_bytes(), body),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn no_secret_is_an_error_and_debug_shows_none() {
        assert_eq!(
            WebhookSecrets::from_list(" , ,").unwrap_err(),
            SecretsError::Empty
        );
        let debug = format!("{:?}", secrets());
        assert_eq!(debug, "WebhookSecrets(1 configured)");
        assert!(!debug.contains("Secret to"));
    }
}

#[cfg(test)]
mod props {
    use super::*;

    proptest::proptest! {
        /// No header value panics, and only the right digest passes.
        #[test]
        fn any_header_is_checked_without_panic(
            header in proptest::collection::vec(proptest::num::u8::ANY, 0..80),
        ) {
            let secrets = WebhookSecrets::from_list("s").unwrap();
            let right = secrets.sign(b"body");
            let verdict = secrets.verify(&header, b"body");
            proptest::prop_assert_eq!(verdict.is_ok(), header.eq_ignore_ascii_case(right.as_bytes()) && header.starts_with(b"sha256="));
        }

        /// Well-formed-looking digests of every length: only 64 digits can pass, and only the
        /// right ones do.
        #[test]
        fn hex_of_any_length_is_malformed_or_mismatched(header in "sha256=[0-9a-fA-F]{0,70}") {
            let secrets = WebhookSecrets::from_list("s").unwrap();
            let expected = if header.len() == 7 + 64 {
                Err(SignatureError::Mismatch)
            } else {
                Err(SignatureError::Malformed)
            };
            proptest::prop_assert_eq!(secrets.verify(header.as_bytes(), b"body"), expected);
        }
    }
}
