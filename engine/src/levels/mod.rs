//! Breadth-first levels over canonical keys: the second kind of cluster work.
//!
//! A level is a set of canonical positions (`u64` keys), each carrying a
//! weight: the number of move sequences from the start that end anywhere in
//! the key's symmetry orbit. Keys are cut into shards by a hash of the key;
//! whoever owns a shard of level n expands it ([`expand`]), sends each child to
//! the owner of the child's shard, and the owner merges what it receives into
//! its shard of level n + 1 ([`merge_parts`]): sorted, deduplicated, weights added.
//!
//! Why orbit weights need no division: the sequences ending in the orbit of
//! T are the sum, over parent orbits R and over the moves from R's
//! representative that land in T's orbit, of the sequences ending in R's
//! orbit. Each member of R's orbit has the same number of such moves, so
//! expanding the representative once with weight W(R) counts them all. The
//! per-position count is `W / orbit size`, which callers check is exact.
//!
//! Levels are kept on disk as one checked stream per shard ([`store`]), so a
//! killed run resumes at the last level whose shards are all on disk; across
//! machines, shards travel in [`pieces`].

pub mod disk;
pub mod distinct;
pub mod passes;
pub mod pieces;
pub mod spill;
pub mod store;
pub mod stream;

use crate::durable::DurableError;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A game whose positions are expanded level by level.
pub trait LevelGame: Sync {
    /// Calls `f` with the canonical key of every child of `key`, once per move
    /// (a child reached by two moves is reported twice).
    fn for_each_child(&self, key: u64, f: impl FnMut(u64));

    /// Calls `f(child, weight)` for every child of `key` as
    /// [`LevelGame::for_each_child`] does, with what the child receives from
    /// a parent of weight `weight`: the parent's own weight for counts of
    /// move sequences (the default); a game that adds up something else
    /// chooses its own (the ledger's landing holes).
    #[inline]
    fn for_each_weighted_child(&self, key: u64, weight: u128, mut f: impl FnMut(u64, u128)) {
        self.for_each_child(key, |child| f(child, weight));
    }

    /// About how many moves reach each distinct child, on average: only a
    /// hint, for sizing the tables children are added up in (too low a
    /// guess makes a table grow, rehashing every key it holds; too high
    /// wastes memory). A peg position has about ten parents, so the default
    /// of four is a generous first guess; a one-to-one map (the ledger's
    /// duals) says 1.
    fn moves_per_child(&self) -> usize {
        4
    }
}

/// One shard of one level: sorted distinct keys and their orbit weights.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelShard {
    /// Canonical keys, strictly increasing.
    pub keys: Vec<u64>,
    /// `weights[i]`: move sequences from the start ending in the orbit of `keys[i]`.
    pub weights: Vec<u128>,
}

