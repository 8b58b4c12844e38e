//! Expanding a level within a memory bound, through spill files on disk.
//!
//! A level too big for memory lives as one sorted [stream](super::stream) per
//! shard. Expanding it runs in two phases:
//!
//! 1. **Spill** ([`spill_level`]): every thread reads whole source shards and
//!    appends each child, with its parent's weight, to a buffer per
//!    destination shard (sequential writes, where a table the size of the
//!    bound would take a cache miss per child). When its buffers hold its
//!    share of the bound, each destination's buffer is added up in a table
//!    small enough for the cache (children reached from several parents cost
//!    one entry) and written out sorted as one run, and the buffers start
//!    again empty.
//! 2. **Merge** ([`merge_runs`]): each destination shard is merged on its own
//!    from its runs, front to back, adding the weights of equal keys, into its
//!    shard file of the next level; its runs are deleted as soon as it is done,
//!    so the disk holds the source level, the runs not merged yet and the part
//!    of the next level already written.
//!
//! Memory: the buffers (the bound) while spilling; about two frames per open
//! run while merging. The bytes of the next level do not depend on the bound,
//! the thread count or the order the threads took the shards in: every shard
//! file holds the same sorted sums as a level expanded in memory.

use super::stream::{StreamReader, StreamWriter, over_sources};
use super::{Accumulator, LevelError, LevelGame, Successor, for_each_index, shard_of};
use crate::durable::io_err;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

/// Bytes of one buffered successor: a key and a 128-bit weight.
const SLOT_BYTES: u64 = std::mem::size_of::<Successor>() as u64;

/// Children a buffer keeps room for before the next parent is expanded (more
/// than any peg position has jumps; a parent with more only overshoots a little).
const ROOM_PER_PARENT: usize = 256;

/// How a level is expanded on disk.
#[derive(Clone, Debug)]
pub struct SpillOptions {
    /// Bytes all threads' tables may hold together.
    pub memory_bytes: u64,
    /// Threads.
    pub threads: usize,
}

impl SpillOptions {
    /// Successors one thread appends before it spills: two thirds of its
    /// share of the bound (the rest is for the uneven fill of the buffers,
    /// adding up one destination at a time when it spills, and the frames of
    /// the streams), at least a few hundred so that tiny bounds in tests still
    /// make progress.
    pub fn entries_per_thread(&self) -> usize {
        let share = self.memory_bytes / self.threads.max(1) as u64 / SLOT_BYTES * 2 / 3;
        share.max(1024) as usize
    }

    /// Bytes the successor buffers may hold, all threads together.
    pub fn buffer_bytes(&self) -> u64 {
        self.entries_per_thread() as u64 * SLOT_BYTES * self.threads.max(1) as u64
    }
}

/// What the spill phase left on disk.
#[derive(Debug, Default)]
pub struct SpillRuns {
    /// `runs[k]`: the run files bound for destination shard `k`.
    pub runs: Vec<Vec<PathBuf>>,
    /// Source keys with no child.
    pub childless: u64,
    /// Source keys read.
    pub sources: u64,
    /// Entries written to runs (after adding up within each spill).
    pub entries: u64,
    /// Bytes written to runs.
    pub bytes: u64,
}

/// The run directory of destination shard `k` under `scratch`.
fn run_dir(scratch: &Path, k: usize) -> PathBuf {
    scratch.join(format!("s{k:04}"))
}

/// One thread's successor buffers and the runs it has written.
struct Spiller<'a> {
    scratch: &'a Path,
    thread: usize,
    /// `outbox[k]`: successors bound for destination shard `k`, appended in
    /// the order they come (sequential writes, whatever the destination).
    outbox: Vec<Vec<Successor>>,
    held: usize,
    spills: usize,
    runs: Vec<(usize, PathBuf)>,
    entries: u64,
    bytes: u64,
    /// Source keys read, and those without a child.
    sources: u64,
    childless: u64,
}

