//! Who a query is about, beside the speaker it names (see [`super::rank`]).
//!
//! **Possessives.** `Jonas's friend` names Jonas, but asks about someone else. A question about a
//! person related to a speaker is answered by that person's turns, or the other speaker's, not by
//! the named speaker's own. A scan of the query's words, linear in the query: a capitalised word
//! ending in `'s` (or `’s`) followed by a word for a person in a relation to someone
//! ([`RELATIONS`]) is such a possessive; the word itself then names no speaker. `Zoe's dog`,
//! `Zoe's job` and `Zoe's trip` still name Zoe: they are hers.
//!
//! **Pronouns.** "Which novel did she finish?" names nobody, but in a conversation between Mia
//! and Jonas it asks about Mia. A memory whose speaker label starts with a given name that the US
//! Social Security Administration's birth records give to one sex at least 95 % of the time
//! (`given-names.txt`, see its licence file and `scripts/given-names.mjs`), or with `Mr`, `Mrs`,
//! `Ms` or `Miss`, also indexes [`FEMALE_SPEAKER`] or [`MALE_SPEAKER`]. A query that names no
//! speaker and whose third-person pronouns are all of one kind (`she`, `her`, `hers`, `herself`,
//! or `he`, `him`, `his`, `himself`) is then read as naming the speakers of that kind, with the
//! same factor as a name. It is a ranking hint, never a filter: a name the table does not hold,
//! or holds for both (`Jordan`, `Robin`), gets no term, and a query with both kinds of pronoun, or
//! asked where both speakers share a kind, ranks as before. `explain.speaker` shows the factor.

use unicode_segmentation::UnicodeSegmentation;

use super::analyze::same_word;

/// Words for a person in a relation to another: family, partners, friends, people one works,
/// studies or lives with. Lowercase, singular and plural.
const RELATIONS: &[&str] = &[
  "aunt",
  "aunts",
  "baby",
  "boss",
  "boyfriend",
  "brother",
  "brothers",
  "child",
  "children",
  "classmate",
  "classmates",
  "colleague",
  "colleagues",
  "coworker",
  "coworkers",
  "cousin",
  "cousins",
  "dad",
  "daughter",
  "daughters",
  "doctor",
  "father",
  "fiance",
  "fiancee",
  "fiancé",
  "fiancée",
  "flatmate",
  "friend",
  "friends",
  "girlfriend",
  "goddaughter",
  "godson",
  "grandchild",
  "grandchildren",
  "granddaughter",
  "grandfather",
  "grandma",
  "grandmother",
  "grandpa",
  "grandparents",
  "grandson",
  "housemate",
  "husband",
  "kid",
  "kids",
  "landlord",
  "manager",
  "mentor",
  "mom",
  "mother",
  "mum",
  "neighbor",
  "neighbors",
  "neighbour",
  "neighbours",
  "nephew",
  "niece",
  "parent",
  "parents",
  "partner",
  "roommate",
  "roommates",
  "schoolmate",
  "sibling",
  "siblings",
  "sister",
  "sisters",
  "son",
  "sons",
  "spouse",
  "stepbrother",
  "stepdaughter",
  "stepfather",
  "stepmother",
  "stepsister",
  "stepson",
  "student",
  "students",
  "teacher",
  "teammate",
  "teammates",
  "therapist",
  "uncle",
  "uncles",
  "wife",
];

/// The query's words that name a speaker only to say whose relation the question is about
/// (`Jonas's` in "What did Jonas's friend cook?"), as written.
pub fn possessive_relations(query: &str) -> Vec<&str> {
  let mut found = Vec::new();
  let mut previous: Option<&str> = None;
  for word in query.unicode_words() {
    if let Some(owner) = previous.take() {
      if RELATIONS.contains(&word.to_lowercase().as_str()) {
        found.push(owner);
      }
    }
    let possessive = word.strip_suffix("'s").or_else(|| word.strip_suffix("’s"));
    if possessive.is_some_and(|name| name.starts_with(char::is_uppercase)) {
      previous = Some(word);
    }
  }
  found
}

/// The term a memory indexes when its speaker label is a woman's name (see the module docs).
/// `:` is never part of an analysed term, so no label or word can give it.
pub const FEMALE_SPEAKER: &str = "@:she";
/// The term a memory indexes when its speaker label is a man's name (see the module docs).
pub const MALE_SPEAKER: &str = "@:he";

/// Given names and the sex nearly everyone given them was registered with: `name f` or
/// `name m` lines, lowercase ASCII names, sorted (made by `scripts/given-names.mjs`).
const GIVEN_NAMES: &str = include_str!("given-names.txt");

/// The term of the kind of person a speaker label names (`Mia` and `Mrs. Lima`
/// [`FEMALE_SPEAKER`], `Dr. Jonas Berg` [`MALE_SPEAKER`]), if its first name tells.
pub fn label_pronoun_term(label: &str) -> Option<&'static str> {
  for word in label.split_whitespace().take(2) {
    let word = word.trim_end_matches('.').to_ascii_lowercase();
    match word.as_str() {
      "mrs" | "ms" | "miss" => return Some(FEMALE_SPEAKER),
      "mr" => return Some(MALE_SPEAKER),
      // A title says nothing: the name after it does.
      "dr" | "prof" => continue,
      _ => return given_name_term(&word),
    }
  }
  None
}