impl LevelShard {
    /// The shard of `entries`, sorted by key and distinct.
    fn from_sorted(entries: &[Successor]) -> LevelShard {
        LevelShard {
            keys: entries.iter().map(|s| s.key).collect(),
            weights: entries.iter().map(Successor::weight).collect(),
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when the shard holds no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// A child on its way to its owner: key and weight, 24 bytes (a `u128` field
/// would pad it to 32 and cost a third more memory traffic in the sort).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Successor {
    /// Canonical key of the child.
    pub key: u64,
    /// Low half of the weight.
    pub lo: u64,
    /// High half of the weight.
    pub hi: u64,
}

impl Successor {
    /// A successor with a full weight.
    pub fn new(key: u64, weight: u128) -> Successor {
        Successor { key, lo: weight as u64, hi: (weight >> 64) as u64 }
    }

    /// The weight.
    pub fn weight(&self) -> u128 {
        (u128::from(self.hi) << 64) | u128::from(self.lo)
    }
}

/// Bytes a level's successors take in memory per source key: one 24-byte
/// [`Successor`] per move, and a peg position has at most 16 or so.
pub const SUCCESSOR_BYTES_PER_KEY: u64 = 16 * 24;

/// Whether a level of `keys` keys is expanded in memory within a bound of
/// `memory_bytes`: its successors within three quarters of the bound (the
/// last quarter holds levels); a bigger one is expanded on disk ([`disk`]).
pub fn expands_in_memory(keys: u64, memory_bytes: u64) -> bool {
    keys.saturating_mul(SUCCESSOR_BYTES_PER_KEY) <= memory_bytes / 4 * 3
}

/// The shard that owns `key` among `shards`.
#[inline]
pub fn shard_of(key: u64, shards: usize) -> usize {
    // Canonical keys are the least image, so low bits cluster; mix before cutting.
    let mixed = (key ^ (key >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let mixed = mixed ^ (mixed >> 32);
    ((u128::from(mixed) * shards as u128) >> 64) as usize
}

/// Successors bound for one shard, added up as they arrive: an open-addressing
/// table of (key, weight). Children of a level repeat many times over (every
/// position has several parents), so adding them up at once keeps memory
/// traffic to one entry per distinct child instead of one per move.
#[derive(Clone, Debug, Default)]
pub struct Accumulator {
    slots: Vec<Successor>,
    len: usize,
    overflow: Option<u64>,
}

/// Marks a free slot; no canonical key is all ones (keys use at most 56 bits).
const FREE: u64 = u64::MAX;

/// How far ahead [`Accumulator::add_all`] prefetches: about one DRAM latency
/// of adds.
const PREFETCH_AHEAD: usize = 16;

impl Accumulator {
    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no key was added.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn slot_of(key: u64, slots: usize) -> usize {
        // A different mixer from `shard_of`, whose bits are equal within a
        // shard; the product's high half maps it onto any table length.
        ((u128::from(key.wrapping_mul(0x9e37_79b9_7f4a_7c15)) * slots as u128) >> 64) as usize
    }

    /// Slots of a table with room for `n` keys before it grows: twice as
    /// many (linear probing stays short at half full), at least 1,024.
    pub fn slots_for(n: usize) -> usize {
        (n * 2).max(1024)
    }

    /// Bytes of a table with room for `n` keys before it grows.
    pub fn bytes_for(n: usize) -> u64 {
        (Self::slots_for(n) * std::mem::size_of::<Successor>()) as u64
    }

    /// A table with room for `n` keys before it grows.
    pub fn with_capacity(n: usize) -> Accumulator {
        let slots = Self::slots_for(n);
        Accumulator {
            slots: crate::huge_pages::filled(slots, Successor { key: FREE, lo: 0, hi: 0 }),
            len: 0,
            overflow: None,
        }
    }

    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(1024);
        let old = std::mem::replace(
            &mut self.slots,
            crate::huge_pages::filled(capacity, Successor { key: FREE, lo: 0, hi: 0 }),
        );
        self.len = 0;
        for s in old.into_iter().filter(|s| s.key != FREE) {
            self.add_weight(s.key, s.weight());
        }
    }

    /// Adds `weight` to `key`'s entry (creating it).
    #[inline]
    pub fn add_weight(&mut self, key: u64, weight: u128) {
        debug_assert_ne!(key, FREE);
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let slots = self.slots.len();
        let mut i = Self::slot_of(key, slots);
        loop {
            let slot = &mut self.slots[i];
            if slot.key == key {
                match slot.weight().checked_add(weight) {
                    Some(w) => *slot = Successor::new(key, w),
                    None => self.overflow = Some(key),
                }
                return;
            }
            if slot.key == FREE {
                *slot = Successor::new(key, weight);
                self.len += 1;
                return;
            }
            i += 1;
            if i == slots {
                i = 0;
            }
        }
    }

    /// Adds up every entry of `entries`, as [`Accumulator::add_weight`] one
    /// by one, with the slot of the entry [`PREFETCH_AHEAD`] places on asked
    /// for early: a table that outgrows the cache makes each add a miss, and
    /// the misses of a batch then overlap instead of waiting one by one.
    pub fn add_all(&mut self, entries: &[Successor]) {
        for (i, s) in entries.iter().enumerate() {
            if let Some(ahead) = entries.get(i + PREFETCH_AHEAD) {
                // Only a hint: after a growth it points into the old table's
                // place, which costs a wasted load and nothing else.
                crate::prefetch::prefetch(&self.slots[Self::slot_of(ahead.key, self.slots.len())]);
            }
            self.add_weight(s.key, s.weight());
        }
    }

    /// Sorts the entries in place by `order` (the table's own memory, no
    /// copy), hands them to `f`, and empties the table for reuse. Fails, and
    /// leaves the table as it was, when a weight overflowed.
    pub fn drain_sorted<K: Ord>(
        &mut self,
        order: impl Fn(&Successor) -> K,
        f: impl FnOnce(&[Successor]) -> Result<(), LevelError>,
    ) -> Result<(), LevelError> {
        if let Some(key) = self.overflow {
            return Err(LevelError::Overflow { key });
        }
        let mut kept = 0;
        for i in 0..self.slots.len() {
            if self.slots[i].key != FREE {
                self.slots.swap(kept, i);
                kept += 1;
            }
        }
        self.slots[..kept].sort_unstable_by_key(&order);
        let result = f(&self.slots[..kept]);
        self.slots.fill(Successor { key: FREE, lo: 0, hi: 0 });
        self.len = 0;
        result
    }

    /// The entries, in no particular order (what crosses the wire to an owner).
    pub fn into_successors(self) -> Result<Vec<Successor>, LevelError> {
        if let Some(key) = self.overflow {
            return Err(LevelError::Overflow { key });
        }
        Ok(self.slots.into_iter().filter(|s| s.key != FREE).collect())
    }

    /// The entries as a sorted level shard.
    pub fn into_shard(self) -> Result<LevelShard, LevelError> {
        let mut entries = self.into_successors()?;
        entries.sort_unstable_by_key(|s| s.key);
        Ok(LevelShard::from_sorted(&entries))
    }
}

/// Expands one shard: every child of every key, with its parent's weight,
/// appended to `outbox[shard_of(child)]` (appending keeps the writes
/// sequential; adding up happens per destination, where the table is small
/// enough to stay in cache). Returns the number of keys with no child.
pub fn expand(game: &impl LevelGame, shard: &LevelShard, outbox: &mut [Vec<Successor>]) -> u64 {
    let shards = outbox.len();
    let mut childless = 0;
    for (&key, &weight) in shard.keys.iter().zip(&shard.weights) {
        let mut any = false;
        game.for_each_weighted_child(key, weight, |child, weight| {
            any = true;
            outbox[shard_of(child, shards)].push(Successor::new(child, weight));
        });
        childless += u64::from(!any);
    }
    childless
}

/// Merges the successors several expanders sent to one shard.
///
/// Fails only when a weight overflows `u128`, which would mean the counts
/// are wrong (no published sequence comes near).
pub fn merge_parts(parts: Vec<Vec<Successor>>) -> Result<LevelShard, LevelError> {
    let slices: Vec<&[Successor]> = parts.iter().map(|p| &p[..]).collect();
    merge_slices(&slices, 4)
}

/// [`merge_parts`] over borrowed buffers, whose children repeat about
/// `moves_per_child` times ([`LevelGame::moves_per_child`]).
pub fn merge_slices(parts: &[&[Successor]], moves_per_child: usize) -> Result<LevelShard, LevelError> {
    thread_local! {
        /// The thread's table, emptied and used again for the next shard it
        /// merges: a fresh table per shard was mapped and faulted in page by
        /// page (half the English run's page faults, 2,048 tables of 64
        /// shards a level). The merging threads end with their level, and
        /// the table with them.
        static TABLE: std::cell::RefCell<Accumulator> = std::cell::RefCell::new(Accumulator::default());
    }
    let total: usize = parts.iter().map(|p| p.len()).sum();
    // A first guess at the distinct children; the table grows if it is short.
    let wanted = total / moves_per_child.max(1);
    TABLE.with(|table| {
        let mut table = table.borrow_mut();
        if table.slots.len() < Accumulator::slots_for(wanted) {
            *table = Accumulator::with_capacity(wanted);
        }
        for part in parts {
            table.add_all(part);
        }
        let mut shard = LevelShard::default();
        let drained = table.drain_sorted(
            |s| s.key,
            |entries| {
                shard = LevelShard::from_sorted(entries);
                Ok(())
            },
        );
        if drained.is_err() {
            // An overflow leaves the table as it was: start the next one afresh.
            *table = Accumulator::default();
        }
        drained.map(|()| shard)
    })
}

/// Errors from level work and level files.
#[derive(Debug, thiserror::Error)]
pub enum LevelError {
    /// A weight passed `u128::MAX`.
    #[error("sequence count overflowed 128 bits at key {key:#x}")]
    Overflow {
        /// The key whose weight overflowed.
        key: u64,
    },
    /// A level file could not be read or written.
    #[error(transparent)]
    Io(#[from] DurableError),
    /// A parcel (a shard on the wire) failed its checks.
    #[error("{0}")]
    BadParcel(String),
    /// zstd could not set up a compression context (its memory, most likely).
    #[error("cannot set up a zstd compressor for level files: {0}")]
    Compressor(std::io::Error),
    /// A level file failed its checks.
    #[error(
        "level file {path} is damaged: {problem}; delete that level's directory and run the same command again to recompute it"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

/// Computes the next level from `current` on `threads` threads, in memory.
///
/// The same two steps a cluster runs with the exchange in between: every
/// thread expands whole shards into per-destination outboxes, then every
/// destination shard is merged from all outboxes. Returns the new shards and
/// how many keys of `current` had no child.
pub fn next_level(
    game: &impl LevelGame,
    current: &[LevelShard],
    threads: usize,
) -> Result<(Vec<LevelShard>, u64), LevelError> {
    next_level_reusing(game, current, threads, &mut Scratch::default())
}

/// Successor buffers kept from one level to the next: allocating them afresh
/// for every level made the kernel zero gigabytes of new pages (most of a
/// run's system time).
#[derive(Debug, Default)]
pub struct Scratch {
    /// `outboxes[t][dest]`: thread t's successors bound for shard `dest`.
    outboxes: Vec<Vec<Vec<Successor>>>,
}

/// [`next_level`], reusing the buffers in `scratch`.
pub fn next_level_reusing(
    game: &impl LevelGame,
    current: &[LevelShard],
    threads: usize,
    scratch: &mut Scratch,
) -> Result<(Vec<LevelShard>, u64), LevelError> {
    let sources: Vec<&LevelShard> = current.iter().collect();
    expand_and_merge(game, &sources, current.len(), threads, scratch)
}

/// Expands `sources` (any shards of one level) on `threads` threads and adds
/// the successors up into `shards` destination shards of the next level.
/// Returns them and the number of source keys with no child.
fn expand_and_merge(
    game: &impl LevelGame,
    sources: &[&LevelShard],
    shards: usize,
    threads: usize,
    scratch: &mut Scratch,
) -> Result<(Vec<LevelShard>, u64), LevelError> {
    let threads = threads.clamp(1, shards.max(1));
    scratch.outboxes.resize_with(threads, Vec::new);
    for outbox in &mut scratch.outboxes {
        outbox.resize_with(shards, Vec::new);
        outbox.iter_mut().for_each(Vec::clear);
    }
    let cursor = AtomicUsize::new(0);
    let childless = std::thread::scope(|scope| {
        let handles: Vec<_> = scratch.outboxes[..threads]
            .iter_mut()
            .map(|outbox| {
                let cursor = &cursor;
                scope.spawn(move || {
                    let mut childless = 0;
                    while let Some(source) = sources.get(cursor.fetch_add(1, Ordering::Relaxed)) {
                        childless += expand(game, source, outbox);
                    }
                    childless
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("expand thread panicked")).sum::<u64>()
    });
    // Merge destinations in parallel; each reads its vector from every thread.
    let outboxes = &scratch.outboxes;
    let next = for_each_index(shards, threads, |i| {
        let parts: Vec<&[Successor]> = outboxes.iter().map(|o| &o[i][..]).collect();
        merge_slices(&parts, game.moves_per_child())
    })?;
    Ok((next, childless))
}

/// Runs `f(i)` for every `i` in `0..n` on `threads` threads (each taking the
/// next index as it finishes one) and returns the results in index order, or
/// the first failure; after a failure no new index is started.
pub(crate) fn for_each_index<R: Send>(
    n: usize,
    threads: usize,
    f: impl Fn(usize) -> Result<R, LevelError> + Sync,
) -> Result<Vec<R>, LevelError> {
    let results: Vec<Mutex<Option<Result<R, LevelError>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let cursor = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            scope.spawn(|| {
                loop {
                    let i = cursor.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let result = f(i);
                    if result.is_err() {
                        cursor.store(n, Ordering::Relaxed);
                    }
                    *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
                }
            });
        }
    });
    // Indices are left unstarted only after one failed: report that failure.
    results.into_iter().filter_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner())).collect()
}

/// The worker (by index, of `workers`) that owns level shard `shard`: a
/// level job deals its shards round robin, the same rule on both sides.
pub fn shard_owner(shard: u32, workers: u32) -> u32 {
    shard % workers
}

/// The level shards, of `shards`, that worker `index` of `workers` owns.
pub fn owned_shards(index: u32, workers: u32, shards: u32) -> impl Iterator<Item = u32> {
    (0..shards).filter(move |&k| shard_owner(k, workers) == index)
}

/// Splits the start key into a level of `shards` shards.
pub fn start_level(key: u64, shards: usize) -> Vec<LevelShard> {
    let mut level = vec![LevelShard::default(); shards];
    let home = &mut level[shard_of(key, shards)];
    home.keys.push(key);
    home.weights.push(1);
    level
}

/// Most entries one parcel may claim (a shard of a level is far smaller):
/// bounds what a malformed message can make the receiver allocate.
pub const MAX_PARCEL_ENTRIES: u64 = 1 << 26;

/// Encodes a sorted shard for the wire: `(entries, crc32 of the raw bytes, zstd)`.
pub fn encode_shard(shard: &LevelShard) -> (u64, u32, Vec<u8>) {
    let mut raw = Vec::with_capacity(shard.len() * 24);
    for (k, w) in shard.keys.iter().zip(&shard.weights) {
        raw.extend_from_slice(&k.to_le_bytes());
        raw.extend_from_slice(&w.to_le_bytes());
    }
    let crc = crc32fast::hash(&raw);
    let packed = zstd::bulk::compress(&raw, 1).expect("zstd compresses any input in memory");
    (shard.len() as u64, crc, packed)
}

/// Decodes a parcel made by [`encode_shard`], checking size, checksum and key order.
pub fn decode_shard(entries: u64, crc: u32, packed: &[u8]) -> Result<LevelShard, LevelError> {
    let bad = LevelError::BadParcel;
    if entries > MAX_PARCEL_ENTRIES {
        return Err(bad(format!("parcel claims {entries} entries (at most {MAX_PARCEL_ENTRIES})")));
    }
    let size = entries as usize * 24;
    let raw = zstd::bulk::decompress(packed, size).map_err(|e| bad(format!("parcel does not decompress: {e}")))?;
    if raw.len() != size {
        return Err(bad(format!("parcel holds {} bytes, {size} expected", raw.len())));
    }
    if crc32fast::hash(&raw) != crc {
        return Err(bad("parcel checksum mismatch".into()));
    }
    let mut shard =
        LevelShard { keys: Vec::with_capacity(entries as usize), weights: Vec::with_capacity(entries as usize) };
    for e in raw.chunks_exact(24) {
        shard.keys.push(u64::from_le_bytes(e[..8].try_into().expect("8 bytes")));
        shard.weights.push(u128::from_le_bytes(e[8..].try_into().expect("16 bytes")));
    }
    if shard.keys.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad("parcel keys are not strictly increasing".into()));
    }
    Ok(shard)
}

/// Expands the shards `mine` of a level into one sorted shard of successors
/// per shard of the next level (what a worker delivers), on `threads` threads.
pub fn expand_owned(
    game: &impl LevelGame,
    level: &[(u32, LevelShard)],
    shards: usize,
    threads: usize,
) -> Result<Vec<LevelShard>, LevelError> {
    let sources: Vec<&LevelShard> = level.iter().map(|(_, s)| s).collect();
    Ok(expand_and_merge(game, &sources, shards, threads, &mut Scratch::default())?.0)
}

impl LevelGame for retro_games::peg::Folded {
    #[inline]
    fn for_each_child(&self, key: u64, f: impl FnMut(u64)) {
        self.board.for_each_child_in(self.group, key, f);
    }
}

/// One breadth-first level: its shards, by [`shard_of`].
pub type Level = Vec<LevelShard>;

/// The weight of `key` in `level` (0 when absent).
pub fn weight(level: &[LevelShard], key: u64) -> u128 {
    let shard = &level[shard_of(key, level.len())];
    shard.keys.binary_search(&key).map_or(0, |i| shard.weights[i])
}

/// A level game for tests of the level machinery.
#[cfg(test)]
pub(crate) mod testgame {
    use super::LevelGame;

