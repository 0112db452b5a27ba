//! The BPE tables of the two encodings, stored compressed in the library (`data/*.bpe.lz4`, about
//! 6.6 MB for both) and expanded on first use of an encoding.
//!
//! Why not the `bpe-openai` crate: it embeds its encoders fully built (47 MB for these two) and a
//! third one. Why not build them from the vocabulary at run time: the `bpe` crate's
//! `from_dictionary` takes seconds per encoding, which every CLI run would pay. So
//! `scripts/token-tables` runs `from_dictionary` once, and the table keeps what counting reads:
//! the tokens, the merge table and the leftmost-longest automaton. What `bpe` derives cheaply
//! (token offsets, the pair lookup, the inverse of the merge table) is recomputed here; the two
//! automata and the hash index that only its other encoders use are replaced by a placeholder, so
//! [`Vocabulary`] offers only the backtracking encoder, which never reads them.
//!
//! Guarantees: a damaged table is refused with an error (header, size, CRC-32C of the expanded
//! bytes, every token id in range) before any of it reaches `bpe`, whose automaton loader trusts
//! its input. Tests check that the tokens are tiktoken's (SHA-256 of the rank file rebuilt from
//! them) and that every token encodes to itself.

use aneubeck_daachorse::DoubleArrayAhoCorasick;
use bpe::byte_pair_encoding::BytePairEncoding;
use serde::de::value::{BytesDeserializer, Error as DeError, MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::TokenEncoding;

pub(super) const O200K_BASE: &[u8] = include_bytes!("data/o200k_base.bpe.lz4");
pub(super) const CL100K_BASE: &[u8] = include_bytes!("data/cl100k_base.bpe.lz4");

const MAGIC: &[u8; 8] = b"LOABPE1\n";
const HEADER: usize = 16;
/// Bound on the expanded size (the o200k_base table expands to 11.5 MB).
const MAX_PAYLOAD: usize = 64 << 20;
/// Bytes per daachorse automaton state, the stride the automaton is stored transposed with.
const STATE_BYTES: usize = 12;

/// The stored table of `encoding`.
pub(super) fn stored(encoding: TokenEncoding) -> &'static [u8] {
  match encoding {
    TokenEncoding::O200kBase => O200K_BASE,
    TokenEncoding::Cl100kBase => CL100K_BASE,
  }
}

/// A byte-pair encoding that can count and encode with the backtracking encoder, and nothing else.
pub(super) struct Vocabulary {
  bpe: BytePairEncoding,
}

impl Vocabulary {
  /// The number of tokens of one piece.
  pub(super) fn count(&self, piece: &[u8]) -> usize {
    self.bpe.count(piece)
  }

  /// The tokens of one piece.
  pub(super) fn encode(&self, piece: &[u8]) -> Vec<u32> {
    self.bpe.encode_via_backtracking(piece)
  }

  pub(super) fn token_len(&self, token: u32) -> usize {
    self.bpe.token_len(token)
  }

  pub(super) fn num_tokens(&self) -> usize {
    self.bpe.num_tokens()
  }

  #[cfg(test)]
  pub(super) fn token_bytes(&self, token: u32) -> &[u8] {
    self.bpe.token_bytes(token)
  }
}

/// Expands a stored table; an error says what is wrong with it.
pub(super) fn load(file: &[u8]) -> Result<Vocabulary, String> {
  let payload = expand(file)?;
  let tables = Tables::parse(&payload)?;
  let bpe = BytePairEncoding::deserialize(&tables).map_err(|e| format!("does not fit the bpe crate: {e}"))?;
  Ok(Vocabulary { bpe })
}

/// The header checked, the payload decompressed and checked against its CRC-32C.
fn expand(file: &[u8]) -> Result<Vec<u8>, String> {
  if file.len() < HEADER || &file[..8] != MAGIC {
    return Err("not a table (bad header)".into());
  }
  let len = u32::from_le_bytes(file[8..12].try_into().unwrap()) as usize;
  let crc = u32::from_le_bytes(file[12..16].try_into().unwrap());
  if len > MAX_PAYLOAD {
    return Err(format!("declares {len} bytes, more than a table holds"));
  }
  let payload = lz4_flex::block::decompress(&file[HEADER..], len).map_err(|e| format!("does not decompress: {e}"))?;
  if payload.len() != len {
    return Err(format!("expands to {} bytes, not {len}", payload.len()));
  }
  if crc32c::crc32c(&payload) != crc {
    return Err("checksum mismatch".into());
  }
  Ok(payload)
}

/// The parsed payload (layout in `data/README.md`).
struct Tables<'a> {
  tokens: usize,
  hash_factor: u64,
  lengths: &'a [u8],
  bytes: &'a [u8],
  split_left: Vec<u32>,
  split_right: Vec<u32>,
  next_prefix: Vec<u32>,
  automaton: Vec<u8>,
  placeholder: Vec<u8>,
}