impl Spiller<'_> {
    /// Adds up each destination's buffer in a table small enough for the
    /// cache and writes it out as one sorted run; empties the buffers.
    fn spill(&mut self) -> Result<(), LevelError> {
        for (k, buffer) in self.outbox.iter_mut().enumerate() {
            if buffer.is_empty() {
                continue;
            }
            // Children repeat (several parents each): a quarter is a first guess.
            let mut table = Accumulator::with_capacity(buffer.len() / 4);
            table.add_all(buffer);
            buffer.clear();
            self.entries += table.len() as u64;
            let path = run_dir(self.scratch, k).join(format!("t{:03}-{:06}.run", self.thread, self.spills));
            let mut bytes = 0;
            table.drain_sorted(
                |s| s.key,
                |sorted| {
                    let mut w = StreamWriter::create_scratch(&path)?;
                    for s in sorted {
                        w.push(s.key, s.weight())?;
                    }
                    bytes = w.finish()?;
                    Ok(())
                },
            )?;
            self.bytes += bytes;
            self.runs.push((k, path));
        }
        self.held = 0;
        self.spills += 1;
        Ok(())
    }
}

/// Phase 1: expands every source shard stream into runs under `scratch` (an
/// empty directory this call owns), spilling each thread's buffers whenever
/// they hold [`SpillOptions::entries_per_thread`] successors.
pub fn spill_level(
    game: &impl LevelGame,
    sources: &[PathBuf],
    shards: usize,
    scratch: &Path,
    opts: &SpillOptions,
) -> Result<SpillRuns, LevelError> {
    for k in 0..shards {
        let dir = run_dir(scratch, k);
        std::fs::create_dir_all(&dir).map_err(|e| LevelError::Io(io_err(&dir)(e)))?;
    }
    let cap = opts.entries_per_thread();
    let room = ROOM_PER_PARENT.min(cap / 2);
    let spillers = over_sources(
        sources,
        opts.threads,
        |thread| Spiller {
            scratch,
            thread,
            // Reserved once, an eighth over the even share, so that buffers
            // are not grown (and copied) while full.
            outbox: (0..shards).map(|_| Vec::with_capacity(cap / shards + cap / shards / 8)).collect(),
            held: 0,
            spills: 0,
            runs: Vec::new(),
            entries: 0,
            bytes: 0,
            childless: 0,
            sources: 0,
        },
        |me, key, weight| {
            if me.held + room > cap {
                me.spill()?;
            }
            let before = me.held;
            let (outbox, held) = (&mut me.outbox, &mut me.held);
            game.for_each_weighted_child(key, weight, |child, weight| {
                outbox[shard_of(child, shards)].push(Successor::new(child, weight));
                *held += 1;
            });
            me.childless += u64::from(me.held == before);
            me.sources += 1;
            Ok(())
        },
        Spiller::spill,
    )?;
    let mut out = SpillRuns { runs: vec![Vec::new(); shards], ..SpillRuns::default() };
    for spiller in spillers {
        out.bytes += spiller.bytes;
        out.entries += spiller.entries;
        out.childless += spiller.childless;
        out.sources += spiller.sources;
        for (k, path) in spiller.runs {
            out.runs[k].push(path);
        }
    }
    for runs in &mut out.runs {
        runs.sort();
    }
    Ok(out)
}

/// What the merge phase wrote.
#[derive(Debug, Default)]
pub struct Merged {
    /// Keys of each destination shard.
    pub keys: Vec<u64>,
    /// Bytes of each destination shard file.
    pub bytes: Vec<u64>,
}

/// Merges `runs` into one sorted stream at `out`, adding the weights of equal keys.
pub fn merge_into(runs: &[PathBuf], out: &Path) -> Result<(u64, u64), LevelError> {
    let mut readers = runs.iter().map(|p| StreamReader::open(p)).collect::<Result<Vec<_>, _>>()?;
    let mut heads = BinaryHeap::with_capacity(readers.len());
    for (i, r) in readers.iter_mut().enumerate() {
        if let Some(entry) = r.next() {
            let (key, weight) = entry?;
            heads.push(Reverse((key, i, weight)));
        }
    }
    let mut w = StreamWriter::create(out)?;
    let mut current: Option<(u64, u128)> = None;
    while let Some(Reverse((key, i, weight))) = heads.pop() {
        if let Some(entry) = readers[i].next() {
            let (k, v) = entry?;
            heads.push(Reverse((k, i, v)));
        }
        current = match current {
            Some((k, sum)) if k == key => Some((k, sum.checked_add(weight).ok_or(LevelError::Overflow { key })?)),
            Some((k, sum)) => {
                w.push(k, sum)?;
                Some((key, weight))
            }
            None => Some((key, weight)),
        };
    }
    if let Some((k, sum)) = current {
        w.push(k, sum)?;
    }
    let keys = w.entries();
    Ok((keys, w.finish()?))
}

