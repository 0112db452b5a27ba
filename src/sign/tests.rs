//! The Ed25519 vectors of `testdata/vectors/ed25519/` through `sign_raw` / `verify_raw`, the two
//! functions every signature of the library goes through.

use std::io::Read;

use ed25519_dalek::SigningKey;

use super::*;

fn vectors() -> std::path::PathBuf {
  crate::jcs::tests_support::vectors().join("ed25519")
}

fn seed(hex_text: &str) -> SigningKey {
  SigningKey::from_bytes(&hex::decode(hex_text).unwrap().try_into().unwrap())
}

#[test]
fn rfc8032_section_7_1() {
  let dir = vectors();
  let doc: serde_json::Value =
    serde_json::from_slice(&std::fs::read(dir.join("rfc8032_section7_1_ed25519.json")).unwrap()).unwrap();
  let vectors = doc["vectors"].as_array().unwrap();
  assert_eq!(vectors.len(), 5);
  for v in vectors {
    let key = seed(v["secret_key"].as_str().unwrap());
    let public = hex::decode(v["public_key"].as_str().unwrap()).unwrap();
    let message = hex::decode(v["message"].as_str().unwrap()).unwrap();
    let expected = hex::decode(v["signature"].as_str().unwrap()).unwrap();
    assert_eq!(key.verifying_key().to_bytes().to_vec(), public, "{}", v["name"]);
    assert_eq!(sign_raw(&key, &message).to_vec(), expected, "{}", v["name"]);
    verify_raw(&public, &message, &expected).unwrap();
    let mut flipped = expected.clone();
    flipped[0] ^= 1;
    assert!(verify_raw(&public, &message, &flipped).is_err());
  }
}

#[test]
fn supercop_sign_input_all_1024() {
  let dir = vectors();
  let mut text = String::new();
  flate2::read::GzDecoder::new(std::fs::File::open(dir.join("sign.input.gz")).unwrap())
    .read_to_string(&mut text)
    .unwrap();
  let mut count = 0;
  for line in text.lines().filter(|l| !l.is_empty()) {
    let fields: Vec<&str> = line.split(':').collect();
    let (sk_pk, pk, msg, sig_msg) = (fields[0], fields[1], fields[2], fields[3]);
    let key = seed(&sk_pk[..64]);
    let public = hex::decode(pk).unwrap();
    let message = hex::decode(msg).unwrap();
    let expected = hex::decode(&sig_msg[..128]).unwrap();
    assert_eq!(&sk_pk[64..], pk);
    assert_eq!(key.verifying_key().to_bytes().to_vec(), public, "line {}", count + 1);
    assert_eq!(sign_raw(&key, &message).to_vec(), expected, "line {}", count + 1);
    verify_raw(&public, &message, &expected).unwrap();
    if !message.is_empty() {
      let mut tampered = message.clone();
      tampered[count % message.len()] ^= 0x80;
      assert!(verify_raw(&public, &tampered, &expected).is_err());
    }
    count += 1;
  }
  assert_eq!(count, 1024);
}

#[test]
fn wycheproof_all_151_verification_cases() {
  let dir = vectors();
  let doc: serde_json::Value =
    serde_json::from_slice(&std::fs::read(dir.join("wycheproof_ed25519_test.json")).unwrap()).unwrap();
  let mut count = 0;
  let (mut valid, mut invalid) = (0, 0);
  for group in doc["testGroups"].as_array().unwrap() {
    let public = hex::decode(group["publicKey"]["pk"].as_str().unwrap()).unwrap();
    for t in group["tests"].as_array().unwrap() {
      let message = hex::decode(t["msg"].as_str().unwrap()).unwrap();
      let signature = hex::decode(t["sig"].as_str().unwrap()).unwrap();
      let got = verify_raw(&public, &message, &signature);
      match t["result"].as_str().unwrap() {
        "valid" => {
          assert!(got.is_ok(), "tcId {} ({}) should verify: {:?}", t["tcId"], t["comment"], got);
          valid += 1;
        }
        "invalid" => {
          assert!(got.is_err(), "tcId {} ({}) must be refused", t["tcId"], t["comment"]);
          invalid += 1;
        }
        other => panic!("unexpected result {other}"),
      }
      count += 1;
    }
  }
  assert_eq!((count, valid, invalid), (151, 88, 63));
}

#[test]
fn domain_separation_binds_the_purpose() {
  let key = SigningKey::from_bytes(&[7; 32]);
  let public = key.verifying_key().to_bytes();
  let sig = sign_with_domain(&key, MANIFEST_DOMAIN, b"{}");
  verify_with_domain(&public, MANIFEST_DOMAIN, b"{}", &sig).unwrap();
  assert!(verify_raw(&public, b"{}", &sig).is_err(), "a domain-separated signature is not a plain one");
  assert!(verify_with_domain(&public, b"loa-core/other/v1\0", b"{}", &sig).is_err());
  assert_eq!(key_id(&public).len(), 32);
}
