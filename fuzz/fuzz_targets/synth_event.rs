//! Any bytes through the ledger synthesis event decoder (as a Markdown event and as a handoff
//! record): it answers an event or a reason, never panics; a decoded event encodes to bytes that
//! decode to the same merged state; merging that state into itself changes nothing; and a reason
//! never carries the input's text back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::synth::merge::event_id;
use loa_core::synth::{Event, State};

fuzz_target!(|bytes: &[u8]| {
  for json in [false, true] {
    match Event::decode(bytes, json) {
      Ok(event) => {
        let ts = event.validate().expect("a decoded event is valid");
        let state = State::of_event(event_id("f.md", bytes), "f.md", ts, &event);
        let encoded = event.encode().expect("a decoded event encodes");
        let again = Event::decode(&encoded, false).expect("an encoded event decodes");
        let state2 = State::of_event(event_id("f.md", bytes), "f.md", again.validate().unwrap(), &again);
        assert_eq!(state, state2, "encode then decode keeps what the merge sees");
        let mut twice = state.clone();
        twice.merge(&state);
        assert_eq!(twice, state, "the merge is idempotent");
        let _ = state.render();
      }
      Err(reason) => {
        // Long enough runs of the input never come back in the reason.
        if let Ok(text) = std::str::from_utf8(bytes) {
          for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() >= 24) {
            assert!(!reason.contains(word), "the reason echoes the input");
          }
        }
      }
    }
  }
});
