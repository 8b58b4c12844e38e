//! Plies to the end of a decided question, found by a bounded search.
//!
//! The tablebases hold 2-bit values (win, loss, draw), not the round in which
//! a position was decided, so the depth is searched for: iterative deepening
//! over "can the forcing side reach its objective within d plies?", where the
//! forcing side only considers children the tablebase already calls won for it
//! and the other side must be beaten on every child. Results are memoised per
//! position (a lower bound that failed, an upper bound that held), so each
//! deepening step costs about the positions within reach, not the tree. A node
//! budget keeps a deep answer on a large board from holding up the page: past
//! it the depth is reported as unknown. So does the request's [`Stop`]
//! (deadline, client gone), looked at every [`STOP_EVERY`] positions.

use super::limits::Stop;
use retro_probe::ProbeError;
use std::collections::HashMap;
use std::hash::Hash;

/// What the search needs from a game and one question's tablebase values.
pub trait Forcing {
    /// A position.
    type Pos: Copy + Eq + Hash;
    /// The children of an ongoing position (empty for a finished one).
    fn children(&self, pos: &Self::Pos) -> Vec<Self::Pos>;
    /// True when the forcing side moves at `pos`.
    fn forcer_moves(&self, pos: &Self::Pos) -> bool;
    /// True when the forcing side's objective holds at `pos` in the tablebase
    /// (a finished position has reached it, an ongoing one can force it).
    fn forced(&mut self, pos: &Self::Pos) -> Result<bool, ProbeError>;
    /// True when the game is over at `pos`.
    fn finished(&self, pos: &Self::Pos) -> bool;
}

/// Most plies the search deepens to (deeper answers are reported unknown).
pub const MAX_PLIES: u32 = 400;

/// Positions between two looks at the request's [`Stop`].
pub const STOP_EVERY: u64 = 1024;

/// Per position: the largest depth known not to suffice, and the smallest
/// known to suffice.
#[derive(Clone, Copy, Default)]
struct Bounds {
    fails_at: Option<u32>,
    holds_at: Option<u32>,
}

struct Search<'a, F: Forcing> {
    game: &'a mut F,
    memo: HashMap<F::Pos, Bounds>,
    /// The tablebase's word per position: each deepening step asks again, and
    /// a lookup may decompress a block.
    forced: HashMap<F::Pos, bool>,
    budget: u64,
    stop: &'a Stop,
}

/// Why a search gave up.
enum GiveUp {
    /// The budget ran out, or the request must stop.
    Budget,
    /// The tablebase could not be read.
    Error(ProbeError),
}

impl<F: Forcing> Search<'_, F> {
    fn forced(&mut self, pos: &F::Pos) -> Result<bool, GiveUp> {
        if let Some(&f) = self.forced.get(pos) {
            return Ok(f);
        }
        let f = self.game.forced(pos).map_err(GiveUp::Error)?;
        self.forced.insert(*pos, f);
        Ok(f)
    }

    /// Can the forcing side reach its objective from `pos` within `d` plies?
    /// `pos` is known to be forced (the tablebase says so).
    fn within(&mut self, pos: F::Pos, d: u32) -> Result<bool, GiveUp> {
        let b = self.memo.get(&pos).copied().unwrap_or_default();
        if b.holds_at.is_some_and(|h| h <= d) {
            return Ok(true);
        }
        if b.fails_at.is_some_and(|f| f >= d) {
            return Ok(false);
        }
        if self.budget == 0 || (self.budget.is_multiple_of(STOP_EVERY) && self.stop.check().is_some()) {
            return Err(GiveUp::Budget);
        }
        self.budget -= 1;
        let holds = if self.game.finished(&pos) {
            true
        } else if d == 0 {
            false
        } else {
            let kids = self.game.children(&pos);
            if self.game.forcer_moves(&pos) {
                let mut any = false;
                for c in kids {
                    if self.forced(&c)? && self.within(c, d - 1)? {
                        any = true;
                        break;
                    }
                }
                any
            } else {
                let mut all = true;
                for c in kids {
                    // Every child of a forced position where the other side
                    // moves is forced too; one that is not would mean the
                    // tablebase disagrees with itself, and cannot be won here.
                    if !self.forced(&c)? || !self.within(c, d - 1)? {
                        all = false;
                        break;
                    }
                }
                all
            }
        };
        let e = self.memo.entry(pos).or_default();
        if holds {
            e.holds_at = Some(e.holds_at.map_or(d, |h| h.min(d)));
        } else {
            e.fails_at = Some(e.fails_at.map_or(d, |f| f.max(d)));
        }
        Ok(holds)
    }
}

