//! `summary.json` of a ranked job (docs/RANKED.md): the top2 and race
//! counts over every position and over those reachable from the start, the
//! start's values, and the breadth-first depths from the start with the
//! positions where some player can force a finish in the first two.
//!
//! Everything is read from the one computed layer, top2(A): top2(B) at a
//! position is top2(A) at the position rotated backwards (B's pieces given
//! to A), top2(C) at the position rotated forwards, and the race for second
//! place is the mover's top2 on the positions where one player finished.

use crate::ResultsError;
use crate::cc3::analysis::{self, LayerReader, LayerValues, Merge, orbit_values_pass};
use crate::cc3::depths::DepthMap;
use crate::cc3::summary::ANALYSIS_SCRATCH;
use crate::report::thousands;
use crate::solved::{LayerSummary, SolvedJob, TablebaseSummary};
use retro_engine::tablebase::{VALUE_DRAW, VALUE_ILLEGAL, VALUE_LOSS, VALUE_WIN, unpack_value};
use retro_games::cc3::{PLAYER_NAMES, Position, RANK_ORDER, RANKED_QUESTION, Ranked, Standing};
use retro_games::{GameKind, RetroGame};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// WIN / LOSS / DRAW counts of one question over one set of positions.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Wld {
    /// Positions where the player can force its objective.
    pub win: u64,
    /// Positions where the others can force it to fail.
    pub loss: u64,
    /// Neither (repetition).
    pub draw: u64,
}

impl Wld {
    fn add(&mut self, value: u8) {
        match value {
            VALUE_WIN => self.win += 1,
            VALUE_LOSS => self.loss += 1,
            _ => self.draw += 1,
        }
    }

    fn merge(&mut self, o: &Wld) {
        self.win += o.win;
        self.loss += o.loss;
        self.draw += o.draw;
    }

    /// Positions counted.
    pub fn total(&self) -> u64 {
        self.win + self.loss + self.draw
    }
}

/// The race for second place over positions where one player has finished:
/// the value for the player to move (it takes 2nd), split by whether the
/// finisher is the player after the mover or the one before.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Race {
    /// Every such position.
    pub all: Wld,
    /// The finisher is the player after the mover (it would have moved next).
    pub finisher_next: Wld,
    /// The finisher is the player before the mover (it has just finished, or
    /// its turn was skipped).
    pub finisher_previous: Wld,
}

impl Race {
    fn add(&mut self, value: u8, finisher_next: bool) {
        self.all.add(value);
        let split = if finisher_next { &mut self.finisher_next } else { &mut self.finisher_previous };
        split.add(value);
    }

    fn merge(&mut self, o: &Race) {
        self.all.merge(&o.all);
        self.finisher_next.merge(&o.finisher_next);
        self.finisher_previous.merge(&o.finisher_previous);
    }
}

/// Counts over one set of positions.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct RankedScope {
    /// Legal positions (live and terminal).
    pub positions: u64,
    /// Terminal positions (two players finished).
    pub terminal: u64,
    /// Live positions with nobody finished (the stage game's open positions).
    pub live_before_a_finish: u64,
    /// Live positions with one player finished.
    pub live_after_a_finish: u64,
    /// top2(X) over the live positions where X still plays (has not
    /// finished), for each player X.
    pub top2: BTreeMap<String, Wld>,
    /// The race for second place (live positions with one finisher).
    pub race: Race,
}

/// What a counting thread accumulates for one [`RankedScope`]: the per
/// player counts in an array (a map entry per position costs an allocation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ScopeTally {
    positions: u64,
    terminal: u64,
    live_before_a_finish: u64,
    live_after_a_finish: u64,
    top2: [Wld; 3],
    race: Race,
}

impl ScopeTally {
    /// Adds one legal position with the values `top2` (per player): each
    /// player's top2 while it still plays (`playing`, bits; a player who has
    /// finished has placed), and, with one finisher, the mover's race value.
    fn add(&mut self, st: Status, mover: u8, top2: &[u8; 3], playing: u8) {
        self.positions += 1;
        match st {
            Status::Illegal => unreachable!("counted positions are legal"),
            Status::Terminal => self.terminal += 1,
            Status::Live { finished, finisher_next } => {
                for (p, w) in self.top2.iter_mut().enumerate() {
                    if playing & (1 << p) != 0 {
                        w.add(top2[p]);
                    }
                }
                if finished == 0 {
                    self.live_before_a_finish += 1;
                } else {
                    self.live_after_a_finish += 1;
                    self.race.add(top2[mover as usize], finisher_next);
                }
            }
        }
    }

    fn merge(&mut self, o: &ScopeTally) {
        self.positions += o.positions;
        self.terminal += o.terminal;
        self.live_before_a_finish += o.live_before_a_finish;
        self.live_after_a_finish += o.live_after_a_finish;
        for (mine, theirs) in self.top2.iter_mut().zip(&o.top2) {
            mine.merge(theirs);
        }
        self.race.merge(&o.race);
    }

