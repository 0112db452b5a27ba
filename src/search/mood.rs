//! What a memory's text does, by its grammatical mood: it states something, it only asks, or
//! it voices a wish or a plan. Ranking weighs the last two less (see [`super::rank`]): a
//! question about what happened is answered by a statement of it, and the turns around that
//! statement that share its words, the reaction ("A live concert! Was the band any good?") and
//! the plan made before ("I want to see a band live this year"), say that it did not happen
//! yet, or ask about it.
//!
//! Each test is one pass over the text's words (Unicode word boundaries, `unicode-segmentation`)
//! and looks at most a few words ahead of each: linear in the text.

use std::collections::VecDeque;

use unicode_segmentation::UnicodeSegmentation;

use crate::memory::MemoryKind;

use super::analyze::{after_speaker_label, same_word};

/// A memory's mood, decided once when it is indexed and kept in its row (see `base.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mood {
  /// It states something (the indicative: everything that is not one of the others).
  #[default]
  States,
  /// It only asks: see [`only_asks`].
  Asks,
  /// It voices a wish or plan of its speaker: see [`voices_a_wish`].
  Wishes,
}

impl Mood {
  /// The mood a memory is ranked by: its text's for a plain interaction (what someone said), and
  /// [`Mood::States`] for every other kind and for instructions. "We should use Postgres for
  /// billing" is a decision, and "Always ask before deleting?" an instruction, whatever their
  /// grammar: what they say is the fact a query asks for.
  pub fn of_memory(kind: MemoryKind, instruction: bool, text: &str) -> Mood {
    if kind == MemoryKind::Interaction && !instruction {
      Mood::of(text)
    } else {
      Mood::States
    }
  }

  /// The mood of a memory's text. A text that only asks is [`Mood::Asks`] even if it voices a
  /// wish ("Should I sign up?").
  pub fn of(text: &str) -> Mood {
    if only_asks(text) {
      Mood::Asks
    } else if voices_a_wish(text) {
      Mood::Wishes
    } else {
      Mood::States
    }
  }

  /// Its code in the index files (2 bits).
  pub fn code(self) -> u8 {
    match self {
      Mood::States => 0,
      Mood::Asks => 1,
      Mood::Wishes => 2,
    }
  }

  /// The mood of a code read from the index files; `None` for a code no version writes.
  pub fn from_code(code: u8) -> Option<Mood> {
    match code {
      0 => Some(Mood::States),
      1 => Some(Mood::Asks),
      2 => Some(Mood::Wishes),
      _ => None,
    }
  }
}

/// Whether `text` only asks: after its speaker label (see [`super::analyze::speaker_label`]), it
/// ends with a question mark and no word of it ends with a full stop. "A live concert! Was the
/// band any good?" reacts to news and asks about it; the news itself, "Front row for Saint Ember
/// last night.", is in another turn. A turn that states something as well ("I adopted a dog.
/// Have you ever had one?") does not only ask.
pub fn only_asks(text: &str) -> bool {
  let body = after_speaker_label(text).trim_end();
  body.ends_with('?') && !body.split_whitespace().any(|word| word.ends_with('.'))
}

/// Whether `text` voices a wish or a plan of its speaker: `I` or `we` (with at most three of
/// `would`, `really`, `still`, `also`, `just` between) followed by `want to`, `wanna`, `hope to`,
/// `plan to`, `intend to`, `should`, `wish`, `dream of`/`about`, `would like to`/`love to` (not
/// `like to` alone: "I like to cook" is a habit), or `am`/`are` `planning`/`thinking`/`hoping`
/// (`I'd`, `I'm`, `we're` as one word too); or `one day`, `someday`, `some day` anywhere. "My
/// sister wants to move" is a statement about the sister; "I need to" is not a wish.
pub fn voices_a_wish(text: &str) -> bool {
  // The words from the one being looked at to the farthest a pattern reads (subject, three
  // adverbs, verb, `to`): a window, not a list of every word of a long memory.
  const AHEAD: usize = 6;
  let mut words = after_speaker_label(text).unicode_words();
  let mut window: VecDeque<&str> = words.by_ref().take(AHEAD).collect();
  while !window.is_empty() {
    let is = |i: usize, options: &[&str]| window.get(i).is_some_and(|w| options.iter().any(|o| same_word(w, o)));
    if is(0, &["someday"]) || (is(0, &["one", "some"]) && is(1, &["day"])) {
      return true;
    }
    if is(0, &["i'm", "we're"]) && is(1, &["planning", "thinking", "hoping"]) {
      return true;
    }
    let mut would = is(0, &["i'd", "we'd"]);
    if would || is(0, &["i", "we"]) {
      let mut j = 1;
      while j < 4 && is(j, &["would", "really", "still", "also", "just"]) {
        would |= is(j, &["would"]);
        j += 1;
      }
      let wish = is(j, &["wanna", "should", "wish"])
        || (is(j, &["want", "hope", "plan", "intend"]) && is(j + 1, &["to"]))
        || (would && is(j, &["like", "love"]) && is(j + 1, &["to"]))
        || (is(j, &["dream"]) && is(j + 1, &["of", "about"]))
        || (is(j, &["am", "are"]) && is(j + 1, &["planning", "thinking", "hoping"]));
      if wish {
        return true;
      }
    }
    window.pop_front();
    window.extend(words.next());
  }
  false
}

