//! `coordinator probe --witness KIND`: positions that show a category at work,
//! found in the tablebases (read through [`Prober`], a block at a time, so the
//! layers need not fit in memory) together with the line of moves that
//! reaches them from the start.
//!
//! The searches go breadth-first from the start, depth by depth, and stop at
//! the first depth that has a witness; within a depth the witness is the
//! position of lowest rank, and moves are tried in move-generation order, so
//! the answer is deterministic. Lookups are batched per depth and read in
//! sorted order ([`Prober::values`]).

use super::analysis;
use crate::ResultsError;
use retro_games::RetroGame;
use retro_games::cc3::{Cc3, Outcome, PLAYER_NAMES, Position, children};
use retro_probe::Value;
use retro_probe::cc3::{MoveReport, PositionReport, Prober, answers_line};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// What a witness shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WitnessKind {
    /// The shallowest position (from the start) in the solo-win category:
    /// some player X has solo(X) = WIN.
    SoloWin,
    /// The shallowest position in the spoiler-draw category: nobody has a solo
    /// WIN and some player X has solo(X) = DRAW.
    SpoilerDraw,
    /// The shallowest position in the kingmaker category where the player to
    /// move, M, chooses the winner. Precisely: the game is on; solo(X) = LOSS
    /// for every X (the category's condition when nobody wins or draws alone),
    /// so M cannot win; and M has a move to a child where the next player,
    /// M+1, has solo(M+1) = WIN, and a move to a child where the player after,
    /// M+2, has solo(M+2) = WIN. (Such a position has enable(M>M+1) and
    /// enable(M>M+2) forced, which the search uses to skip the others.)
    Kingmaker,
    /// A spoiler-draw position and a cycle of moves back to it along which
    /// solo(X) stays DRAW for one player X: the spoiler keeps the draw by
    /// repetition whatever the others do. Searched from the shallowest
    /// spoiler-draw position (see [`find_cycle`]).
    DrawCycle,
}

impl WitnessKind {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            WitnessKind::SoloWin => "solo-win",
            WitnessKind::SpoilerDraw => "spoiler-draw",
            WitnessKind::Kingmaker => "kingmaker",
            WitnessKind::DrawCycle => "draw-cycle",
        }
    }
}

/// One position of a line and the move that led to it.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// `from-to` by cell names, or `pass`; absent for the first position of a line.
    #[serde(rename = "move")]
    pub mv: Option<String>,
    /// The position after the move, with its answers.
    pub position: PositionReport,
}

/// A witness, or why there is none.
#[derive(Clone, Debug, Serialize)]
pub struct Witness {
    /// The kind asked for.
    pub kind: String,
    /// Why there is no witness (absent when there is one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub none: Option<String>,
    /// Plies from the start to `position` along `line`.
    pub depth: Option<u32>,
    /// The player X the witness is about: solo(X) is WIN (solo-win) or DRAW
    /// (spoiler-draw, draw-cycle); the player to move for kingmaker.
    pub player: Option<String>,
    /// The line from the start: the start first, `position` last.
    pub line: Vec<Step>,
    /// The witness position (the last step of `line`).
    pub position: Option<PositionReport>,
    /// Kingmaker: the move handing the next player a forced win, then the move
    /// handing it to the player after.
    pub moves: Vec<MoveReport>,
    /// Draw cycle: the moves from `position` back to it; solo(player) is DRAW
    /// at every position on the way.
    pub cycle: Vec<Step>,
    /// Positions the search classified.
    pub searched: u64,
}

/// Positions per batch of lookups (three each, more for kingmaker candidates)
/// and per chunk of a depth's expansion.
const BATCH: usize = 1 << 21;

/// Most positions the draw-cycle search visits in the draw subgraph.
const CYCLE_LIMIT: usize = 50_000_000;

