//! The kinds of game the project solves, named once: plans, job specs,
//! summaries and tablebase headers spell them `cc3`, `cc2`, `peg` and
//! `sylver`, and every other place matches this enum instead of the text.

use std::fmt;
use std::str::FromStr;

/// A kind of game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GameKind {
    /// Three-player Chinese checkers on a star of order n (retrograde layers).
    Cc3,
    /// Two-player Chinese checkers on an m x m board (retrograde, one layer).
    Cc2,
    /// Peg solitaire (breadth-first levels, and the problem table).
    Peg,
    /// Sylver coinage (memoised search, a table of rows by m-class).
    Sylver,
}

impl GameKind {
    /// Every kind, in the order help texts list them.
    pub const ALL: [GameKind; 4] = [GameKind::Cc3, GameKind::Cc2, GameKind::Peg, GameKind::Sylver];

    /// The name plans and files use.
    pub fn as_str(self) -> &'static str {
        match self {
            GameKind::Cc3 => "cc3",
            GameKind::Cc2 => "cc2",
            GameKind::Peg => "peg",
            GameKind::Sylver => "sylver",
        }
    }

    /// Whether the game is solved by retrograde layers into tablebase files.
    pub fn is_retrograde(self) -> bool {
        self.job_kind() == JobKind::Retrograde
    }

    /// How the game is solved, which is the kind of job that runs it
    /// (peg problem tables run embedded only, but a peg plan's job is levels).
    pub fn job_kind(self) -> JobKind {
        match self {
            GameKind::Cc3 | GameKind::Cc2 => JobKind::Retrograde,
            GameKind::Peg => JobKind::Levels,
            GameKind::Sylver => JobKind::Tasks,
        }
    }
}

/// The kinds of distributed job: how a game's work is cut and handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    /// Retrograde layers: wavefront rounds over shards of a dense rank space.
    Retrograde,
    /// Breadth-first levels over hash shards (peg solitaire).
    Levels,
    /// Independent tasks from a queue (Sylver m-classes).
    Tasks,
}

impl fmt::Display for GameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no [`GameKind`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown game {:?} (known: {})", .0, GameKind::ALL.map(GameKind::as_str).join(", "))]
pub struct UnknownGame(pub String);

impl FromStr for GameKind {
    type Err = UnknownGame;

    fn from_str(s: &str) -> Result<GameKind, UnknownGame> {
        GameKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownGame(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_print_and_serialize_alike() {
        for k in GameKind::ALL {
            assert_eq!(k.as_str().parse::<GameKind>(), Ok(k));
            assert_eq!(k.to_string(), k.as_str());
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
            assert_eq!(serde_json::from_str::<GameKind>(&format!("\"{k}\"")).unwrap(), k);
        }
        let jobs: Vec<String> = GameKind::ALL.iter().map(|k| serde_json::to_string(&k.job_kind()).unwrap()).collect();
        assert_eq!(jobs, ["\"retrograde\"", "\"retrograde\"", "\"levels\"", "\"tasks\""]);
        let e = "chess".parse::<GameKind>().unwrap_err();
        assert!(e.to_string().contains("unknown game \"chess\""), "{e}");
        assert!(serde_json::from_str::<GameKind>("\"CC3\"").is_err());
    }
}