    fn scope(&self) -> RankedScope {
        RankedScope {
            positions: self.positions,
            terminal: self.terminal,
            live_before_a_finish: self.live_before_a_finish,
            live_after_a_finish: self.live_after_a_finish,
            top2: PLAYER_NAMES.iter().zip(self.top2).map(|(n, w)| ((*n).to_string(), w)).collect(),
            race: self.race,
        }
    }
}

/// The start position's values.
#[derive(Clone, Debug, Serialize)]
pub struct RankedStart {
    /// The start in the text notation.
    pub position: String,
    /// top2(X) for each player: "win" | "loss" | "draw".
    pub top2: BTreeMap<String, String>,
    /// The players who can force a finish in the first two from the start
    /// (the article's question: can any player guarantee not to finish last?).
    pub can_avoid_last: Vec<String>,
}

/// One depth of the breadth-first search from the start in the ranked game.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct RankedDepth {
    /// Plies from the start.
    pub depth: u32,
    /// Positions first reached at this depth.
    pub new: u64,
    /// Of those, live positions where some player who has not finished can
    /// force its top2 (top2 WIN).
    pub some_top2_win: u64,
    /// Of those, live positions with one player finished.
    pub after_a_finish: u64,
}

/// The breadth-first search from the start.
#[derive(Clone, Debug, Serialize)]
pub struct RankedSearch {
    /// Depth by depth.
    pub depths: Vec<RankedDepth>,
    /// The first depth with a live position where some player can force
    /// top2 (`None`: none within the search).
    pub first_forced_top2_depth: Option<u32>,
    /// True when the search ran to its end (every reachable position seen);
    /// false when it stopped at the frontier limit, after the first forced
    /// top2 depth when there was one.
    pub complete: bool,
}

/// Checks of the layer against the rules on a sample of positions (every
/// position when the space is small): each live position's top2(A) is what
/// its children's values give by the forcing rule (A to move: WIN when some
/// child is WIN, LOSS when every child is; the others alike with the roles
/// swapped; DRAW otherwise), and after a first finish the race is zero-sum:
/// the two racers' top2 values are each other's complement (one WIN, the
/// other LOSS, or both DRAW), read through the rotation.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Consistency {
    /// Live positions checked against their children.
    pub positions: u64,
    /// Of those, positions with one finisher whose race was checked zero-sum.
    pub races: u64,
}

/// Positions the consistency check samples at most.
pub const CONSISTENCY_SAMPLES: u64 = 1_000_000;

/// [`Consistency`] over `samples` positions drawn at random (every position
/// when there are no more than that), in parallel.
fn check_consistency(values: &Top2Values, samples: u64, threads: usize) -> Result<Consistency, ResultsError> {
    let game = values.game;
    let n = game.position_count();
    let every = n <= samples;
    let total = if every { n } else { samples };
    let threads = threads.max(1) as u64;
    let per = total.div_ceil(threads);
    let parts: Vec<Result<Consistency, ResultsError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut rng =
                        retro_games::sample::XorShift(0x5eed_0054 ^ (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    let mut c = Consistency::default();
                    for i in (t * per)..((t + 1) * per).min(total) {
                        let rank = if every { i } else { rng.next_u64() % n };
                        check_one(values, rank, &mut c)?;
                    }
                    Ok(c)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(ResultsError::Inconsistent("a checking thread panicked".into()))))
            .collect()
    });
    let mut all = Consistency::default();
    for p in parts {
        let p = p?;
        all.positions += p.positions;
        all.races += p.races;
    }
    Ok(all)
}

fn check_one(values: &Top2Values, rank: u64, c: &mut Consistency) -> Result<(), ResultsError> {
    let game = values.game;
    let pos = game.cc3.unrank(rank);
    let Status::Live { finished, .. } = status(game, &pos) else { return Ok(()) };
    let stored = values.top2_a(rank);
    let text = || game.cc3.format(&pos);
    // Where A has finished its question is settled: WIN, with no children.
    if game.finished(&pos) & 1 != 0 {
        if stored != VALUE_WIN {
            return Err(ResultsError::Inconsistent(format!(
                "{} (rank {rank}): A has finished, yet {RANKED_QUESTION} holds {stored}",
                text()
            )));
        }
        c.positions += 1;
        return Ok(());
    }
    let (mut any_win, mut any_loss, mut all_win, mut all_loss) = (false, false, true, true);
    game.for_each_child(rank, &mut |child| {
        let v = values.top2_a(child);
        any_win |= v == VALUE_WIN;
        any_loss |= v == VALUE_LOSS;
        all_win &= v == VALUE_WIN;
        all_loss &= v == VALUE_LOSS;
    });
    let (max_wins, min_wins) = if pos.turn == game.objective { (any_win, all_loss) } else { (all_win, any_loss) };
    let by_rule = if max_wins {
        VALUE_WIN
    } else if min_wins {
        VALUE_LOSS
    } else {
        VALUE_DRAW
    };
    if stored != by_rule {
        return Err(ResultsError::Inconsistent(format!(
            "{} (rank {rank}): {RANKED_QUESTION} holds {stored}, its children give {by_rule}",
            text()
        )));
    }
    c.positions += 1;
    if finished == 1 {
        let top2 = values.top2_of(&pos);
        let first = game.finished(&pos).trailing_zeros() as usize;
        let (x, y) = ((first + 1) % 3, (first + 2) % 3);
        let complement = match top2[x] {
            VALUE_WIN => VALUE_LOSS,
            VALUE_LOSS => VALUE_WIN,
            v => v,
        };
        if top2[y] != complement {
            return Err(ResultsError::Inconsistent(format!(
                "{} (rank {rank}): the race for second is not zero-sum (top2 values {top2:?})",
                text()
            )));
        }
        c.races += 1;
    }
    Ok(())
}

