//! The ledger of a single-vacancy start: per jump count, positions (with and
//! without symmetry), jump sequences, dead ends and the positions that can
//! still finish with one peg in the vacated hole; and the solutions by
//! finishing hole.
//!
//! "Still winnable" uses the complement duality (RULES.md section 3): a
//! position P can be reduced to a lone peg on the start's vacancy v exactly
//! when complement(P) is reachable from complement({v}), which is the start
//! itself. So it is a lookup of complement(P) in the level with the matching
//! peg count, never a backward search.

use crate::ResultsError;
use retro_engine::levels::disk;
use retro_engine::levels::spill::SpillOptions;
use retro_engine::levels::store::{self, Entries, LevelMarker, StoredLevel};
use retro_engine::levels::{LevelError, LevelGame, expands_in_memory, next_level};
use retro_games::peg::landing::unpack;
use retro_games::peg::{Folded, Pegs, hole_name};
use serde::{Deserialize, Serialize};

/// One row of the ledger: the positions after `jumps` jumps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelRow {
    /// Jumps made.
    pub jumps: u32,
    /// Pegs left.
    pub pegs: u32,
    /// Distinct positions.
    pub positions: u64,
    /// Distinct positions up to the start's symmetries ([`Ledger::symmetries`]).
    pub up_to_symmetry: u64,
    /// Jump sequences of this length from the start (a decimal string in
    /// JSON: the counts pass 2^64, and JSON readers often stop at 2^53).
    #[serde(with = "decimal")]
    pub sequences: u128,
    /// Positions with no jump left.
    pub dead_ends: u64,
    /// Positions that can still finish with one peg in the start's vacancy.
    pub winnable: u64,
    /// The same, up to symmetry.
    pub winnable_up_to_symmetry: u64,
    /// States as the published European enumeration counts them: a position
    /// together with the hole its last jump landed in (`retro_games::peg::landing`;
    /// the start counts as one). Present when the plan asks for it
    /// (`job.landing_holes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landing_states: Option<u64>,
}

/// Solutions (jump sequences down to one peg) ending on one hole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoleCount {
    /// Hole name.
    pub hole: String,
    /// Jump sequences from the start that leave one peg here (a decimal string in JSON).
    #[serde(with = "decimal")]
    pub solutions: u128,
}

/// The whole ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Board name.
    pub board: String,
    /// The start's vacant hole.
    pub vacancy: String,
    /// How many symmetries fix the start (1, 2, 4 or 8): the "up to symmetry"
    /// columns count positions up to these. Summaries written before the fold
    /// followed the start were all of the central game, fixed by all eight.
    #[serde(default = "eight")]
    pub symmetries: u32,
    /// One row per jump count, from 0 to the last non-empty level.
    pub levels: Vec<LevelRow>,
    /// Solutions by finishing hole (holes with at least one).
    pub solutions_by_hole: Vec<HoleCount>,
}

/// Sums over one shard of one level.
#[derive(Default)]
struct Partial {
    positions: u64,
    sequences: u128,
    dead_ends: u64,
    winnable: u64,
    winnable_reps: u64,
}

impl Partial {
    fn add(&mut self, other: Partial) -> Result<(), ResultsError> {
        self.positions += other.positions;
        self.sequences = self.sequences.checked_add(other.sequences).ok_or_else(|| {
            ResultsError::Overflow("the number of jump sequences of a level overflows 128 bits".into())
        })?;
        self.dead_ends += other.dead_ends;
        self.winnable += other.winnable;
        self.winnable_reps += other.winnable_reps;
        Ok(())
    }
}

/// Maps each position to the representative of its complement: expanding a
/// level with it gives the level's duals, sharded like every other level, so
/// "is the dual reachable" becomes a sorted intersection shard by shard.
struct Dual<'a>(&'a Folded);

impl LevelGame for Dual<'_> {
    fn for_each_child(&self, key: u64, mut f: impl FnMut(u64)) {
        f(self.0.canonical(self.0.board.complement(key)));
    }

    /// One child per position, and no two positions share it.
    fn moves_per_child(&self) -> usize {
        1
    }
}

/// Maps each position to the states its jumps lead to (child and landing
/// hole, packed): expanding level n with it gives level n + 1's states, whose
/// number is the published enumeration's count.
struct Landings<'a>(&'a Folded);

impl LevelGame for Landings<'_> {
    fn for_each_child(&self, key: u64, f: impl FnMut(u64)) {
        self.0.for_each_landing(key, f);
    }
}

