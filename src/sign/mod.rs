//! Signed state: Ed25519 keys ([`keys`]) and manifests of every state file ([`manifest`]).
//!
//! What is signed is never the bytes a file happens to hold but a domain-separation prefix plus
//! the RFC 8785 canonical bytes ([`crate::jcs`]) of the whole value, so that every nested field
//! is covered and a signature made for one purpose (a manifest) can never be replayed as another
//! (a future signed object gets its own prefix).
//!
//! Verification is `verify_strict`: it refuses the signature malleability (`s >= L`),
//! non-canonical point encodings and small-order keys that plain RFC 8032 verification lets
//! through (the Wycheproof vectors in `tests` pin this down).

pub mod glob;
pub mod keys;
pub mod manifest;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// Prefix of every manifest signature: `"loa-core/manifest/v1"` and a NUL, which no canonical
/// JSON text contains.
pub const MANIFEST_DOMAIN: &[u8] = b"loa-core/manifest/v1\0";

/// Prefix of every signature of a ledger synthesis base snapshot (see [`crate::synth`]).
pub const SYNTH_BASE_DOMAIN: &[u8] = b"loa-core/synth-base/v1\0";

/// Prefix of every audit checkpoint signature (see [`crate::audit::Checkpoint`]).
pub const AUDIT_CHECKPOINT_DOMAIN: &[u8] = b"loa-core/audit-checkpoint/v1\0";

/// A key id: the first 16 bytes of SHA-256 of the 32-byte public key, in hex. Derived, so it
/// can never disagree with the key it names.
pub fn key_id(public_key: &[u8; 32]) -> String {
  hex::encode(&Sha256::digest(public_key)[..16])
}

/// Plain Ed25519 (RFC 8032) signature of `message`; every signature the library makes goes
/// through here.
pub fn sign_raw(key: &SigningKey, message: &[u8]) -> [u8; 64] {
  key.sign(message).to_bytes()
}

/// Strict Ed25519 verification of `signature` over `message`; every check the library makes
/// goes through here. The error says why, without echoing any input.
pub fn verify_raw(public_key: &[u8], message: &[u8], signature: &[u8]) -> Result<(), &'static str> {
  let public_key: &[u8; 32] = public_key.try_into().map_err(|_| "public key is not 32 bytes")?;
  let signature: &[u8; 64] = signature.try_into().map_err(|_| "signature is not 64 bytes")?;
  let key = VerifyingKey::from_bytes(public_key).map_err(|_| "public key is not a valid Ed25519 point")?;
  let signature = Signature::from_bytes(signature);
  key.verify_strict(message, &signature).map_err(|_| "signature does not verify")
}

/// Signs `domain || body`.
pub fn sign_with_domain(key: &SigningKey, domain: &[u8], body: &[u8]) -> [u8; 64] {
  let mut message = Vec::with_capacity(domain.len() + body.len());
  message.extend_from_slice(domain);
  message.extend_from_slice(body);
  sign_raw(key, &message)
}

/// Verifies a signature over `domain || body`.
pub fn verify_with_domain(public_key: &[u8], domain: &[u8], body: &[u8], signature: &[u8]) -> Result<(), &'static str> {
  let mut message = Vec::with_capacity(domain.len() + body.len());
  message.extend_from_slice(domain);
  message.extend_from_slice(body);
  verify_raw(public_key, &message, signature)
}

#[cfg(test)]
mod tests;
