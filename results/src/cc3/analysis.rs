//! The three-player analysis: the 12 forcing answers of a position from the
//! three computed layers (by rotation), the category of a position, and the
//! counts over the whole space, over the positions reachable from the start and
//! per breadth-first depth from the start.

use retro_engine::tablebase::VALUE_DRAW;
// The per-position answers live in the probe library, which reads them from
// tablebase files; the analysis computes the same from layers in memory.
use crate::ResultsError;
pub use crate::cc3::depths::DepthMap;
use retro_games::cc3::{BlockDecoder, Cc3, Outcome, PLAYER_NAMES, Position, destinations};
pub use retro_probe::Value;
pub use retro_probe::cc3::{
    Answers, COMPUTED_LAYERS, Category, ENABLE_NAMES, ENABLE_PAIRS, answers_from, answers_with, category, category_of,
    rotation_ranks,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Where the analysis reads the three computed layers' values: each thread
/// takes its own [`LayerReader`] (which may keep what it decoded).
pub trait LayerValues: Sync {
    /// One thread's reader.
    type Reader<'a>: LayerReader
    where
        Self: 'a;
    /// A new reader.
    fn reader(&self) -> Self::Reader<'_>;
}

/// One thread's access to the layers' values.
pub trait LayerReader {
    /// The value of layer `layer` (see [`COMPUTED_LAYERS`]) at `rank`.
    fn value(&mut self, layer: usize, rank: u64) -> u8;
}

/// The 12 answers at `pos`, read through `layers`.
pub fn answers(game: &Cc3, layers: &mut impl LayerReader, pos: &Position) -> Answers {
    let r: Result<Answers, std::convert::Infallible> =
        answers_with(game, pos, |layer, rank| Ok(Value::from_code(layers.value(layer, rank))));
    match r {
        Ok(a) => a,
        Err(never) => match never {},
    }
}

/// The categories in [`Category`] order (the index of [`Tally::categories`]).
const CATEGORIES: [Category; 5] =
    [Category::Terminal, Category::SoloWin, Category::SpoilerDraw, Category::Kingmaker, Category::Other];

/// Counts over a set of positions.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct ScopeCounts {
    /// Positions in the scope (illegal included).
    pub positions: u64,
    /// Illegal placements in the scope.
    pub illegal: u64,
    /// Per player: win / loss / draw of solo(X) (illegal positions excluded).
    pub solo: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per ordered pair `X>Y`: positions where enable(X>Y) is forced.
    pub enable: BTreeMap<String, u64>,
    /// Per category.
    pub categories: BTreeMap<String, u64>,
}

/// The counts of a [`ScopeCounts`] in flat arrays: adding a position is a few
/// increments (the maps, keyed by strings, are built once at the end).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Positions (illegal included).
    pub positions: u64,
    /// Illegal placements.
    pub illegal: u64,
    /// `solo[player][value]`, value as in the tablebase (DRAW, WIN, LOSS; the
    /// illegal slot stays 0 for consistent tablebases).
    pub solo: [[u64; 4]; 3],
    /// Forced enable questions, in [`ENABLE_PAIRS`] order.
    pub enable: [u64; 6],
    /// Per category, in [`Category`] order.
    pub categories: [u64; 5],
}

impl Tally {
    /// Counts one position with answers `a` and category `c`.
    #[inline]
    pub fn add(&mut self, a: &Answers, c: Category) {
        self.positions += 1;
        self.categories[c as usize] += 1;
        if a.solo[0] == Value::Illegal {
            self.illegal += 1;
            return;
        }
        for (p, &v) in a.solo.iter().enumerate() {
            self.solo[p][v as usize] += 1;
        }
        for (i, &(x, y)) in ENABLE_PAIRS.iter().enumerate() {
            self.enable[i] += a.enable[x][y] as u64;
        }
    }

    /// Adds another tally.
    pub fn merge(&mut self, o: &Tally) {
        self.positions += o.positions;
        self.illegal += o.illegal;
        for p in 0..3 {
            for v in 0..4 {
                self.solo[p][v] += o.solo[p][v];
            }
        }
        for i in 0..6 {
            self.enable[i] += o.enable[i];
        }
        for i in 0..5 {
            self.categories[i] += o.categories[i];
        }
    }

    /// The category counts by name, as in summary.json.
    pub fn category_map(&self) -> BTreeMap<String, u64> {
        CATEGORIES.iter().map(|c| (c.key().to_string(), self.categories[*c as usize])).collect()
    }

    /// The counts in summary.json's shape.
    pub fn to_scope(&self) -> ScopeCounts {
        let solo = PLAYER_NAMES
            .iter()
            .enumerate()
            .map(|(p, name)| {
                let m = [Value::Win, Value::Loss, Value::Draw]
                    .iter()
                    .map(|&v| (v.word().to_string(), self.solo[p][v as usize]))
                    .collect();
                (name.to_string(), m)
            })
            .collect();
        ScopeCounts {
            positions: self.positions,
            illegal: self.illegal,
            solo,
            enable: ENABLE_NAMES.iter().enumerate().map(|(i, e)| (e.to_string(), self.enable[i])).collect(),
            categories: self.category_map(),
        }
    }
}

/// Ranks per work item of the parallel passes (a few hundred blocks).
const CHUNK_RANKS: u64 = 1 << 20;

/// Logs `what`'s progress each time `done` crosses a multiple of 5 % of
/// `total`, once `quiet` has passed (so that short passes stay silent).
struct ProgressLog {
    what: String,
    unit: &'static str,
    total: u64,
    done: AtomicU64,
    started: Instant,
    quiet: Duration,
}

impl ProgressLog {
    fn new(what: String, unit: &'static str, total: u64, quiet: Duration) -> ProgressLog {
        ProgressLog { what, unit, total, done: AtomicU64::new(0), started: Instant::now(), quiet }
    }

    fn add(&self, n: u64) {
        let before = self.done.fetch_add(n, Ordering::Relaxed);
        let after = before + n;
        let elapsed = self.started.elapsed();
        if self.total > 0 && before * 20 / self.total != after * 20 / self.total && elapsed >= self.quiet {
            let s = elapsed.as_secs_f64();
            tracing::info!(
                "{}: {}% ({after} of {} {}, {:.2} M/s, {s:.0}s)",
                self.what,
                after * 100 / self.total,
                self.total,
                self.unit,
                after as f64 / s.max(1e-9) / 1e6
            );
        }
    }
}

/// Counts every position of a rotation orbit whose player-A position lies in
/// a block (of player A to move) starting in `range`, over `threads` threads.
///
/// Rotation is a bijection from the positions with A to move onto those with
/// B to move (and B onto C), so every orbit `{P, R P, R^2 P}` has exactly one
/// position with A to move: visiting those and adding the three positions of
/// each orbit counts every position once, and one orbit's nine layer values
/// give all three positions' answers. Within a block the other two players'
/// pieces are fixed, so the rotated positions of a block also fill one block
/// each: their ranks cost only the mover's part, and the layer reads of a
/// block stay within a few cache lines.
pub fn count_orbits(game: &Cc3, values: &impl LayerValues, range: Range<u64>, threads: usize) -> Tally {
    orbit_pass(game, values, range, threads, |t: &mut Tally, _, _, a, c| t.add(a, c))
}