/// The whole summary of a ranked job.
#[derive(Clone, Debug, Serialize)]
pub struct RankedSummary {
    /// Job name.
    pub job: String,
    /// Always `cc3`.
    pub game: GameKind,
    /// Always `ranked`.
    pub objective: &'static str,
    /// Star order.
    pub order: u32,
    /// Plan hash.
    pub plan_hash: String,
    /// Program version.
    pub program_version: String,
    /// The git commit the program was built from (`unknown` outside git).
    pub program_commit: String,
    /// Ranks in the space (the stage game's).
    pub positions: u64,
    /// Ranks that are no position of the ranked game.
    pub illegal: u64,
    /// Every legal position.
    pub all: RankedScope,
    /// The positions reachable from the start (when the search was complete).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reachable: Option<RankedScope>,
    /// The start position.
    pub start: RankedStart,
    /// The search from the start.
    pub bfs_from_start: RankedSearch,
    /// The layer checked against the rules (see [`Consistency`]).
    pub consistency: Consistency,
    /// Per computed layer.
    pub layers: Vec<LayerSummary>,
    /// The tablebase files.
    pub tablebases: Vec<TablebaseSummary>,
    /// Each layer's depth file (the plies to the end of every position,
    /// docs/FORMAT.md), beside its tablebase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depth_files: Vec<TablebaseSummary>,
    /// Seconds spent on the analysis.
    pub analysis_seconds: f64,
}

/// top2(A)'s packed values, read as every player's top2.
pub struct Top2Values<'g> {
    game: &'g Ranked,
    packed: Vec<u8>,
}

impl<'g> Top2Values<'g> {
    /// The layer's packed values (2 bits a position, [`unpack_value`]).
    pub fn new(game: &'g Ranked, packed: Vec<u8>) -> Top2Values<'g> {
        Top2Values { game, packed }
    }

    /// top2(A) at `rank` (a tablebase value).
    #[inline]
    pub fn top2_a(&self, rank: u64) -> u8 {
        unpack_value(&self.packed, rank)
    }

    /// top2(X) at `pos` for each player X: A's at the position, B's at the
    /// position rotated backwards (B becomes A), C's rotated forwards.
    pub fn top2_of(&self, pos: &Position) -> [u8; 3] {
        retro_probe::ranked::top2_ranks(&self.game.cc3, pos).map(|r| self.top2_a(r))
    }
}

/// The live/terminal status of a position of the ranked game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Illegal,
    Terminal,
    /// Live, with this many finished players (0 or 1) and, when 1, whether
    /// the finisher is the player after the mover.
    Live {
        finished: u32,
        finisher_next: bool,
    },
}

fn status(game: &Ranked, pos: &Position) -> Status {
    status_of(game.finished(pos), pos.turn)
}

/// [`status`] of a position whose finished players are `done` (bits).
fn status_of(done: u8, mover: u8) -> Status {
    match Ranked::standing_of(done, mover) {
        Standing::Illegal => Status::Illegal,
        Standing::Over { .. } => Status::Terminal,
        Standing::Live => {
            Status::Live { finished: done.count_ones(), finisher_next: done & (1 << ((mover + 1) % 3)) != 0 }
        }
    }
}

/// Adds one position first reached at its depth to that depth's row.
fn add_to_row(row: &mut RankedDepth, st: Status, top2: &[u8; 3], done: u8) {
    row.new += 1;
    if let Status::Live { finished, .. } = st {
        let forced = (0..3).any(|p| done & (1 << p) == 0 && top2[p] == VALUE_WIN);
        row.some_top2_win += u64::from(forced);
        row.after_a_finish += u64::from(finished == 1);
    }
}

/// The first depth with a live position where some player can force top2.
fn first_forced_top2_depth(rows: &[RankedDepth]) -> Option<u32> {
    rows.iter().find(|r| r.some_top2_win > 0).map(|r| r.depth)
}