/// Finds a witness of `kind`, searching at most `max_depth` plies from the start.
pub fn find(prober: &Prober, kind: WitnessKind, max_depth: Option<u32>) -> Result<Witness, ResultsError> {
    let mut w = Witness {
        kind: kind.name().to_string(),
        none: None,
        depth: None,
        player: None,
        line: Vec::new(),
        position: None,
        moves: Vec::new(),
        cycle: Vec::new(),
        searched: 0,
    };
    let limit = match max_depth {
        Some(d) => format!("within {d} plies of the start"),
        None => "reachable from the start".to_string(),
    };
    match kind {
        WitnessKind::SoloWin | WitnessKind::SpoilerDraw => {
            let want = if kind == WitnessKind::SoloWin { Value::Win } else { Value::Draw };
            let search = search(prober, max_depth, |prober, batch| first_with_solo(prober, batch, want))?;
            w.searched = search.searched;
            let Some((depth, rank, _)) = search.found else {
                let what = if kind == WitnessKind::SoloWin { "WIN" } else { "DRAW" };
                w.none = Some(format!(
                    "no position {limit} has a solo {what} for any player ({} positions searched)",
                    search.searched
                ));
                return Ok(w);
            };
            let line = search.levels.line_to(&prober.game, depth, rank)?;
            let end = line[line.len() - 1];
            let s = solos(prober, &[end])?[0];
            w.player = s.iter().position(|&v| v == want).map(|p| PLAYER_NAMES[p].to_string());
            fill_line(prober, &mut w, &line)?;
        }
        WitnessKind::Kingmaker => {
            let search = search(prober, max_depth, kingmaker_in)?;
            w.searched = search.searched;
            let Some((depth, rank, (first, second))) = search.found else {
                w.none = Some(format!(
                    "no position {limit} lets the player to move hand a forced win to either opponent \
                     ({} positions searched)",
                    search.searched
                ));
                return Ok(w);
            };
            let line = search.levels.line_to(&prober.game, depth, rank)?;
            let end = line[line.len() - 1];
            w.player = Some(PLAYER_NAMES[end.turn as usize].to_string());
            fill_line(prober, &mut w, &line)?;
            for child in [first, second] {
                let mv = move_text(&prober.game, &end, &child);
                w.moves.push(MoveReport { mv, child: prober.report(&child)? });
            }
        }
        WitnessKind::DrawCycle => {
            let search = search(prober, max_depth, |prober, batch| first_with_solo(prober, batch, Value::Draw))?;
            w.searched = search.searched;
            let Some((depth, rank, _)) = search.found else {
                w.none = Some(format!(
                    "no position {limit} has a solo DRAW for any player, so there is no draw to keep \
                     ({} positions searched)",
                    search.searched
                ));
                return Ok(w);
            };
            let mut line = search.levels.line_to(&prober.game, depth, rank)?;
            let spoiler = line[line.len() - 1];
            let s = solos(prober, &[spoiler])?[0];
            let x = s
                .iter()
                .position(|&v| v == Value::Draw)
                .ok_or_else(|| ResultsError::Inconsistent("the spoiler-draw position lost its draw".into()))?;
            w.player = Some(PLAYER_NAMES[x].to_string());
            let spoiler_text = prober.game.format(&spoiler);
            let Cycle { lead_in, cycle } = find_cycle(
                prober.game.rank(&spoiler),
                |nodes| {
                    let game = &prober.game;
                    let kids: Vec<Vec<Position>> =
                        nodes.iter().map(|&r| children(&game.star, &game.unrank(r))).collect();
                    let flat: Vec<Position> = kids.iter().flatten().copied().collect();
                    let values = solo_of(prober, &flat, x)?;
                    let game = &prober.game;
                    let mut at = 0;
                    Ok::<_, ResultsError>(
                        kids.iter()
                            .map(|k| {
                                let kept = k
                                    .iter()
                                    .zip(&values[at..at + k.len()])
                                    .filter(|(_, v)| **v == Value::Draw)
                                    .map(|(c, _)| game.rank(c))
                                    .collect();
                                at += k.len();
                                kept
                            })
                            .collect(),
                    )
                },
                CYCLE_LIMIT,
            )?
            .ok_or_else(|| {
                ResultsError::Inconsistent(format!(
                    "solo({}) is DRAW at {spoiler_text} but no cycle of draws was found from it \
                     (a dead end means inconsistent tablebases; or over {CYCLE_LIMIT} positions)",
                    PLAYER_NAMES[x]
                ))
            })?;
            let game = &prober.game;
            line.extend(lead_in.iter().skip(1).map(|&r| game.unrank(r)));
            fill_line(prober, &mut w, &line)?;
            let mut prev = line[line.len() - 1];
            for &r in cycle.iter().skip(1) {
                let pos = prober.game.unrank(r);
                let mv = Some(move_text(&prober.game, &prev, &pos));
                w.cycle.push(Step { mv, position: prober.report(&pos)? });
                prev = pos;
            }
        }
    }
    Ok(w)
}