/// Reads the payload front to back.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
  fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
    if n > self.0.len() {
      return Err("truncated".into());
    }
    let (head, rest) = self.0.split_at(n);
    self.0 = rest;
    Ok(head)
  }

  fn u32(&mut self) -> Result<u32, String> {
    Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
  }

  fn u64(&mut self) -> Result<u64, String> {
    Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
  }

  /// A column of `len` `u32`s stored as four byte planes (all low bytes first).
  fn column(&mut self, len: usize) -> Result<Vec<u32>, String> {
    let planes = self.take(len.checked_mul(4).ok_or("truncated")?)?;
    let (p0, rest) = planes.split_at(len);
    let (p1, rest) = rest.split_at(len);
    let (p2, p3) = rest.split_at(len);
    // Index loops: this crate is unoptimized in debug builds, where iterator chains cost more.
    let mut column = Vec::with_capacity(len);
    for i in 0..len {
      column.push(u32::from_le_bytes([p0[i], p1[i], p2[i], p3[i]]));
    }
    Ok(column)
  }
}

impl<'a> Tables<'a> {
  fn parse(payload: &'a [u8]) -> Result<Tables<'a>, String> {
    let mut r = Reader(payload);
    let tokens = r.u32()? as usize;
    let hash_factor = r.u64()?;
    let lengths = r.take(tokens)?;
    if lengths.contains(&0) {
      return Err("an empty token".into());
    }
    let total: usize = lengths.iter().map(|&l| l as usize).sum();
    let bytes = r.take(total)?;
    let split_left = r.column(tokens)?;
    let split_right = r.column(tokens)?;
    let next_prefix = r.column(tokens)?;
    let automaton_len = r.u32()? as usize;
    let automaton = untranspose(r.take(automaton_len)?, STATE_BYTES);
    if !r.0.is_empty() {
      return Err("trailing bytes".into());
    }
    // Token ids index tables without bounds checks inside `bpe`.
    let in_range = |ids: &[u32], none: Option<u32>| ids.iter().all(|&id| (id as usize) < tokens || Some(id) == none);
    if !in_range(&split_left, None) || !in_range(&split_right, None) || !in_range(&next_prefix, Some(u32::MAX)) {
      return Err("a token id out of range".into());
    }
    let placeholder =
      DoubleArrayAhoCorasick::<u32>::new([[0u8]]).map_err(|e| format!("placeholder automaton: {e}"))?.serialize();
    Ok(Tables { tokens, hash_factor, lengths, bytes, split_left, split_right, next_prefix, automaton, placeholder })
  }

  /// Start offset of every token in `bytes`, and the end of the last.
  fn starts(&self) -> Vec<u32> {
    let mut at = 0u32;
    let mut starts = Vec::with_capacity(self.tokens + 1);
    starts.push(0);
    starts.extend(self.lengths.iter().map(|&l| {
      at += u32::from(l);
      at
    }));
    starts
  }

  /// The merge table: token `id` is made of `(left, right)`; a token that is no merge is
  /// `(id, id)`.
  fn split(&self, id: usize) -> (u32, u32) {
    (self.split_left[id], self.split_right[id])
  }

  /// The inverse of the merge table: which token a pair merges into.
  fn merges(&self) -> Vec<(IdPair, u32)> {
    (0..self.tokens)
      .filter_map(|id| {
        let (left, right) = self.split(id);
        (left as usize != id || right as usize != id).then_some((IdPair(left, right), id as u32))
      })
      .collect()
  }
}

/// The inverse of the transposition `scripts/token-tables` stores the automaton with: byte `k` of
/// every `stride`-byte record first, then byte `k + 1`, ...; a tail shorter than a record as is.
fn untranspose(data: &[u8], stride: usize) -> Vec<u8> {
  let records = data.len() / stride;
  let whole = records * stride;
  let mut out = vec![0u8; data.len()];
  for k in 0..stride {
    let mut at = k;
    for &byte in &data[k * records..(k + 1) * records] {
      out[at] = byte;
      at += stride;
    }
  }
  out[whole..].copy_from_slice(&data[whole..]);
  out
}

/// The field names of `bpe` 0.2.3's `BytePairEncoding`, in [`Fields::next_value_seed`]'s order.
/// Given by name, so a field renamed or added in another version is a loud error (a missing
/// field), never a silently shifted one.
const FIELDS: [&str; 10] = [
  "all_tokens",
  "token_starts",
  "bytes_hash_to_token",
  "split_table",
  "pair_lookup",
  "longest_searcher",
  "overlapping_searcher",
  "overlapping_searcher_rev",
  "next_prefix_match",
  "hash_factor",
];

/// `BytePairEncoding` is built through its `Deserialize` implementation, the crate's own way to
/// load stored tables, fed from the parsed payload without an intermediate serialization.
impl<'de> de::Deserializer<'de> for &Tables<'_> {
  type Error = DeError;

  fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
    visitor.visit_map(Fields { tables: self, next: 0 })
  }

  serde::forward_to_deserialize_any! {
    bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
    unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
  }
}

struct Fields<'t, 'a> {
  tables: &'t Tables<'a>,
  next: usize,
}

impl<'de> MapAccess<'de> for Fields<'_, '_> {
  type Error = DeError;

  fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, DeError> {
    match FIELDS.get(self.next) {
      Some(name) => seed.deserialize((*name).into_deserializer()).map(Some),
      None => Ok(None),
    }
  }

  fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
    let t = self.tables;
    self.next += 1;
    match self.next - 1 {
      0 => seed.deserialize(SeqDeserializer::new(t.bytes.iter().copied())),
      1 => seed.deserialize(SeqDeserializer::new(t.starts().into_iter())),
      // Only `bpe`'s other encoders look tokens up by their bytes.
      2 => seed.deserialize(MapDeserializer::new(std::iter::empty::<(u32, u32)>())),
      3 => seed.deserialize(SeqDeserializer::new((0..t.tokens).map(|id| {
        let (left, right) = t.split(id);
        IdPair(left, right)
      }))),
      4 => seed.deserialize(MapDeserializer::new(t.merges().into_iter())),
      5 => seed.deserialize(BytesDeserializer::new(&t.automaton)),
      // Only `bpe`'s other encoders search with these.
      6 | 7 => seed.deserialize(BytesDeserializer::new(&t.placeholder)),
      8 => seed.deserialize(SeqDeserializer::new(t.next_prefix.iter().copied())),
      _ => seed.deserialize(t.hash_factor.into_deserializer()),
    }
  }
}

/// A pair of token ids, handed to serde as a 2-tuple.
struct IdPair(u32, u32);

impl<'de> IntoDeserializer<'de, DeError> for IdPair {
  type Deserializer = IdPair;

  fn into_deserializer(self) -> IdPair {
    self
  }
}

impl<'de> de::Deserializer<'de> for IdPair {
  type Error = DeError;

  fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
    let mut pair = SeqDeserializer::new([self.0, self.1].into_iter());
    let value = visitor.visit_seq(&mut pair)?;
    pair.end()?;
    Ok(value)
  }

  serde::forward_to_deserialize_any! {
    bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
    unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// The expanded payload of the stored cl100k_base table (the smaller one).
  fn payload() -> Vec<u8> {
    expand(CL100K_BASE).unwrap()
  }

  #[test]
  fn untranspose_inverts_the_generators_transposition() {
    // scripts/token-tables: byte k of every record, for k = 0..stride, then the tail.
    let transpose = |data: &[u8], stride: usize| {
      let whole = data.len() / stride * stride;
      let mut out: Vec<u8> = (0..stride).flat_map(|k| data[..whole].iter().skip(k).step_by(stride).copied()).collect();
      out.extend_from_slice(&data[whole..]);
      out
    };
    for len in [0usize, 1, 11, 12, 13, 100, 1000] {
      let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
      for stride in [1, 4, 12] {
        assert_eq!(untranspose(&transpose(&data, stride), stride), data, "len {len} stride {stride}");
      }
    }
  }

  #[test]
  fn a_payload_with_a_token_id_out_of_range_is_refused() {
    // A checksum that matches is not enough: ids index `bpe`'s tables unchecked.
    let good = payload();
    assert!(Tables::parse(&good).is_ok());
    let tokens = u32::from_le_bytes(good[..4].try_into().unwrap()) as usize;
    let total: usize = good[12..12 + tokens].iter().map(|&l| l as usize).sum();
    let columns = 12 + tokens + total;
    for column in 0..3 {
      let mut bad = good.clone();
      // The high byte of the last entry of the column.
      bad[columns + column * 4 * tokens + 4 * tokens - 1] = 0x7f;
      assert_eq!(Tables::parse(&bad).err().as_deref(), Some("a token id out of range"), "column {column}");
    }
    let mut empty = good.clone();
    empty[12] = 0;
    assert_eq!(Tables::parse(&empty).err().as_deref(), Some("an empty token"));
    assert_eq!(Tables::parse(&good[..good.len() - 1]).err().as_deref(), Some("truncated"));
    let mut longer = good.clone();
    longer.push(0);
    assert_eq!(Tables::parse(&longer).err().as_deref(), Some("trailing bytes"));
  }
}
