use std::collections::HashMap;
use std::path::PathBuf;

fn main() {
  // Only the Node binding links against N-API symbols that Node itself provides.
  #[cfg(feature = "napi")]
  napi_build::setup();
  related_words();
  isa_words();
}

/// Related words (src/search/related.rs) go into the library as a compact table rather than
/// as the text they are reviewed in: each word once, its related words as 16-bit indexes with
/// their similarity in one byte (about 0.6 MB instead of 1.5 MB). Layout: the words, each
/// ended by `\n`; a `\0`; then per word, in the same order, a count byte and that many
/// (index: u16 little-endian, similarity: u8).
fn related_words() {
  const SOURCE: &str = "src/search/related-words.txt";
  println!("cargo:rerun-if-changed={SOURCE}");
  let text = std::fs::read_to_string(SOURCE).expect("src/search/related-words.txt");
  let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
  let index: HashMap<&str, u16> =
    lines.iter().enumerate().map(|(i, parts)| (parts[0], u16::try_from(i).expect("at most 65,535 words"))).collect();
  let mut out = Vec::new();
  for parts in &lines {
    out.extend_from_slice(parts[0].as_bytes());
    out.push(b'\n');
  }
  out.push(0);
  for parts in &lines {
    let related: Vec<(u16, u8)> = parts[1..]
      .chunks_exact(2)
      .filter_map(|pair| Some((*index.get(pair[0])?, pair[1].parse::<u8>().ok()?.min(100))))
      .take(u8::MAX as usize)
      .collect();
    out.push(related.len() as u8);
    for (i, s) in related {
      out.extend_from_slice(&i.to_le_bytes());
      out.push(s);
    }
  }
  let target = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("related-words.bin");
  std::fs::write(target, out).expect("write related-words.bin");
}

/// Is-a words (src/search/isa.rs) packed the same way, smaller still: of about 71,000 lemmas only
/// some 8,000 distinct lists of hypernyms occur, so each list is stored once and each lemma names
/// its list; the sorted lemmas share prefixes with the one before. Layout: the hypernyms, each
/// ended by `\n`; a `\0`; the number of lists (u16 LE), each a count byte and that many hypernym
/// indexes (u16 LE); the number of lemmas (u32 LE), each as the length of the prefix it shares
/// with the lemma before (u8), the rest of it, `\n`, and its list's index (u16 LE).
fn isa_words() {
  const SOURCE: &str = "src/search/isa-words.txt";
  println!("cargo:rerun-if-changed={SOURCE}");
  let text = std::fs::read_to_string(SOURCE).expect("src/search/isa-words.txt");
  let mut lines: Vec<(&str, Vec<&str>)> = text
    .lines()
    .filter_map(|l| {
      let mut parts = l.split(' ');
      Some((parts.next().filter(|w| !w.is_empty())?, parts.take(u8::MAX as usize).collect()))
    })
    .collect();
  lines.sort_unstable_by(|a, b| a.0.cmp(b.0));
  lines.dedup_by(|a, b| a.0 == b.0);
  let mut hypernyms: Vec<&str> = lines.iter().flat_map(|(_, h)| h.iter().copied()).collect();
  hypernyms.sort_unstable();
  hypernyms.dedup();
  let hypernym_index: HashMap<&str, u16> =
    hypernyms.iter().enumerate().map(|(i, &h)| (h, u16::try_from(i).expect("at most 65,535 hypernyms"))).collect();
  let mut lists: Vec<&[&str]> = lines.iter().map(|(_, h)| h.as_slice()).collect();
  lists.sort_unstable();
  lists.dedup();
  let list_index: HashMap<&[&str], u16> =
    lists.iter().enumerate().map(|(i, &l)| (l, u16::try_from(i).expect("at most 65,535 lists"))).collect();
  let mut out = Vec::new();
  for h in &hypernyms {
    out.extend_from_slice(h.as_bytes());
    out.push(b'\n');
  }
  out.push(0);
  out.extend_from_slice(&(lists.len() as u16).to_le_bytes());
  for list in &lists {
    out.push(list.len() as u8);
    for h in *list {
      out.extend_from_slice(&hypernym_index[h].to_le_bytes());
    }
  }
  out.extend_from_slice(&(lines.len() as u32).to_le_bytes());
  let mut previous = "";
  for (lemma, list) in &lines {
    let shared = previous.bytes().zip(lemma.bytes()).take_while(|(a, b)| a == b).count().min(u8::MAX as usize);
    out.push(shared as u8);
    out.extend_from_slice(&lemma.as_bytes()[shared..]);
    out.push(b'\n');
    out.extend_from_slice(&list_index[list.as_slice()].to_le_bytes());
    previous = lemma;
  }
  let target = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("isa-words.bin");
  std::fs::write(target, out).expect("write isa-words.bin");
}