/// Sets `w`'s line, depth and position from a line of positions.
fn fill_line(prober: &Prober, w: &mut Witness, line: &[Position]) -> Result<(), ResultsError> {
    let mut prev: Option<Position> = None;
    for pos in line {
        let mv = prev.map(|p| move_text(&prober.game, &p, pos));
        w.line.push(Step { mv, position: prober.report(pos)? });
        prev = Some(*pos);
    }
    w.depth = Some(line.len() as u32 - 1);
    w.position = w.line.last().map(|s| s.position.clone());
    Ok(())
}

/// The move from `from` to its child `to`: `from-to` by cell names, or `pass`.
pub fn move_text(game: &Cc3, from: &Position, to: &Position) -> String {
    let p = from.turn as usize;
    let moved = from.pieces[p] ^ to.pieces[p];
    if moved == 0 {
        return "pass".to_string();
    }
    let name = |bits: u128| game.star.names[bits.trailing_zeros() as usize].clone();
    format!("{}-{}", name(from.pieces[p] & moved), name(to.pieces[p] & moved))
}

/// Which rotation rank holds solo(`player`): solo(A) at the position's own
/// rank, solo(B) at `R^2`'s, solo(C) at `R`'s (see [`analysis::answers_with`]).
const SOLO_ROTATION: [usize; 3] = [0, 2, 1];