/// Counts over the whole space, over the positions reached from the start and
/// per depth from the start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DepthTallies {
    /// Every position.
    pub all: Tally,
    /// The positions `depths` records as reached.
    pub reachable: Tally,
    /// `by_depth[d]`: the positions first reached at depth `d`.
    pub by_depth: Vec<Tally>,
}

impl Merge for DepthTallies {
    fn merge_from(&mut self, o: &DepthTallies) {
        self.all.merge(&o.all);
        self.reachable.merge(&o.reachable);
        if self.by_depth.len() < o.by_depth.len() {
            self.by_depth.resize(o.by_depth.len(), Tally::default());
        }
        for (mine, theirs) in self.by_depth.iter_mut().zip(&o.by_depth) {
            mine.merge(theirs);
        }
    }
}

/// [`count_orbits`] over the whole space that also counts, with the depth
/// each position was first reached at (`depths`, from [`search_depths`]),
/// the reached positions and each depth's: one pass for every count of the
/// summary, where counting each depth's frontier as the search goes costs
/// an unranking and nine scattered layer reads per position.
pub fn count_by_depth(game: &Cc3, values: &impl LayerValues, depths: &DepthMap, threads: usize) -> DepthTallies {
    let third = game.ranker.placements() as u64;
    assert_eq!(depths.third(), third, "a depth map of another order");
    orbit_pass(game, values, 0..third, threads, |t: &mut DepthTallies, j, rank, a, c| {
        t.all.add(a, c);
        if let Some(d) = depths.depth(j, rank - j as u64 * third) {
            t.reachable.add(a, c);
            let d = d as usize;
            if t.by_depth.len() <= d {
                t.by_depth.resize(d + 1, Tally::default());
            }
            t.by_depth[d].add(a, c);
        }
    })
}

/// What each thread of an orbit pass accumulates, and how two are combined.
pub(crate) trait Merge: Default + Send {
    fn merge_from(&mut self, other: &Self);
}

impl Merge for Tally {
    fn merge_from(&mut self, other: &Tally) {
        self.merge(other);
    }
}

/// The pass of [`count_orbits`]: calls `add(acc, j, rank, answers, category)`
/// for the three positions of every orbit whose A-to-move position lies in a
/// block starting in `range` (`j`: the rotation, which is also the player to
/// move at `rank`), one accumulator per thread, merged at the end.
fn orbit_pass<S: Merge>(
    game: &Cc3,
    values: &impl LayerValues,
    range: Range<u64>,
    threads: usize,
    add: impl Fn(&mut S, usize, u64, &Answers, Category) + Sync,
) -> S {
    orbit_values_pass(game, values, [true; 3], "count", range, threads, |acc: &mut S, done, r, v| {
        // Every rotation of a position with a full goal has one.
        let ongoing = done == 0;
        for (j, &rank) in r.iter().enumerate() {
            let ans = answers_from(v, j);
            add(acc, j, rank, &ans, category_of(ongoing, &ans));
        }
    })
}

/// The orbits of [`orbit_pass`] as raw values: calls `visit(acc, done, r,
/// v)` once an orbit, `r[i]` the rank of `R^i P` (`P` with A to move), `v` as
/// [`answers_from`] takes it, reading only the layers `read` names (the others
/// read as DRAW); `done` has bit X set when player X's goal is full at `P`
/// (at `R^i P` it is player X + i's). Logs its progress as `what`.
pub(crate) fn orbit_values_pass<S: Merge>(
    game: &Cc3,
    values: &impl LayerValues,
    read: [bool; 3],
    what: &str,
    range: Range<u64>,
    threads: usize,
    visit: impl Fn(&mut S, u8, &[u64; 3], &[[u8; 3]; 3]) + Sync,
) -> S {
    let ranker = &game.ranker;
    let star = &game.star;
    let end = range.end.min(ranker.placements() as u64);
    let range = range.start.min(end)..end;
    let next = AtomicU64::new(range.start);
    let progress = ProgressLog::new(what.into(), "positions", 3 * (range.end - range.start), Duration::ZERO);
    let goal = star.goal_mask;
    let work = || {
        let mut acc = S::default();
        let mut values = values.reader();
        loop {
            let chunk = next.fetch_add(CHUNK_RANKS, Ordering::Relaxed);
            if chunk >= range.end {
                break;
            }
            let chunk_end = (chunk + CHUNK_RANKS).min(range.end);
            // The blocks that start in this chunk.
            let mut at = chunk;
            let first = ranker.block(&game.unrank(at), 0);
            if first.base < at {
                at = first.base + ranker.block_len(&first);
            }
            let mut counted = 0u64;
            let mut centres = Vec::new();
            while at < chunk_end {
                let pos = game.unrank(at);
                let block = ranker.block(&pos, 0);
                debug_assert_eq!(block.base, at);
                let rot1 = pos.rotated(star);
                let rot2 = rot1.rotated(star);
                let (block1, block2) = (ranker.block(&rot1, 1), ranker.block(&rot2, 2));
                // B's and C's goals are the block's, A's each position's.
                let others_done = (1..3).filter(|&p| pos.pieces[p] & goal[p] == goal[p]).fold(0u8, |d, p| d | 1 << p);
                ranker.for_each_in_block(&block, &mut centres, |r0, a| {
                    let a1 = star.rotate_bits(a);
                    let a2 = star.rotate_bits(a1);
                    let r = [r0, ranker.minor(&block1, a1), ranker.minor(&block2, a2)];
                    let v = [0, 1, 2]
                        .map(|layer| if read[layer] { r.map(|r| values.value(layer, r)) } else { [VALUE_DRAW; 3] });
                    let done = others_done | u8::from(a & goal[0] == goal[0]);
                    visit(&mut acc, done, &r, &v);
                    counted += 3;
                });
                at = block.base + ranker.block_len(&block);
            }
            progress.add(counted);
        }
        acc
    };
    let mut total = S::default();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1)).map(|_| s.spawn(work)).collect();
        for h in handles {
            total.merge_from(&h.join().expect("count thread panicked"));
        }
    });
    total
}

/// Counts over every position of the space, in parallel (see [`count_orbits`]).
pub fn count_all(game: &Cc3, layers: &impl LayerValues, threads: usize) -> ScopeCounts {
    count_orbits(game, layers, 0..game.ranker.placements() as u64, threads).to_scope()
}

/// One breadth-first depth from the start.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Depth {
    /// Plies from the start.
    pub depth: u32,
    /// Positions first reached at this depth.
    pub new: u64,
    /// Their categories, when the tablebases are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub categories: Option<BTreeMap<String, u64>>,
}

/// Result of the breadth-first pass from the start.
pub struct Reach {
    /// Per depth.
    pub depths: Vec<Depth>,
    /// Counts over every reached position (when the tablebases are known).
    pub reachable: Option<ScopeCounts>,
}