/// Plies from `pos` (which the tablebase calls forced) to the end when the
/// forcing side hurries and the other side delays: `Ok(None)` when the search
/// ran out of `budget` positions (what it used is taken off) or [`MAX_PLIES`],
/// or `stop` said stop (the caller asks it why).
pub fn plies_to_end<F: Forcing>(
    game: &mut F,
    pos: F::Pos,
    budget: &mut u64,
    stop: &Stop,
) -> Result<Option<u32>, ProbeError> {
    let mut s = Search { game, memo: HashMap::new(), forced: HashMap::new(), budget: *budget, stop };
    let mut found = None;
    for d in 0..=MAX_PLIES {
        match s.within(pos, d) {
            Ok(true) => {
                found = Some(d);
                break;
            }
            Ok(false) => {}
            Err(GiveUp::Budget) => break,
            Err(GiveUp::Error(e)) => return Err(e),
        }
    }
    *budget = s.budget;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A game on a small graph: node -> children, the forcer's nodes, the
    /// finished nodes that reach the objective.
    struct Graph {
        edges: Vec<Vec<usize>>,
        forcer: Vec<bool>,
        forced: Vec<bool>,
        finished: Vec<bool>,
    }

    impl Forcing for Graph {
        type Pos = usize;
        fn children(&self, p: &usize) -> Vec<usize> {
            self.edges[*p].clone()
        }
        fn forcer_moves(&self, p: &usize) -> bool {
            self.forcer[*p]
        }
        fn forced(&mut self, p: &usize) -> Result<bool, ProbeError> {
            Ok(self.forced[*p])
        }
        fn finished(&self, p: &usize) -> bool {
            self.finished[*p]
        }
    }

    #[test]
    fn forcer_hurries_and_the_other_side_delays() {
        // 0 (forcer): to 1 (a long way) or to 2 (short); 2 (other side): to
        // 3 (finished) or 4 -> 3; 1 -> 5 -> 4 -> 3; 6 is a forced cycle
        // member that can also end, 6 <-> 7 with 7 -> 3.
        let g = &mut Graph {
            edges: vec![vec![1, 2], vec![5], vec![3, 4], vec![], vec![3], vec![4], vec![7], vec![6, 3]],
            forcer: vec![true, true, false, true, true, true, true, true],
            forced: vec![true; 8],
            finished: vec![false, false, false, true, false, false, false, false],
        };
        assert_eq!(plies_to_end(g, 3, &mut 100, &Stop::never()).unwrap(), Some(0));
        assert_eq!(
            plies_to_end(g, 2, &mut 100, &Stop::never()).unwrap(),
            Some(2),
            "the other side takes the longer branch"
        );
        assert_eq!(
            plies_to_end(g, 0, &mut 100, &Stop::never()).unwrap(),
            Some(3),
            "the forcer takes the shorter branch"
        );
        assert_eq!(plies_to_end(g, 6, &mut 100, &Stop::never()).unwrap(), Some(2), "the cycle is left at once");
        assert_eq!(plies_to_end(g, 0, &mut 2, &Stop::never()).unwrap(), None, "out of budget");
        let mut budget = 100;
        plies_to_end(g, 0, &mut budget, &Stop::never()).unwrap();
        assert!((50..100).contains(&budget), "what the search used is taken off: {budget} left");
        assert_eq!(plies_to_end(g, 0, &mut 0, &Stop::never()).unwrap(), None);
        // Past the request's deadline: stopped at the first look (a budget of
        // STOP_EVERY looks at once).
        let (late, _guard) = Stop::new(std::time::Duration::ZERO);
        let (mut b1, mut b2) = (STOP_EVERY, STOP_EVERY);
        assert_eq!(plies_to_end(g, 0, &mut b1, &late).unwrap(), None, "stopped");
        assert_eq!(plies_to_end(g, 0, &mut b2, &Stop::never()).unwrap(), Some(3));
    }

    #[test]
    fn children_the_tablebase_does_not_force_are_skipped() {
        // 0 (forcer): 1 ends at once but not with the objective (another
        // player won), 2 -> 3 reaches it.
        let g = &mut Graph {
            edges: vec![vec![1, 2], vec![], vec![3], vec![]],
            forcer: vec![true, false, true, true],
            forced: vec![true, false, true, true],
            finished: vec![false, true, false, true],
        };
        assert_eq!(plies_to_end(g, 0, &mut 100, &Stop::never()).unwrap(), Some(2));
    }
}
