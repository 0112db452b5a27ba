//! The BPE tables of the two encodings, stored compressed in the library (`data/*.bpe.lz4`, about
//! 3.8 MB for both) and expanded on first use of an encoding.
//!
//! Why not the `bpe-openai` crate: it embeds its encoders fully built (47 MB for these two) and a
//! third one. Why not build them from the vocabulary at run time: the `bpe` crate's
//! `from_dictionary` takes seconds per encoding, which every CLI run would pay. So
//! `scripts/token-tables` runs `from_dictionary` once, and the table keeps what counting reads:
//! the merge table, the prefix table and the leftmost-longest automaton. What can be derived from
//! those in one cheap pass is recomputed here instead of stored, because it would be most of the
//! library's size (token ids are near-random numbers that LZ4 barely shrinks): every token's
//! bytes (a merge is its two parts' bytes, both earlier tokens; only the 256 single bytes are
//! stored), the merge table's left parts (a few steps down the prefix table), the token offsets,
//! and the pair lookup (the inverse of the merge table). The two automata and the hash index
//! that only `bpe`'s other encoders use are replaced by a placeholder, so [`Vocabulary`] offers
//! only the backtracking encoder, which never reads them.
//!
//! Guarantees: a damaged table is refused with an error (header, size, CRC-32C of the expanded
//! bytes, every token id in range, every merge made of earlier tokens) before any of it reaches
//! `bpe`, whose automaton loader trusts its input. Tests check that the tokens are tiktoken's
//! (SHA-256 of the rank file rebuilt from them), that the expanded tables are those
//! `from_dictionary` built (their SHA-256, printed by the generator) and that every token encodes
//! to itself.