/// Views a bitset's words as atomics, for threads that set bits concurrently.
fn atomic_words(words: &mut [u64]) -> &[AtomicU64] {
    const _: () = assert!(std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>());
    // SAFETY: AtomicU64 has the same size and (checked above) alignment as u64,
    // and the exclusive borrow keeps any non-atomic access away while the
    // shared atomic view lives (this is the unstable AtomicU64::from_mut_slice).
    unsafe { &*(words as *mut [u64] as *const [AtomicU64]) }
}

/// Relative costs of a top-down expansion per frontier position and of a
/// bottom-up one per unvisited position (see [`Bfs::step`]). Measured at
/// stage 2 since the bottom-up step decodes block by block: 258 ns a frontier
/// position top-down (depth 15) against 51 ns an unvisited position
/// bottom-up (depth 16) on an Intel Xeon, 3.3-3.6 M/s against 18-56 M/s on
/// an AMD EPYC; with 5, depth 15 goes bottom-up (docs/benchmarks/log.md, 2026-12-05 and 2026-11-30).
const PUSH_COST: u64 = 5;
const PULL_COST: u64 = 1;

/// A step reports its progress only once it has run this long.
const PROGRESS_QUIET: Duration = Duration::from_secs(30);

/// Children per thread between two sorted applications (see [`Bfs::set_batch`]).
const DEFAULT_BATCH: usize = 1 << 22;

/// Orders `keys` by their bits `lo..hi` (each key below `2^hi`) with a
/// least-significant-digit radix sort, using `spare` as the second buffer;
/// keys equal in those bits keep their relative order (each pass is stable).
///
/// The search groups a batch of children by the chunk of the bitsets they
/// fall in (bits from `log2(CHUNK_WORDS * 64)` up): within a chunk (64 KB of
/// `visited` and `next`, in L2) the order does not matter. That is two passes
/// of at most 8-bit digits at order 2 instead of three of 11 bits for the
/// whole rank, and 256 buckets a pass keep the scatter's write streams in L1.
fn radix_sort_bits(keys: &mut Vec<u64>, spare: &mut Vec<u64>, lo: u32, hi: u32) {
    const MAX_DIGIT: u32 = 8;
    let width = hi.saturating_sub(lo);
    if width == 0 || keys.len() < 2 {
        return;
    }
    let passes = width.div_ceil(MAX_DIGIT) as usize;
    let digit = width.div_ceil(passes as u32);
    let mask = (1u64 << digit) - 1;
    let shift = |pass: usize| lo + pass as u32 * digit;
    // Every pass's histogram from one read of the keys.
    let mut counts = vec![[0usize; 1 << MAX_DIGIT]; passes];
    for &k in keys.iter() {
        for (pass, c) in counts.iter_mut().enumerate() {
            c[((k >> shift(pass)) & mask) as usize] += 1;
        }
    }
    // The spare's old contents are all overwritten: no zeroing.
    if spare.len() != keys.len() {
        spare.clear();
        spare.resize(keys.len(), 0);
    }
    for (pass, c) in counts.iter_mut().enumerate() {
        // A digit every key shares moves nothing.
        if c.contains(&keys.len()) {
            continue;
        }
        let mut at = 0;
        for n in c.iter_mut() {
            (*n, at) = (at, at + *n);
        }
        let s = shift(pass);
        for &k in keys.iter() {
            let d = ((k >> s) & mask) as usize;
            spare[c[d]] = k;
            c[d] += 1;
        }
        std::mem::swap(keys, spare);
    }
}

/// Bitset words per work item of the breadth-first pass (2^18 positions).
const CHUNK_WORDS: usize = 1 << 12;
/// log2 of the positions in a chunk of [`CHUNK_WORDS`] words.
const CHUNK_BITS: u32 = (CHUNK_WORDS * 64).trailing_zeros();

/// Breadth-first search from the start over at most `max_depth` plies (all, if
/// `None`), on `threads` threads. With `layers`, each depth gets its category
/// counts and the reached set its full counts. With `parking`, the visited
/// bitsets no step needs wait in files there, and the directory goes at the
/// end if nothing else is in it (see [`Bfs::park_in`]). See
/// [`Bfs`] for the method.
pub fn explore(
    game: &Cc3,
    layers: Option<&impl LayerValues>,
    max_depth: Option<u32>,
    threads: usize,
    parking: Option<&Path>,
) -> Result<Reach, ResultsError> {
    let started = Instant::now();
    let mut bfs = Bfs::from_start(game);
    if let Some(dir) = parking {
        bfs.park_in(dir)?;
    }
    let mut depths = Vec::new();
    let mut reachable = layers.map(|_| Tally::default());
    loop {
        let (depth, new) = (bfs.depth(), bfs.frontier_len());
        let expand = max_depth.is_none_or(|d| depth < d);
        // The last depth of a search without tablebases needs no scan at all.
        let tally = if expand || layers.is_some() { bfs.step(layers, expand, threads)? } else { Tally::default() };
        if let Some(total) = reachable.as_mut() {
            total.merge(&tally);
        }
        depths.push(Depth { depth, new, categories: layers.map(|_| tally.category_map()) });
        tracing::info!(
            "explore: depth {depth}: {new} new positions{}; {:.1}s",
            if expand {
                let how = if bfs.pulled() { "bottom-up" } else { "top-down" };
                format!(", {} at the next depth ({how})", bfs.frontier_len())
            } else {
                String::new()
            },
            started.elapsed().as_secs_f64()
        );
        if !expand || bfs.frontier_len() == 0 {
            break;
        }
    }
    Ok(Reach { depths, reachable: reachable.map(|t| t.to_scope()) })
}

/// Breadth-first search from the start without the layers, recording the
/// depth at which each position is first reached (see [`DepthMap`]);
/// returns the map and the number of positions first reached at each depth.
/// With `parking`, as in [`explore`]. The categories per depth then come
/// from [`count_by_depth`].
pub fn search_depths(game: &Cc3, threads: usize, parking: Option<&Path>) -> Result<(DepthMap, Vec<u64>), ResultsError> {
    let started = Instant::now();
    let mut bfs = Bfs::from_start(game);
    if let Some(dir) = parking {
        bfs.park_in(dir)?;
    }
    let mut map = DepthMap::new(bfs.third);
    let mut news = Vec::new();
    loop {
        let (depth, new) = (bfs.depth(), bfs.frontier_len());
        if depth > crate::cc3::depths::MAX_DEPTH {
            return Err(ResultsError::Unsupported(format!(
                "the search from the start goes past depth {}, the deepest a depth map records",
                crate::cc3::depths::MAX_DEPTH
            )));
        }
        map.record(depth, &bfs.frontier[0], threads);
        news.push(new);
        bfs.step(None::<&crate::cc3::compressed::CompressedLayers>, true, threads)?;
        let how = if bfs.pulled() { "bottom-up" } else { "top-down" };
        tracing::info!(
            "explore: depth {depth}: {new} new positions, {} at the next depth ({how}); {:.1}s",
            bfs.frontier_len(),
            started.elapsed().as_secs_f64()
        );
        if bfs.frontier_len() == 0 {
            break;
        }
    }
    Ok((map, news))
}

