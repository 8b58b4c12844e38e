//! A second method for the six-piece rows (issue 55): a brute-force solver
//! for 4 x 4 with six pieces a side, written from RULES.md section 2 alone.
//! It shares nothing with the engine but the position's text notation: its
//! own cell numbering (`y * m + x`), its own neighbours, areas, part-2
//! patterns and jump chains, a hash map instead of a ranking, and plain
//! fixpoint iteration over stored move lists instead of the kernel's
//! counter wavefront. Every one of the 3,363,360 positions must read the same
//! value from both, under both readings of the part-2 rule.

mod brute;

use brute::{Node, Value, engine_plies, engine_value, placements, plies_by_sweeps};
use std::collections::HashMap;

use retro_engine::layout::Layout;
use retro_engine::memsolve::solve;
use retro_games::cc2::{Cc2, Folding, Part2};
use retro_games::{Question, RetroGame};

const PIECES: u32 = 6;

/// The board as RULES.md section 2 draws it, in this file's own numbering.
struct Rules {
    /// The board's side.
    m: i32,
    /// Neighbours of each cell, by direction (`None` off the board).
    neighbours: Vec<[Option<usize>; 6]>,
    /// Start areas of player 1 (index 0) and player 2.
    start: [u32; 2],
    /// Goal areas: each player's goal is the other's start.
    goal: [u32; 2],
    /// Each player's goal: its tip and the four cells next to it.
    pattern: [(u32, u32); 2],
    /// True for the as-published reading of the part-2 rule.
    as_published: bool,
}

impl Rules {
    fn new(m: i32, as_published: bool) -> Rules {
        const DIRECTIONS: [(i32, i32); 6] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, -1), (-1, 1)];
        let cell = |x: i32, y: i32| ((0..m).contains(&x) && (0..m).contains(&y)).then_some((y * m + x) as usize);
        let bit = |x: i32, y: i32| 1u32 << cell(x, y).expect("on the board");
        let mut neighbours = vec![[None; 6]; (m * m) as usize];
        for y in 0..m {
            for x in 0..m {
                for (d, (dx, dy)) in DIRECTIONS.iter().enumerate() {
                    neighbours[cell(x, y).unwrap()][d] = cell(x + dx, y + dy);
                }
            }
        }
        // Six pieces: the triangle of diagonal rows 0, 1 and 2 (x + y <= 2);
        // player 2's start is its 180-degree image.
        let turn = |(x, y): (i32, i32)| (m - 1 - x, m - 1 - y);
        let area = |f: &dyn Fn((i32, i32)) -> (i32, i32)| -> u32 {
            let mut bits = 0;
            for y in 0..m {
                for x in 0..m {
                    if x + y <= 2 {
                        let (a, b) = f((x, y));
                        bits |= bit(a, b);
                    }
                }
            }
            bits
        };
        let start = [area(&|c| c), area(&turn)];
        // Player 2's goal is player 1's start: tip (0, 0), its neighbours
        // (1, 0) and (0, 1), the outer cells (2, 0) and (0, 2) of row 2.
        let around = |f: &dyn Fn((i32, i32)) -> (i32, i32)| -> (u32, u32) {
            let b = |c: (i32, i32)| {
                let (x, y) = f(c);
                bit(x, y)
            };
            (b((0, 0)), b((1, 0)) | b((0, 1)) | b((2, 0)) | b((0, 2)))
        };
        Rules {
            m,
            neighbours,
            start,
            goal: [start[1], start[0]],
            pattern: [around(&turn), around(&|c| c)],
            as_published,
        }
    }

    fn won(&self, side: [u32; 2], p: usize) -> bool {
        let goal = self.goal[p];
        (side[0] | side[1]) & goal == goal && side[p] & goal != 0
    }

    /// The part-2 pattern at either goal: its tip empty, the other player on
    /// all four cells next to it (not looked for, as published, when the
    /// player to move has no piece in its start or its goal).
    fn blocked(&self, side: [u32; 2], turn: usize) -> bool {
        if self.as_published && side[turn] & (self.start[turn] | self.goal[turn]) == 0 {
            return false;
        }
        (0..2).any(|p| {
            let (tip, ring) = self.pattern[p];
            (side[0] | side[1]) & tip == 0 && side[1 - p] & ring == ring
        })
    }

    fn illegal(&self, side: [u32; 2], turn: usize) -> bool {
        self.won(side, turn) || self.blocked(side, turn)
    }

    /// Cells the piece on `from` can end a move on: steps onto empty cells,
    /// and every cell a chain of jumps over single pieces reaches (its own
    /// cell empty meanwhile), except `from`.
    fn ends(&self, from: usize, occupied: u32) -> u32 {
        let occupied = occupied & !(1 << from);
        let mut ends = 0u32;
        for n in self.neighbours[from].iter().flatten() {
            if occupied & (1 << n) == 0 {
                ends |= 1 << n;
            }
        }
        let mut reached = 1u32 << from;
        let mut stack = vec![from];
        while let Some(c) = stack.pop() {
            for d in 0..6 {
                let Some(over) = self.neighbours[c][d] else { continue };
                let Some(land) = self.neighbours[over][d] else { continue };
                if occupied & (1 << over) != 0 && occupied & (1 << land) == 0 && reached & (1 << land) == 0 {
                    reached |= 1 << land;
                    stack.push(land);
                }
            }
        }
        (ends | reached) & !(1 << from)
    }

    /// The positions the player to move can move to (never an illegal one).
    fn moves(&self, side: [u32; 2], turn: usize) -> Vec<[u32; 2]> {
        let mut out = Vec::new();
        let occupied = side[0] | side[1];
        for from in (0..self.neighbours.len()).filter(|&c| side[turn] & (1 << c) != 0) {
            let mut ends = self.ends(from, occupied);
            while ends != 0 {
                let to = ends.trailing_zeros();
                ends &= ends - 1;
                let mut next = side;
                next[turn] = next[turn] & !(1 << from) | (1 << to);
                if !self.illegal(next, 1 - turn) {
                    out.push(next);
                }
            }
        }
        out
    }

    /// The cell named `name` (column letter from x, row number from y).
    fn named(&self, name: &str) -> u32 {
        let x = (name.as_bytes()[0] - b'a') as i32;
        let y = name[1..].parse::<i32>().expect("a row number") - 1;
        assert!((0..self.m).contains(&x) && (0..self.m).contains(&y), "{name} is on the board");
        1 << (y * self.m + x)
    }
}