/// Bits of one hole's field in a [`LandingHoles`] weight.
const FIELD_BITS: u32 = 3;

/// Without a fold (the c1 start), maps each position to the boards its jumps
/// lead to, each weighted by the hole the jump lands in: 1 in that hole's
/// 3-bit field (the board's holes in bit order; 37 fields fit in 128 bits).
/// Expanding level n with it adds the fields up per board of level n + 1. A
/// jump into hole h from direction d comes from one parent only (the board
/// with that jump undone), so a field counts at most four jumps and never
/// carries into the next: a board's states are its non-zero fields. One table
/// entry per board instead of one per state, which at c1's widest levels is
/// about six times fewer entries and passes.
struct LandingHoles<'a> {
    board: &'a Folded,
    /// The field of each hole (by bit index).
    field: [u8; 64],
}

impl<'a> LandingHoles<'a> {
    /// `None` where this does not apply: a folded start (a representative's
    /// field may count more than four jumps) or too many holes for 128 bits.
    fn of(board: &'a Folded) -> Option<LandingHoles<'a>> {
        let holes = board.board.holes();
        if board.group.len() != 1 || holes.count_ones() * FIELD_BITS > 128 {
            return None;
        }
        let mut field = [0u8; 64];
        for (hole, f) in field.iter_mut().enumerate() {
            *f = (holes & ((1u64 << hole) - 1)).count_ones() as u8;
        }
        Some(LandingHoles { board, field })
    }

    /// The states a board of the expanded level stands for: its holes whose
    /// field is not zero.
    fn states(fields: u128) -> u64 {
        let mut states = 0;
        let mut rest = fields;
        while rest != 0 {
            states += u64::from(rest & ((1 << FIELD_BITS) - 1) != 0);
            rest >>= FIELD_BITS;
        }
        states
    }
}

impl LevelGame for LandingHoles<'_> {
    fn for_each_child(&self, key: u64, mut f: impl FnMut(u64)) {
        self.board.board.for_each_child_in(self.board.group, key, &mut f);
    }

    fn for_each_weighted_child(&self, key: u64, _weight: u128, mut f: impl FnMut(u64, u128)) {
        self.board.for_each_landing(key, |state| {
            let (child, hole) = unpack(state);
            f(child, 1u128 << (FIELD_BITS * u32::from(self.field[usize::from(hole)])));
        });
    }
}

/// Where the ledger may spill while it computes the duals of a level that
/// lies on disk, and within what memory.
#[derive(Clone, Debug)]
pub struct LedgerOptions {
    /// Threads.
    pub threads: usize,
    /// A directory the ledger may use for the duals (emptied when done).
    pub scratch: std::path::PathBuf,
    /// Bytes the spill buffers may hold.
    pub memory_bytes: u64,
    /// Also count the states of each level ([`LevelRow::landing_states`]):
    /// one more expansion of every level.
    pub landing_holes: bool,
}

fn level_error(e: LevelError) -> ResultsError {
    ResultsError::Levels(e.to_string())
}

fn shard_row(board: &Folded, entries: Entries<'_>, duals: Option<Entries<'_>>) -> Result<Partial, ResultsError> {
    /// The next dual key, or `None` at the end of the shard.
    fn next_dual(duals: &mut Option<Entries<'_>>) -> Result<Option<u64>, ResultsError> {
        match duals.as_mut().and_then(Iterator::next) {
            Some(entry) => Ok(Some(entry.map_err(level_error)?.0)),
            None => Ok(None),
        }
    }
    let mut p = Partial::default();
    let mut duals = duals;
    let mut dual = next_dual(&mut duals)?;
    for entry in entries {
        let (key, weight) = entry.map_err(level_error)?;
        let orbit = board.orbit_size(key);
        // Every member of the orbit is reached by the same number of sequences,
        // so the orbit total must divide exactly; anything else is a bug. An
        // orbit's size divides the group's (1, 2, 4 or 8), so it is a power of
        // two and a mask tests it (a 128-bit remainder is a library call).
        debug_assert!(orbit.is_power_of_two());
        if weight & u128::from(orbit - 1) != 0 {
            return Err(ResultsError::Inconsistent(format!(
                "sequence count {weight} of {key:#x} is not divisible by its orbit size {orbit}"
            )));
        }
        let orbit = u64::from(orbit);
        p.positions += orbit;
        p.sequences = p.sequences.checked_add(weight).ok_or_else(|| ResultsError::Overflow("jump sequences".into()))?;
        if board.board.is_dead_end(key) {
            p.dead_ends += orbit;
        }
        // Both streams are sorted: skip the duals below the key, then match it.
        while dual.is_some_and(|d| d < key) {
            dual = next_dual(&mut duals)?;
        }
        if dual == Some(key) {
            p.winnable += orbit;
            p.winnable_reps += 1;
            dual = next_dual(&mut duals)?;
        }
    }
    Ok(p)
}

