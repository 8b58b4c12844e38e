//! Levels kept on disk: one directory per level, holding one sorted
//! [stream](super::stream) per shard and, written last, a checked marker
//! (`level.json`) with each shard's key count and size. A level directory
//! without its marker is incomplete (a run was killed while writing it) and
//! is recomputed; with it, the level is a checkpoint.

use super::stream::{StreamReader, StreamWriter};
use super::{Level, LevelError, LevelShard};
use crate::durable::{io_err, read_checked_json, write_checked_json};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a complete level directory holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelMarker {
    /// Keys in each shard file.
    pub keys: Vec<u64>,
    /// Bytes of each shard file.
    pub bytes: Vec<u64>,
}

impl LevelMarker {
    /// Keys in the whole level.
    pub fn total_keys(&self) -> u64 {
        self.keys.iter().sum()
    }

    /// Bytes of the whole level on disk.
    pub fn total_bytes(&self) -> u64 {
        self.bytes.iter().sum()
    }
}

/// The directory of level `n` under `root`.
pub fn level_dir(root: &Path, n: usize) -> PathBuf {
    root.join(format!("level-{n:03}"))
}

/// The file of shard `k` of level `n` under `root`.
pub fn shard_file(root: &Path, n: usize, k: usize) -> PathBuf {
    level_dir(root, n).join(format!("shard-{k:04}.lvl"))
}

/// Every shard file of level `n`, in shard order.
pub fn shard_files(root: &Path, n: usize, shards: usize) -> Vec<PathBuf> {
    (0..shards).map(|k| shard_file(root, n, k)).collect()
}

fn marker_path(root: &Path, n: usize) -> PathBuf {
    level_dir(root, n).join("level.json")
}

/// Removes `dir` and everything in it, if it is there.
pub fn remove_dir_if_present(dir: &Path) -> Result<(), LevelError> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| LevelError::Io(io_err(dir)(e)))?;
    }
    Ok(())
}

/// Empties (or creates) level `n`'s directory, ready for its shard files.
pub fn begin_level(root: &Path, n: usize) -> Result<(), LevelError> {
    let dir = level_dir(root, n);
    remove_dir_if_present(&dir)?;
    std::fs::create_dir_all(&dir).map_err(|e| LevelError::Io(io_err(&dir)(e)))
}

/// Marks level `n` complete once its shard files are all written.
pub fn finish_level(root: &Path, n: usize, marker: &LevelMarker) -> Result<(), LevelError> {
    Ok(write_checked_json(&marker_path(root, n), marker)?)
}

/// The marker of level `n`: `None` when the level is absent or incomplete.
/// A marker that does not match `shards` is refused with a clear error.
pub fn read_marker(root: &Path, n: usize, shards: usize) -> Result<Option<LevelMarker>, LevelError> {
    let path = marker_path(root, n);
    let Some(marker) = read_checked_json::<LevelMarker>(&path)? else { return Ok(None) };
    if marker.keys.len() != shards || marker.bytes.len() != shards {
        return Err(LevelError::Corrupt {
            path,
            problem: format!("it lists {} shards, the job has {shards}", marker.keys.len()),
        });
    }
    Ok(Some(marker))
}

/// Writes a shard held in memory as a stream at `path`; returns its keys and bytes.
pub fn write_shard(path: &Path, shard: &LevelShard) -> Result<(u64, u64), LevelError> {
    fill(StreamWriter::create(path)?, shard)
}

/// Writes `shard` through `w` and finishes it; returns its keys and bytes.
fn fill(mut w: StreamWriter, shard: &LevelShard) -> Result<(u64, u64), LevelError> {
    for (&key, &weight) in shard.keys.iter().zip(&shard.weights) {
        w.push(key, weight)?;
    }
    Ok((w.entries(), w.finish()?))
}

/// Writes a level held in memory as level `n`: the shard files, synced
/// together, then the marker. A kill before the marker leaves the level
/// incomplete, and [`begin_level`] empties it when it is made again, so the
/// shard files need neither their own fsync nor a rename each.
pub fn write_level(root: &Path, n: usize, level: &[LevelShard]) -> Result<LevelMarker, LevelError> {
    begin_level(root, n)?;
    let mut marker = LevelMarker { keys: Vec::with_capacity(level.len()), bytes: Vec::with_capacity(level.len()) };
    let files = shard_files(root, n, level.len());
    for (shard, path) in level.iter().zip(&files) {
        let (keys, bytes) = fill(StreamWriter::create_with_siblings(path)?, shard)?;
        marker.keys.push(keys);
        marker.bytes.push(bytes);
    }
    super::stream::sync_files(&level_dir(root, n), &files)?;
    finish_level(root, n, &marker)?;
    Ok(marker)
}

