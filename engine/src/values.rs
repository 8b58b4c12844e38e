//! The one-byte cell state of a position while a layer is being solved, and
//! the round in which a decided position was decided (its depth).
//!
//! A layer's [`Codes`] cut the 256 byte values in four:
//!
//! - `0..=counter_max`: undecided, holding the number of children not yet
//!   known to be bad for the player to move (`counter_max` is the most
//!   children a position of the game can have, [`RetroGame::max_children`]).
//!   What is undecided at the fixpoint is a DRAW.
//! - `counter_max + 1 ..` [`LOSS_TERMINAL`]: one WIN code and one LOSS code per
//!   round `r < tagged_rounds` (WIN at `counter_max + 1 + 2r`, LOSS one above).
//!   A position decided in round `r` keeps its round's code for good: the next
//!   round finds its frontier by the code, and the tablebase's depth file
//!   reads the round from it. Rounds count plies: a position decided in round
//!   `r` is `r` plies from the end under best play (the winner hurrying, the
//!   loser delaying), which is what [`Codes::depth`] gives.
//! - [`LOSS_TERMINAL`]: a finished position that is a LOSS and must not
//!   propagate (a two-valued layer's, or one a seeded layer knows): depth 0.
//! - Rounds from `tagged_rounds` on share the four "new" codes of parity
//!   `r % 2`, which the next round's apply pass settles into [`WIN`] or
//!   [`LOSS`]; their depth is not kept ([`DEPTH_UNKNOWN`]). So are the LOSS
//!   decisions of a layer seeded with known losses
//!   ([`crate::kernel::init_with_known_losses`]), whose rounds are not plies:
//!   a seeded layer's LOSS codes are always the parity codes.
//!
//! [`RetroGame::max_children`]: retro_games::RetroGame::max_children

use retro_games::RetroGame;

/// Most children a state byte can count: the codes from [`LOSS_TERMINAL`] up
/// are not counters.
pub const COUNTER_LIMIT: u8 = 247;
/// A terminal LOSS that never propagates (depth 0).
pub const LOSS_TERMINAL: u8 = 248;
/// WIN decided in an even untagged round, not yet propagated.
pub const WIN_NEW_EVEN: u8 = 249;
/// WIN decided in an odd untagged round, not yet propagated.
pub const WIN_NEW_ODD: u8 = 250;
/// LOSS decided in an even untagged round, not yet propagated.
pub const LOSS_NEW_EVEN: u8 = 251;
/// LOSS decided in an odd untagged round, not yet propagated.
pub const LOSS_NEW_ODD: u8 = 252;
/// WIN, settled (its round is not kept).
pub const WIN: u8 = 253;
/// LOSS, settled (its round is not kept).
pub const LOSS: u8 = 254;
/// A placement that cannot arise in play.
pub const ILLEGAL: u8 = 255;

/// Depth byte of a WIN or LOSS position whose round is not kept.
pub const DEPTH_UNKNOWN: u8 = 254;
/// Depth byte of a DRAW or an illegal placement: no end to count plies to.
pub const DEPTH_NONE: u8 = 255;

/// The code layout of one layer (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Codes {
    /// Largest counter value.
    pub counter_max: u8,
    /// Rounds `0..tagged_rounds` have codes of their own.
    pub tagged_rounds: u32,
    /// Whether LOSS decisions are tagged too (false in a seeded layer).
    pub loss_tagged: bool,
}

impl Codes {
    /// The layout for positions of at most `max_children` children (capped at
    /// [`COUNTER_LIMIT`]; the move count pass fails on a position with more).
    /// `seeded`: the layer starts from known losses, whose LOSS rounds are not
    /// plies.
    pub fn new(max_children: u32, seeded: bool) -> Codes {
        let counter_max = max_children.clamp(1, u32::from(COUNTER_LIMIT)) as u8;
        let tagged_rounds = u32::from(LOSS_TERMINAL - counter_max - 1) / 2;
        Codes { counter_max, tagged_rounds, loss_tagged: !seeded }
    }

    /// The layout for a layer of `game`.
    pub fn of(game: &impl RetroGame, seeded: bool) -> Codes {
        Codes::new(game.max_children(), seeded)
    }

    /// The first tag code.
    #[inline]
    fn tag_base(&self) -> u8 {
        self.counter_max + 1
    }

    /// The "new WIN" code for round `round`.
    #[inline]
    pub fn win_new(&self, round: u32) -> u8 {
        if round < self.tagged_rounds {
            self.tag_base() + 2 * round as u8
        } else if round.is_multiple_of(2) {
            WIN_NEW_EVEN
        } else {
            WIN_NEW_ODD
        }
    }

    /// The "new LOSS" code for round `round`.
    #[inline]
    pub fn loss_new(&self, round: u32) -> u8 {
        if self.loss_tagged && round < self.tagged_rounds {
            self.tag_base() + 2 * round as u8 + 1
        } else if round.is_multiple_of(2) {
            LOSS_NEW_EVEN
        } else {
            LOSS_NEW_ODD
        }
    }

    /// Whether round `round`'s codes must be settled after the next round has
    /// propagated them (the parity codes are used again two rounds later).
    #[inline]
    pub fn needs_settling(&self, round: u32) -> bool {
        round >= self.tagged_rounds || !self.loss_tagged
    }

    /// True when the position has a WIN or LOSS value (or is illegal).
    #[inline]
    pub fn is_decided(&self, code: u8) -> bool {
        code > self.counter_max
    }