/// `level` expanded by `game`, as level `n` of `opts.scratch/name`: in
/// memory when the level is held there and `in_memory` says its successors
/// fit, else on disk (a level held in memory is written out first, as the
/// step's source). [`discard`] removes what it wrote.
fn expand_stored(
    game: &impl LevelGame,
    level: &StoredLevel,
    n: usize,
    name: &str,
    in_memory: bool,
    opts: &LedgerOptions,
) -> Result<StoredLevel, ResultsError> {
    let written;
    let (source_root, m, shards) = match level {
        StoredLevel::Memory(shards) if in_memory => {
            return Ok(StoredLevel::Memory(next_level(game, shards, opts.threads).map_err(level_error)?.0));
        }
        StoredLevel::Memory(shards) => {
            written = opts.scratch.join(format!("{name}-source"));
            store::write_level(&written, 0, shards).map_err(level_error)?;
            (&written, 0, shards.len())
        }
        StoredLevel::Disk { root, n: m, marker } => (root, *m, marker.keys.len()),
    };
    let root = opts.scratch.join(name);
    store::begin_level(&root, n).map_err(level_error)?;
    let spill = SpillOptions { memory_bytes: opts.memory_bytes, threads: opts.threads };
    let dest = |k: usize| store::shard_file(&root, n, k);
    let sources = store::shard_files(source_root, m, shards);
    let step = disk::expand_on_disk(game, &sources, shards, &dest, &opts.scratch.join("spill"), &spill, || {})
        .map_err(level_error)?;
    if matches!(level, StoredLevel::Memory(_)) {
        store::remove_dir_if_present(source_root).map_err(level_error)?;
    }
    let marker = LevelMarker { keys: step.merged.keys, bytes: step.merged.bytes };
    Ok(StoredLevel::Disk { root, n, marker })
}

/// Removes a level [`expand_stored`] wrote on disk (nothing for one in memory).
fn discard(level: &StoredLevel) -> Result<(), ResultsError> {
    if let StoredLevel::Disk { root, n, .. } = level {
        let dir = store::level_dir(root, *n);
        std::fs::remove_dir_all(&dir).map_err(|e| ResultsError::Levels(format!("{}: {e}", dir.display())))?;
    }
    Ok(())
}