/// Reads one shard file into memory, checking it holds `keys` keys.
pub fn read_shard(path: &Path, keys: u64) -> Result<LevelShard, LevelError> {
    let mut shard = LevelShard { keys: Vec::with_capacity(keys as usize), weights: Vec::with_capacity(keys as usize) };
    for entry in StreamReader::open(path)? {
        let (key, weight) = entry?;
        shard.keys.push(key);
        shard.weights.push(weight);
    }
    if shard.len() as u64 != keys {
        return Err(LevelError::Corrupt {
            path: path.to_path_buf(),
            problem: format!("{} keys, its level marker says {keys}", shard.len()),
        });
    }
    Ok(shard)
}

/// Reads a complete level into memory, shards on `threads` threads.
pub fn read_level(root: &Path, n: usize, marker: &LevelMarker, threads: usize) -> Result<Level, LevelError> {
    // Shards decode on their own (a resumed English job reads 32 levels of
    // them before its ledger), so every thread takes the next one.
    super::for_each_index(marker.keys.len(), threads, |k| read_shard(&shard_file(root, n, k), marker.keys[k]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_round_trip_and_an_unmarked_one_is_incomplete() {
        let dir = crate::testutil::TestDir::new("level-store");
        let root = dir.path("levels");
        let level =
            vec![LevelShard { keys: vec![1, 5, 9], weights: vec![1, u128::MAX, 1 << 100] }, LevelShard::default()];
        let marker = write_level(&root, 3, &level).unwrap();
        assert_eq!(marker.keys, [3, 0]);
        assert_eq!(read_marker(&root, 3, 2).unwrap(), Some(marker.clone()));
        assert_eq!(read_level(&root, 3, &marker, 2).unwrap(), level);
        assert!(matches!(read_marker(&root, 3, 4), Err(LevelError::Corrupt { .. })));
        // A shard whose count disagrees with the marker is named.
        let wrong = LevelMarker { keys: vec![2, 0], bytes: marker.bytes.clone() };
        assert!(
            matches!(read_level(&root, 3, &wrong, 2), Err(LevelError::Corrupt { path, .. }) if path == shard_file(&root, 3, 0))
        );
        begin_level(&root, 4).unwrap();
        assert_eq!(read_marker(&root, 4, 2).unwrap(), None);
    }
}

/// Entries of one shard, in key order, from memory or from its file.
///
/// An enum rather than a boxed iterator: the ledger reads every entry of
/// every level through it, and a virtual call per entry keeps the slice
/// walk behind it from being inlined into the ledger's loop (part of the
/// English ledger's slowdown after issue 18, docs/benchmarks/log.md, 2026-12-03).
pub enum Entries<'a> {
    /// A shard held in memory.
    Memory(std::iter::Zip<std::slice::Iter<'a, u64>, std::slice::Iter<'a, u128>>),
    /// A shard read from its file.
    Disk(StreamReader),
}

impl Iterator for Entries<'_> {
    type Item = Result<(u64, u128), LevelError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Entries::Memory(slices) => slices.next().map(|(&key, &weight)| Ok((key, weight))),
            Entries::Disk(reader) => reader.next(),
        }
    }
}

/// A complete level, held in memory or only on disk.
#[derive(Debug)]
pub enum StoredLevel {
    /// Small enough to hold.
    Memory(Level),
    /// Level `n` under `root`, read shard by shard when needed.
    Disk {
        /// The level directories' root.
        root: PathBuf,
        /// The level.
        n: usize,
        /// Its marker.
        marker: LevelMarker,
    },
}

impl StoredLevel {
    /// Number of shards.
    pub fn shards(&self) -> usize {
        match self {
            StoredLevel::Memory(level) => level.len(),
            StoredLevel::Disk { marker, .. } => marker.keys.len(),
        }
    }

    /// Keys in the level.
    pub fn keys(&self) -> u64 {
        match self {
            StoredLevel::Memory(level) => level.iter().map(|s| s.len() as u64).sum(),
            StoredLevel::Disk { marker, .. } => marker.total_keys(),
        }
    }

    /// Shard `k`'s entries in key order.
    pub fn entries(&self, k: usize) -> Result<Entries<'_>, LevelError> {
        Ok(match self {
            StoredLevel::Memory(level) => {
                let shard = &level[k];
                Entries::Memory(shard.keys.iter().zip(&shard.weights))
            }
            StoredLevel::Disk { root, n, .. } => Entries::Disk(StreamReader::open(&shard_file(root, *n, k))?),
        })
    }

    /// The weight of `key` (0 when absent).
    pub fn weight(&self, key: u64) -> Result<u128, LevelError> {
        match self {
            StoredLevel::Memory(level) => Ok(super::weight(level, key)),
            StoredLevel::Disk { .. } => {
                for entry in self.entries(super::shard_of(key, self.shards()))? {
                    let (k, w) = entry?;
                    if k >= key {
                        return Ok(if k == key { w } else { 0 });
                    }
                }
                Ok(0)
            }
        }
    }
}
