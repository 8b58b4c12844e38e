//! How the motive to finish second changes kingmaking and spoiling: the
//! first-winner job's category table read beside the ranked job's top2
//! values (docs/RANKED.md, "Kingmaking and spoiling when second place counts",
//! states the definitions this module counts).
//!
//! - A **kingmaker position with its kingmaker to move**: a position of the
//!   kingmaker category (nobody can force a win or a draw alone, some pair
//!   can hand the win to one of them) where the player to move, K, can hand
//!   the win to either other player: enable(K>Y) and enable(K>Z) both hold.
//! - K **keeps its top2 WIN** with a move when top2(K) is WIN at the child; the
//!   move **still lets Y be made the winner** when enable(K>Y) holds at the child.
//! - K **plays for its rank** when it only makes moves that keep its top2
//!   value (WIN to WIN, DRAW to DRAW; at a LOSS every move); the position
//!   becomes **decided** when, among those moves, only one other player can
//!   still be made the winner.
//! - A **spoiler-draw position with its spoiler to move**: a position of the
//!   spoiler-draw category (nobody can force a win alone, some player can
//!   force at least a draw) where the player to move, S, has solo(S) DRAW.
//!   S **keeps the draw-forcing option** while playing for its rank when some
//!   move that keeps its top2 value keeps solo(S) DRAW.

use crate::ResultsError;
use crate::cc3::analysis::{Category, LayerReader, LayerValues, Merge, answers_from, category_of, orbit_values_pass};
use retro_engine::tablebase::{TablebaseReader, VALUE_DRAW, VALUE_LOSS, VALUE_WIN, layer_file_name, unpack_value};
use retro_games::cc3::{Cc3, Outcome, Position, RANK_ORDER, RANKED_QUESTION, children};
use retro_probe::Value;
use retro_probe::cc3::{Answers, COMPUTED_LAYERS, answers_with};
use serde::Serialize;
use std::path::Path;

/// Kingmaker positions by what the kingmaker's moves keep.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct KingmakerCounts {
    /// Kingmaker positions whose player to move can hand the win to either
    /// other player (the population of every count below).
    pub positions: u64,
    /// Kingmaker positions whose player to move can hand it to one other
    /// player only (counted, not analysed further).
    pub mover_enables_one: u64,
    /// top2(K) at the position: WIN.
    pub top2_win: u64,
    /// top2(K) DRAW.
    pub top2_draw: u64,
    /// top2(K) LOSS.
    pub top2_loss: u64,
    /// With top2(K) WIN: some move keeps it and still lets each other player
    /// be made the winner.
    pub keeps_top2_and_both: u64,
    /// ... no such move, but one keeps top2 WIN and lets one of them.
    pub keeps_top2_and_one: u64,
    /// ... every move that keeps top2 WIN lets neither be made the winner.
    pub keeps_top2_and_neither: u64,
    /// Playing for its rank (moves that keep its top2 value), K can still
    /// make either other player the winner.
    pub ranked_two_winners: u64,
    /// ... only one: the position is decided.
    pub ranked_decided: u64,
    /// ... neither.
    pub ranked_no_winner: u64,
}

/// Spoiler-draw positions by whether the spoiler keeps its draw.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct SpoilerCounts {
    /// Spoiler-draw positions with the spoiler (solo DRAW) to move.
    pub positions: u64,
    /// top2(S) at the position: WIN / DRAW / LOSS.
    pub top2_win: u64,
    /// top2(S) DRAW.
    pub top2_draw: u64,
    /// top2(S) LOSS.
    pub top2_loss: u64,
    /// Some move keeps both the top2 value and solo(S) DRAW.
    pub keeps_draw: u64,
    /// Every move that keeps the top2 value gives up the draw (solo(S) LOSS).
    pub loses_draw: u64,
    /// ... of which top2(S) is WIN at the position (second place is safe,
    /// and taking it costs the spoiling draw).
    pub loses_draw_top2_win: u64,
}

