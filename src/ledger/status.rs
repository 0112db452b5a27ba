//! The status state machine of the persistence protocol (seed 004), enforced before any state
//! is written:
//!
//! ```text
//! created -> in_progress -> blocked -> in_progress -> completed -> archived
//! ```
//!
//! Exactly the five arrows above are transitions. Staying in the same status is not a
//! transition and is always accepted (a state write that changes other fields). Everything else
//! is `E_ILLEGAL_TRANSITION`: in particular `completed -> in_progress` (start a new initiative
//! instead) and anything out of `archived` (terminal). The seed is silent on shortcuts such as
//! `created -> completed` or `blocked -> completed`; they are refused, so every completed item
//! passed through `in_progress`.

use serde::{Deserialize, Serialize};

use crate::error::{invalid, LoaError, Result};

/// A workflow's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
  Created,
  InProgress,
  Blocked,
  Completed,
  Archived,
}

impl Status {
  /// Every status, in lifecycle order.
  pub const ALL: [Status; 5] =
    [Status::Created, Status::InProgress, Status::Blocked, Status::Completed, Status::Archived];

  /// The name as written in state files.
  pub fn as_str(self) -> &'static str {
    match self {
      Status::Created => "created",
      Status::InProgress => "in_progress",
      Status::Blocked => "blocked",
      Status::Completed => "completed",
      Status::Archived => "archived",
    }
  }

  /// The status named `text` (`E_INVALID_ARGUMENT` otherwise, without echoing it).
  pub fn parse(text: &str) -> Result<Status> {
    Status::ALL
      .into_iter()
      .find(|s| s.as_str() == text)
      .map_or_else(|| invalid("a status is one of created, in_progress, blocked, completed, archived"), Ok)
  }
}

/// Whether `from -> to` is one of the machine's arrows (see the module docs).
pub fn is_transition(from: Status, to: Status) -> bool {
  use Status::*;
  matches!(
    (from, to),
    (Created, InProgress)
      | (InProgress, Blocked)
      | (Blocked, InProgress)
      | (InProgress, Completed)
      | (Completed, Archived)
  )
}

/// Accepts `from -> to` (or no change), else `E_ILLEGAL_TRANSITION`.
pub fn transition_status(from: Status, to: Status) -> Result<Status> {
  if from == to || is_transition(from, to) {
    Ok(to)
  } else {
    Err(LoaError::IllegalTransition { from: from.as_str(), to: to.as_str() })
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// Every one of the 25 pairs against the table written out by hand.
  #[test]
  fn every_pair_against_the_table() {
    // Rows: from; columns: to, in `Status::ALL` order. 1 = accepted.
    const TABLE: [[u8; 5]; 5] = [
      // cr ip bl co ar
      [1, 1, 0, 0, 0], // created
      [0, 1, 1, 1, 0], // in_progress
      [0, 1, 1, 0, 0], // blocked
      [0, 0, 0, 1, 1], // completed
      [0, 0, 0, 0, 1], // archived
    ];
    let mut rejected = 0;
    for (i, from) in Status::ALL.into_iter().enumerate() {
      for (j, to) in Status::ALL.into_iter().enumerate() {
        let result = transition_status(from, to);
        if TABLE[i][j] == 1 {
          assert_eq!(result.unwrap(), to, "{from:?} -> {to:?}");
        } else {
          rejected += 1;
          let err = result.unwrap_err();
          assert_eq!(err.code(), "E_ILLEGAL_TRANSITION", "{from:?} -> {to:?}");
          assert_eq!(err.to_string(), format!("illegal status transition from {} to {}", from.as_str(), to.as_str()));
        }
      }
    }
    assert_eq!(rejected, 15);
  }

  #[test]
  fn names_round_trip() {
    for s in Status::ALL {
      assert_eq!(Status::parse(s.as_str()).unwrap(), s);
      assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{}\"", s.as_str()));
    }
    assert_eq!(Status::parse("done").unwrap_err().code(), "E_INVALID_ARGUMENT");
  }
}