/// The state of a parallel breadth-first search over the whole rank space.
///
/// Every move passes the turn on, so the positions at depth `d` all have player
/// `d mod 3` to move and lie in that player's third of the rank space. Memory is
/// a visited bitset per third and two frontier bitsets (the current depth's and
/// the next): 3.1 GB at order 2, whatever the frontier's size, allocated zeroed
/// so that a shallow search touches few pages.
///
/// A step's threads take chunks of the current frontier (clearing them as they
/// go) and collect the children's ranks in a batch. A full batch is grouped
/// by chunk of the next third (ordered by the chunk's index, see
/// [`radix_sort_bits`]) and applied chunk by chunk, each under its own lock:
/// the application sweeps both bitsets in order of chunks, which the
/// prefetchers follow, a chunk's words stay in cache while its children land,
/// and under the lock the bits are set with plain loads and stores (an atomic
/// OR per child stalls on every cache miss: 10x slower at order 2).
/// A map of non-empty chunks lets the scan skip the rest of the frontier.
pub struct Bfs<'g> {
    game: &'g Cc3,
    /// Positions per player to move (the size of a third).
    third: u64,
    third_words: usize,
    chunks: usize,
    /// Visited positions, per third (indexed from the third's first rank).
    visited: [Vec<u64>; 3],
    /// One lock per chunk of a third's bitsets (see [`Bfs::step`]).
    ranges: Vec<Mutex<()>>,
    /// The current frontier's bitset (third `depth % 3`), then the next one's.
    frontier: [Vec<u64>; 2],
    /// Per chunk of `CHUNK_WORDS` frontier words: whether any bit may be set.
    flags: [Vec<AtomicBool>; 2],
    depth: u32,
    frontier_len: u64,
    /// Children a thread collects before sorting and applying them.
    batch: usize,
    /// Positions visited, per third.
    reached: [u64; 3],
    direction: Direction,
    /// Whether the last step expanded bottom-up.
    pulled: bool,
    /// Where visited bitsets wait while no step needs them (see
    /// [`Bfs::park_in`]); `None`: all three stay in memory. A parked third's
    /// `visited` is an empty `Vec`.
    parking: Option<PathBuf>,
}