/// Every placement of both sides' pieces with either to move, each with its
/// index in the list.
#[allow(clippy::type_complexity)]
fn every_state(rules: &Rules) -> (HashMap<([u32; 2], usize), usize>, Vec<([u32; 2], usize)>) {
    let mut index = HashMap::new();
    let mut keys = Vec::new();
    let all = (1u32 << rules.neighbours.len()) - 1;
    for a in placements(all, PIECES) {
        for b in placements(all & !a, PIECES) {
            for turn in 0..2 {
                index.insert(([a, b], turn), keys.len());
                keys.push(([a, b], turn));
            }
        }
    }
    (index, keys)
}

/// Solves every position by fixpoint iteration: a position is won when a
/// move reaches a lost one, lost when it is terminal, has no move, or every
/// move reaches a won one; what never settles is a draw.
fn brute_force(rules: &Rules) -> HashMap<([u32; 2], usize), Value> {
    let (index, keys) = every_state(rules);
    let mut value = vec![Value::Draw; keys.len()];
    // Move lists of the live positions, as indices, one after the other.
    let (mut starts, mut targets, mut live) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &(side, turn)) in keys.iter().enumerate() {
        if rules.illegal(side, turn) {
            value[i] = Value::Illegal;
        } else if rules.won(side, 1 - turn) {
            value[i] = Value::Loss;
        } else {
            starts.push(targets.len());
            targets.extend(rules.moves(side, turn).into_iter().map(|next| index[&(next, 1 - turn)] as u32));
            live.push(i);
        }
    }
    starts.push(targets.len());
    let mut open: Vec<usize> = (0..live.len()).collect();
    loop {
        let before = open.len();
        open.retain(|&k| {
            let children = &targets[starts[k]..starts[k + 1]];
            let settled = if children.iter().any(|&c| value[c as usize] == Value::Loss) {
                Value::Win
            } else if children.iter().all(|&c| value[c as usize] == Value::Win) {
                Value::Loss
            } else {
                return true;
            };
            value[live[k]] = settled;
            false
        });
        if open.len() == before {
            break;
        }
    }
    keys.into_iter().zip(value).collect()
}

/// Parses the engine's notation `a1,b2,.../c3,... 1` into this file's sides.
fn parse(rules: &Rules, text: &str) -> ([u32; 2], usize) {
    let (placement, turn) = text.rsplit_once(' ').expect("a player to move");
    let (one, two) = placement.split_once('/').expect("two sides");
    let cells = |list: &str| -> u32 { list.split(',').map(|name| rules.named(name)).fold(0, |acc, b| acc | b) };
    ([cells(one), cells(two)], turn.parse::<usize>().expect("1 or 2") - 1)
}

#[test]
fn four_by_four_six_pieces_agree_with_a_brute_force_solver_on_every_position() {
    for (part2, as_published) in [(Part2::Literal, false), (Part2::AsPublished, true)] {
        let rules = Rules::new(4, as_published);
        let brute = brute_force(&rules);
        let g = Cc2::with_rules(4, PIECES, Folding::default(), part2).unwrap();
        assert_eq!(g.position_count(), brute.len() as u64);
        let solved = solve(&g, Question::solo(0), &Layout::new(g.position_count(), 4, 1 << 12, 1 << 16), 2).unwrap();
        let mut tally = HashMap::new();
        for rank in 0..g.position_count() {
            let text = g.format(&g.unrank(rank));
            let (side, turn) = parse(&rules, &text);
            // The engine's values are player 1's; the brute force's the mover's.
            let for_player_1 = match (brute[&(side, turn)], turn) {
                (Value::Win, 1) => Value::Loss,
                (Value::Loss, 1) => Value::Win,
                (v, _) => v,
            };
            let engine = engine_value(solved.bytes[rank as usize], &text);
            assert_eq!(engine, for_player_1, "{part2:?}: {text}");
            *tally.entry(engine).or_insert(0u64) += 1;
        }
        // The public solver's row (jh85/smallgames), both readings.
        let row = [Value::Win, Value::Loss, Value::Draw, Value::Illegal].map(|v| tally.get(&v).copied().unwrap_or(0));
        assert_eq!(row, [1_436_159, 1_436_159, 85_622, 405_420], "{part2:?}");
    }
}

