//! Deciding one single-survivor problem by depth-first search.
//!
//! The search remembers every position it has shown cannot reach the finish,
//! so it visits each reachable position at most once: when it ends without a
//! solution, it has searched every position reachable from the start, which
//! is a proof of impossibility. Positions are remembered up to the symmetries
//! that fix the finishing hole (they cannot change the answer).

use super::symmetry::{apply, images};
use super::{Board, Jump, Pegs};
use std::collections::HashSet;

/// What a search found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A jump sequence from the start to the lone peg.
    Solved(Vec<Jump>),
    /// Every reachable position was searched; none leads to the finish.
    Impossible,
    /// The position budget ran out first.
    Undecided,
}

/// The outcome and the number of distinct positions the search expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Search {
    /// What was found.
    pub outcome: Outcome,
    /// Distinct positions expanded (up to the finish's symmetries).
    pub positions: u64,
}

struct Searcher<'a> {
    board: &'a Board,
    finish: Pegs,
    /// Symmetries that fix the finishing hole.
    keep: Vec<usize>,
    failed: HashSet<u64, BuildMix>,
    budget: u64,
    path: Vec<Jump>,
}

/// A multiplicative hasher: keys are already well spread bitboards.
#[derive(Clone, Copy, Default)]
struct BuildMix;
struct Mix(u64);
impl std::hash::BuildHasher for BuildMix {
    type Hasher = Mix;
    fn build_hasher(&self) -> Mix {
        Mix(0)
    }
}
impl std::hash::Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        let m = (x ^ (x >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = m ^ (m >> 29);
    }
}

impl Searcher<'_> {
    fn key(&self, pegs: Pegs) -> u64 {
        let all = images(pegs);
        self.keep.iter().map(|&s| all[s]).min().unwrap_or(pegs)
    }

    /// True when `pegs` reaches the finish; `None` when the budget ran out.
    fn reaches(&mut self, pegs: Pegs) -> Option<bool> {
        if pegs.count_ones() == 1 {
            return Some(pegs == self.finish);
        }
        let key = self.key(pegs);
        if self.failed.contains(&key) {
            return Some(false);
        }
        for jump in self.board.jumps(pegs) {
            if self.reaches(pegs ^ jump.mask())? {
                self.path.push(jump);
                return Some(true);
            }
        }
        if self.failed.len() as u64 >= self.budget {
            return None;
        }
        self.failed.insert(key);
        Some(false)
    }
}

/// Decides whether `start` can be reduced to one peg on `finish`, expanding
/// at most `budget` distinct positions.
pub fn solve(board: &Board, start: Pegs, finish: u8, budget: u64) -> Search {
    let lone: Pegs = 1 << finish;
    let keep = (0..8).filter(|&s| apply(s, lone) == lone).collect();
    let mut searcher =
        Searcher { board, finish: lone, keep, failed: HashSet::with_hasher(BuildMix), budget, path: Vec::new() };
    let outcome = match searcher.reaches(start) {
        Some(true) => {
            searcher.path.reverse();
            Outcome::Solved(std::mem::take(&mut searcher.path))
        }
        Some(false) => Outcome::Impossible,
        None => Outcome::Undecided,
    };
    Search { outcome, positions: searcher.failed.len() as u64 }
}

/// A jump of a replayed sequence that the position before it does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("jump {number} ({}-{}) is not legal", super::hole_name(.jump.from), super::hole_name(.jump.to))]
pub struct IllegalJump {
    /// Its place in the sequence, counted from 1.
    pub number: usize,
    /// The jump.
    pub jump: Jump,
}

/// Plays `jumps` from `start`, checking each is legal; returns the final position.
pub fn replay(board: &Board, start: Pegs, jumps: &[Jump]) -> Result<Pegs, IllegalJump> {
    let mut pegs = start;
    for (i, j) in jumps.iter().enumerate() {
        if !board.jumps(pegs).contains(j) {
            return Err(IllegalJump { number: i + 1, jump: *j });
        }
        pegs ^= j.mask();
    }
    Ok(pegs)
}
