//! Positions, move generation (steps and jump chains under the lane rule),
//! terminal and illegal placements, and the rotation of a whole position.

use super::star::Star;
use crate::jumps::jump_chains;

/// A position: each player's pieces as a bitboard over cell indices, and the
/// player to move (0 = A, 1 = B, 2 = C).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    /// Bitboards of A's, B's and C's pieces.
    pub pieces: [u128; 3],
    /// The player to move.
    pub turn: u8,
}

/// Whether a placement is over, and for whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No goal is full.
    Ongoing,
    /// Exactly one goal is full: that player has won.
    Won(u8),
    /// Two or more goals are full: cannot arise in play.
    Illegal,
}

impl Position {
    /// The starting position: every player's corner of origin full, A to move.
    pub fn start(star: &Star) -> Position {
        Position { pieces: star.start_mask, turn: 0 }
    }

    /// All occupied cells.
    #[inline]
    pub fn occupied(&self) -> u128 {
        self.pieces[0] | self.pieces[1] | self.pieces[2]
    }

    /// Terminal and illegal placements, by the goals that are full.
    pub fn outcome(&self, star: &Star) -> Outcome {
        let mut winner = None;
        for p in 0..3 {
            if self.pieces[p] & star.goal_mask[p] == star.goal_mask[p] {
                if winner.is_some() {
                    return Outcome::Illegal;
                }
                winner = Some(p as u8);
            }
        }
        match winner {
            Some(p) => Outcome::Won(p),
            None => Outcome::Ongoing,
        }
    }

    /// The 120-degree rotation: cells rotate `(x,y,z) -> (z,x,y)`, players relabel
    /// A->B->C->A and the turn follows its player.
    pub fn rotated(&self, star: &Star) -> Position {
        Position {
            pieces: [
                star.rotate_bits(self.pieces[2]),
                star.rotate_bits(self.pieces[0]),
                star.rotate_bits(self.pieces[1]),
            ],
            turn: (self.turn + 1) % 3,
        }
    }
}

/// Destinations a piece of `player` standing on `from` can reach in one move:
/// steps to adjacent empty lane cells, and every cell a chain of jumps can end
/// on (chains never land on closed cells, never revisit, never end at `from`).
/// `occupied` must include the piece itself; `from` is treated as empty during
/// the chain but can never be jumped over (chains land on even offsets only).
#[inline]
pub fn destinations(star: &Star, player: usize, occupied: u128, from: usize) -> u128 {
    let empty_lane = star.lane_mask[player] & !occupied;
    if !star.narrow_jumps.is_empty() {
        // Stage 2's board fits a u64: the shared branch-free chains, without
        // the u128 shifts (most of this function's cost at stage 2).
        let chains = jump_chains(&star.narrow_jumps, from, occupied as u64, empty_lane as u64);
        return (chains | (star.step_mask[from] & empty_lane) as u64) as u128;
    }
    let mut dests = star.step_mask[from] & empty_lane;
    // Jump chains: breadth-first over landing cells. A chain only lands on even
    // offsets from `from`, so it can never jump over the (empty) origin.
    let mut visited = 1u128 << from;
    let mut frontier = 1u128 << from;
    while frontier != 0 {
        let c = frontier.trailing_zeros() as usize;
        frontier &= frontier - 1;
        for &(over, land) in &star.jumps[c] {
            let bit = 1u128 << land;
            if occupied & (1u128 << over) != 0 && empty_lane & bit != 0 && visited & bit == 0 {
                visited |= bit;
                frontier |= bit;
                dests |= bit;
            }
        }
    }
    dests
}

/// Calls `f(from, to)` for every move of `player` in the placement `pieces`
/// (ignoring whose turn it is and whether the game is over).
#[inline]
pub fn for_each_move(star: &Star, pieces: &[u128; 3], player: usize, f: &mut impl FnMut(usize, usize)) {
    let occupied = pieces[0] | pieces[1] | pieces[2];
    let mut own = pieces[player];
    while own != 0 {
        let from = own.trailing_zeros() as usize;
        own &= own - 1;
        let mut dests = destinations(star, player, occupied, from);
        while dests != 0 {
            let to = dests.trailing_zeros() as usize;
            dests &= dests - 1;
            f(from, to);
        }
    }
}

/// Number of moves of `player` in the placement.
pub fn move_count(star: &Star, pieces: &[u128; 3], player: usize) -> u32 {
    let occupied = pieces[0] | pieces[1] | pieces[2];
    let mut own = pieces[player];
    let mut n = 0;
    while own != 0 {
        let from = own.trailing_zeros() as usize;
        own &= own - 1;
        n += destinations(star, player, occupied, from).count_ones();
    }
    n
}

/// Every child of a position, in a fixed order: each legal move, or the pass
/// when the player to move has none. Terminal and illegal positions have none.
pub fn children(star: &Star, pos: &Position) -> Vec<Position> {
    let mut out = Vec::new();
    if pos.outcome(star) != Outcome::Ongoing {
        return out;
    }
    let p = pos.turn as usize;
    let next = (pos.turn + 1) % 3;
    for_each_move(star, &pos.pieces, p, &mut |from, to| {
        let mut pieces = pos.pieces;
        pieces[p] ^= (1u128 << from) | (1u128 << to);
        out.push(Position { pieces, turn: next });
    });
    if out.is_empty() {
        out.push(Position { pieces: pos.pieces, turn: next });
    }
    out
}