    /// Positions are sets of small numbers (bits); a move removes one element.
    /// Canonical form: none (identity), so the weight of a set of size k after
    /// n - k moves from the full set of n is (n - k)!, the orderings of the
    /// removed elements, and every set has many parents.
    pub(crate) struct Removal;

    impl LevelGame for Removal {
        fn for_each_child(&self, key: u64, mut f: impl FnMut(u64)) {
            let mut rest = key;
            while rest != 0 {
                let bit = rest & rest.wrapping_neg();
                f(key ^ bit);
                rest ^= bit;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testgame::Removal;
    use super::*;

    #[test]
    fn levels_count_subsets_and_orderings() {
        for shards in [1, 3, 8] {
            let mut level = start_level(0b11_1111, shards);
            let mut factorial = 1u128;
            for depth in 1..=6u32 {
                let (next, childless) = next_level(&Removal, &level, 2).unwrap();
                assert_eq!(childless, 0);
                level = next;
                factorial *= u128::from(depth);
                let size: usize = level.iter().map(LevelShard::len).sum();
                let binom = (0..depth).fold(1usize, |acc, i| acc * (6 - i as usize) / (i as usize + 1));
                assert_eq!(size, binom, "depth {depth}");
                assert!(level.iter().flat_map(|s| &s.weights).all(|&w| w == factorial));
                for (i, s) in level.iter().enumerate() {
                    assert!(s.keys.iter().all(|&k| shard_of(k, shards) == i));
                }
            }
            let (last, childless) = next_level(&Removal, &level, 2).unwrap();
            assert_eq!((last.iter().map(LevelShard::len).sum::<usize>(), childless), (0, 1));
        }
    }

    #[test]
    fn a_table_adds_up_every_batch_through_its_growths() {
        // 50,000 children over 5,000 keys, in batches of up to 3,000, into a
        // table made for one key: it grows while prefetched slots are pending.
        let mut expected = std::collections::BTreeMap::<u64, u128>::new();
        let mut table = Accumulator::with_capacity(1);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut batch = Vec::new();
        for i in 0..50_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (key, weight) = ((x % 5_000) << 20 | 3, u128::from(i) << 64 | u128::from(x & 0xff));
            *expected.entry(key).or_default() += weight;
            batch.push(Successor::new(key, weight));
            if batch.len() == 1 + (i as usize * 7) % 3_000 {
                table.add_all(&batch);
                batch.clear();
            }
        }
        table.add_all(&batch);
        assert_eq!(table.len(), expected.len());
        let shard = table.into_shard().unwrap();
        assert_eq!(shard.keys, expected.keys().copied().collect::<Vec<_>>());
        assert_eq!(shard.weights, expected.values().copied().collect::<Vec<_>>());
    }

    #[test]
    fn merge_refuses_overflow() {
        let s = vec![Successor::new(7, u128::MAX), Successor::new(7, 1)];
        assert!(matches!(merge_parts(vec![s]), Err(LevelError::Overflow { key: 7 })));
    }
}
