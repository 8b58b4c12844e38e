//! Expanding a level on disk in passes over groups of destination shards.
//!
//! A level whose successors do not fit in memory at once still fits a few
//! destination shards at a time. A first pass counts the successors bound for
//! each destination and estimates how many distinct children they are
//! ([`count_successors`], a [`Distinct`] sketch per destination: a peg
//! position has about ten parents); the destinations are then cut into groups
//! whose tables fit the bound, and each group takes one pass over the source
//! streams ([`expand_in_passes`]): children bound elsewhere are dropped, the
//! rest added up in their destination's table (through a short buffer per
//! thread and destination), and each destination is written as its shard
//! stream. Nothing is spilled: every position of the next level is added up in
//! memory exactly once, and the disk holds only the two levels; what it costs
//! is reading and expanding the source once per group, so the groups are as
//! wide as the bound allows.
//!
//! When one destination alone does not fit, the caller spills instead
//! ([`super::spill`]). Both write the bytes of the level expanded in memory.

use super::distinct::Distinct;
use super::spill::{Merged, SpillOptions};
use super::store::write_shard;
use super::stream::over_sources;
use super::{Accumulator, LevelError, LevelGame, Successor, for_each_index, shard_of};
use std::path::PathBuf;
use std::sync::Mutex;

/// Children a thread buffers per destination before it adds them to the
/// destination's table (under its lock): short, so the buffers of a wide
/// group cost little, long enough that the lock is taken rarely.
const FLUSH: usize = 2048;

/// Room in a destination's table beyond its estimated children: the sketch
/// errs by about 2.3 % (one standard error), and a table that fills up grows.
const MARGIN: f64 = 1.1;

/// What the counting pass found.
#[derive(Clone, Debug, Default)]
pub struct SuccessorCounts {
    /// Successors (moves) bound for each destination shard.
    pub per_shard: Vec<u64>,
    /// Estimated distinct children of each destination shard.
    pub distinct: Vec<u64>,
    /// Source keys with no child.
    pub childless: u64,
    /// Source keys read.
    pub sources: u64,
}

impl SuccessorCounts {
    /// Keys destination `k`'s table is made for.
    fn table_keys(&self, k: usize) -> usize {
        (self.distinct[k] as f64 * MARGIN) as usize + 1
    }

    /// Bytes destination `k` takes in a pass on `threads` threads: its table
    /// and each thread's buffer for it.
    fn pass_bytes(&self, k: usize, threads: usize) -> u64 {
        Accumulator::bytes_for(self.table_keys(k)) + (threads * FLUSH * std::mem::size_of::<Successor>()) as u64
    }

    /// The destination groups, as `start..end` shard ranges, whose tables fit
    /// `opts`'s bound (three quarters of it, the rest for the source streams
    /// and what the estimate misses); `None` when one destination alone does
    /// not fit.
    pub fn groups(&self, opts: &SpillOptions) -> Option<Vec<std::ops::Range<usize>>> {
        let budget = opts.memory_bytes / 4 * 3;
        let mut groups = Vec::new();
        let (mut start, mut held) = (0, 0u64);
        for k in 0..self.per_shard.len() {
            let n = self.pass_bytes(k, opts.threads.max(1));
            if n > budget {
                return None;
            }
            if held + n > budget {
                groups.push(start..k);
                (start, held) = (k, 0);
            }
            held += n;
        }
        groups.push(start..self.per_shard.len());
        Some(groups)
    }
}

/// The counting pass: successors per destination shard of the next level,
/// and an estimate of the distinct children among them.
pub fn count_successors(
    game: &impl LevelGame,
    sources: &[PathBuf],
    shards: usize,
    threads: usize,
) -> Result<SuccessorCounts, LevelError> {
    let parts = over_sources(
        sources,
        threads,
        |_| {
            (
                SuccessorCounts { per_shard: vec![0; shards], ..SuccessorCounts::default() },
                vec![Distinct::default(); shards],
            )
        },
        |(c, sketches), key, _| {
            let mut any = false;
            game.for_each_child(key, |child| {
                any = true;
                let k = shard_of(child, shards);
                c.per_shard[k] += 1;
                sketches[k].add(child);
            });
            c.childless += u64::from(!any);
            c.sources += 1;
            Ok(())
        },
        |_| Ok(()),
    )?;
    let mut total = SuccessorCounts { per_shard: vec![0; shards], ..SuccessorCounts::default() };
    let mut sketches = vec![Distinct::default(); shards];
    for (part, part_sketches) in parts {
        for (t, p) in total.per_shard.iter_mut().zip(&part.per_shard) {
            *t += p;
        }
        for (t, p) in sketches.iter_mut().zip(&part_sketches) {
            t.merge(p);
        }
        total.childless += part.childless;
        total.sources += part.sources;
    }
    // No more distinct children than moves (the sketch may say a few more).
    total.distinct = sketches.iter().zip(&total.per_shard).map(|(d, &n)| d.estimate().min(n)).collect();
    Ok(total)
}