impl<'g> Bfs<'g> {
    /// An empty search at depth 0 (nothing visited).
    pub fn new(game: &'g Cc3) -> Bfs<'g> {
        let third = game.ranker.placements() as u64;
        let third_words = third.div_ceil(64) as usize;
        let chunks = third_words.div_ceil(CHUNK_WORDS);
        let flags = || (0..chunks).map(|_| AtomicBool::new(false)).collect::<Vec<_>>();
        Bfs {
            game,
            third,
            third_words,
            chunks,
            visited: [0, 1, 2].map(|_| vec![0u64; third_words]),
            ranges: (0..chunks).map(|_| Mutex::new(())).collect(),
            frontier: [vec![0u64; third_words], vec![0u64; third_words]],
            flags: [flags(), flags()],
            depth: 0,
            frontier_len: 0,
            batch: DEFAULT_BATCH,
            reached: [0; 3],
            direction: Direction::Auto,
            pulled: false,
            parking: None,
        }
    }

    /// Keeps in memory only the visited bitset the next step needs, the
    /// others compressed in files under `dir` (created if missing): a step
    /// expands into one third, so the search holds one visited bitset and
    /// the two frontier bitsets instead of five (1.85 GB instead of 3.1 GB at
    /// order 2), for a write and a read of one bitset per depth. The files
    /// are removed as they are read back, and when the search is dropped, the
    /// directory too if nothing else is in it.
    pub fn park_in(&mut self, dir: &Path) -> Result<(), ResultsError> {
        std::fs::create_dir_all(dir).map_err(|source| ResultsError::Scratch {
            path: dir.to_path_buf(),
            what: "cannot create the directory",
            source,
        })?;
        self.parking = Some(dir.to_path_buf());
        for third in 0..3 {
            self.park(third)?;
        }
        Ok(())
    }

    fn parked_path(dir: &Path, third: usize) -> PathBuf {
        dir.join(format!("visited-{}.zst", PLAYER_NAMES[third]))
    }

    /// Whether third `third`'s visited bitset is parked (a third holds at
    /// least one position, so its bitset in memory is never empty).
    fn is_parked(&self, third: usize) -> bool {
        self.visited[third].is_empty()
    }

    /// Moves third `third`'s visited bitset to its file, if parking is on.
    fn park(&mut self, third: usize) -> Result<(), ResultsError> {
        let Some(dir) = &self.parking else { return Ok(()) };
        if self.is_parked(third) {
            return Ok(());
        }
        // An empty set needs no file: it comes back as fresh zeroed memory.
        if self.reached[third] > 0 {
            let path = Self::parked_path(dir, third);
            let io = |what| scratch_error(&path, what);
            let file = std::fs::File::create(&path).map_err(io("cannot create"))?;
            let mut out =
                zstd::stream::Encoder::new(std::io::BufWriter::new(file), 1).map_err(io("cannot compress"))?;
            for words in self.visited[third].chunks(1 << 16) {
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                out.write_all(&bytes).map_err(io("cannot write"))?;
            }
            out.finish().and_then(|mut w| w.flush()).map_err(io("cannot write"))?;
        }
        self.visited[third] = Vec::new();
        Ok(())
    }

    /// Brings third `third`'s visited bitset back into memory.
    fn unpark(&mut self, third: usize) -> Result<(), ResultsError> {
        if !self.is_parked(third) {
            return Ok(());
        }
        let mut words = vec![0u64; self.third_words];
        if let (Some(dir), true) = (&self.parking, self.reached[third] > 0) {
            let path = Self::parked_path(dir, third);
            let io = |what| scratch_error(&path, what);
            let file = std::fs::File::open(&path).map_err(io("cannot open"))?;
            let mut input = zstd::stream::Decoder::new(file).map_err(io("cannot decompress"))?;
            let mut bytes = vec![0u8; 8 << 16];
            for chunk in words.chunks_mut(1 << 16) {
                let bytes = &mut bytes[..8 * chunk.len()];
                input.read_exact(bytes).map_err(io("cannot read back"))?;
                for (w, b) in chunk.iter_mut().zip(bytes.chunks_exact(8)) {
                    *w = u64::from_le_bytes(b.try_into().expect("8 bytes"));
                }
            }
            if input.read(&mut [0u8; 1]).map_err(io("cannot read back"))? != 0 {
                return Err(io("longer than a bitset")(std::io::Error::from(std::io::ErrorKind::InvalidData)));
            }
            std::fs::remove_file(&path).map_err(io("cannot remove"))?;
        }
        self.visited[third] = words;
        Ok(())
    }

    /// The search with the start position at depth 0.
    pub fn from_start(game: &'g Cc3) -> Bfs<'g> {
        let mut bfs = Bfs::new(game);
        let start = game.rank(&game.start());
        bfs.seed(0, &[start]).expect("the start has A to move");
        bfs
    }

    /// Sets the depth and adds `ranks` (which must all have player `depth % 3`
    /// to move) to the current frontier and to the visited set.
    pub fn seed(&mut self, depth: u32, ranks: &[u64]) -> Result<(), ResultsError> {
        let turn = (depth % 3) as u64;
        self.unpark(turn as usize)?;
        if self.frontier_len > 0 && depth != self.depth {
            return Err(ResultsError::Unsupported(format!("the frontier is at depth {}, not {depth}", self.depth)));
        }
        self.depth = depth;
        for &r in ranks {
            if r / self.third != turn {
                return Err(ResultsError::Unsupported(format!(
                    "rank {r} does not have player {} to move",
                    PLAYER_NAMES[turn as usize]
                )));
            }
            let i = r - turn * self.third;
            let (w, bit) = ((i / 64) as usize, 1u64 << (i % 64));
            if self.visited[turn as usize][w] & bit == 0 {
                self.visited[turn as usize][w] |= bit;
                self.frontier[0][w] |= bit;
                self.flags[0][(i / 64) as usize / CHUNK_WORDS].store(true, Ordering::Relaxed);
                self.frontier_len += 1;
                self.reached[turn as usize] += 1;
            }
        }
        self.park(turn as usize)
    }

    /// Sets how many children each thread collects before applying them
    /// (default 2^22: 64 MB of buffers per thread).
    pub fn set_batch(&mut self, children: usize) {
        self.batch = children.max(1);
    }

    /// Depth of the current frontier.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Positions in the current frontier (first reached at [`Bfs::depth`]).
    pub fn frontier_len(&self) -> u64 {
        self.frontier_len
    }

    /// Scans the current frontier on `threads` threads and returns the tally of
    /// its positions (counted only with `values`). With `expand`, every child
    /// not visited yet joins the next frontier, which becomes the current one
    /// at the next depth; without, the frontier is just emptied.
    ///
    /// A step expands top-down (each frontier position's children, see
    /// [`Bfs`]) or bottom-up (each unvisited position of the next third looks
    /// for a parent in the frontier, see [`Bfs::pull`]), whichever costs less
    /// by the frontier's and the unvisited set's sizes, unless
    /// [`Bfs::set_direction`] fixed one.
    pub fn step(
        &mut self,
        values: Option<&impl LayerValues>,
        expand: bool,
        threads: usize,
    ) -> Result<Tally, ResultsError> {
        let next_third = ((self.depth + 1) % 3) as usize;
        if expand {
            self.unpark(next_third)?;
        }
        let unvisited = self.third - self.reached[next_third];
        let pull = expand
            && match self.direction {
                Direction::Push => false,
                Direction::Pull => true,
                Direction::Auto => self.frontier_len.saturating_mul(PUSH_COST) > unvisited.saturating_mul(PULL_COST),
            };
        self.pulled = pull;
        let (tally, found) = if pull {
            let found = self.pull(threads);
            // The frontier still needs its categories, and clearing.
            (self.scan(values, false, threads).0, found)
        } else {
            self.scan(values, expand, threads)
        };
        if expand {
            // The scan cleared the current frontier: it becomes the one after next.
            self.frontier.swap(0, 1);
            self.flags.swap(0, 1);
            self.depth += 1;
            self.reached[next_third] += found;
        }
        self.frontier_len = if expand { found } else { 0 };
        self.park(next_third)?;
        Ok(tally)
    }

    /// The top-down scan of [`Bfs::step`]: the tally of the frontier and the
    /// number of new positions put in the next frontier.
    fn scan(&mut self, values: Option<&impl LayerValues>, expand: bool, threads: usize) -> (Tally, u64) {
        let game = self.game;
        let ranker = &game.ranker;
        let (third_words, chunks) = (self.third_words, self.chunks);
        let turn = (self.depth % 3) as usize;
        let cur_base = turn as u64 * self.third;
        let next_base = ((turn + 1) % 3) as u64 * self.third;
        let visited = atomic_words(&mut self.visited[(turn + 1) % 3]);
        let [cur, next] = &mut self.frontier;
        let (cur, next) = (atomic_words(cur), atomic_words(next));
        let [cur_flags, next_flags] = &self.flags;
        let ranges = &self.ranges;
        let chunk_at = AtomicUsize::new(0);
        let index_bits = 64 - (self.third - 1).leading_zeros();
        // Marks a batch of children (indices in the next third) visited and
        // puts the new ones in the next frontier; returns how many were new.
        // Thread `first` starts at its own range, so that threads seldom queue
        // for the same lock.
        let apply = |batch: &mut Vec<u64>, spare: &mut Vec<u64>, first: usize| {
            radix_sort_bits(batch, spare, CHUNK_BITS, index_bits);
            let mut found = 0u64;
            let chunk_of = |i: u64| (i / 64) as usize / CHUNK_WORDS;
            let (low, high) = batch.split_at(batch.partition_point(|&i| chunk_of(i) < first));
            for part in [high, low] {
                for run in part.chunk_by(|&x, &y| chunk_of(x) == chunk_of(y)) {
                    let chunk = chunk_of(run[0]);
                    // The lock owns the chunk's words of `visited` and `next`:
                    // plain loads and stores cannot lose another thread's bits.
                    let _owned = ranges[chunk].lock().unwrap_or_else(|e| e.into_inner());
                    let mut new = 0;
                    for &i in run {
                        let (w, bit) = ((i / 64) as usize, 1u64 << (i % 64));
                        let seen = visited[w].load(Ordering::Relaxed);
                        if seen & bit == 0 {
                            visited[w].store(seen | bit, Ordering::Relaxed);
                            next[w].store(next[w].load(Ordering::Relaxed) | bit, Ordering::Relaxed);
                            new += 1;
                        }
                    }
                    if new > 0 {
                        next_flags[chunk].store(true, Ordering::Relaxed);
                    }
                    found += new;
                }
            }
            batch.clear();
            found
        };
        let batch_cap = self.batch;
        let progress = ProgressLog::new(
            format!("explore: depth {} ({})", self.depth, if expand { "top-down" } else { "categories" }),
            "frontier positions",
            self.frontier_len,
            PROGRESS_QUIET,
        );
        let work = |thread: usize| {
            let mut tally = Tally::default();
            let mut found = 0u64;
            let mut values = values.map(|v| v.reader());
            let (mut batch, mut spare) = (Vec::new(), Vec::new());
            let first = thread * chunks / threads.max(1);
            // The current block of the frontier position and its two rotated
            // blocks: consecutive frontier positions of one block reuse them, so
            // their rotated ranks cost only the mover's rotated pieces.
            let mut blocks = None;
            loop {
                let chunk = chunk_at.fetch_add(1, Ordering::Relaxed);
                if chunk >= chunks {
                    break;
                }
                if !cur_flags[chunk].swap(false, Ordering::Relaxed) {
                    continue;
                }
                let words = chunk * CHUNK_WORDS..((chunk + 1) * CHUNK_WORDS).min(third_words);
                let mut in_chunk = 0;
                for (w, word) in words.clone().zip(&cur[words]) {
                    // This thread owns the chunk: a load, and a store only where
                    // bits are set (an atomic swap per word costs more than the scan).
                    let mut bits = word.load(Ordering::Relaxed);
                    if bits != 0 {
                        word.store(0, Ordering::Relaxed);
                    }
                    in_chunk += bits.count_ones() as u64;
                    if !expand && values.is_none() {
                        continue;
                    }
                    while bits != 0 {
                        let r = cur_base + w as u64 * 64 + bits.trailing_zeros() as u64;
                        bits &= bits - 1;
                        let pos = game.unrank(r);
                        if let Some(values) = values.as_mut() {
                            if !matches!(&blocks, Some((lo, hi, _, _)) if (*lo..*hi).contains(&r)) {
                                let block = ranker.block(&pos, turn);
                                let rot1 = pos.rotated(&game.star);
                                let rot2 = rot1.rotated(&game.star);
                                blocks = Some((
                                    block.base,
                                    block.base + ranker.block_len(&block),
                                    ranker.block(&rot1, (turn + 1) % 3),
                                    ranker.block(&rot2, (turn + 2) % 3),
                                ));
                            }
                            if let Some((_, _, block1, block2)) = &blocks {
                                let a1 = game.star.rotate_bits(pos.pieces[turn]);
                                let a2 = game.star.rotate_bits(a1);
                                let rr = [r, ranker.minor(block1, a1), ranker.minor(block2, a2)];
                                debug_assert_eq!(rr, rotation_ranks(game, &pos));
                                let v = [0, 1, 2].map(|layer| rr.map(|x| values.value(layer, x)));
                                let a = answers_from(&v, 0);
                                tally.add(&a, category_of(pos.outcome(&game.star) == Outcome::Ongoing, &a));
                            }
                        }
                        if expand {
                            game.for_each_child_of(&pos, |child| batch.push(child - next_base));
                            if batch.len() >= batch_cap {
                                found += apply(&mut batch, &mut spare, first);
                            }
                        }
                    }
                }
                progress.add(in_chunk);
            }
            found += apply(&mut batch, &mut spare, first);
            (tally, found)
        };
        let mut tally = Tally::default();
        let mut found = 0;
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads.max(1)).map(|t| s.spawn(move || work(t))).collect();
            for h in handles {
                let (t, f) = h.join().expect("explore thread panicked");
                tally.merge(&t);
                found += f;
            }
        });
        (tally, found)
    }

    /// The bottom-up expansion of [`Bfs::step`]: every position of the next
    /// third not visited yet joins the next frontier if one of its parents is
    /// in the current one (and still in play); returns how many did.
    ///
    /// Moves are reversible, so the parents of a position are its previous
    /// player's moves played backwards, and they all lie in one block of the
    /// rank space: the search for a parent reads a few cache lines of the
    /// frontier and stops at the first one found. Each thread owns whole
    /// chunks of the next third, so bits are set without atomics or locks.
    pub fn pull(&mut self, threads: usize) -> u64 {
        self.pull_chunks(0..self.chunks, threads)
    }

    /// [`Bfs::pull`] restricted to a range of chunks (of `CHUNK_WORDS` words)
    /// of the next third: for measurements and tests.
    pub fn pull_chunks(&mut self, range: Range<usize>, threads: usize) -> u64 {
        let game = self.game;
        let (ranker, star) = (&game.ranker, &game.star);
        let (third, third_words, chunks) = (self.third, self.third_words, self.chunks);
        let prev = (self.depth % 3) as usize;
        let turn = (prev + 1) % 3;
        assert!(!self.is_parked(turn), "pull_chunks into a parked third (Bfs::step brings it back first)");
        let cur_base = prev as u64 * third;
        let next_base = turn as u64 * third;
        let visited = atomic_words(&mut self.visited[turn]);
        let [cur, next] = &mut self.frontier;
        let (cur, next) = (atomic_words(cur), atomic_words(next));
        let next_flags = &self.flags[1];
        let goal = star.goal_mask;
        let in_frontier = |r: u64| {
            let i = r - cur_base;
            cur[(i / 64) as usize].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
        };
        // Whether the position `q` (player `turn` to move) has a parent in
        // the frontier whose game is on.
        let reached = |q: &Position| {
            let block = ranker.block(q, prev);
            let others_done = (0..3).any(|p| p != prev && q.pieces[p] & goal[p] == goal[p]);
            if others_done {
                return false;
            }
            let parent_on = |pieces: u128| pieces & goal[prev] != goal[prev];
            let occupied = q.occupied();
            let mut own = q.pieces[prev];
            let mut moved = false;
            while own != 0 {
                let from = own.trailing_zeros() as usize;
                own &= own - 1;
                let mut dests = destinations(star, prev, occupied, from);
                moved |= dests != 0;
                while dests != 0 {
                    let to = dests.trailing_zeros() as usize;
                    dests &= dests - 1;
                    let parent = q.pieces[prev] ^ ((1u128 << from) | (1u128 << to));
                    if parent_on(parent) && in_frontier(ranker.minor(&block, parent)) {
                        return true;
                    }
                }
            }
            // The pass: the same placement, when its player had no move there.
            !moved && parent_on(q.pieces[prev]) && in_frontier(ranker.minor(&block, q.pieces[prev]))
        };
        let chunk_at = AtomicUsize::new(range.start);
        let end = range.end.min(chunks);
        let progress = ProgressLog::new(
            format!("explore: depth {} (bottom-up)", self.depth),
            "positions",
            (end.saturating_sub(range.start) * CHUNK_WORDS * 64) as u64,
            PROGRESS_QUIET,
        );
        let work = || {
            let mut found = 0u64;
            // Unvisited positions come in rank order, many in one block: a
            // position costs its mover's pieces, not a whole unranking
            // (up to 1.4x the positions a second in `analysis_bench 1 2 pull`).
            let mut decoder = BlockDecoder::default();
            loop {
                let chunk = chunk_at.fetch_add(1, Ordering::Relaxed);
                if chunk >= end {
                    break;
                }
                let mut any = false;
                let words = chunk * CHUNK_WORDS..((chunk + 1) * CHUNK_WORDS).min(third_words);
                for w in words {
                    let seen = visited[w].load(Ordering::Relaxed);
                    // Bits past the end of the third are not positions.
                    let valid = if (w as u64 + 1) * 64 <= third { u64::MAX } else { (1u64 << (third % 64)) - 1 };
                    let mut open = !seen & valid;
                    let mut new = 0u64;
                    while open != 0 {
                        let b = open.trailing_zeros();
                        open &= open - 1;
                        if reached(&decoder.decode(ranker, next_base + w as u64 * 64 + b as u64).0) {
                            new |= 1 << b;
                        }
                    }
                    if new != 0 {
                        visited[w].store(seen | new, Ordering::Relaxed);
                        next[w].store(next[w].load(Ordering::Relaxed) | new, Ordering::Relaxed);
                        found += new.count_ones() as u64;
                        any = true;
                    }
                }
                if any {
                    next_flags[chunk].store(true, Ordering::Relaxed);
                }
                progress.add((CHUNK_WORDS * 64) as u64);
            }
            found
        };
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads.max(1)).map(|_| s.spawn(work)).collect();
            handles.into_iter().map(|h| h.join().expect("explore thread panicked")).sum()
        })
    }

    /// Whether the last step expanded bottom-up (see [`Bfs::step`]).
    pub fn pulled(&self) -> bool {
        self.pulled
    }

    /// Fixes the direction of the expansions (default: chosen per step).
    pub fn set_direction(&mut self, direction: Direction) {
        self.direction = direction;
    }
}

