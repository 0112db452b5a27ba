use std::collections::HashMap;
use std::path::PathBuf;

fn main() {
  // Only the Node binding links against N-API symbols that Node itself provides.
  #[cfg(feature = "napi")]
  napi_build::setup();
  related_words();
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