/// Adds up `f` over the shards of a level, on `threads` threads.
fn sum_shards<T: Default + Send>(
    shards: usize,
    threads: usize,
    f: impl Fn(usize) -> Result<T, ResultsError> + Sync,
    add: impl Fn(&mut T, T) -> Result<(), ResultsError> + Sync,
) -> Result<T, ResultsError> {
    let cursor = std::sync::atomic::AtomicUsize::new(0);
    let partials: Vec<Result<T, ResultsError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|_| {
                scope.spawn(|| {
                    let mut sum = T::default();
                    loop {
                        let i = cursor.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= shards {
                            return Ok(sum);
                        }
                        add(&mut sum, f(i)?)?;
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("ledger thread panicked")).collect()
    });
    let mut total = T::default();
    for p in partials {
        add(&mut total, p?)?;
    }
    Ok(total)
}

/// The states of level `n` (`n >= 1`): level `n - 1` expanded into (child,
/// landing hole) keys, each representative counted for its orbit.
fn landing_states(board: &Folded, previous: &StoredLevel, n: usize, opts: &LedgerOptions) -> Result<u64, ResultsError> {
    let in_memory = expands_in_memory(previous.keys(), opts.memory_bytes);
    // Without a fold, boards weighted by their landing holes (one entry per
    // board); folded, packed states, each standing for its orbit.
    let holes = LandingHoles::of(board);
    let (expanded, states_of): (StoredLevel, &(dyn Fn(u64, u128) -> u64 + Sync)) = match &holes {
        Some(game) => {
            (expand_stored(game, previous, n, "landings", in_memory, opts)?, &|_, fields| LandingHoles::states(fields))
        }
        None => (expand_stored(&Landings(board), previous, n, "landings", in_memory, opts)?, &|state, _| {
            u64::from(board.landing_orbit_size(state))
        }),
    };
    let per_shard = |k: usize| -> Result<u64, ResultsError> {
        let mut sum = 0;
        for entry in expanded.entries(k).map_err(level_error)? {
            let (key, weight) = entry.map_err(level_error)?;
            sum += states_of(key, weight);
        }
        Ok(sum)
    };
    let count = sum_shards(expanded.shards(), opts.threads, per_shard, |a, b| {
        *a += b;
        Ok(())
    })?;
    discard(&expanded)?;
    Ok(count)
}

/// Builds the ledger from the levels of `start` (a single-vacancy position),
/// folded as `board` folds them; levels on disk are read shard by shard.
pub fn ledger(board: &Folded, start: Pegs, all: &[StoredLevel], opts: &LedgerOptions) -> Result<Ledger, ResultsError> {
    let start_pegs = start.count_ones();
    let vacancy = board.board.complement(start);
    if vacancy.count_ones() != 1 {
        return Err(ResultsError::Unsupported("the ledger needs a single-vacancy start".into()));
    }
    let mut rows = Vec::with_capacity(all.len());
    for (n, level) in all.iter().enumerate() {
        let began = std::time::Instant::now();
        // A position after n jumps has start_pegs - n pegs, so its complement
        // has n + 1 (the board has start_pegs + 1 holes) and, if reachable at
        // all, lies in level start_pegs - 1 - n.
        let partner = (start_pegs as usize).checked_sub(1 + n).and_then(|m| all.get(m));
        // A dual has one child, so a level held in memory has its duals there too.
        let duals = partner.map(|m| expand_stored(&Dual(board), m, n, "duals", true, opts)).transpose()?;
        let row = |i: usize| {
            let entries = level.entries(i).map_err(level_error)?;
            let dual_entries = duals.as_ref().map(|d| d.entries(i)).transpose().map_err(level_error)?;
            shard_row(board, entries, dual_entries)
        };
        let total = sum_shards(level.shards(), opts.threads, row, Partial::add)?;
        if let Some(duals) = &duals {
            discard(duals)?;
        }
        let landing_states = match (opts.landing_holes, n.checked_sub(1)) {
            (false, _) => None,
            // The start is one state: no jump has landed yet.
            (true, None) => Some(total.positions),
            (true, Some(previous)) => Some(landing_states(board, &all[previous], n, opts)?),
        };
        // The ledger of a wide board takes minutes: say where it is.
        tracing::info!(
            "ledger, level {n} of {}: {} positions, {} dead ends, {} still winnable, {:.1}s",
            all.len() - 1,
            total.positions,
            total.dead_ends,
            total.winnable,
            began.elapsed().as_secs_f64()
        );
        rows.push(LevelRow {
            jumps: n as u32,
            pegs: start_pegs - n as u32,
            positions: total.positions,
            up_to_symmetry: level.keys(),
            sequences: total.sequences,
            dead_ends: total.dead_ends,
            winnable: total.winnable,
            winnable_up_to_symmetry: total.winnable_reps,
            landing_states,
        });
    }
    let mut solutions_by_hole = Vec::new();
    if let Some(last) = all.get(start_pegs as usize - 1) {
        for hole in 0..64u8 {
            if !board.board.has_hole(hole) {
                continue;
            }
            let lone: Pegs = 1 << hole;
            let total = last.weight(board.canonical(lone)).map_err(level_error)?;
            let orbit = u128::from(board.orbit_size(lone));
            if !total.is_multiple_of(orbit) {
                return Err(ResultsError::Inconsistent(format!(
                    "solutions ending on {} do not divide by its orbit size",
                    hole_name(hole)
                )));
            }
            if total > 0 {
                solutions_by_hole.push(HoleCount { hole: hole_name(hole), solutions: total / orbit });
            }
        }
    }
    Ok(Ledger {
        board: board.board.kind().name().into(),
        vacancy: hole_name(vacancy.trailing_zeros() as u8),
        symmetries: board.group.len(),
        levels: rows,
        solutions_by_hole,
    })
}

impl Ledger {
    /// Sum of a column over all levels.
    pub fn total(&self, column: impl Fn(&LevelRow) -> u64) -> u64 {
        self.levels.iter().map(column).sum()
    }

    /// The ledger as a Markdown table (for `docs/RESULTS.md` and the terminal),
    /// with the states column when the rows have it.
    pub fn markdown(&self) -> String {
        let states = self.levels.iter().any(|r| r.landing_states.is_some());
        let (head, rule) = if states { (" states (last landing hole) |", "---:|") } else { ("", "") };
        let mut out = format!(
            "| jumps | pegs | positions | up to symmetry | jump sequences | dead ends | still winnable | winnable up to symmetry |{head}\n|---:|---:|---:|---:|---:|---:|---:|---:|{rule}\n",
        );
        for r in &self.levels {
            let cell = if states {
                format!(" {} |", r.landing_states.map_or(String::new(), |x| x.to_string()))
            } else {
                String::new()
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |{cell}\n",
                r.jumps,
                r.pegs,
                r.positions,
                r.up_to_symmetry,
                r.sequences,
                r.dead_ends,
                r.winnable,
                r.winnable_up_to_symmetry
            ));
        }
        let cell = if states { format!(" {} |", self.total(|r| r.landing_states.unwrap_or(0))) } else { String::new() };
        out.push_str(&format!(
            "| total | | {} | {} | | {} | {} | {} |{cell}\n",
            self.total(|r| r.positions),
            self.total(|r| r.up_to_symmetry),
            self.total(|r| r.dead_ends),
            self.total(|r| r.winnable),
            self.total(|r| r.winnable_up_to_symmetry)
        ));
        out
    }
}