/// The two readings differ only where the player to move has no piece in its
/// start or goal area, which six pieces cannot do on 4 x 4. On 5 x 5 they
/// can: there the literal pattern holds on C(13,6) x C(14,2) x 2 = 312,312
/// such positions (the opponent on the four cells around the mover's goal
/// tip, its other two pieces on any of the 14 cells left), exactly the
/// difference between the literal illegal count (64,173,018) and the
/// published one (63,860,706). The engine's board must say the same as this
/// file's rules on every one of them, under both readings.
#[test]
fn on_five_by_five_the_readings_differ_on_the_positions_the_published_count_leaves_out() {
    use retro_games::cc2::Board;
    let literal = Rules::new(5, false);
    let published = Rules::new(5, true);
    let engine = [Part2::Literal, Part2::AsPublished].map(|p| Board::with_part2(5, PIECES, p).unwrap());
    // This file's cells in the engine's numbering, through the names.
    let to_engine: Vec<u64> = (0..25)
        .map(|c| {
            let name = format!("{}{}", (b'a' + (c % 5) as u8) as char, c / 5 + 1);
            1u64 << engine[0].cell_by_name(&name).expect("the same board")
        })
        .collect();
    let convert = |cells: u32| -> u64 { (0..25).filter(|c| cells & (1 << c) != 0).map(|c| to_engine[c]).sum() };
    let mut differ = 0u64;
    for turn in 0..2 {
        let middle = !(literal.start[turn] | literal.goal[turn]) & ((1 << 25) - 1);
        for mover in placements(middle, PIECES) {
            let theirs = placements(((1 << 25) - 1) & !mover, PIECES);
            for other in theirs {
                let mut side = [0; 2];
                (side[turn], side[1 - turn]) = (mover, other);
                let (a, b) = (literal.blocked(side, turn), published.blocked(side, turn));
                assert!(!b, "as published, nothing is looked for here");
                let pieces = [convert(side[0]), convert(side[1])];
                assert_eq!(engine[0].blockaded(&pieces, turn), a, "{side:?} {turn}");
                assert!(!engine[1].blockaded(&pieces, turn), "{side:?} {turn}");
                differ += u64::from(a);
            }
        }
    }
    assert_eq!(differ, 1716 * 91 * 2);
    assert_eq!(differ, 64_173_018 - 63_860_706);
}

/// The depth the engine keeps (the round each position was decided in) is
/// the plies to the end under best play: on every position of 4 x 4 with six
/// pieces it equals what synchronous sweeps over this file's own move lists
/// give ([`brute::plies_by_sweeps`]), and the sweeps' values are the engine's.
#[test]
fn four_by_four_depths_agree_with_synchronous_sweeps_on_every_position() {
    let rules = Rules::new(4, false);
    let (index, keys) = every_state(&rules);
    // Player 1 (index 0) is MAX, as in the engine's solo(1).
    let nodes: Vec<Node> = keys
        .iter()
        .map(|&(side, turn)| {
            if rules.illegal(side, turn) {
                return Node::Illegal;
            }
            let moves = rules.moves(side, turn);
            // Won by the player who just moved, or the mover has no move: over.
            if rules.won(side, 1 - turn) || moves.is_empty() {
                return Node::Finished { max_won: turn == 1 };
            }
            let children = moves.into_iter().map(|next| index[&(next, 1 - turn)]).collect();
            Node::Live { max_moves: turn == 0, children }
        })
        .collect();
    let swept = plies_by_sweeps(&nodes);
    let g = Cc2::with_rules(4, PIECES, Folding::default(), Part2::Literal).unwrap();
    let solved = solve(&g, Question::solo(0), &Layout::new(g.position_count(), 4, 1 << 12, 1 << 16), 2).unwrap();
    let mut deepest = 0;
    for rank in 0..g.position_count() {
        let text = g.format(&g.unrank(rank));
        let (value, plies) = swept[index[&parse(&rules, &text)]];
        assert_eq!(engine_value(solved.bytes[rank as usize], &text), value, "{text}");
        assert_eq!(engine_plies(solved.depth[rank as usize], &text), plies, "{text}");
        deepest = deepest.max(plies.unwrap_or(0));
    }
    // The deepest win is the layer's last deciding round.
    assert_eq!(deepest as usize, solved.rounds.len(), "the deepest position");
}