/// One pass per group of `groups`: expands the sources, keeps the children
/// bound for the group, adds them up in a table per destination (sized by
/// `counts`) and writes each destination `k` to `dest(k)`. `check` runs
/// between passes (a fault point).
pub fn expand_in_passes(
    game: &impl LevelGame,
    sources: &[PathBuf],
    counts: &SuccessorCounts,
    groups: &[std::ops::Range<usize>],
    dest: &(dyn Fn(usize) -> PathBuf + Sync),
    threads: usize,
    mut check: impl FnMut(usize),
) -> Result<Merged, LevelError> {
    let shards = counts.per_shard.len();
    let mut keys = vec![0u64; shards];
    let mut bytes = vec![0u64; shards];
    for (pass, group) in groups.iter().enumerate() {
        if pass > 0 {
            check(pass);
        }
        let lo = group.start;
        let tables: Vec<Mutex<Accumulator>> =
            group.clone().map(|k| Mutex::new(Accumulator::with_capacity(counts.table_keys(k)))).collect();
        let add = |i: usize, buffer: &mut Vec<Successor>| {
            tables[i].lock().expect("a thread adding up children panicked").add_all(buffer);
            buffer.clear();
        };
        over_sources(
            sources,
            threads,
            |_| vec![Vec::<Successor>::with_capacity(FLUSH); group.len()],
            |buffers, key, weight| {
                game.for_each_weighted_child(key, weight, |child, weight| {
                    let k = shard_of(child, shards);
                    if group.contains(&k) {
                        let buffer = &mut buffers[k - lo];
                        buffer.push(Successor::new(child, weight));
                        if buffer.len() == FLUSH {
                            add(k - lo, buffer);
                        }
                    }
                });
                Ok(())
            },
            |buffers| {
                for (i, buffer) in buffers.iter_mut().enumerate() {
                    add(i, buffer);
                }
                Ok(())
            },
        )?;
        let written = for_each_index(group.len(), threads, |i| {
            // Each destination is written once; taking its table frees it then.
            let table = std::mem::take(&mut *tables[i].lock().expect("a thread adding up children panicked"));
            table.into_shard().and_then(|shard| write_shard(&dest(lo + i), &shard))
        })?;
        for (i, (k, b)) in written.into_iter().enumerate() {
            keys[lo + i] = k;
            bytes[lo + i] = b;
        }
    }
    Ok(Merged { keys, bytes })
}

#[cfg(test)]
mod tests {
    use super::super::testgame::Removal;
    use super::super::{LevelShard, next_level, start_level};
    use super::*;

    #[test]
    fn passes_give_the_bytes_of_a_level_expanded_in_memory() {
        let dir = crate::testutil::TestDir::new("level-passes");
        let d = dir.root();
        let shards = 7;
        let mut level = start_level(0xffff, shards);
        for depth in 0..8 {
            let (next, childless) = next_level(&Removal, &level, 2).unwrap();
            let write = |level: &[LevelShard], name: &str| -> Vec<PathBuf> {
                (0..shards)
                    .map(|k| {
                        let p = d.join(format!("{name}-{depth}-{k}"));
                        write_shard(&p, &level[k]).unwrap();
                        p
                    })
                    .collect()
            };
            let sources = write(&level, "in");
            let memory = write(&next, "memory");
            let counts = count_successors(&Removal, &sources, shards, 2).unwrap();
            assert_eq!(counts.childless, childless);
            let moves: u64 = level.iter().flat_map(|s| &s.keys).map(|k| u64::from(k.count_ones())).sum();
            assert_eq!(counts.per_shard.iter().sum::<u64>(), moves);
            // The sketch's estimate of each destination's children.
            for (k, shard) in next.iter().enumerate() {
                let (estimate, actual) = (counts.distinct[k] as f64, shard.len() as f64);
                assert!((estimate - actual).abs() <= (actual * 0.1).max(2.0), "shard {k}: {estimate} for {actual}");
            }
            // Tables and buffers of 122,880 bytes at least per destination:
            // a 768 KiB bound holds four a pass, a 64 KiB bound not one.
            for memory_bytes in [1 << 30, 768 * 1024, 64 * 1024] {
                let opts = SpillOptions { memory_bytes, threads: 2 };
                let Some(groups) = counts.groups(&opts) else {
                    assert_eq!(memory_bytes, 64 * 1024, "only the smallest bound refuses");
                    continue;
                };
                assert!(memory_bytes > 64 * 1024, "the smallest bound holds no destination");
                assert_eq!(groups.iter().map(|g| g.len()).sum::<usize>(), shards);
                let mut checked = 0;
                let merged =
                    expand_in_passes(&Removal, &sources, &counts, &groups, &|k| d.join(format!("out-{k}")), 2, |_| {
                        checked += 1
                    })
                    .unwrap();
                assert_eq!(checked, groups.len() - 1);
                assert_eq!(merged.keys.iter().sum::<u64>(), next.iter().map(|s| s.len() as u64).sum::<u64>());
                for (k, expected) in memory.iter().enumerate() {
                    assert_eq!(std::fs::read(d.join(format!("out-{k}"))).unwrap(), std::fs::read(expected).unwrap());
                }
                if memory_bytes < 1 << 20 {
                    assert!(groups.len() > 1, "a small bound takes several passes at depth {depth}");
                }
            }
            level = next;
        }
    }
}