    /// The 2-bit tablebase value of a state byte: 0 DRAW, 1 WIN, 2 LOSS, 3 ILLEGAL.
    #[inline]
    pub fn tablebase_value(&self, code: u8) -> u8 {
        match code {
            c if c <= self.counter_max => 0,
            c if c < LOSS_TERMINAL => 1 + (c - self.tag_base()) % 2,
            c => tablebase_value(c),
        }
    }

    /// The depth byte of a state byte: the round a tagged code was decided in
    /// (plies to the end), 0 for [`LOSS_TERMINAL`], [`DEPTH_UNKNOWN`] for a
    /// settled or parity code, [`DEPTH_NONE`] for a counter (DRAW) or ILLEGAL.
    #[inline]
    pub fn depth(&self, code: u8) -> u8 {
        match code {
            c if c <= self.counter_max || c == ILLEGAL => DEPTH_NONE,
            c if c < LOSS_TERMINAL => (c - self.tag_base()) / 2,
            LOSS_TERMINAL => 0,
            _ => DEPTH_UNKNOWN,
        }
    }

    /// The settled byte: WIN or LOSS for every decided code, the rest as is.
    #[inline]
    pub fn settle(&self, code: u8) -> u8 {
        match self.tablebase_value(code) {
            1 => WIN,
            2 => LOSS,
            _ => code,
        }
    }
}

/// The state byte of an undecided position holding `cur` after one child's
/// update, in a round whose "new" codes are `win_new` and `loss_new`: decided
/// at once when the child is good for the player to move (`good`), decided
/// against that player when this was its last open child, else one open
/// child fewer. `is_max`: the player to move is on the MAX side.
#[inline]
pub fn after_update(cur: u8, good: bool, is_max: bool, win_new: u8, loss_new: u8) -> u8 {
    if good {
        if is_max { win_new } else { loss_new }
    } else if cur == 1 {
        if is_max { loss_new } else { win_new }
    } else {
        cur - 1
    }
}

/// The 2-bit tablebase value of a settled byte ([`Codes::settle`]: only
/// counters, WIN, LOSS and ILLEGAL): 0 DRAW, 1 WIN, 2 LOSS, 3 ILLEGAL.
#[inline]
pub fn tablebase_value(code: u8) -> u8 {
    match code {
        WIN | WIN_NEW_EVEN | WIN_NEW_ODD => 1,
        LOSS | LOSS_NEW_EVEN | LOSS_NEW_ODD | LOSS_TERMINAL => 2,
        ILLEGAL => 3,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code of every round has one reading, and the tags do not reach
    /// the fixed codes.
    #[test]
    fn codes_are_distinct_and_read_back() {
        for max in [1, 10, 54, 84, 126, 200, 246, 247, 300] {
            for seeded in [false, true] {
                let c = Codes::new(max, seeded);
                assert!(u32::from(c.counter_max) + 1 + 2 * c.tagged_rounds <= u32::from(LOSS_TERMINAL));
                let mut seen = std::collections::HashSet::new();
                for r in 0..c.tagged_rounds {
                    let (w, l) = (c.win_new(r), c.loss_new(r));
                    assert!(c.is_decided(w) && c.is_decided(l));
                    assert_eq!((c.tablebase_value(w), c.tablebase_value(l)), (1, 2), "max {max} round {r}");
                    assert_eq!(c.depth(w), r as u8);
                    assert!(seen.insert(w), "max {max}: WIN code of round {r} used twice");
                    if seeded {
                        assert_eq!(c.depth(l), DEPTH_UNKNOWN);
                        assert!(c.needs_settling(r));
                    } else {
                        assert_eq!(c.depth(l), r as u8);
                        assert!(seen.insert(l), "max {max}: LOSS code of round {r} used twice");
                        assert!(!c.needs_settling(r));
                    }
                    assert!(w < LOSS_TERMINAL && l <= LOSS_NEW_ODD);
                }
                for r in c.tagged_rounds..c.tagged_rounds + 4 {
                    assert_eq!(c.depth(c.win_new(r)), DEPTH_UNKNOWN);
                    assert_eq!(c.tablebase_value(c.loss_new(r)), 2);
                    assert!(c.needs_settling(r));
                }
                for counter in 0..=c.counter_max {
                    assert!(!c.is_decided(counter));
                    assert_eq!((c.tablebase_value(counter), c.depth(counter)), (0, DEPTH_NONE));
                    assert_eq!(c.settle(counter), counter);
                }
                assert_eq!((c.tablebase_value(LOSS_TERMINAL), c.depth(LOSS_TERMINAL)), (2, 0));
                assert_eq!((c.tablebase_value(ILLEGAL), c.depth(ILLEGAL)), (3, DEPTH_NONE));
                for code in 0..=255u8 {
                    assert_eq!(tablebase_value(c.settle(code)), c.tablebase_value(code), "max {max} code {code}");
                }
            }
        }
    }

    /// The layouts the project's games get: deep enough for their published rounds.
    #[test]
    fn tagged_rounds_of_known_bounds() {
        assert_eq!(Codes::new(84, false).tagged_rounds, 81);
        assert_eq!(Codes::new(247, false).tagged_rounds, 0);
        assert_eq!(Codes::new(246, false).tagged_rounds, 0);
        assert_eq!(Codes::new(245, false).tagged_rounds, 1);
    }
}