/// The row of `depth`, the rows before it added when missing.
fn row_at(rows: &mut Vec<RankedDepth>, depth: u32) -> &mut RankedDepth {
    while rows.len() <= depth as usize {
        rows.push(RankedDepth { depth: rows.len() as u32, new: 0, some_top2_win: 0, after_a_finish: 0 });
    }
    &mut rows[depth as usize]
}

/// top2(A) as the orbit pass reads layers: layer 0 (the only one).
impl LayerValues for Top2Values<'_> {
    type Reader<'a>
        = &'a Top2Values<'a>
    where
        Self: 'a;

    fn reader(&self) -> Self::Reader<'_> {
        self
    }
}

impl LayerReader for &Top2Values<'_> {
    #[inline]
    fn value(&mut self, _layer: usize, rank: u64) -> u8 {
        self.top2_a(rank)
    }
}

/// What one pass over the rotation orbits counts (see [`count_orbits`]).
#[derive(Default)]
struct OrbitCounts {
    all: ScopeTally,
    illegal: u64,
    /// Reached positions with nobody finished: the stage game's, whose depth
    /// is the same in both games.
    reached_before_a_finish: ScopeTally,
    /// Their rows, by depth.
    rows: Vec<RankedDepth>,
    /// Reached positions with a finisher, with their depth in the stage game
    /// (where the search stopped): the ranked game goes on from them.
    finished_seeds: Vec<(u32, u64)>,
    /// A rank whose value disagrees with the rules on legality.
    bad: Option<u64>,
}

impl Merge for OrbitCounts {
    fn merge_from(&mut self, o: &OrbitCounts) {
        self.all.merge(&o.all);
        self.illegal += o.illegal;
        self.reached_before_a_finish.merge(&o.reached_before_a_finish);
        for r in &o.rows {
            let mine = row_at(&mut self.rows, r.depth);
            mine.new += r.new;
            mine.some_top2_win += r.some_top2_win;
            mine.after_a_finish += r.after_a_finish;
        }
        self.finished_seeds.extend_from_slice(&o.finished_seeds);
        self.bad = self.bad.or(o.bad);
    }
}

/// The finished players of `R^j P` from those of `P` (bit X becomes X + j).
fn rotated_done(done: u8, j: usize) -> u8 {
    ((done << j) | (done >> ((3 - j) % 3))) & 0b111
}

/// Counts every position in one pass over the rotation orbits (top2(X) of
/// the three positions of an orbit are its three top2(A) values), checking
/// that the layer holds ILLEGAL exactly at the ranked game's illegal ranks.
/// With `depths` (the stage game's search from the start), also the
/// reached positions before a finish by depth, and the reached positions
/// with a finisher collected for [`after_the_finish`].
fn count_orbits(values: &Top2Values, depths: Option<&DepthMap>, threads: usize) -> Result<OrbitCounts, ResultsError> {
    let cc3 = &values.game.cc3;
    let third = cc3.ranker.placements() as u64;
    let counts = orbit_values_pass(
        cc3,
        values,
        [true, false, false],
        "ranked count",
        0..third,
        threads,
        |acc: &mut OrbitCounts, done_p, r, v| {
            for j in 0..3 {
                let (done, mover, here) = (rotated_done(done_p, j), j as u8, v[0][j]);
                let st = status_of(done, mover);
                let depth = depths.and_then(|d| d.depth(j, r[j] - j as u64 * third));
                if (st == Status::Illegal) != (here == VALUE_ILLEGAL) || (st == Status::Illegal && depth.is_some()) {
                    acc.bad.get_or_insert(r[j]);
                    continue;
                }
                if st == Status::Illegal {
                    acc.illegal += 1;
                    continue;
                }
                // top2(X) at R^j P is top2(A) at R^(j - X) P.
                let top2 = [0, 1, 2].map(|x| v[0][(j + 3 - x) % 3]);
                acc.all.add(st, mover, &top2, !done & 0b111);
                match depth {
                    Some(d) if done == 0 => {
                        acc.reached_before_a_finish.add(st, mover, &top2, 0b111);
                        add_to_row(row_at(&mut acc.rows, d), st, &top2, done);
                    }
                    Some(d) => acc.finished_seeds.push((d, r[j])),
                    None => {}
                }
            }
        },
    );
    if let Some(rank) = counts.bad {
        return Err(ResultsError::Inconsistent(format!(
            "rank {rank}: {RANKED_QUESTION} says {}illegal where the ranked rules say otherwise{}",
            if values.top2_a(rank) == VALUE_ILLEGAL { "" } else { "not " },
            if depths.is_some() { " (or the search from the start reached it)" } else { "" }
        )));
    }
    Ok(counts)
}

