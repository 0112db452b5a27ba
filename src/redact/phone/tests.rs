//! Phone numbers against libphonenumber's own data: every region's example numbers, national
//! formats and extensions, and the look-alikes that must stay.

use crate::redact::{redact, RedactOptions};

/// libphonenumber's example number of every region and type, with the formats its metadata
/// gives (testdata/phone, extracted by scripts/phone-metadata.mjs; Apache-2.0).
const EXAMPLES: &str = include_str!("../../../testdata/phone/example_numbers.tsv");

/// The phone findings of `text`, as the substrings they cover.
fn phones(text: &str) -> Vec<String> {
  let r = redact(text, &RedactOptions::default());
  let utf16: Vec<u16> = text.encode_utf16().collect();
  r.findings.iter().filter(|f| f.kind == "phone").map(|f| String::from_utf16_lossy(&utf16[f.start..f.end])).collect()
}

fn kinds(text: &str) -> Vec<String> {
  redact(text, &RedactOptions::default()).findings.iter().map(|f| f.kind.clone()).collect()
}

#[test]
fn every_regions_example_numbers_written_internationally_are_phone_numbers() {
  let mut failures = Vec::new();
  let mut n = 0;
  for line in EXAMPLES.lines().filter(|l| !l.starts_with('#')) {
    let f: Vec<&str> = line.split('\t').collect();
    let (region, cc, ty, nsn, intl) = (f[0], f[1], f[2], f[3], f[5]);
    // Fewer than seven digits in all (`+690 3101` has seven) is a short code, not a number.
    if cc.len() + nsn.len() < 7 {
      continue;
    }
    let e164 = format!("+{cc}{nsn}");
    for written in [intl, e164.as_str()].into_iter().filter(|w| *w != "-") {
      n += 1;
      let text = format!("Please call me at {written} tomorrow.");
      if phones(&text) != [written] {
        failures.push(format!("{region}/{ty}: {text} -> {:?}", phones(&text)));
      }
    }
  }
  assert!(n > 2000, "{n} example numbers read");
  assert!(failures.is_empty(), "{} of {n} missed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn national_formats_are_validated_by_region() {
  for (text, number) in [
    // Mixed separators and a lone digit group, as the regions' own formats write them.
    ("Llámame al 030 212-345 cuando llegues.", "030 212-345"),
    ("Ruf mich an unter 0900 1 234567, ich bin ab 9 Uhr da.", "0900 1 234567"),
    ("Мой номер телефона: 8 (912) 345-67-89.", "8 (912) 345-67-89"),
    // A word after the number (Turkish) or in another script names it.
    ("Beni 0532 123 45 67 numaralı telefondan arayabilirsiniz.", "0532 123 45 67"),
    ("電話番号は090-1234-5678です。", "090-1234-5678"),
    // A nine-digit number the line calls a phone is one, not an SSN.
    ("Mi teléfono es 612345678.", "612345678"),
    // International access codes, validated as after `+`.
    ("from abroad dial 011 44 20 7946 0958", "011 44 20 7946 0958"),
    ("Tel. 00 49 30 1234567", "00 49 30 1234567"),
    // Four-digit national numbers of small plans (Niue, Tokelau) after `+`.
    ("Please call me at +690 3101 tomorrow.", "+690 3101"),
  ] {
    assert_eq!(phones(text), [number], "{text}");
  }
}

#[test]
fn extensions_are_part_of_the_number() {
  for (text, number) in [
    ("call 415-555-0132 #12 now", "415-555-0132 #12"),
    ("dial +1 415 555 0132;ext=123", "+1 415 555 0132;ext=123"),
    ("Office: 020 7946 0958, ext. 12", "020 7946 0958, ext. 12"),
    ("+44 20 7946 0958 extn 6", "+44 20 7946 0958 extn 6"),
    ("Phone: (415) 555-0132 ext:204", "(415) 555-0132 ext:204"),
  ] {
    assert_eq!(phones(text), [number], "{text}");
  }
}

#[test]
fn look_alikes_stay() {
  for text in [
    // Identifiers whose shape a plan would allow: a word for them, or no word for a phone.
    "SIN 812 345 678",
    "Invalid TIN 600-000-000",
    "CPF 476.767.255-43",
    "001332-1234567",
    "99-22-123456-12",
    "110-81-412722",
    // Amounts, ranges, epochs, dates, versions, even on a line that says `phone`.
    "Phone batch 1 658 865 done",
    "Phone batch 0308-1327 done",
    "called 3 times at 1700000000",
    "phone released 2024-01-15, version 10.2.3.4567",
    "pages 1234-5678",
    // An unassigned calling code.
    "+28 1234 5678",
  ] {
    assert!(kinds(text).iter().all(|k| k != "phone"), "{text}: {:?}", kinds(text));
  }
}

#[test]
fn a_mebibyte_line_of_digits_and_separators_costs_linear_work() {
  // Digits, the separators phone numbers use and the words that name one, drawn at random (a
  // fixed xorshift seed): every few bytes a candidate that reaches the numbering plans.
  let alphabet = b"0123456789012345678901234567890123456789 -().+#x";
  let mut s = 0x9e37_79b9_7f4a_7c15u64;
  let mut text = String::from("phone ");
  while text.len() < 1 << 20 {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    text.push(alphabet[(s % alphabet.len() as u64) as usize] as char);
    if s.is_multiple_of(997) {
      text.push_str(" tel ");
    }
  }
  let (r, work) = crate::redact::testing::redact_counting_work(&text, &RedactOptions::default());
  assert!(r.findings.iter().any(|f| f.kind == "phone"), "candidates were validated");
  let bound = crate::redact::testing::work_bound(text.len());
  assert!(work <= bound, "{work} bytes examined for {} bytes of text", text.len());
}