/// Whether a query asks about wishes or plans itself ("What does Mia plan to do?", "Where
/// does Jonas want to travel?"): then a memory that voices one is what it asks for, and is not
/// weighed less.
pub fn asks_about_wishes(query: &str) -> bool {
  const WORDS: &[&str] = &[
    "want", "wants", "wanted", "wanna", "plan", "plans", "planned", "planning", "hope", "hopes", "hoped", "hoping",
    "wish", "wishes", "wished", "dream", "dreams", "dreaming", "intend", "intends", "intended", "should", "someday",
  ];
  let words: Vec<&str> = query.unicode_words().collect();
  words.iter().enumerate().any(|(i, w)| {
    WORDS.iter().any(|o| same_word(w, o))
      || (["like", "love"].iter().any(|o| same_word(w, o)) && words.get(i + 1).is_some_and(|n| same_word(n, "to")))
  })
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_text_only_asks_when_it_ends_asking_and_states_nothing() {
    for asks in ["Zoe: A live concert! Was the band any good?", "how was it?", "Dr. Ada: ready?  ", "?"] {
      assert!(only_asks(asks), "{asks}");
      assert_eq!(Mood::of(asks), Mood::Asks);
    }
    for states in [
      "Zoe: I adopted a dog. Have you ever had one?",
      "Front row for Saint Ember last night.",
      "Is it done? Yes",
      "",
      "Dr. Ada: fine",
    ] {
      assert!(!only_asks(states), "{states}");
    }
  }

  #[test]
  fn a_text_voices_a_wish_when_its_speaker_wants_plans_or_dreams() {
    for wish in [
      "Mia: I want to learn the violin one of these years",
      "I would love to grow vegetables",
      "I’d really like to see Kyoto",
      "We should start a board game night",
      "I am thinking about an evening course",
      "I'm hoping to run a marathon",
      "One day I will sail",
      "someday, maybe",
      "We just wanna rest",
    ] {
      assert!(voices_a_wish(wish), "{wish}");
      assert_eq!(Mood::of(wish), Mood::Wishes, "{wish}");
    }
    for states in [
      "My sister wants to move to Lisbon",
      "I like to cook on Sundays",
      "I need to sleep",
      "I adopted a beagle",
      "Wish: none",
      "I",
      "",
      "Should I sign up?",
    ] {
      assert!(!voices_a_wish(states) || only_asks(states), "{states}");
      assert_ne!(Mood::of(states), Mood::Wishes, "{states}");
    }
  }

  #[test]
  fn only_what_someone_said_is_ranked_by_its_mood() {
    let wish = "We should use Postgres for billing";
    assert_eq!(Mood::of_memory(MemoryKind::Interaction, false, wish), Mood::Wishes);
    assert_eq!(Mood::of_memory(MemoryKind::Interaction, false, "Is it done?"), Mood::Asks);
    assert_eq!(Mood::of_memory(MemoryKind::Interaction, true, wish), Mood::States);
    for kind in [MemoryKind::Decision, MemoryKind::Learning, MemoryKind::Error, MemoryKind::Milestone] {
      assert_eq!(Mood::of_memory(kind, false, wish), Mood::States, "{kind:?}");
      assert_eq!(Mood::of_memory(kind, false, "Why does the build fail?"), Mood::States, "{kind:?}");
    }
  }

  #[test]
  fn a_query_about_wishes_is_told_apart() {
    for q in ["What does Mia plan to do?", "Where does Jonas want to travel?", "What would she love to try?"] {
      assert!(asks_about_wishes(q), "{q}");
    }
    for q in ["Which race did Tariq finish?", "Would Mia enjoy a steakhouse?", "What does she like?"] {
      assert!(!asks_about_wishes(q), "{q}");
    }
  }

  #[test]
  fn codes_go_both_ways_and_no_other_code_reads() {
    for m in [Mood::States, Mood::Asks, Mood::Wishes] {
      assert_eq!(Mood::from_code(m.code()), Some(m));
    }
    assert_eq!(Mood::from_code(3), None);
  }

  #[test]
  fn long_texts_cost_one_pass() {
    let text = "I would really just ".repeat(50_000);
    assert!(!voices_a_wish(&text));
    assert!(!asks_about_wishes(&"like like ".repeat(50_000)));
  }
}