use aneubeck_daachorse::DoubleArrayAhoCorasick;
use bpe::byte_pair_encoding::BytePairEncoding;
use serde::de::value::{BytesDeserializer, Error as DeError, MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::TokenEncoding;

pub(super) const O200K_BASE: &[u8] = include_bytes!("data/o200k_base.bpe.lz4");
pub(super) const CL100K_BASE: &[u8] = include_bytes!("data/cl100k_base.bpe.lz4");

const MAGIC: &[u8; 8] = b"LOABPE2\n";
const HEADER: usize = 16;
/// Bound on the expanded size (the o200k_base table expands to 10 MB).
const MAX_PAYLOAD: usize = 64 << 20;
/// In the merge-step column: the token is no merge.
const NO_MERGE: u8 = 255;
/// Bytes of a daachorse automaton state, and of an output.
const RECORD: usize = 12;

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
struct Tables {
  tokens: usize,
  hash_factor: u64,
  /// Where each token starts in `bytes`, and the end of the last.
  starts: Vec<u32>,
  bytes: Vec<u8>,
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

  /// A column stored into a field of fixed-size records: `width` bytes (the value's low bytes; the
  /// stored high planes must be zero) at offset `at` of every `RECORD`-byte record of `records`.
  /// The column is four byte planes of its values; a `sparse` one, mostly zeros, is a bitmap of
  /// the nonzero values (bit `i % 8` of byte `i / 8`) then the planes of just those.
  fn fill(&mut self, records: &mut [u8], at: usize, width: usize, sparse: bool) -> Result<(), String> {
    let len = records.len() / RECORD;
    let bitmap = if sparse { Some(self.take(len.div_ceil(8))?) } else { None };
    let count = bitmap.map_or(len, |b| b.iter().map(|b| b.count_ones() as usize).sum());
    let planes = self.take(count.checked_mul(4).ok_or("truncated")?)?;
    if planes[width * count..].iter().any(|&b| b != 0) {
      return Err("a value wider than its field".into());
    }
    let mut next = 0;
    for (i, record) in records.chunks_exact_mut(RECORD).enumerate() {
      if bitmap.is_some_and(|b| b[i / 8] >> (i % 8) & 1 == 0) {
        continue;
      }
      let field = &mut record[at..at + width];
      for (k, byte) in field.iter_mut().enumerate() {
        *byte = planes[k * count + next];
      }
      // A set bit for a zero would give one column two encodings.
      if sparse && field.iter().all(|&b| b == 0) {
        return Err("a zero stored as nonzero".into());
      }
      next += 1;
    }
    Ok(())
  }

  /// The automaton's fields, put back into daachorse's serialization (layout in
  /// `data/README.md`).
  fn automaton(&mut self) -> Result<Vec<u8>, String> {
    let states = self.u32()? as usize;
    // Every state stores at least its check byte: a bound before allocating.
    if states > self.0.len() {
      return Err("truncated".into());
    }
    let mut out = vec![0u8; 4 + RECORD * states];
    out[..4].copy_from_slice(&(states as u32).to_le_bytes());
    let records = &mut out[4..];
    // A state: base, fail, then a word of the output position (high 24 bits) and check byte.
    self.fill(records, 0, 4, true)?;
    self.fill(records, 4, 4, true)?;
    self.fill(records, 9, 3, true)?;
    for (record, &check) in records.chunks_exact_mut(RECORD).zip(self.take(states)?) {
      record[8] = check;
    }
    let outputs = self.u32()? as usize;
    // Every output stores 12 bytes.
    if outputs > self.0.len() / RECORD {
      return Err("truncated".into());
    }
    out.extend_from_slice(&(outputs as u32).to_le_bytes());
    let start = out.len();
    out.resize(start + RECORD * outputs, 0);
    // An output: value, length, parent.
    for at in [0, 4, 8] {
      self.fill(&mut out[start..], at, 4, false)?;
    }
    let tail_len = self.u32()? as usize;
    out.extend_from_slice(self.take(tail_len)?);
    Ok(out)
  }
}

impl Tables {
  fn parse(payload: &[u8]) -> Result<Tables, String> {
    let mut r = Reader(payload);
    let tokens = r.u32()? as usize;
    let hash_factor = r.u64()?;
    let steps = r.take(tokens)?;
    let split_right = r.column(tokens)?;
    let next_prefix = r.column(tokens)?;
    let single_lengths = r.take(steps.iter().filter(|&&step| step == NO_MERGE).count())?;
    if single_lengths.contains(&0) {
      return Err("an empty token".into());
    }
    let single_bytes = r.take(single_lengths.iter().map(|&l| l as usize).sum())?;
    let automaton = r.automaton()?;
    if !r.0.is_empty() {
      return Err("trailing bytes".into());
    }
    // Token ids index tables without bounds checks inside `bpe`.
    let in_range = |ids: &[u32], none: Option<u32>| ids.iter().all(|&id| (id as usize) < tokens || Some(id) == none);
    if !in_range(&split_right, None) || !in_range(&next_prefix, Some(u32::MAX)) {
      return Err("a token id out of range".into());
    }
    let split_left = left_parts(steps, &next_prefix)?;
    let (starts, bytes) = token_bytes(steps, &split_left, &split_right, single_lengths, single_bytes)?;
    let placeholder =
      DoubleArrayAhoCorasick::<u32>::new([[0u8]]).map_err(|e| format!("placeholder automaton: {e}"))?.serialize();
    Ok(Tables { tokens, hash_factor, starts, bytes, split_left, split_right, next_prefix, automaton, placeholder })
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

/// The merge table's left parts: the left part of a merge is one of the token's prefix tokens,
/// stored as the number of steps down the prefix chain past the longest one (`scripts/token-tables`
/// checks that it is); a token that is no merge is its own left part.
fn left_parts(steps: &[u8], next_prefix: &[u32]) -> Result<Vec<u32>, String> {
  let mut left = Vec::with_capacity(steps.len());
  for (id, &step) in steps.iter().enumerate() {
    if step == NO_MERGE {
      left.push(id as u32);
      continue;
    }
    // At most 254 steps whatever the table holds, even a prefix table that loops (its ids were
    // checked in range before).
    let mut prefix = next_prefix[id];
    for _ in 0..step {
      prefix = *next_prefix.get(prefix as usize).ok_or("a merge step past the shortest prefix")?;
    }
    if prefix == u32::MAX {
      return Err("a merge step past the shortest prefix".into());
    }
    left.push(prefix);
  }
  Ok(left)
}

/// Every token's bytes, and where each starts in them (`n + 1` offsets: a token ends where the
/// next starts). Only the tokens that are no merge are stored (the 256 single bytes); a merge is
/// its left part's bytes then its right part's, both earlier tokens, so one pass in id order
/// rebuilds them all.
fn token_bytes(
  steps: &[u8],
  split_left: &[u32],
  split_right: &[u32],
  single_lengths: &[u8],
  single_bytes: &[u8],
) -> Result<(Vec<u32>, Vec<u8>), String> {
  let mut starts = Vec::with_capacity(steps.len() + 1);
  starts.push(0u32);
  let mut bytes = Vec::new();
  let (mut singles, mut single_bytes) = (single_lengths.iter(), single_bytes);
  for (id, &step) in steps.iter().enumerate() {
    let (left, right) = (split_left[id] as usize, split_right[id] as usize);
    if step == NO_MERGE {
      if right != id {
        return Err("a token that is no merge has a right part".into());
      }
      // The payload held as many lengths as NO_MERGE steps, and as many bytes as they add up to.
      let (token, rest) = single_bytes.split_at(usize::from(*singles.next().ok_or("truncated")?));
      bytes.extend_from_slice(token);
      single_bytes = rest;
    } else {
      if left >= id || right >= id {
        return Err("a merge of a later token".into());
      }
      let part = |t: usize| starts[t] as usize..starts[t + 1] as usize;
      bytes.extend_from_within(part(left));
      bytes.extend_from_within(part(right));
    }
    if bytes.len() > MAX_PAYLOAD {
      return Err("more token bytes than a table holds".into());
    }
    starts.push(bytes.len() as u32);
  }
  Ok((starts, bytes))
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
impl<'de> de::Deserializer<'de> for &Tables {
  type Error = DeError;

  fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
    visitor.visit_map(Fields { tables: self, next: 0 })
  }

  serde::forward_to_deserialize_any! {
    bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
    unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
  }
}

struct Fields<'t> {
  tables: &'t Tables,
  next: usize,
}

impl<'de> MapAccess<'de> for Fields<'_> {
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
      1 => seed.deserialize(SeqDeserializer::new(t.starts.iter().copied())),
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

  /// SHA-256 of what a table expands to, in the generator's terms (`tables_digest` in
  /// scripts/token-tables): the token count, hash factor, lengths and bytes, the merge table's
  /// left and right parts, the prefix table and the automaton's serialization.
  fn digest(t: &Tables) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update((t.tokens as u32).to_le_bytes());
    h.update(t.hash_factor.to_le_bytes());
    h.update(t.starts.windows(2).map(|w| (w[1] - w[0]) as u8).collect::<Vec<_>>());
    h.update(&t.bytes);
    for column in [&t.split_left, &t.split_right, &t.next_prefix] {
      h.update(column.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
    }
    h.update(&t.automaton);
    hex::encode(h.finalize())
  }

  #[test]
  fn the_tables_expand_to_what_bpe_built() {
    // The digests scripts/token-tables prints from `BytePairEncoding::from_dictionary`'s own
    // fields. They are also those of the tables stored before the merge-step and sparse columns
    // (format 1, where every column and the automaton were stored whole): the denser format
    // expands to the same tables, byte for byte.
    for (file, expected) in [
      (O200K_BASE, "30d564ddf92d3821425b9b45d76a6d0a2dd0dfe0022705081fa1832dbf715199"),
      (CL100K_BASE, "6afee238d58ff83e00a60fc077457c6a0d567fbf462f07cba5c47de4513c17fb"),
    ] {
      let payload = expand(file).unwrap();
      assert_eq!(digest(&Tables::parse(&payload).unwrap()), expected);
    }
  }

  #[test]
  fn a_sparse_column_is_its_bitmap_and_nonzero_values() {
    // Values 0, 7, 0, 0x01020304, 0, 0, 0, 0, 9 (nine: the bitmap takes two bytes), into bytes
    // 4 to 7 of nine records.
    let mut stored = vec![0b0000_1010, 0b0000_0001];
    stored.extend_from_slice(&[7, 4, 9, 0, 3, 0, 0, 2, 0, 0, 1, 0]);
    let fill = |stored: &[u8], width: usize| {
      let mut records = vec![0xaa; 9 * RECORD];
      Reader(stored).fill(&mut records, 4, width, true).map(|()| records)
    };
    let records = fill(&stored, 4).unwrap();
    let field = |i: usize| u32::from_le_bytes(records[i * RECORD + 4..i * RECORD + 8].try_into().unwrap());
    let values: Vec<u32> = (0..9).map(field).collect();
    // A zero value is left as the record was (the automaton's records start zeroed).
    let z = 0xaaaa_aaaa;
    assert_eq!(values, [z, 7, z, 0x0102_0304, z, z, z, z, 9]);
    assert!(records.chunks(RECORD).all(|r| r[..4] == [0xaa; 4] && r[8..] == [0xaa; 4]), "other fields untouched");
    // 0x01020304 does not fit three bytes.
    assert_eq!(fill(&stored, 3).err().as_deref(), Some("a value wider than its field"));
    // A set bit with a zero value would make two encodings of one column.
    let mut zero = stored.clone();
    zero[2] = 0;
    assert_eq!(fill(&zero, 4).err().as_deref(), Some("a zero stored as nonzero"));
    assert_eq!(fill(&stored[..stored.len() - 1], 4).err().as_deref(), Some("truncated"));
  }

  #[test]
  fn a_payload_with_a_token_id_out_of_range_is_refused() {
    // A checksum that matches is not enough: ids index `bpe`'s tables unchecked.
    let good = payload();
    assert!(Tables::parse(&good).is_ok());
    let tokens = u32::from_le_bytes(good[..4].try_into().unwrap()) as usize;
    let (steps, columns, singles) = (12, 12 + tokens, 12 + 9 * tokens);
    let bad = |at: usize, value: u8| {
      let mut bad = good.clone();
      bad[at] = value;
      Tables::parse(&bad).err()
    };
    for column in 0..2 {
      // The high byte of the last entry of the column (right parts, prefix table).
      let at = columns + column * 4 * tokens + 4 * tokens - 1;
      assert_eq!(bad(at, 0x7f).as_deref(), Some("a token id out of range"), "column {column}");
    }
    // A left part further down the prefix chain than it goes (token 256, two spaces, has one
    // prefix token: a space).
    assert_eq!(bad(steps + tokens - 1, 254).as_deref(), Some("a merge step past the shortest prefix"));
    assert_eq!(bad(steps + 256, 1).as_deref(), Some("a merge step past the shortest prefix"));
    // Token 256 (`  `, two spaces) is the first merge; its right part, or its prefix and so its
    // left part, moved past 65,536.
    assert_eq!(bad(columns + 2 * tokens + 256, 1).as_deref(), Some("a merge of a later token"));
    assert_eq!(bad(columns + 6 * tokens + 256, 1).as_deref(), Some("a merge of a later token"));
    assert_eq!(bad(singles, 0).as_deref(), Some("an empty token"));
    assert_eq!(Tables::parse(&good[..good.len() - 1]).err().as_deref(), Some("truncated"));
    let mut longer = good.clone();
    longer.push(0);
    assert_eq!(Tables::parse(&longer).err().as_deref(), Some("trailing bytes"));
  }
}