/// Maps an I/O error on the scratch file `path` while doing `what`.
fn scratch_error<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(std::io::Error) -> ResultsError + 'a {
    move |source| ResultsError::Scratch { path: path.to_path_buf(), what, source }
}

impl Drop for Bfs<'_> {
    fn drop(&mut self) {
        if let Some(dir) = &self.parking {
            // Best effort: what is left behind is only scratch.
            for third in 0..3 {
                let _ = std::fs::remove_file(Self::parked_path(dir, third));
            }
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// How [`Bfs::step`] expands the frontier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Whichever costs less, by the frontier's and the unvisited set's sizes.
    Auto,
    /// Top-down: each frontier position's children.
    Push,
    /// Bottom-up: each unvisited position's parents ([`Bfs::pull`]).
    Pull,
}

/// The answers at the start position in summary.json's words.
#[derive(Clone, Debug, Serialize)]
pub struct StartReport {
    /// The start in the text notation.
    pub position: String,
    /// Its category.
    pub category: String,
    /// solo(X) for each player: "win" | "loss" | "draw".
    pub solo: BTreeMap<String, String>,
    /// enable(X>Y) for each ordered pair.
    pub enable: BTreeMap<String, bool>,
}

/// Describes the start position.
pub fn start_report(game: &Cc3, layers: &impl LayerValues) -> StartReport {
    let pos = game.start();
    let a = answers(game, &mut layers.reader(), &pos);
    StartReport {
        position: game.format(&pos),
        category: category(game, &pos, &a).key().to_string(),
        solo: PLAYER_NAMES.iter().enumerate().map(|(p, n)| (n.to_string(), a.solo[p].word().to_string())).collect(),
        enable: ENABLE_PAIRS
            .iter()
            .enumerate()
            .map(|(i, &(x, y))| (ENABLE_NAMES[i].to_string(), a.enable[x][y]))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TestDir;
    use retro_games::cc3::children;
    use std::collections::HashSet;

    /// The batch sort orders by the chunk bits only, keeps every key, and
    /// leaves keys already grouped (or sharing every digit) as they are.
    #[test]
    fn radix_sort_bits_groups_by_the_bits_asked_for() {
        let mut rng = retro_games::sample::XorShift(0x9e37_79b9_7f4a_7c15);
        for (n, lo, hi) in [(100_000, 18, 33), (5_000, 0, 20), (5_000, 3, 12), (1, 18, 33), (0, 18, 33), (777, 18, 18)]
        {
            let keys: Vec<u64> = (0..n).map(|_| rng.next_u64() % (1u64 << hi)).collect();
            let (mut sorted, mut spare) = (keys.clone(), vec![7; 3]);
            radix_sort_bits(&mut sorted, &mut spare, lo, hi);
            let field = |k: &u64| (k >> lo) & ((1u64 << (hi - lo)) - 1);
            assert!(sorted.windows(2).all(|w| field(&w[0]) <= field(&w[1])), "n {n}, bits {lo}..{hi}");
            let (mut a, mut b) = (keys.clone(), sorted.clone());
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "the same keys, n {n}");
            if lo == hi {
                assert_eq!(sorted, keys, "no bits: nothing moves");
            }
        }
        // Keys sharing the chunk bits keep their order (each pass is stable).
        let same: Vec<u64> = (0..1000u64).rev().map(|i| (5 << 18) | i).collect();
        let (mut sorted, mut spare) = (same.clone(), Vec::new());
        radix_sort_bits(&mut sorted, &mut spare, 18, 33);
        assert_eq!(sorted, same);
    }

    /// Pseudo-random values (all four, ILLEGAL included) for every rank.
    #[derive(Clone, Copy)]
    struct Hashed(u64);
    impl LayerValues for Hashed {
        type Reader<'a> = Hashed;
        fn reader(&self) -> Hashed {
            *self
        }
    }
    impl LayerReader for Hashed {
        fn value(&mut self, layer: usize, rank: u64) -> u8 {
            let mut x =
                (rank ^ self.0).wrapping_add(layer as u64 * 0x51_7cc1_b727_220a).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            x ^= x >> 31;
            (x % 4) as u8
        }
    }

    fn tally_of(game: &Cc3, values: &Hashed, ranks: impl Iterator<Item = u64>) -> Tally {
        let mut t = Tally::default();
        for r in ranks {
            let pos = game.unrank(r);
            let a = answers(game, &mut values.reader(), &pos);
            t.add(&a, category(game, &pos, &a));
        }
        t
    }

    #[test]
    fn orbit_count_equals_position_by_position() {
        let g = Cc3::new(1).unwrap();
        let n = g.ranker.positions() as u64;
        for seed in [1, 2, 3] {
            let v = Hashed(seed);
            let expect = tally_of(&g, &v, 0..n);
            assert_eq!(count_orbits(&g, &v, 0..n, 1), expect);
            assert_eq!(count_orbits(&g, &v, 0..n, 3), expect);
            assert_eq!(count_all(&g, &v, 2), expect.to_scope());
        }
        // Order 2: the orbits of the A-to-move blocks starting in a slice are
        // exactly the slice's blocks and their rotations.
        let g = Cc3::new(2).unwrap();
        let v = Hashed(7);
        let at = 1_234_567_890u64;
        let first = g.ranker.block(&g.unrank(at), 0);
        let lo = first.base + g.ranker.block_len(&first);
        let last = g.ranker.block(&g.unrank(at + 50_000), 0);
        let hi = last.base;
        let mut ranks = Vec::new();
        for r in lo..hi {
            let p = g.unrank(r);
            let r1 = p.rotated(&g.star);
            ranks.extend([r, g.rank(&r1), g.rank(&r1.rotated(&g.star))]);
        }
        assert_eq!(count_orbits(&g, &v, lo..hi, 2), tally_of(&g, &v, ranks.into_iter()));
    }

    /// The plain breadth-first search the parallel one replaced.
    fn naive_depths(g: &Cc3, v: &Hashed, max_depth: u32) -> Vec<(u64, Tally)> {
        let mut seen = HashSet::new();
        let start = g.rank(&g.start());
        seen.insert(start);
        let mut frontier = vec![start];
        let mut out = Vec::new();
        for depth in 0..=max_depth {
            if frontier.is_empty() {
                break;
            }
            out.push((frontier.len() as u64, tally_of(g, v, frontier.iter().copied())));
            if depth == max_depth {
                break;
            }
            let mut next = Vec::new();
            for &r in &frontier {
                for c in children(&g.star, &g.unrank(r)) {
                    let c = g.rank(&c);
                    if seen.insert(c) {
                        next.push(c);
                    }
                }
            }
            frontier = next;
        }
        out
    }

    #[test]
    fn counts_by_depth_map_equal_the_plain_search() {
        let v = Hashed(5);
        let g = Cc3::new(1).unwrap();
        let expect = naive_depths(&g, &v, 1000);
        let parking = TestDir::new("depth-map");
        for (threads, dir) in [(1, None), (2, Some(parking.path())), (3, None)] {
            let (map, news) = search_depths(&g, threads, dir).unwrap();
            assert_eq!(news, expect.iter().map(|e| e.0).collect::<Vec<_>>(), "{threads} threads");
            let got = count_by_depth(&g, &v, &map, threads);
            assert_eq!(got.by_depth, expect.iter().map(|e| e.1.clone()).collect::<Vec<_>>(), "{threads} threads");
            let mut reached = Tally::default();
            expect.iter().for_each(|e| reached.merge(&e.1));
            assert_eq!(got.reachable, reached);
            assert_eq!(got.all, count_orbits(&g, &v, 0..g.ranker.placements() as u64, threads));
            // Stage 1 has unreachable positions: the two scopes differ.
            assert!(got.reachable.positions < got.all.positions);
        }
        assert!(!parking.path().exists(), "the parked files and their directory are gone");
    }

    #[test]
    fn explore_equals_the_plain_search() {
        let v = Hashed(11);
        for (order, max_depth) in [(1, 1000), (2, 6)] {
            let g = Cc3::new(order).unwrap();
            let expect = naive_depths(&g, &v, max_depth);
            for (threads, batch, direction) in [
                (1, 1 << 22, Direction::Push),
                (2, 3, Direction::Push),
                (3, 1000, Direction::Push),
                (1, 1 << 22, Direction::Pull),
                (2, 1 << 22, Direction::Pull),
                (2, 1000, Direction::Auto),
            ] {
                // Pulling scans the whole next third: too slow at order 2
                // (see pull_equals_push for a pull at order 2).
                if order == 2 && direction == Direction::Pull {
                    continue;
                }
                let mut bfs = Bfs::from_start(&g);
                bfs.set_batch(batch);
                bfs.set_direction(direction);
                // Two threads: with the idle visited bitsets parked on disk.
                let parking = TestDir::new(&format!("explore-{order}-{batch}-{direction:?}"));
                if threads == 2 {
                    bfs.park_in(parking.path()).unwrap();
                }
                let mut got = Vec::new();
                loop {
                    let new = bfs.frontier_len();
                    let expand = bfs.depth() < max_depth;
                    got.push((new, bfs.step(Some(&v), expand, threads).unwrap()));
                    if !expand || bfs.frontier_len() == 0 {
                        break;
                    }
                }
                assert_eq!(got, expect, "order {order}, {threads} threads, batch {batch}, {direction:?}");
            }
            let parking = TestDir::new(&format!("explore-{order}"));
            for dir in [None, Some(parking.path())] {
                let reach = explore(&g, Some(&v), Some(max_depth), 2, dir).unwrap();
                let news: Vec<u64> = reach.depths.iter().map(|d| d.new).collect();
                assert_eq!(news, expect.iter().map(|e| e.0).collect::<Vec<_>>());
                let mut total = Tally::default();
                expect.iter().for_each(|e| total.merge(&e.1));
                assert_eq!(reach.reachable, Some(total.to_scope()));
            }
            assert!(!parking.path().exists(), "the parked files and their directory are gone");
        }
    }

    #[test]
    fn a_damaged_parked_bitset_is_an_error_naming_its_file() {
        let g = Cc3::new(1).unwrap();
        let parking = TestDir::new("damaged");
        for damage in [0usize, 1, 2] {
            let mut bfs = Bfs::from_start(&g);
            bfs.park_in(parking.path()).unwrap();
            // Depths 0, 1, 2 fill the three thirds; depth 3 needs B's back.
            for _ in 0..3 {
                bfs.step(None::<&Hashed>, true, 1).unwrap();
            }
            let path = parking.path().join("visited-B.zst");
            let bytes = std::fs::read(&path).unwrap();
            match damage {
                0 => std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap(),
                1 => std::fs::write(&path, [&bytes[..], &bytes[..]].concat()).unwrap(),
                _ => std::fs::remove_file(&path).unwrap(),
            }
            let err = bfs.step(None::<&Hashed>, true, 1).unwrap_err().to_string();
            assert!(err.contains("visited-B.zst"), "{err}");
        }
    }

    #[test]
    fn pull_equals_push() {
        // A frontier of B-to-move positions at order 2, packed in a narrow
        // rank range (few pages), and a slice of the next third (C to move)
        // where their children fall; some of those are visited already.
        let g = Cc3::new(2).unwrap();
        let third = g.ranker.placements() as u64;
        let mut rng = retro_games::sample::XorShift(0x1234_5678_9abc_def1);
        let lo = third + rng.next_u64() % (third - 50_000_000);
        let mut frontier: Vec<u64> = (0..100_000).map(|_| lo + rng.next_u64() % 50_000_000).collect();
        frontier.sort_unstable();
        frontier.dedup();
        let mut kids: Vec<u64> =
            frontier.iter().flat_map(|&r| children(&g.star, &g.unrank(r))).map(|c| g.rank(&c) - 2 * third).collect();
        kids.sort_unstable();
        let chunk_of = |i: u64| (i / 64) as usize / CHUNK_WORDS;
        let middle = chunk_of(kids[kids.len() / 2]);
        let slice = middle - 4..middle + 4;
        let in_slice: Vec<u64> = kids.iter().copied().filter(|&i| slice.contains(&chunk_of(i))).collect();
        let old: Vec<u64> = in_slice.iter().step_by(3).map(|&i| 2 * third + i).collect();
        let mut expect: Vec<u64> = in_slice.iter().map(|&i| 2 * third + i).filter(|r| !old.contains(r)).collect();
        expect.dedup();
        assert!(expect.len() > 100, "the slice holds children ({})", expect.len());

        let mut bfs = Bfs::new(&g);
        bfs.seed(2, &old).unwrap();
        bfs.step(None::<&Hashed>, false, 1).unwrap();
        bfs.seed(1, &frontier).unwrap();
        let found = bfs.pull_chunks(slice.clone(), 2);
        let mut got = Vec::new();
        for w in slice.start * CHUNK_WORDS..slice.end * CHUNK_WORDS {
            let mut bits = bfs.frontier[1][w];
            while bits != 0 {
                got.push(2 * third + w as u64 * 64 + bits.trailing_zeros() as u64);
                bits &= bits - 1;
            }
        }
        assert_eq!(got, expect);
        assert_eq!(found, expect.len() as u64);
        for r in expect.iter().chain(&old) {
            let i = r - 2 * third;
            assert!(bfs.visited[2][(i / 64) as usize] & (1 << (i % 64)) != 0, "{r} visited");
        }
    }

    #[test]
    fn seed_rejects_a_wrong_turn() {
        let g = Cc3::new(1).unwrap();
        let mut bfs = Bfs::new(&g);
        let b_to_move = g.ranker.placements() as u64 + 3;
        assert!(bfs.seed(0, &[b_to_move]).is_err());
        assert!(bfs.seed(1, &[b_to_move]).is_ok());
        assert!(bfs.seed(4, &[b_to_move]).is_err(), "the frontier is at depth 1");
    }
}