/// The ranked game after a first finish, from the start: a breadth-first
/// search over the positions with a finisher, seeded with those the stage
/// game's search reached (`seeds`, at their depth there; each is reached
/// in the ranked game at that depth unless play after another finish gets
/// there sooner). Adds each position it reaches to `reach` and to the row
/// of the depth it first reaches it at.
fn after_the_finish(
    values: &Top2Values,
    mut seeds: Vec<(u32, u64)>,
    reach: &mut ScopeTally,
    rows: &mut Vec<RankedDepth>,
) {
    let game = values.game;
    seeds.sort_unstable();
    let mut seen = std::collections::HashSet::with_capacity(seeds.len());
    let mut next_seed = 0;
    let mut frontier: Vec<u64> = Vec::new();
    let Some(&(mut depth, _)) = seeds.first() else { return };
    loop {
        while next_seed < seeds.len() && seeds[next_seed].0 == depth {
            if seen.insert(seeds[next_seed].1) {
                frontier.push(seeds[next_seed].1);
            }
            next_seed += 1;
        }
        if frontier.is_empty() {
            match seeds.get(next_seed) {
                Some(&(d, _)) => {
                    depth = d;
                    continue;
                }
                None => break,
            }
        }
        let mut next = Vec::new();
        for &rank in &frontier {
            let pos = game.cc3.unrank(rank);
            let done = game.finished(&pos);
            let (st, top2) = (status_of(done, pos.turn), values.top2_of(&pos));
            reach.add(st, pos.turn, &top2, !done & 0b111);
            add_to_row(row_at(rows, depth), st, &top2, done);
            game.for_each_move_of(&pos, &mut |child| {
                let c = game.cc3.rank(&child);
                if seen.insert(c) {
                    next.push(c);
                }
            });
        }
        frontier = next;
        depth += 1;
    }
}

/// Frontier positions the search holds at most before it stops (8 bytes
/// each, plus the visited bitset of a bit a rank): the whole search at
/// stage 1, its first depths at stage 2.
pub const SEARCH_FRONTIER_LIMIT: usize = 50_000_000;

/// The breadth-first search from the start over the ranked game: each depth's
/// new positions counted, and when it runs to its end the reachable scope.
fn search(values: &Top2Values, frontier_limit: usize) -> (RankedSearch, Option<RankedScope>) {
    let game = values.game;
    let n = game.position_count();
    let mut visited = vec![0u64; n.div_ceil(64) as usize];
    let mut mark = |r: u64| {
        let (w, b) = ((r / 64) as usize, r % 64);
        let new = visited[w] & (1 << b) == 0;
        visited[w] |= 1 << b;
        new
    };
    let start = game.cc3.rank(&game.cc3.start());
    mark(start);
    let mut frontier = vec![start];
    let mut reachable = ScopeTally::default();
    let mut depths = Vec::new();
    let mut depth = 0u32;
    let complete = loop {
        let mut next = Vec::new();
        for &rank in &frontier {
            let pos = game.cc3.unrank(rank);
            let done = game.finished(&pos);
            let (st, top2) = (status_of(done, pos.turn), values.top2_of(&pos));
            reachable.add(st, pos.turn, &top2, !done & 0b111);
            add_to_row(row_at(&mut depths, depth), st, &top2, done);
            // The game as it is played: on past the objective's finish.
            game.for_each_move_of(&pos, &mut |child| {
                let c = game.cc3.rank(&child);
                if mark(c) {
                    next.push(c);
                }
            });
        }
        if next.is_empty() {
            break true;
        }
        if next.len() > frontier_limit {
            // The next depth would not fit: the depths so far stand.
            break false;
        }
        next.sort_unstable();
        frontier = next;
        depth += 1;
    };
    let search = RankedSearch { first_forced_top2_depth: first_forced_top2_depth(&depths), depths, complete };
    (search, complete.then(|| reachable.scope()))
}

/// The start's values.
fn start_report(values: &Top2Values) -> RankedStart {
    let game = values.game;
    let pos = game.cc3.start();
    let top2 = values.top2_of(&pos);
    let word = |v: u8| match v {
        VALUE_WIN => "win",
        VALUE_LOSS => "loss",
        VALUE_DRAW => "draw",
        _ => "illegal",
    };
    RankedStart {
        position: game.cc3.format(&pos),
        top2: PLAYER_NAMES.iter().zip(top2).map(|(n, v)| ((*n).to_string(), word(v).to_string())).collect(),
        can_avoid_last: PLAYER_NAMES
            .iter()
            .zip(top2)
            .filter(|(_, v)| *v == VALUE_WIN)
            .map(|(n, _)| (*n).to_string())
            .collect(),
    }
}

/// Reads top2(A) from the job's tablebase (every block verified), all of it
/// in memory: 2 bits a position, 3.7 GB at stage 2.
pub fn load_top2<'g>(game: &'g Ranked, dir: &Path, job: &SolvedJob) -> Result<Top2Values<'g>, ResultsError> {
    let mut reader = job.open(dir, RANKED_QUESTION, RANK_ORDER)?;
    Ok(Top2Values::new(game, reader.read_all()?))
}