/// The whole analysis.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Kingmaking {
    /// Star order.
    pub order: u32,
    /// Over every position (or, with `sample`, over the positions drawn).
    pub all: Scope,
    /// Over the positions reachable from the start in the first-winner game
    /// (the category table's reachable scope); absent for a sample.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reachable: Option<Scope>,
    /// When the counts are of a uniform random sample of ranks rather than
    /// of every position: how many were drawn, of how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<Sample>,
    /// With a sample: the spoiler-draw positions of every rank, counted
    /// exactly (one pass over the rotation orbits finds them; at stage 2
    /// they are 2 in 10,000 ranks, too few for a sample to count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spoilers_exact: Option<SpoilerScope>,
}

/// The spoiler-draw counts of one scope.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct SpoilerScope {
    /// Spoiler-draw positions, every player to move.
    pub spoiler_draw_positions: u64,
    /// With the spoiler to move.
    pub spoiler: SpoilerCounts,
}

/// A uniform sample of ranks (with replacement).
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct Sample {
    /// Ranks drawn.
    pub drawn: u64,
    /// Ranks in the space.
    pub of: u64,
    /// The generator's seed (the same seed draws the same ranks).
    pub seed: u64,
}

impl Sample {
    /// The estimate of a whole-space count from `k` of the sample, and the
    /// half-width of its 95 % interval (normal approximation of the binomial).
    pub fn estimate(&self, k: u64) -> (f64, f64) {
        let (n, m) = (self.drawn as f64, self.of as f64);
        let p = k as f64 / n;
        (p * m, 1.96 * (p * (1.0 - p) / n).sqrt() * m)
    }
}

/// One scope's counts.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Scope {
    /// Kingmaker positions, every player to move.
    pub kingmaker_positions: u64,
    /// With the kingmaker to move.
    pub kingmaker: KingmakerCounts,
    /// Spoiler-draw positions, every player to move.
    pub spoiler_draw_positions: u64,
    /// With the spoiler to move.
    pub spoiler: SpoilerCounts,
}

/// The four layers in memory, packed (2 bits a position each).
pub struct Layers {
    game: Cc3,
    first_winner: [Vec<u8>; 3],
    top2_a: Vec<u8>,
}

fn open_checked(path: &Path, layer: &str) -> Result<TablebaseReader, ResultsError> {
    if !path.exists() {
        return Err(ResultsError::Unsupported(format!("{}: no such tablebase (solve the plan first)", path.display())));
    }
    let reader = TablebaseReader::open(path)?;
    let h = reader.header();
    if h.game != "cc3" || h.layer != layer {
        return Err(ResultsError::Inconsistent(format!(
            "{}: header says game {} layer {}, expected cc3 layer {layer}",
            path.display(),
            h.game,
            h.layer
        )));
    }
    if h.params["rank_order"] != RANK_ORDER {
        return Err(ResultsError::Inconsistent(format!(
            "{}: rank order {}, this program uses {RANK_ORDER}",
            path.display(),
            h.params["rank_order"]
        )));
    }
    Ok(reader)
}

impl Layers {
    /// Reads the first-winner job's three layers from `first_winner` and the
    /// ranked job's top2(A) from `ranked` (every block verified), checking
    /// that they are of one star and of the objectives they claim.
    pub fn open(first_winner: &Path, ranked: &Path) -> Result<Layers, ResultsError> {
        let mut readers = Vec::new();
        for q in COMPUTED_LAYERS {
            readers.push(open_checked(&first_winner.join(layer_file_name(q)), q)?);
        }
        let params = readers[0].header().params.clone();
        if let Some(r) = readers.iter().find(|r| r.header().params != params) {
            return Err(ResultsError::Inconsistent(format!(
                "{}: another job's layer ({} against {params})",
                r.path().display(),
                r.header().params
            )));
        }
        if !params["objective"].is_null() {
            return Err(ResultsError::Inconsistent(format!(
                "{}: a {} job's layers; --first-winner names the stage game's",
                first_winner.display(),
                params["objective"]
            )));
        }
        let mut top2 = open_checked(&ranked.join(layer_file_name(RANKED_QUESTION)), RANKED_QUESTION)?;
        let ranked_params = top2.header().params.clone();
        if ranked_params["objective"] != "ranked" || ranked_params["order"] != params["order"] {
            return Err(ResultsError::Inconsistent(format!(
                "{}: {ranked_params}; --ranked names the ranked job of the same order ({})",
                top2.path().display(),
                params["order"]
            )));
        }
        let order = params["order"].as_u64().unwrap_or(0) as u32;
        let game = Cc3::new(order).map_err(|e| ResultsError::Inconsistent(e.to_string()))?;
        let read = |r: &mut TablebaseReader| r.read_all().map_err(ResultsError::from);
        let first_winner = [read(&mut readers[0])?, read(&mut readers[1])?, read(&mut readers[2])?];
        let top2_a = read(&mut top2)?;
        Ok(Layers { game, first_winner, top2_a })
    }