fn eight() -> u32 {
    8
}

/// `u128` as a decimal string in JSON.
pub mod decimal {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes the number as a string.
    pub fn serialize<S: Serializer>(n: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&n.to_string())
    }

    /// Reads the number from a string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TestDir;
    use retro_games::peg::symmetry::Group;
    use retro_games::peg::{Board, BoardKind, parse_hole};

    /// The first `depth` levels of `start`, folded by `group`.
    fn levels_of(board: &Board, start: Pegs, group: Group, depth: usize) -> Vec<StoredLevel> {
        let folded = Folded { board: board.clone(), group };
        let mut all = vec![retro_engine::levels::start_level(folded.canonical(start), 4)];
        for _ in 1..depth {
            let next = next_level(&folded, all.last().unwrap(), 2).unwrap().0;
            all.push(next);
        }
        all.into_iter().map(StoredLevel::Memory).collect()
    }

    fn opts() -> LedgerOptions {
        LedgerOptions {
            threads: 2,
            scratch: std::env::temp_dir().join("unused"),
            memory_bytes: 1 << 20,
            landing_holes: true,
        }
    }

    #[test]
    fn every_fold_of_a_start_counts_the_starts_own_positions() {
        let board = Board::new(BoardKind::European);
        for hole in ["c1", "d2", "d3"] {
            let start = board.single_vacancy(parse_hole(hole).unwrap());
            let own = Folded::of_start(board.clone(), start);
            let folded = ledger(&own, start, &levels_of(&board, start, own.group, 7), &opts()).unwrap();
            let plain = Folded { board: board.clone(), group: Group::TRIVIAL };
            let unfolded = ledger(&plain, start, &levels_of(&board, start, Group::TRIVIAL, 7), &opts()).unwrap();
            assert_eq!(folded.symmetries, own.group.len());
            for (a, b) in folded.levels.iter().zip(&unfolded.levels) {
                assert_eq!((a.positions, a.sequences, a.dead_ends), (b.positions, b.sequences, b.dead_ends), "{hole}");
                assert_eq!(a.landing_states, b.landing_states, "{hole}: states after {} jumps", a.jumps);
                // Every position was reached by a jump landing somewhere.
                assert!(a.landing_states.unwrap() >= a.positions, "{hole}: fewer states than positions");
                assert_eq!(b.positions, b.up_to_symmetry, "no fold: one key per position");
            }
            assert_eq!(folded.levels[0].positions, 1, "{hole}: the start alone");
            // The same levels on disk, the duals spilled under a tiny bound: the same ledger.
            let root = TestDir::new(&format!("ledger-disk-{hole}"));
            let root = root.path();
            let on_disk: Vec<StoredLevel> = levels_of(&board, start, own.group, 7)
                .iter()
                .enumerate()
                .map(|(n, level)| {
                    let StoredLevel::Memory(shards) = level else { unreachable!() };
                    let marker = store::write_level(&root.join("levels"), n, shards).unwrap();
                    StoredLevel::Disk { root: root.join("levels"), n, marker }
                })
                .collect();
            let tiny =
                LedgerOptions { threads: 2, scratch: root.join("scratch"), memory_bytes: 1, landing_holes: true };
            assert_eq!(ledger(&own, start, &on_disk, &tiny).unwrap(), folded, "{hole}");
            // Levels held in memory but over the bound: written out for the states' expansion.
            let held = levels_of(&board, start, own.group, 7);
            assert_eq!(ledger(&own, start, &held, &tiny).unwrap(), folded, "{hole}");
            assert!(
                !root.join("scratch").join("landings-source").exists(),
                "{hole}: the written-out source is removed"
            );
            // Folding by all eight symmetries instead would stand the start for
            // its whole orbit, one sequence for several positions: refused.
            let all = Folded { board: board.clone(), group: Group::ALL };
            let merged = ledger(&all, start, &levels_of(&board, start, Group::ALL, 2), &opts());
            assert!(matches!(merged, Err(ResultsError::Inconsistent(_))), "{hole}");
        }
    }
}

