//! Expanding a level on disk in passes over groups of destination shards.
//!
//! A level whose successors do not fit in memory at once still fits a few
//! destination shards at a time. A first pass counts the successors bound for
//! each destination ([`count_successors`]); the destinations are then cut into
//! groups whose successors fit the bound, and each group takes one pass over
//! the source streams ([`expand_in_passes`]): children bound elsewhere are
//! dropped, the rest appended per destination and added up per destination in
//! a cache-sized table, as the in-memory path does, and each destination is
//! written as its shard stream. Nothing is spilled: every position of the next
//! level is added up in memory exactly once, and the disk holds only the two
//! levels; what it costs is reading and expanding the source once per group.
//!
//! When one destination alone does not fit, the caller spills instead
//! ([`super::spill`]). Both write the bytes of the level expanded in memory.

use super::spill::{Merged, SpillOptions};
use super::store::write_shard;
use super::stream::over_sources;
use super::{LevelError, LevelGame, Successor, for_each_index, merge_slices, shard_of};
use std::path::PathBuf;

/// Bytes of one buffered successor.
const SUCCESSOR_BYTES: u64 = std::mem::size_of::<Successor>() as u64;

/// What the counting pass found.
#[derive(Clone, Debug, Default)]
pub struct SuccessorCounts {
    /// Successors (moves) bound for each destination shard.
    pub per_shard: Vec<u64>,
    /// Source keys with no child.
    pub childless: u64,
    /// Source keys read.
    pub sources: u64,
}

impl SuccessorCounts {
    /// The destination groups, as `start..end` shard ranges, whose successors
    /// fit `opts`'s bound (three quarters of it for the buffers); `None` when
    /// one destination alone does not fit.
    pub fn groups(&self, opts: &SpillOptions) -> Option<Vec<std::ops::Range<usize>>> {
        let budget = opts.memory_bytes / 4 * 3 / SUCCESSOR_BYTES;
        let mut groups = Vec::new();
        let (mut start, mut held) = (0, 0u64);
        for (k, &n) in self.per_shard.iter().enumerate() {
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

/// The counting pass: successors per destination shard of the next level.
pub fn count_successors(
    game: &impl LevelGame,
    sources: &[PathBuf],
    shards: usize,
    threads: usize,
) -> Result<SuccessorCounts, LevelError> {
    let parts = over_sources(
        sources,
        threads,
        |_| SuccessorCounts { per_shard: vec![0; shards], ..SuccessorCounts::default() },
        |c, key, _| {
            let mut any = false;
            game.for_each_child(key, |child| {
                any = true;
                c.per_shard[shard_of(child, shards)] += 1;
            });
            c.childless += u64::from(!any);
            c.sources += 1;
            Ok(())
        },
        |_| Ok(()),
    )?;
    let mut total = SuccessorCounts { per_shard: vec![0; shards], ..SuccessorCounts::default() };
    for part in parts {
        for (t, p) in total.per_shard.iter_mut().zip(&part.per_shard) {
            *t += p;
        }
        total.childless += part.childless;
        total.sources += part.sources;
    }
    Ok(total)
}

/// One pass per group of `groups`: expands the sources, keeps the children
/// bound for the group, adds them up per destination and writes each
/// destination `k` to `dest(k)`. `check` runs between passes (a fault point).
pub fn expand_in_passes(
    game: &impl LevelGame,
    sources: &[PathBuf],
    shards: usize,
    groups: &[std::ops::Range<usize>],
    dest: &(dyn Fn(usize) -> PathBuf + Sync),
    threads: usize,
    mut check: impl FnMut(usize),
) -> Result<Merged, LevelError> {
    let mut keys = vec![0u64; shards];
    let mut bytes = vec![0u64; shards];
    for (pass, group) in groups.iter().enumerate() {
        if pass > 0 {
            check(pass);
        }
        let (lo, width) = (group.start, group.len());
        let outboxes = over_sources(
            sources,
            threads,
            |_| vec![Vec::<Successor>::new(); width],
            |outbox, key, weight| {
                game.for_each_child(key, |child| {
                    let k = shard_of(child, shards);
                    if group.contains(&k) {
                        outbox[k - lo].push(Successor::new(child, weight));
                    }
                });
                Ok(())
            },
            |_| Ok(()),
        )?;
        let written = for_each_index(width, threads, |i| {
            let parts: Vec<&[Successor]> = outboxes.iter().map(|o| &o[i][..]).collect();
            merge_slices(&parts).and_then(|shard| write_shard(&dest(lo + i), &shard))
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
            for memory_bytes in [1 << 30, 64 * 1024] {
                let opts = SpillOptions { memory_bytes, threads: 2 };
                let Some(groups) = counts.groups(&opts) else {
                    assert!(depth >= 4 && memory_bytes < 1 << 20, "only a small bound refuses, from depth 4");
                    continue;
                };
                assert_eq!(groups.iter().map(|g| g.len()).sum::<usize>(), shards);
                let mut checked = 0;
                let merged =
                    expand_in_passes(&Removal, &sources, shards, &groups, &|k| d.join(format!("out-{k}")), 2, |_| {
                        checked += 1
                    })
                    .unwrap();
                assert_eq!(checked, groups.len() - 1);
                assert_eq!(merged.keys.iter().sum::<u64>(), next.iter().map(|s| s.len() as u64).sum::<u64>());
                for (k, expected) in memory.iter().enumerate() {
                    assert_eq!(std::fs::read(d.join(format!("out-{k}"))).unwrap(), std::fs::read(expected).unwrap());
                }
                if memory_bytes < 1 << 20 && depth >= 3 {
                    assert!(groups.len() > 1, "a small bound takes several passes at depth {depth}");
                }
            }
            level = next;
        }
    }
}