    fn answers(&self, pos: &Position) -> Answers {
        let r: Result<Answers, std::convert::Infallible> = answers_with(&self.game, pos, |layer, rank| {
            Ok(Value::from_code(unpack_value(&self.first_winner[layer], rank)))
        });
        match r {
            Ok(a) => a,
            Err(never) => match never {},
        }
    }

    /// top2(X) at `pos` for each player (as [`crate::cc3::ranked::Top2Values::top2_of`]).
    fn top2(&self, pos: &Position) -> [u8; 3] {
        retro_probe::ranked::top2_ranks(&self.game, pos).map(|r| unpack_value(&self.top2_a, r))
    }
}

/// Adds one position to a scope.
fn count(layers: &Layers, pos: &Position, scope: &mut Scope) {
    let game = &layers.game;
    if pos.outcome(&game.star) != Outcome::Ongoing {
        return;
    }
    let a = layers.answers(pos);
    let k = pos.turn as usize;
    let (y, z) = ((k + 1) % 3, (k + 2) % 3);
    match category_of(true, &a) {
        Category::Kingmaker => {
            scope.kingmaker_positions += 1;
            let c = &mut scope.kingmaker;
            match (a.enable[k][y], a.enable[k][z]) {
                (true, true) => {}
                (false, false) => return,
                _ => {
                    c.mover_enables_one += 1;
                    return;
                }
            }
            c.positions += 1;
            let here = layers.top2(pos)[k];
            match here {
                VALUE_WIN => c.top2_win += 1,
                VALUE_DRAW => c.top2_draw += 1,
                _ => c.top2_loss += 1,
            }
            // Over the moves: the best a top2-keeping move lets (2, 1, 0
            // winners), and the winners K can still make among the moves that
            // keep its top2 value.
            let (mut best_keeping_win, mut ranked_winners) = (None::<u32>, [false; 3]);
            for child in children(&game.star, pos) {
                let ca = layers.answers(&child);
                let enables = [y, z].map(|w| ca.enable[k][w]);
                let t = layers.top2(&child)[k];
                if t == VALUE_WIN {
                    let n = enables.iter().filter(|&&e| e).count() as u32;
                    best_keeping_win = Some(best_keeping_win.map_or(n, |b| b.max(n)));
                }
                if here == VALUE_LOSS || t == here {
                    ranked_winners[y] |= enables[0];
                    ranked_winners[z] |= enables[1];
                }
            }
            if here == VALUE_WIN {
                match best_keeping_win {
                    Some(2) => c.keeps_top2_and_both += 1,
                    Some(1) => c.keeps_top2_and_one += 1,
                    _ => c.keeps_top2_and_neither += 1,
                }
            }
            match ranked_winners.iter().filter(|&&w| w).count() {
                2 => c.ranked_two_winners += 1,
                1 => c.ranked_decided += 1,
                _ => c.ranked_no_winner += 1,
            }
        }
        Category::SpoilerDraw => {
            scope.spoiler_draw_positions += 1;
            if a.solo[k] != Value::Draw {
                return;
            }
            let s = &mut scope.spoiler;
            s.positions += 1;
            let here = layers.top2(pos)[k];
            match here {
                VALUE_WIN => s.top2_win += 1,
                VALUE_DRAW => s.top2_draw += 1,
                _ => s.top2_loss += 1,
            }
            let keeps = children(&game.star, pos).iter().any(|child| {
                let t = layers.top2(child)[k];
                (here == VALUE_LOSS || t == here) && layers.answers(child).solo[k] == Value::Draw
            });
            if keeps {
                s.keeps_draw += 1;
            } else {
                s.loses_draw += 1;
                s.loses_draw_top2_win += u64::from(here == VALUE_WIN);
            }
        }
        _ => {}
    }
}