/// Phase 2: merges each destination shard `k` from its runs into the file
/// `dest(k)`, on `threads` threads, deleting the runs of a shard once it is
/// written.
pub fn merge_runs(
    runs: &SpillRuns,
    dest: &(dyn Fn(usize) -> PathBuf + Sync),
    threads: usize,
) -> Result<Merged, LevelError> {
    let done = for_each_index(runs.runs.len(), threads, |k| {
        let done = merge_into(&runs.runs[k], &dest(k))?;
        for run in &runs.runs[k] {
            std::fs::remove_file(run).map_err(|e| LevelError::Io(io_err(run)(e)))?;
        }
        Ok(done)
    })?;
    Ok(Merged { keys: done.iter().map(|d| d.0).collect(), bytes: done.iter().map(|d| d.1).collect() })
}

#[cfg(test)]
mod tests {
    use super::super::testgame::Removal;
    use super::super::{LevelShard, next_level, start_level};
    use super::*;
    use crate::testutil::TestDir;

    fn write_level(level: &[LevelShard], path: impl Fn(usize) -> PathBuf) {
        for (k, shard) in level.iter().enumerate() {
            super::super::store::write_shard(&path(k), shard).unwrap();
        }
    }

    #[test]
    fn tiny_bounds_give_the_bytes_of_a_level_expanded_in_memory() {
        let dir = TestDir::new("level-spill-bytes");
        let d = dir.root();
        let shards = 5;
        let mut level = start_level(0xffff, shards);
        for depth in 0..9 {
            let (next, childless) = next_level(&Removal, &level, 2).unwrap();
            let source = |k: usize| d.join(format!("in-{depth}-{k}"));
            write_level(&level, source);
            let memory = |k: usize| d.join(format!("memory-{depth}-{k}"));
            write_level(&next, memory);
            let sources: Vec<PathBuf> = (0..shards).map(source).collect();
            for (memory_bytes, threads) in [(1, 1), (40_000, 2), (1 << 30, 2)] {
                let opts = SpillOptions { memory_bytes, threads };
                let disk = |k: usize| d.join(format!("disk-{depth}-{k}"));
                let runs = spill_level(&Removal, &sources, shards, &d.join("scratch"), &opts).unwrap();
                let merged = merge_runs(&runs, &disk, opts.threads).unwrap();
                std::fs::remove_dir_all(d.join("scratch")).unwrap();
                assert_eq!(runs.childless, childless);
                assert_eq!(merged.keys.iter().sum::<u64>(), next.iter().map(|s| s.len() as u64).sum::<u64>());
                if depth >= 6 && memory_bytes == 1 {
                    assert!(runs.runs.iter().all(|r| r.len() > 1), "a tiny bound spills more than once");
                }
                for k in 0..shards {
                    assert_eq!(
                        std::fs::read(disk(k)).unwrap(),
                        std::fs::read(memory(k)).unwrap(),
                        "depth {depth} shard {k}"
                    );
                }
                assert!(!d.join("scratch").exists());
            }
            level = next;
        }
    }

    #[test]
    fn a_damaged_run_is_named() {
        let dir = TestDir::new("level-spill-damaged");
        let d = dir.root();
        let level = next_level(&Removal, &start_level(0xffff, 3), 1).unwrap().0;
        let level = next_level(&Removal, &level, 1).unwrap().0;
        write_level(&level, |k| d.join(format!("in-{k}")));
        let sources: Vec<PathBuf> = (0..3).map(|k| d.join(format!("in-{k}"))).collect();
        let opts = SpillOptions { memory_bytes: 1, threads: 1 };
        let runs = spill_level(&Removal, &sources, 3, &d.join("scratch"), &opts).unwrap();
        let victim = runs.runs[1][0].clone();
        let mut bytes = std::fs::read(&victim).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&victim, &bytes).unwrap();
        let err = merge_runs(&runs, &|k| d.join(format!("out-{k}")), 1).unwrap_err();
        assert!(matches!(&err, LevelError::Corrupt { path, .. } if *path == victim), "{err}");
        assert!(err.to_string().contains(&victim.display().to_string()));
    }
}