/// [`FEMALE_SPEAKER`] or [`MALE_SPEAKER`] for a lowercase given name the table holds.
fn given_name_term(name: &str) -> Option<&'static str> {
  static TABLE: std::sync::OnceLock<Vec<(&'static str, bool)>> = std::sync::OnceLock::new();
  let table = TABLE.get_or_init(|| {
    GIVEN_NAMES.lines().filter_map(|line| line.split_once(' ')).map(|(name, sex)| (name, sex == "f")).collect()
  });
  let at = table.binary_search_by(|(n, _)| (*n).cmp(name)).ok()?;
  Some(if table[at].1 { FEMALE_SPEAKER } else { MALE_SPEAKER })
}

/// Whether a turn speaks only to its listener, and so of them: it has a second-person word
/// (`you`, `your`, `you're`, ...) and no first-person one (`I`, `my`, `we`, `I've`, ...). "You
/// completed a race! I could never." has `I`; "Growing vegetables yourself, that is so
/// wholesome." is about the listener's vegetables, not the speaker's. One pass over the words.
pub fn speaks_only_to_the_listener(body: &str) -> bool {
  let mut second = false;
  const FIRST: &[&str] = &[
    "i",
    "me",
    "my",
    "mine",
    "myself",
    "we",
    "us",
    "our",
    "ours",
    "ourselves",
    "i'm",
    "i've",
    "i'll",
    "i'd",
    "we're",
    "we've",
    "we'll",
    "we'd",
  ];
  const SECOND: &[&str] = &["you", "your", "yours", "yourself", "yourselves", "you're", "you've", "you'll", "you'd"];
  for word in body.unicode_words() {
    if FIRST.iter().any(|w| same_word(word, w)) {
      return false;
    }
    second |= SECOND.iter().any(|w| same_word(word, w));
  }
  second
}

/// The speaker term a query's third-person pronouns point at: [`FEMALE_SPEAKER`] when it has
/// `she`, `her`, `hers` or `herself` and none of `he`, `him`, `his`, `himself`, and the other way
/// round; none when it has both kinds or neither. One pass over the query's words.
pub fn pronoun_term(query: &str) -> Option<&'static str> {
  let (mut female, mut male) = (false, false);
  for word in query.unicode_words() {
    female |= ["she", "her", "hers", "herself"].iter().any(|w| same_word(word, w));
    male |= ["he", "him", "his", "himself"].iter().any(|w| same_word(word, w));
  }
  match (female, male) {
    (true, false) => Some(FEMALE_SPEAKER),
    (false, true) => Some(MALE_SPEAKER),
    _ => None,
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_possessive_before_a_relation_names_someone_else() {
    assert_eq!(possessive_relations("What new job did Rafael's friend start?"), ["Rafael's"]);
    assert_eq!(possessive_relations("Where did Zoe’s sister-in-law move?"), ["Zoe’s"]);
    assert_eq!(possessive_relations("Is Mia's colleague or Tom's boss older?"), ["Mia's", "Tom's"]);
    for own in ["What is Zoe's dog called?", "Where was Zoe's trip?", "what did rafael's friend do", "Zoe's", "friend"]
    {
      assert!(possessive_relations(own).is_empty(), "{own}");
    }
  }

  #[test]
  fn a_pronoun_points_at_the_speakers_of_its_kind() {
    assert_eq!(pronoun_term("Which novel did she recently finish reading?"), Some(FEMALE_SPEAKER));
    assert_eq!(pronoun_term("Where did HE move with his family?"), Some(MALE_SPEAKER));
    assert_eq!(pronoun_term("What did he give her?"), None);
    assert_eq!(pronoun_term("Where does the shelter get herbs?"), None);
    assert_eq!(pronoun_term(""), None);
  }

  #[test]
  fn a_turn_speaks_only_to_its_listener_when_it_says_you_and_never_i() {
    for to_listener in
      ["A proper holiday, you deserved that trip.", "Growing vegetables yourself, so wholesome", "You’re kidding!"]
    {
      assert!(speaks_only_to_the_listener(to_listener), "{to_listener}");
    }
    for own in ["You completed a race! I could never.", "I’ve told you", "We saw your dog", "Nice weather", ""] {
      assert!(!speaks_only_to_the_listener(own), "{own}");
    }
  }

  #[test]
  fn a_label_tells_its_kind_by_its_first_name_or_title() {
    assert_eq!(label_pronoun_term("Mia"), Some(FEMALE_SPEAKER));
    assert_eq!(label_pronoun_term("Caroline Berg"), Some(FEMALE_SPEAKER));
    assert_eq!(label_pronoun_term("Dr. Jonas"), Some(MALE_SPEAKER));
    assert_eq!(label_pronoun_term("Mrs. Lima"), Some(FEMALE_SPEAKER));
    assert_eq!(label_pronoun_term("Mr Lima"), Some(MALE_SPEAKER));
    // Given to both, or to no one the table counts: no kind.
    for none in ["Jordan", "Robin", "User", "Assistant", "Jean-Luc", "Zoë", "Dr.", ""] {
      assert_eq!(label_pronoun_term(none), None, "{none}");
    }
  }

  #[test]
  fn the_given_names_table_is_sorted_lowercase_and_small() {
    let lines: Vec<&str> = GIVEN_NAMES.lines().collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]));
    for line in &lines {
      let (name, sex) = line.split_once(' ').unwrap();
      assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase()), "{line}");
      assert!(sex == "f" || sex == "m", "{line}");
    }
    assert!(lines.len() > 5_000 && GIVEN_NAMES.len() < 100_000);
  }

  #[test]
  fn long_hostile_queries_cost_one_pass() {
    let query = "Ann's friend ".repeat(10_000);
    assert_eq!(possessive_relations(&query).len(), 10_000);
  }
}