/// The first-winner game's reachable positions from the start, as a bitset
/// (one bit a rank): a plain breadth-first search, for the orders whose
/// space is small (this analysis visits every position's children anyway).
fn reachable(game: &Cc3) -> Vec<u64> {
    let n = game.ranker.positions() as u64;
    let mut seen = vec![0u64; n.div_ceil(64) as usize];
    let start = game.rank(&game.start());
    seen[(start / 64) as usize] |= 1 << (start % 64);
    let mut frontier = vec![start];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for &r in &frontier {
            game.for_each_child_of(&game.unrank(r), |c| {
                let (w, b) = ((c / 64) as usize, c % 64);
                if seen[w] & (1 << b) == 0 {
                    seen[w] |= 1 << b;
                    next.push(c);
                }
            });
        }
        frontier = next;
    }
    seen
}

/// The analysis over `samples` ranks drawn uniformly at random (with
/// replacement) from `seed`: what [`analyse`] counts over every position,
/// for a space too large to walk (stage 2: every kingmaker position's moves
/// read 12 answers each, days on two cores).
pub fn analyse_sample(layers: &Layers, samples: u64, seed: u64, threads: usize) -> Kingmaking {
    let game = &layers.game;
    let n = game.ranker.positions() as u64;
    let threads = threads.max(1) as u64;
    let per = samples.div_ceil(threads);
    let parts: Vec<Scope> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut rng = retro_games::sample::XorShift(seed ^ (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    let mut scope = Scope::default();
                    for _ in (t * per)..((t + 1) * per).min(samples) {
                        count(layers, &game.unrank(rng.next_u64() % n), &mut scope);
                    }
                    scope
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a sampling thread panicked")).collect()
    });
    let mut out =
        Kingmaking { order: game.star.n, sample: Some(Sample { drawn: samples, of: n, seed }), ..Default::default() };
    for p in parts {
        add_scope(&mut out.all, &p);
    }
    out
}

/// The first-winner layers as the orbit pass reads them.
impl LayerValues for Layers {
    type Reader<'a> = &'a Layers;

    fn reader(&self) -> &Layers {
        self
    }
}

impl LayerReader for &Layers {
    #[inline]
    fn value(&mut self, layer: usize, rank: u64) -> u8 {
        unpack_value(&self.first_winner[layer], rank)
    }
}

impl Merge for Scope {
    fn merge_from(&mut self, other: &Scope) {
        add_scope(self, other);
    }
}

/// Counts every position of the categories `keep` selects, over every rank:
/// one pass over the rotation orbits reads the nine values that give each
/// orbit's categories, and only the positions kept are analysed.
pub fn count_categories(layers: &Layers, keep: fn(Category) -> bool, threads: usize) -> Scope {
    let game = &layers.game;
    let third = game.ranker.placements() as u64;
    orbit_values_pass(game, layers, [true; 3], "kingmaking", 0..third, threads, |acc: &mut Scope, done, r, v| {
        for (j, &rank) in r.iter().enumerate() {
            if keep(category_of(done == 0, &answers_from(v, j))) {
                count(layers, &game.unrank(rank), acc);
            }
        }
    })
}

/// [`analyse_sample`], with the spoiler-draw positions counted exactly
/// ([`count_categories`]).
pub fn analyse_sample_and_spoilers(layers: &Layers, samples: u64, seed: u64, threads: usize) -> Kingmaking {
    let mut out = analyse_sample(layers, samples, seed, threads);
    let exact = count_categories(layers, |c| c == Category::SpoilerDraw, threads);
    out.spoilers_exact =
        Some(SpoilerScope { spoiler_draw_positions: exact.spoiler_draw_positions, spoiler: exact.spoiler });
    out
}

