//! Who a query is about, beside the speaker it names (see [`super::rank`]): `Jonas's friend`
//! names Jonas, but asks about someone else. A question about a person related to a speaker is
//! answered by that person's turns, or the other speaker's, not by the named speaker's own.
//!
//! A scan of the query's words, linear in the query: a capitalised word ending in `'s` (or
//! `’s`) followed by a word for a person in a relation to someone ([`RELATIONS`]) is such a
//! possessive; the word itself then names no speaker. `Zoe's dog`, `Zoe's job` and `Zoe's
//! trip` still name Zoe: they are hers.

use unicode_segmentation::UnicodeSegmentation;

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
  fn long_hostile_queries_cost_one_pass() {
    let query = "Ann's friend ".repeat(10_000);
    assert_eq!(possessive_relations(&query).len(), 10_000);
  }
}