/// Computes the summary of a ranked job from its tablebase. With
/// `memory_available` (bytes) at least twice what the stage game's depth
/// map needs (7.4 GB at order 2), the whole search from the start is made
/// ([`reached_by_depth_map`]); else only its first depths ([`search`]).
pub fn compute(
    game: &Ranked,
    dir: &Path,
    job: &SolvedJob,
    threads: usize,
    memory_available: Option<u64>,
) -> Result<RankedSummary, ResultsError> {
    let started = std::time::Instant::now();
    let map_bytes = DepthMap::bytes_for(game.cc3.ranker.placements() as u64);
    let (values, counts, bfs, reachable) = if memory_available.is_some_and(|m| m / 2 >= map_bytes) {
        reached_by_depth_map(game, dir, job, threads)?
    } else {
        tracing::info!(
            "the search from the start stops at {SEARCH_FRONTIER_LIMIT} frontier positions: the whole search \
             needs a depth map of {:.2} GB, over half the memory available",
            map_bytes as f64 / 1e9
        );
        let values = load_top2(game, dir, job)?;
        let counts = counted_all(&values, None, threads)?;
        let t = std::time::Instant::now();
        let (bfs, reachable) = search(&values, SEARCH_FRONTIER_LIMIT);
        tracing::info!(
            "searched {} depths from the start in {:.1}s ({})",
            bfs.depths.len(),
            t.elapsed().as_secs_f64(),
            if bfs.complete { "to the end" } else { "stopped at the frontier limit" }
        );
        (values, counts, bfs, reachable)
    };
    let t = std::time::Instant::now();
    let consistency = check_consistency(&values, CONSISTENCY_SAMPLES, threads)?;
    tracing::info!(
        "checked {} live positions against their children and {} races zero-sum in {:.1}s",
        consistency.positions,
        consistency.races,
        t.elapsed().as_secs_f64()
    );
    Ok(RankedSummary {
        job: job.job.clone(),
        game: GameKind::Cc3,
        objective: "ranked",
        order: game.cc3.star.n,
        plan_hash: job.plan_hash.clone(),
        program_version: env!("CARGO_PKG_VERSION").into(),
        program_commit: job.program_commit.clone(),
        positions: game.position_count(),
        illegal: counts.illegal,
        all: counts.all.scope(),
        reachable,
        start: start_report(&values),
        bfs_from_start: bfs,
        consistency,
        layers: job.layer_summaries(),
        tablebases: job.tablebase_summaries(),
        depth_files: job.depth_summaries(),
        analysis_seconds: started.elapsed().as_secs_f64(),
    })
}

/// [`count_orbits`], timed in the log.
fn counted_all(values: &Top2Values, depths: Option<&DepthMap>, threads: usize) -> Result<OrbitCounts, ResultsError> {
    let t = std::time::Instant::now();
    let counts = count_orbits(values, depths, threads)?;
    tracing::info!("counted all {} positions in {:.1}s", counts.all.positions, t.elapsed().as_secs_f64());
    Ok(counts)
}