/// solo(A), solo(B), solo(C) at each position (three lookups each).
fn solos(prober: &Prober, positions: &[Position]) -> Result<Vec<[Value; 3]>, ResultsError> {
    let mut requests = Vec::with_capacity(3 * positions.len());
    for pos in positions {
        let r = analysis::rotation_ranks(&prober.game, pos);
        requests.extend(SOLO_ROTATION.map(|j| (0, r[j])));
    }
    let v = prober.values(&requests)?;
    Ok(v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
}

/// The first position of a batch in the solo-win category (`want` = WIN) or
/// the spoiler-draw category (`want` = DRAW): the game is on and some solo is
/// `want`, and for a draw no solo is WIN.
fn first_with_solo(prober: &Prober, batch: &[Position], want: Value) -> Result<Found<()>, ResultsError> {
    let solos = solos(prober, batch)?;
    Ok(batch
        .iter()
        .zip(&solos)
        .position(|(pos, s)| {
            pos.outcome(&prober.game.star) == Outcome::Ongoing
                && s.contains(&want)
                && (want == Value::Win || !s.contains(&Value::Win))
        })
        .map(|i| (i, ())))
}

/// solo(`player`) at each position.
fn solo_of(prober: &Prober, positions: &[Position], player: usize) -> Result<Vec<Value>, ResultsError> {
    let requests: Vec<(usize, u64)> =
        positions.iter().map(|pos| (0, analysis::rotation_ranks(&prober.game, pos)[SOLO_ROTATION[player]])).collect();
    Ok(prober.values(&requests)?)
}

/// The first kingmaker witness of a batch (see [`WitnessKind::Kingmaker`]):
/// its index and the two children that hand the win to M+1 and to M+2.
fn kingmaker_in(prober: &Prober, batch: &[Position]) -> Result<Found<(Position, Position)>, ResultsError> {
    let solos = solos(prober, batch)?;
    let candidates: Vec<usize> = (0..batch.len())
        .filter(|&i| {
            batch[i].outcome(&prober.game.star) == Outcome::Ongoing && solos[i].iter().all(|&v| v == Value::Loss)
        })
        .collect();
    // Handing M+1 the win makes enable(M>M+1) forced (M moves there, M+1 does
    // the rest), and likewise for M+2: both must hold. enable(X>X+1) is the
    // enable(A>B) layer and enable(X>X+2) the enable(A>C) layer, read at the
    // rotation that makes X player A.
    let mut requests = Vec::with_capacity(2 * candidates.len());
    for &i in &candidates {
        let r = analysis::rotation_ranks(&prober.game, &batch[i])[SOLO_ROTATION[batch[i].turn as usize]];
        requests.extend([(1, r), (2, r)]);
    }
    let enables = prober.values(&requests)?;
    let candidates: Vec<usize> = candidates
        .iter()
        .zip(enables.chunks_exact(2))
        .filter(|(_, e)| e[0] == Value::Win && e[1] == Value::Win)
        .map(|(&i, _)| i)
        .collect();
    let kids: Vec<Vec<Position>> = candidates.iter().map(|&i| children(&prober.game.star, &batch[i])).collect();
    let mut requests = Vec::new();
    for (&i, k) in candidates.iter().zip(&kids) {
        let m = batch[i].turn as usize;
        for child in k {
            let r = analysis::rotation_ranks(&prober.game, child);
            requests.extend([(0, r[SOLO_ROTATION[(m + 1) % 3]]), (0, r[SOLO_ROTATION[(m + 2) % 3]])]);
        }
    }
    let values = prober.values(&requests)?;
    let mut at = 0;
    for (&i, k) in candidates.iter().zip(&kids) {
        let v = &values[at..at + 2 * k.len()];
        at += 2 * k.len();
        let first = (0..k.len()).find(|&c| v[2 * c] == Value::Win);
        let second = (0..k.len()).find(|&c| v[2 * c + 1] == Value::Win);
        if let (Some(a), Some(b)) = (first, second) {
            return Ok(Some((i, (k[a], k[b]))));
        }
    }
    Ok(None)
}

/// A batch's first witness: its index in the batch, and what shows it.
type Found<T> = Option<(usize, T)>;

/// The outcome of a search from the start.
struct Search<T> {
    /// Depth, rank and extra data of the witness.
    found: Option<(u32, u64, T)>,
    /// The depths searched.
    levels: Levels,
    /// Positions classified.
    searched: u64,
}

/// Breadth-first search from the start: `test` sees each depth's positions in
/// rank order, in batches, and returns the index of the first witness of a
/// batch with its extra data.
fn search<T>(
    prober: &Prober,
    max_depth: Option<u32>,
    mut test: impl FnMut(&Prober, &[Position]) -> Result<Found<T>, ResultsError>,
) -> Result<Search<T>, ResultsError> {
    let mut levels = Levels::new(&prober.game);
    let mut searched = 0u64;
    loop {
        let depth = (levels.depths.len() - 1) as u32;
        for ranks in levels.depths[depth as usize].chunks(BATCH) {
            let batch: Vec<Position> = ranks.iter().map(|&r| prober.game.unrank(r)).collect();
            let hit = test(prober, &batch)?;
            if let Some((i, extra)) = hit {
                searched += i as u64 + 1;
                return Ok(Search { found: Some((depth, ranks[i], extra)), levels, searched });
            }
            searched += batch.len() as u64;
        }
        tracing::info!("witness search: depth {depth} ({} positions) has none", levels.depths[depth as usize].len());
        if max_depth.is_some_and(|d| depth >= d) || !levels.grow(&prober.game) {
            return Ok(Search { found: None, levels, searched });
        }
    }
}

/// The union of two sorted, duplicate-free vectors.
fn merge_sorted(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The positions first reached at each depth from the start, sorted by rank.
struct Levels {
    depths: Vec<Vec<u64>>,
}

impl Levels {
    fn new(game: &Cc3) -> Levels {
        Levels { depths: vec![vec![game.rank(&game.start())]] }
    }

    /// Adds the next depth; false when nothing new is reached. The children
    /// are gathered a chunk of the frontier at a time, sorted, filtered and
    /// merged, so the memory is the next depth plus one chunk's children.
    fn grow(&mut self, game: &Cc3) -> bool {
        let d = self.depths.len() - 1;
        let mut next: Vec<u64> = Vec::new();
        for part in self.depths[d].chunks(BATCH) {
            let mut kids: Vec<u64> = Vec::new();
            for &r in part {
                game.for_each_child_of(&game.unrank(r), |c| kids.push(c));
            }
            kids.sort_unstable();
            kids.dedup();
            // Every move passes the turn on: a child of depth d was reached
            // before only at a depth with the same player to move, d+1-3k.
            let mut earlier = d as i64 - 2;
            while earlier >= 0 {
                let seen = &self.depths[earlier as usize];
                kids.retain(|r| seen.binary_search(r).is_err());
                earlier -= 3;
            }
            next = merge_sorted(&next, &kids);
        }
        if next.is_empty() {
            return false;
        }
        self.depths.push(next);
        true
    }

    /// A shortest line from the start to `target` (at `depth`): each position's
    /// parent is its lowest-ranked predecessor one depth up.
    fn line_to(&self, game: &Cc3, depth: u32, target: u64) -> Result<Vec<Position>, ResultsError> {
        let mut line = vec![game.unrank(target)];
        let mut cur = target;
        for d in (0..depth as usize).rev() {
            let child = game.unrank(cur);
            let mut preds = Vec::new();
            game.for_each_predecessor(cur, &mut |p| preds.push(p));
            preds.sort_unstable();
            let parent = preds
                .into_iter()
                .find(|&p| {
                    self.depths[d].binary_search(&p).is_ok() && children(&game.star, &game.unrank(p)).contains(&child)
                })
                .ok_or_else(|| {
                    ResultsError::Inconsistent(format!("no parent of {} at depth {d}", game.format(&child)))
                })?;
            line.push(game.unrank(parent));
            cur = parent;
        }
        line.reverse();
        Ok(line)
    }
}

/// A cycle found by [`find_cycle`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle<N> {
    /// From the search's start to the cycle's first node (just the start when
    /// the cycle goes through it).
    pub lead_in: Vec<N>,
    /// From the cycle's first node back to it (first and last equal).
    pub cycle: Vec<N>,
}

/// A cycle in the graph whose edges `kept_children` gives (for a slice of
/// nodes, each node's children that the search may use, in order), reached
/// from `start`.
///
/// A shortest cycle through `start` when there is one (breadth-first from
/// `start` until an edge leads back to it); otherwise the first cycle met by
/// walking from `start` along each node's first kept child. `None` when that
/// walk reaches a node without kept children (in a draw subgraph every node
/// has one) or after `limit` nodes.
pub fn find_cycle<N: Copy + Eq + Hash, E>(
    start: N,
    mut kept_children: impl FnMut(&[N]) -> Result<Vec<Vec<N>>, E>,
    limit: usize,
) -> Result<Option<Cycle<N>>, E> {
    let mut parent: HashMap<N, N> = HashMap::new();
    let mut seen: HashSet<N> = HashSet::from([start]);
    let mut frontier = vec![start];
    while !frontier.is_empty() && seen.len() <= limit {
        let kids = kept_children(&frontier)?;
        let mut next = Vec::new();
        for (&node, ks) in frontier.iter().zip(&kids) {
            for &c in ks {
                if c == start {
                    // The parents lead back to `start`, which has none (for
                    // `node` = `start`, a one-move cycle, at once).
                    let mut cycle = vec![start, node];
                    let mut at = node;
                    while let Some(&p) = parent.get(&at) {
                        cycle.push(p);
                        at = p;
                    }
                    cycle.reverse();
                    return Ok(Some(Cycle { lead_in: vec![start], cycle }));
                }
                if seen.insert(c) {
                    parent.insert(c, node);
                    next.push(c);
                }
            }
        }
        frontier = next;
    }
    // No way back to `start`: walk until a node repeats.
    let mut walk = vec![start];
    let mut index: HashMap<N, usize> = HashMap::from([(start, 0)]);
    while walk.len() <= limit {
        let cur = walk[walk.len() - 1];
        let Some(&next) = kept_children(&[cur])?.first().and_then(|k| k.first()) else {
            return Ok(None);
        };
        if let Some(&i) = index.get(&next) {
            let mut cycle = walk.split_off(i);
            cycle.push(next);
            walk.push(next);
            return Ok(Some(Cycle { lead_in: walk, cycle }));
        }
        index.insert(next, walk.len());
        walk.push(next);
    }
    Ok(None)
}

/// The witness as text.
pub fn text(w: &Witness) -> String {
    if let Some(why) = &w.none {
        return format!("none: {why}\n");
    }
    let mut out = String::new();
    let about = match (w.kind.as_str(), &w.player) {
        ("solo-win", Some(p)) => format!("solo({p}) is a forced win"),
        ("spoiler-draw", Some(p)) | ("draw-cycle", Some(p)) => format!("solo({p}) is a draw"),
        ("kingmaker", Some(p)) => format!("{p} to move cannot win and picks the winner"),
        _ => String::new(),
    };
    out.push_str(&format!(
        "witness {}: {about}, {} plies from the start ({} positions searched)\n",
        w.kind,
        w.depth.unwrap_or(0),
        w.searched
    ));
    let step = |s: &Step, n: usize| {
        format!(
            "  {:>3} {:<8} {} [{}] {}\n",
            n,
            s.mv.as_deref().unwrap_or("start"),
            s.position.position,
            s.position.category,
            answers_line(&s.position)
        )
    };
    out.push_str("line from the start:\n");
    for (n, s) in w.line.iter().enumerate() {
        out.push_str(&step(s, n));
    }
    if !w.moves.is_empty() {
        out.push_str("the player to move chooses the winner:\n");
        for m in &w.moves {
            out.push_str(&retro_probe::cc3::move_line(m, "      "));
        }
    }
    if !w.cycle.is_empty() {
        out.push_str(&format!("cycle back to the witness ({} moves):\n", w.cycle.len()));
        for (n, s) in w.cycle.iter().enumerate() {
            out.push_str(&step(s, n + 1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph from adjacency lists, as `find_cycle` sees it.
    fn graph<'a>(edges: &'a [(u32, &'a [u32])]) -> impl FnMut(&[u32]) -> Result<Vec<Vec<u32>>, ()> + 'a {
        move |nodes| {
            Ok(nodes
                .iter()
                .map(|n| edges.iter().find(|(m, _)| m == n).map(|(_, k)| k.to_vec()).unwrap_or_default())
                .collect())
        }
    }

    #[test]
    fn shortest_cycle_through_the_start() {
        // 0 -> 1 -> 2 -> 3 -> 0 and the shortcut 1 -> 3.
        let g = [(0, &[1][..]), (1, &[2, 3]), (2, &[3]), (3, &[0])];
        let c = find_cycle(0, graph(&g), 100).unwrap().unwrap();
        assert_eq!(c, Cycle { lead_in: vec![0], cycle: vec![0, 1, 3, 0] });
        // A self-loop is a cycle of one move.
        let g = [(5, &[5][..])];
        assert_eq!(find_cycle(5, graph(&g), 100).unwrap(), Some(Cycle { lead_in: vec![5], cycle: vec![5, 5] }));
    }

    #[test]
    fn cycle_after_a_lead_in() {
        // 0 -> 1 -> 2 -> 3 -> 1: no way back to 0.
        let g = [(0, &[1][..]), (1, &[2]), (2, &[3]), (3, &[1])];
        let c = find_cycle(0, graph(&g), 100).unwrap().unwrap();
        assert_eq!(c, Cycle { lead_in: vec![0, 1], cycle: vec![1, 2, 3, 1] });
    }

    #[test]
    fn levels_are_the_breadth_first_depths() {
        for (order, max_depth) in [(1, None), (2, Some(8))] {
            let g = Cc3::new(order).unwrap();
            let reach =
                analysis::explore(&g, None::<&crate::cc3::compressed::CompressedLayers>, max_depth, 2, None).unwrap();
            let mut levels = Levels::new(&g);
            while max_depth.is_none_or(|d| levels.depths.len() <= d as usize) && levels.grow(&g) {}
            let sizes: Vec<u64> = levels.depths.iter().map(|d| d.len() as u64).collect();
            assert_eq!(sizes, reach.depths.iter().map(|d| d.new).collect::<Vec<_>>(), "order {order}");
            // Each line is a shortest one: its positions lie at depths 0, 1, 2, ...
            let last = levels.depths.len() - 1;
            for &target in levels.depths[last].iter().step_by(997) {
                let line = levels.line_to(&g, last as u32, target).unwrap();
                for (d, pos) in line.iter().enumerate() {
                    assert!(levels.depths[d].binary_search(&g.rank(pos)).is_ok());
                }
                assert!(line.windows(2).all(|w| children(&g.star, &w[0]).contains(&w[1])));
            }
        }
    }

    #[test]
    fn merge_keeps_order_and_drops_duplicates() {
        assert_eq!(merge_sorted(&[1, 4, 9], &[2, 4, 10, 11]), vec![1, 2, 4, 9, 10, 11]);
        assert_eq!(merge_sorted(&[], &[3]), vec![3]);
        assert_eq!(merge_sorted(&[3], &[]), vec![3]);
    }

    #[test]
    fn dead_end_or_limit_is_none() {
        let g = [(0, &[1][..]), (1, &[])];
        assert_eq!(find_cycle(0, graph(&g), 100).unwrap(), None);
        let long: Vec<(u32, Vec<u32>)> = (0..50).map(|i| (i, vec![(i + 1) % 50])).collect();
        let g: Vec<(u32, &[u32])> = long.iter().map(|(i, k)| (*i, &k[..])).collect();
        assert!(find_cycle(0, graph(&g), 100).unwrap().is_some());
        assert_eq!(find_cycle(0, graph(&g), 10).unwrap(), None);
    }
}
