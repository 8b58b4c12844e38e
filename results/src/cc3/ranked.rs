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
        self.add_times(value, 1);
    }

    fn add_times(&mut self, value: u8, times: u64) {
        match value {
            VALUE_WIN => self.win += times,
            VALUE_LOSS => self.loss += times,
            _ => self.draw += times,
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
    fn add(&mut self, value: u8, finisher_next: bool, times: u64) {
        self.all.add_times(value, times);
        let split = if finisher_next { &mut self.finisher_next } else { &mut self.finisher_previous };
        split.add_times(value, times);
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

impl RankedScope {
    fn merge(&mut self, o: &RankedScope) {
        self.positions += o.positions;
        self.terminal += o.terminal;
        self.live_before_a_finish += o.live_before_a_finish;
        self.live_after_a_finish += o.live_after_a_finish;
        for (k, v) in &o.top2 {
            self.top2.entry(k.clone()).or_default().merge(v);
        }
        self.race.merge(&o.race);
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
    let done = game.finished(pos);
    match game.standing(pos) {
        Standing::Illegal => Status::Illegal,
        Standing::Over { .. } => Status::Terminal,
        Standing::Live => {
            Status::Live { finished: done.count_ones(), finisher_next: done & (1 << ((pos.turn + 1) % 3)) != 0 }
        }
    }
}

/// Adds one legal position with the values `top2` (per player) to `scope`:
/// each player's top2 while it still plays (`playing`, bits; a player who has
/// finished has placed), and, with one finisher, the mover's race value
/// `race_times` times.
fn count(scope: &mut RankedScope, st: Status, mover: u8, top2: &[u8; 3], playing: u8, race_times: u64) {
    scope.positions += 1;
    match st {
        Status::Illegal => unreachable!("counted positions are legal"),
        Status::Terminal => scope.terminal += 1,
        Status::Live { finished, finisher_next } => {
            for (p, name) in PLAYER_NAMES.iter().enumerate() {
                if playing & (1 << p) != 0 {
                    scope.top2.entry((*name).to_string()).or_default().add(top2[p]);
                }
            }
            if finished == 0 {
                scope.live_before_a_finish += 1;
            } else {
                scope.live_after_a_finish += 1;
                scope.race.add(top2[mover as usize], finisher_next, race_times);
            }
        }
    }
}

/// Counts over every position, in parallel over rank ranges. Checks that the
/// layer holds ILLEGAL exactly at the ranked game's illegal ranks.
fn count_all(values: &Top2Values, threads: usize) -> Result<(RankedScope, u64), ResultsError> {
    let game = values.game;
    let n = game.position_count();
    let threads = threads.max(1) as u64;
    let step = n.div_ceil(threads);
    let parts: Vec<Result<(RankedScope, u64), ResultsError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let first = (t * step).min(n);
                let end = ((t + 1) * step).min(n);
                s.spawn(move || {
                    let mut scope = RankedScope::default();
                    let mut illegal = 0;
                    let mut bad = None;
                    game.cc3.for_each_position_in_run(first, (end - first) as usize, &mut |i, pos| {
                        let rank = first + i as u64;
                        let st = status(game, pos);
                        let v = values.top2_a(rank);
                        if (st == Status::Illegal) != (v == VALUE_ILLEGAL) {
                            bad.get_or_insert(rank);
                            return;
                        }
                        if st == Status::Illegal {
                            illegal += 1;
                            return;
                        }
                        // Rotation is a bijection of the legal positions that
                        // maps top2(A) to top2(B): over all positions each
                        // player's counts are A's, so A's value stands for every
                        // player's. And the race, the mover's value, counted on
                        // A's turns stands for B's and C's turns as well: A's
                        // turns count three times, the others' not at all.
                        let race_times = if pos.turn == 0 { 3 } else { 0 };
                        // top2(A) where A still plays stands for each player's.
                        let playing = if game.finished(pos) & 1 == 0 { 0b111 } else { 0 };
                        count(&mut scope, st, pos.turn, &[v; 3], playing, race_times);
                    });
                    match bad {
                        Some(rank) => Err(ResultsError::Inconsistent(format!(
                            "rank {rank}: {RANKED_QUESTION} says {}illegal where the ranked rules say otherwise",
                            if values.top2_a(rank) == VALUE_ILLEGAL { "" } else { "not " }
                        ))),
                        None => Ok((scope, illegal)),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(ResultsError::Inconsistent("a counting thread panicked".into()))))
            .collect()
    });
    let mut all = RankedScope::default();
    let mut illegal = 0;
    for p in parts {
        let (scope, i) = p?;
        all.merge(&scope);
        illegal += i;
    }
    Ok((all, illegal))
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
    let mut reachable = RankedScope::default();
    let mut depths = Vec::new();
    let mut first = None;
    let mut depth = 0u32;
    let complete = loop {
        let mut row = RankedDepth { depth, new: frontier.len() as u64, some_top2_win: 0, after_a_finish: 0 };
        let mut next = Vec::new();
        for &rank in &frontier {
            let pos = game.cc3.unrank(rank);
            let st = status(game, &pos);
            let top2 = values.top2_of(&pos);
            count(&mut reachable, st, pos.turn, &top2, !game.finished(&pos) & 0b111, 1);
            if let Status::Live { finished, .. } = st {
                let done = game.finished(&pos);
                let forced = (0..3).any(|p| done & (1 << p) == 0 && top2[p] == VALUE_WIN);
                row.some_top2_win += u64::from(forced);
                row.after_a_finish += u64::from(finished == 1);
            }
            // The game as it is played: on past the objective's finish.
            game.for_each_move_of(&pos, &mut |child| {
                let c = game.cc3.rank(&child);
                if mark(c) {
                    next.push(c);
                }
            });
        }
        if row.some_top2_win > 0 {
            first.get_or_insert(depth);
        }
        depths.push(row);
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
    let search = RankedSearch { depths, first_forced_top2_depth: first, complete };
    (search, complete.then_some(reachable))
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

/// Computes the summary of a ranked job from its tablebase.
pub fn compute(game: &Ranked, dir: &Path, job: &SolvedJob, threads: usize) -> Result<RankedSummary, ResultsError> {
    let started = std::time::Instant::now();
    let values = load_top2(game, dir, job)?;
    tracing::info!("loaded {RANKED_QUESTION} in {:.1}s", started.elapsed().as_secs_f64());
    let t = std::time::Instant::now();
    let (all, illegal) = count_all(&values, threads)?;
    tracing::info!("counted all {} positions in {:.1}s", all.positions, t.elapsed().as_secs_f64());
    let t = std::time::Instant::now();
    let (bfs, reachable) = search(&values, SEARCH_FRONTIER_LIMIT);
    tracing::info!(
        "searched {} depths from the start in {:.1}s ({})",
        bfs.depths.len(),
        t.elapsed().as_secs_f64(),
        if bfs.complete { "to the end" } else { "stopped at the frontier limit" }
    );
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
        illegal,
        all,
        reachable,
        start: start_report(&values),
        bfs_from_start: bfs,
        consistency,
        layers: job.layer_summaries(),
        tablebases: job.tablebase_summaries(),
        analysis_seconds: started.elapsed().as_secs_f64(),
    })
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