/// The European c1 start against the one published enumeration of it.
#[cfg(test)]
mod european_c1 {
    use super::*;
    use retro_engine::levels::store::StoredLevel;
    use retro_games::peg::symmetry::Group;
    use retro_games::peg::{Board, BoardKind, parse_hole};
    use std::collections::HashSet;

    /// Meyrignac's states per level (`results/reference/peg-european-c1-meyrignac.tsv`).
    fn published() -> Vec<u64> {
        include_str!("../../reference/peg-european-c1-meyrignac.tsv")
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split('\t').nth(1).expect("two columns").parse().expect("a count"))
            .collect()
    }

    /// Levels 0-9 by a plain breadth-first search over (board, hole the last
    /// jump landed in), with `Board::jumps` and no symmetry: the published
    /// state counts; and the boards alone, which the level engine counts
    /// (no fold for c1) through its own move generation: the same sets.
    #[test]
    fn states_match_the_published_enumeration_and_boards_match_the_levels() {
        let board = Board::new(BoardKind::European);
        let start = board.single_vacancy(parse_hole("c1").unwrap());
        let published = published();
        assert_eq!((published.len(), published.iter().sum::<u64>()), (36, 22_920_760_254));
        let mut states: HashSet<(Pegs, u8)> = HashSet::from([(start, u8::MAX)]);
        let folded = Folded::of_start(board.clone(), start);
        assert_eq!(folded.group, Group::TRIVIAL);
        let mut level = retro_engine::levels::start_level(start, 8);
        for (n, &want) in published.iter().enumerate().take(10) {
            assert_eq!(states.len() as u64, want, "states after {n} jumps");
            let boards: HashSet<Pegs> = states.iter().map(|&(b, _)| b).collect();
            let keys: HashSet<Pegs> = level.iter().flat_map(|s| s.keys.iter().copied()).collect();
            assert_eq!(boards, keys, "boards after {n} jumps");
            states = states
                .iter()
                .flat_map(|&(b, _)| board.jumps(b).into_iter().map(move |j| (b ^ j.mask(), j.to)))
                .collect();
            level = next_level(&folded, &level, 2).unwrap().0;
        }
    }

    /// The ledger's states column, through the level engine (boards weighted
    /// by the holes their jumps land in: c1 has no fold), against the same
    /// published counts. The folded starts count states as packed keys
    /// instead, and the ledger's fold test checks the two ways agree.
    #[test]
    fn the_ledger_counts_the_published_states() {
        let board = Board::new(BoardKind::European);
        let start = board.single_vacancy(parse_hole("c1").unwrap());
        let folded = Folded::of_start(board, start);
        let mut all = vec![retro_engine::levels::start_level(start, 8)];
        for _ in 1..10 {
            all.push(next_level(&folded, all.last().unwrap(), 2).unwrap().0);
        }
        let all: Vec<StoredLevel> = all.into_iter().map(StoredLevel::Memory).collect();
        let opts = LedgerOptions {
            threads: 2,
            scratch: std::env::temp_dir().join("unused"),
            memory_bytes: 1 << 30,
            landing_holes: true,
        };
        let got: Vec<u64> =
            ledger(&folded, start, &all, &opts).unwrap().levels.iter().map(|r| r.landing_states.unwrap()).collect();
        assert_eq!(got, published()[..10]);
    }
}