/// The whole search from the start, in two parts. Before any finish the
/// ranked game is the stage game, and so are its depths: the stage game's
/// search ([`analysis::search_depths`], its visited sets parked beside the
/// tablebases) records them, and the pass over the orbits counts the
/// reached positions with nobody finished. The positions with a finisher
/// that search reached seed the ranked game's search after a finish
/// ([`after_the_finish`]). The two counts of each stage-game depth, the
/// search's and the pass's, must agree.
fn reached_by_depth_map<'g>(
    game: &'g Ranked,
    dir: &Path,
    job: &SolvedJob,
    threads: usize,
) -> Result<(Top2Values<'g>, OrbitCounts, RankedSearch, Option<RankedScope>), ResultsError> {
    let t = std::time::Instant::now();
    let (depths, news) = analysis::search_depths(&game.cc3, threads, Some(&dir.join(ANALYSIS_SCRATCH)))?;
    tracing::info!("explored the stage game from the start in {:.1}s (depths recorded)", t.elapsed().as_secs_f64());
    let values = load_top2(game, dir, job)?;
    let mut counts = counted_all(&values, Some(&depths), threads)?;
    drop(depths);
    let mut by_stage_depth = vec![0u64; news.len()];
    for r in &counts.rows {
        if let Some(n) = by_stage_depth.get_mut(r.depth as usize) {
            *n += r.new;
        }
    }
    for &(d, _) in &counts.finished_seeds {
        if let Some(n) = by_stage_depth.get_mut(d as usize) {
            *n += 1;
        }
    }
    if by_stage_depth != news || counts.rows.len() > news.len() {
        return Err(ResultsError::Inconsistent(format!(
            "positions per depth: the search found {news:?}, the pass over the depth map {by_stage_depth:?}"
        )));
    }
    let t = std::time::Instant::now();
    let mut reach = counts.reached_before_a_finish;
    let seeds = std::mem::take(&mut counts.finished_seeds);
    let seeded = seeds.len();
    after_the_finish(&values, seeds, &mut reach, &mut counts.rows);
    tracing::info!(
        "searched the game after a finish from {seeded} reached positions in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let rows = std::mem::take(&mut counts.rows);
    let bfs = RankedSearch { first_forced_top2_depth: first_forced_top2_depth(&rows), depths: rows, complete: true };
    Ok((values, counts, bfs, Some(reach.scope())))
}

/// The short human table printed at the end of a run.
pub fn human_table(s: &RankedSummary) -> String {
    let mut out = String::new();
    let wld = |w: &Wld| format!("{} win, {} loss, {} draw", thousands(w.win), thousands(w.loss), thousands(w.draw));
    out.push_str(&format!(
        "ranked game, order {}: {} positions ({} terminal, {} live before a finish, {} after one)\n",
        s.order,
        thousands(s.all.positions),
        thousands(s.all.terminal),
        thousands(s.all.live_before_a_finish),
        thousands(s.all.live_after_a_finish)
    ));
    if let Some(w) = s.all.top2.get("A") {
        out.push_str(&format!("top2(X) where X still plays, every live position (each player alike): {}\n", wld(w)));
    }
    out.push_str(&format!("race for 2nd, the mover's value: {}\n", wld(&s.all.race.all)));
    if let Some(r) = &s.reachable {
        out.push_str(&format!("reachable from the start: {} positions\n", thousands(r.positions)));
        for (p, w) in &r.top2 {
            out.push_str(&format!("  top2({p}): {}\n", wld(w)));
        }
        out.push_str(&format!("  race for 2nd: {}\n", wld(&r.race.all)));
    }
    let top2: Vec<String> = s.start.top2.iter().map(|(p, v)| format!("top2({p}) {v}")).collect();
    out.push_str(&format!("start {}: {}\n", s.start.position, top2.join(", ")));
    match s.bfs_from_start.first_forced_top2_depth {
        Some(d) => out.push_str(&format!("first position where a player can force top2: depth {d}\n")),
        None => out.push_str("no position where a player can force top2 within the search\n"),
    }
    out
}

/// True for the summary (or tablebase params) of a ranked job.
pub fn is_ranked(v: &serde_json::Value) -> bool {
    v["objective"] == "ranked"
}

/// A Markdown ledger of a ranked summary.json.
pub fn ledger_markdown(v: &serde_json::Value) -> String {
    let n = |x: &serde_json::Value| x.as_u64().map(thousands).unwrap_or_else(|| "0".to_string());
    let mut out = format!(
        "## {} — three-player Chinese checkers, order {}, ranked (docs/RANKED.md)\n\nProduced by `coordinator \
         ledger` from the run's summary.json (plan {}, program {}).\n\n",
        v["job"].as_str().unwrap_or("?"),
        v["order"],
        v["plan_hash"].as_str().unwrap_or("?"),
        crate::report::program_of(v)
    );
    let (a, r) = (&v["all"], &v["reachable"]);
    let reach = |x: &serde_json::Value| if r.is_null() { "(search stopped early)".to_string() } else { n(x) };
    out.push_str("| quantity | all positions | reachable from the start |\n|---|---:|---:|\n");
    for (name, key) in [
        ("legal positions", "positions"),
        ("finished (two goals full)", "terminal"),
        ("live, nobody finished", "live_before_a_finish"),
        ("live, one player finished", "live_after_a_finish"),
    ] {
        out.push_str(&format!("| {name} | {} | {} |\n", n(&a[key]), reach(&r[key])));
    }
    for p in ["A", "B", "C"] {
        for k in ["win", "loss", "draw"] {
            out.push_str(&format!(
                "| top2({p}) {k} (while {p} plays) | {} | {} |\n",
                n(&a["top2"][p][k]),
                reach(&r["top2"][p][k])
            ));
        }
    }
    for (name, key) in [("", "all"), (", finisher next", "finisher_next"), (", finisher previous", "finisher_previous")]
    {
        for k in ["win", "loss", "draw"] {
            out.push_str(&format!(
                "| race for 2nd{name}: mover {k} | {} | {} |\n",
                n(&a["race"][key][k]),
                reach(&r["race"][key][k])
            ));
        }
    }
    let s = &v["start"];
    let avoid: Vec<&str> = s["can_avoid_last"].as_array().into_iter().flatten().filter_map(|p| p.as_str()).collect();
    out.push_str(&format!(
        "\nIllegal ranks {}. Start `{}`: top2 A/B/C {}/{}/{}; players who can force a top-two finish: {}.\n\n",
        n(&v["illegal"]),
        s["position"].as_str().unwrap_or("?"),
        s["top2"]["A"].as_str().unwrap_or("?"),
        s["top2"]["B"].as_str().unwrap_or("?"),
        s["top2"]["C"].as_str().unwrap_or("?"),
        if avoid.is_empty() { "none".to_string() } else { avoid.join(", ") }
    ));
    let c = &v["consistency"];
    out.push_str(&format!(
        "Checked against the rules: {} live positions by their children, {} races zero-sum.\n\n",
        n(&c["positions"]),
        n(&c["races"])
    ));
    let bfs = &v["bfs_from_start"];
    out.push_str(&format!(
        "First depth with a position where a player still playing can force top2: {}{}.\n\n",
        bfs["first_forced_top2_depth"],
        if bfs["complete"] == true { "" } else { " (the search stopped at its frontier limit after the depths below)" }
    ));
    out.push_str("| depth | new positions | some top2 WIN | after a finish |\n|---:|---:|---:|---:|\n");
    for d in bfs["depths"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            d["depth"],
            n(&d["new"]),
            n(&d["some_top2_win"]),
            n(&d["after_a_finish"])
        ));
    }
    out.push_str("\n| layer | rounds | seconds |\n|---|---:|---:|\n");
    for l in v["layers"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "| {} | {} | {:.1} |\n",
            l["question"].as_str().unwrap_or("?"),
            l["rounds"],
            l["seconds"].as_f64().unwrap_or(0.0)
        ));
    }
    out.push_str(&crate::report::tablebase_table(v));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use retro_engine::layout::Layout;
    use retro_engine::memsolve::solve;
    use retro_engine::tablebase::pack_values;
    use retro_engine::values::tablebase_value;
    use retro_games::Question;

    /// top2(X) of stage 1 solved directly for objective `x`, as tablebase values.
    fn solved(x: u8) -> Vec<u8> {
        let g = Ranked::new(1, x).unwrap();
        let layout = Layout::new(g.position_count(), 3, 64, 4096);
        solve(&g, Question::solo(x), &layout, 1).unwrap().bytes.iter().map(|&b| tablebase_value(b)).collect()
    }

    /// Reading B's and C's values through the rotation gives the layers
    /// solved for B and for C.
    #[test]
    fn rotated_reads_are_the_other_players_layers() {
        let g = Ranked::new(1, 0).unwrap();
        let values = Top2Values::new(&g, pack_values(&solved(0)));
        let (b, c) = (solved(1), solved(2));
        for rank in 0..g.position_count() {
            let top2 = values.top2_of(&g.cc3.unrank(rank));
            assert_eq!((top2[1], top2[2]), (b[rank as usize], c[rank as usize]), "rank {rank}");
        }
    }

    /// The two ways to the reachable scope agree at stage 1: the plain
    /// search over the ranked game, and the stage game's depth map with the
    /// search after a finish seeded from it (what stage 2 takes).
    #[test]
    fn the_depth_map_route_is_the_plain_search() {
        let g = Ranked::new(1, 0).unwrap();
        let values = Top2Values::new(&g, pack_values(&solved(0)));
        let (plain, plain_reach) = search(&values, usize::MAX);
        assert!(plain.complete);
        let (depths, news) = analysis::search_depths(&g.cc3, 2, None).unwrap();
        let mut counts = count_orbits(&values, Some(&depths), 2).unwrap();
        assert!(!counts.finished_seeds.is_empty());
        let stage_total: u64 = news.iter().sum();
        assert_eq!(counts.rows.iter().map(|r| r.new).sum::<u64>() + counts.finished_seeds.len() as u64, stage_total);
        let mut reach = counts.reached_before_a_finish;
        after_the_finish(&values, std::mem::take(&mut counts.finished_seeds), &mut reach, &mut counts.rows);
        assert_eq!(Some(reach.scope()), plain_reach);
        assert_eq!(counts.rows, plain.depths);
        // The ranked game reaches positions the stage game does not.
        assert!(reach.positions > stage_total, "{} against {stage_total}", reach.positions);
        // And the pass's all-scope counts are the rank-by-rank ones.
        let mut each = ScopeTally::default();
        for rank in 0..g.position_count() {
            let pos = g.cc3.unrank(rank);
            let st = status(&g, &pos);
            if st != Status::Illegal {
                each.add(st, pos.turn, &values.top2_of(&pos), !g.finished(&pos) & 0b111);
            }
        }
        assert_eq!(counts.all, each);
    }

    /// The check passes on the solved layer and fails when one live
    /// position's value is changed: it can fail.
    #[test]
    fn the_consistency_check_finds_a_changed_value() {
        let g = Ranked::new(1, 0).unwrap();
        let mut raw = solved(0);
        let ok = check_consistency(&Top2Values::new(&g, pack_values(&raw)), u64::MAX, 2).unwrap();
        assert!(ok.positions > 1000 && ok.races > 100, "{ok:?}");
        let live = (0..g.position_count())
            .find(|&r| matches!(status(&g, &g.cc3.unrank(r)), Status::Live { finished: 1, .. }))
            .unwrap();
        raw[live as usize] = if raw[live as usize] == VALUE_WIN { VALUE_LOSS } else { VALUE_WIN };
        let err = check_consistency(&Top2Values::new(&g, pack_values(&raw)), u64::MAX, 2).unwrap_err().to_string();
        assert!(err.contains("children give") || err.contains("zero-sum"), "{err}");
    }
}