/// Counts the analysis over every position and over the reachable ones.
pub fn analyse(layers: &Layers, threads: usize) -> Kingmaking {
    let game = &layers.game;
    let reached = reachable(game);
    let n = game.ranker.positions() as u64;
    let threads = threads.max(1) as u64;
    let step = n.div_ceil(threads);
    let parts: Vec<(Scope, Scope)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (first, end) = ((t * step).min(n), ((t + 1) * step).min(n));
                let reached = &reached;
                s.spawn(move || {
                    let (mut all, mut reach) = (Scope::default(), Scope::default());
                    game.for_each_position_in_run(first, (end - first) as usize, &mut |i, pos| {
                        let rank = first + i as u64;
                        count(layers, pos, &mut all);
                        if reached[(rank / 64) as usize] & (1 << (rank % 64)) != 0 {
                            count(layers, pos, &mut reach);
                        }
                    });
                    (all, reach)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a counting thread panicked")).collect()
    });
    let mut out = Kingmaking { order: game.star.n, reachable: Some(Scope::default()), ..Kingmaking::default() };
    for (a, r) in parts {
        add_scope(&mut out.all, &a);
        if let Some(reach) = out.reachable.as_mut() {
            add_scope(reach, &r);
        }
    }
    out
}

/// Adds the named fields of `$from` to those of `$to`.
macro_rules! add_fields {
    ($to:expr, $from:expr; $($f:ident),+) => { $( $to.$f += $from.$f; )+ };
}

fn add_scope(to: &mut Scope, from: &Scope) {
    add_fields!(to, from; kingmaker_positions, spoiler_draw_positions);
    add_fields!(to.kingmaker, from.kingmaker; positions, mover_enables_one, top2_win, top2_draw, top2_loss,
        keeps_top2_and_both, keeps_top2_and_one, keeps_top2_and_neither, ranked_two_winners, ranked_decided,
        ranked_no_winner);
    add_fields!(to.spoiler, from.spoiler; positions, top2_win, top2_draw, top2_loss, keeps_draw, loses_draw,
        loses_draw_top2_win);
}

#[cfg(test)]
mod tests {
    use super::*;
    use retro_engine::layout::Layout;
    use retro_engine::memsolve::solve;
    use retro_engine::tablebase::pack_values;
    use retro_engine::values::tablebase_value;
    use retro_games::cc3::{Ranked, parse_question};
    use retro_games::{Question, RetroGame};

    fn packed(game: &impl RetroGame, q: Question) -> Vec<u8> {
        let layout = Layout::new(game.position_count(), 3, 64, 4096);
        let values: Vec<u8> = solve(game, q, &layout, 1).unwrap().bytes.iter().map(|&b| tablebase_value(b)).collect();
        pack_values(&values)
    }

    /// The stage-1 layers solved in memory.
    fn stage_one() -> Layers {
        let game = Cc3::new(1).unwrap();
        let first_winner = COMPUTED_LAYERS.map(|q| packed(&game, parse_question(q).unwrap()));
        let top2_a = packed(&Ranked::new(1, 0).unwrap(), Question::solo(0));
        Layers { game, first_winner, top2_a }
    }

    /// The pass over the orbits counts what the walk over the ranks counts,
    /// every category kept; keeping none counts nothing.
    #[test]
    fn the_orbit_pass_counts_what_the_walk_counts() {
        let layers = stage_one();
        let walked = analyse(&layers, 2);
        assert!(walked.all.kingmaker.positions > 100, "{:?}", walked.all);
        assert_eq!(count_categories(&layers, |_| true, 2), walked.all);
        assert_eq!(count_categories(&layers, |_| false, 2), Scope::default());
        let kingmakers = count_categories(&layers, |c| c == Category::Kingmaker, 1);
        assert_eq!(kingmakers.kingmaker, walked.all.kingmaker);
        assert_eq!(kingmakers.spoiler_draw_positions, 0);
    }
}
