//! What the brute-force solvers of the test files share: their value type,
//! the reading of the engine's value bytes in its terms, and the placements
//! of pieces on a set of cells (nothing of the rules, moves or ranking,
//! which each solver writes on its own).

use retro_engine::tablebase::{VALUE_DRAW, VALUE_ILLEGAL, VALUE_LOSS, VALUE_WIN};
use retro_engine::values::tablebase_value;

/// A value of a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    Win,
    Loss,
    Draw,
    Illegal,
}

/// The engine's value in a solved state byte; `what` names the position in
/// the panic if the byte holds no value.
pub fn engine_value(byte: u8, what: &dyn std::fmt::Display) -> Value {
    match tablebase_value(byte) {
        VALUE_WIN => Value::Win,
        VALUE_LOSS => Value::Loss,
        VALUE_DRAW => Value::Draw,
        VALUE_ILLEGAL => Value::Illegal,
        other => panic!("{what}: value byte {other}"),
    }
}

/// Every placement of `k` pieces on the cells of `free` (sets of cells in
/// increasing order, by the next set with as many bits).
pub fn placements(free: u32, k: u32) -> Vec<u32> {
    let cells: Vec<u32> = (0..32).filter(|c| free & (1 << c) != 0).collect();
    let n = cells.len() as u32;
    let mut out = Vec::new();
    let mut s: u64 = (1 << k) - 1;
    while s < 1 << n {
        out.push(cells.iter().enumerate().filter(|&(i, _)| s & (1 << i) != 0).fold(0, |acc, (_, &c)| acc | 1 << c));
        let low = s & s.wrapping_neg();
        let ripple = s + low;
        s = ripple | (((s ^ ripple) >> 2) / low);
    }
    out
}

/// One state of an explicit game graph, for [`plies_by_sweeps`].
pub enum Node {
    /// Not a position of the game.
    Illegal,
    /// The game is over: won for the MAX side or not.
    Finished { max_won: bool },
    /// The game goes on: whether a MAX player moves, and the states its moves reach.
    Live { max_moves: bool, children: Vec<usize> },
}

/// Each state's value for MAX and its plies to the end, by synchronous
/// sweeps: finished states are 0; sweep `k` decides, from what the sweeps
/// before it decided and nothing it decides itself, the states whose mover
/// reaches a state good for it (WIN for MAX, LOSS for the others) or has
/// only moves to states good for the other side. So sweep `k` decides
/// exactly the states `k` plies from the end, the winner hurrying and the
/// loser delaying. What no sweep decides is a draw, with no plies.
pub fn plies_by_sweeps(nodes: &[Node]) -> Vec<(Value, Option<u32>)> {
    let mut out: Vec<(Value, Option<u32>)> = nodes
        .iter()
        .map(|n| match n {
            Node::Illegal => (Value::Illegal, None),
            Node::Finished { max_won: true } => (Value::Win, Some(0)),
            Node::Finished { max_won: false } => (Value::Loss, Some(0)),
            Node::Live { .. } => (Value::Draw, None),
        })
        .collect();
    let mut open: Vec<usize> = (0..nodes.len()).filter(|&i| matches!(nodes[i], Node::Live { .. })).collect();
    for sweep in 1.. {
        let decided: Vec<(usize, Value)> = open
            .iter()
            .filter_map(|&i| {
                let Node::Live { max_moves, children } = &nodes[i] else { unreachable!("open states are live") };
                let (good, bad) = if *max_moves { (Value::Win, Value::Loss) } else { (Value::Loss, Value::Win) };
                let known = |c: &usize| out[*c].1.is_some();
                if children.iter().any(|c| known(c) && out[*c].0 == good) {
                    Some((i, good))
                } else if children.iter().all(|c| known(c) && out[*c].0 == bad) {
                    Some((i, bad))
                } else {
                    None
                }
            })
            .collect();
        if decided.is_empty() {
            break;
        }
        for &(i, v) in &decided {
            out[i] = (v, Some(sweep));
        }
        open.retain(|&i| out[i].1.is_none());
    }
    out
}

/// The engine's depth byte as plies: `None` for a draw or an illegal
/// placement; a byte saying the round was not kept fails the test.
pub fn engine_plies(byte: u8, what: &dyn std::fmt::Display) -> Option<u32> {
    match byte {
        retro_engine::values::DEPTH_NONE => None,
        retro_engine::values::DEPTH_UNKNOWN => panic!("{what}: the engine kept no depth"),
        d => Some(u32::from(d)),
    }
}
