//! A shard's entries cut into pieces for the wire, and put back together on
//! disk at the other end: what lets a level job cross machines in bounded
//! memory. A sender reads a shard (from memory or from its stream file) a
//! piece of at most [`PIECE_ENTRIES`] entries at a time; a receiver appends
//! the pieces, in order, to a stream file ([`PieceWriter`]), so neither side
//! ever holds more than a piece of a level that lies on disk.
//!
//! Every shard is at least one piece (an empty one when the shard is empty),
//! so the last piece's flag always says that a shard arrived whole.

use super::stream::{StreamReader, StreamWriter};
use super::{LevelError, LevelShard};
use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::path::{Path, PathBuf};

/// Entries in one piece: 768 KB decoded, a few hundred KB on the wire, so a
/// receiver holds little and a message stays far below gRPC's limits. (The
/// English ledger's widest shards, about 57,000 keys, take two pieces, so the
/// peg cluster test crosses piece boundaries.)
pub const PIECE_ENTRIES: usize = 1 << 15;

/// The pieces of a shard held in memory (at least one).
pub fn shard_pieces(shard: &LevelShard) -> Vec<LevelShard> {
    if shard.is_empty() {
        return vec![LevelShard::default()];
    }
    shard
        .keys
        .chunks(PIECE_ENTRIES)
        .zip(shard.weights.chunks(PIECE_ENTRIES))
        .map(|(keys, weights)| LevelShard { keys: keys.to_vec(), weights: weights.to_vec() })
        .collect()
}

/// The pieces of a shard's stream file, read one at a time (at least one).
pub struct FilePieces {
    reader: StreamReader,
    sent_any: bool,
    done: bool,
}

impl FilePieces {
    /// Opens the stream file of a shard.
    pub fn open(path: &Path) -> Result<FilePieces, LevelError> {
        Ok(FilePieces { reader: StreamReader::open(path)?, sent_any: false, done: false })
    }
}

impl Iterator for FilePieces {
    type Item = Result<LevelShard, LevelError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut piece = LevelShard::default();
        while piece.len() < PIECE_ENTRIES {
            match self.reader.next() {
                Some(Ok((key, weight))) => {
                    piece.keys.push(key);
                    piece.weights.push(weight);
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                None => {
                    self.done = true;
                    break;
                }
            }
        }
        if piece.is_empty() && self.sent_any {
            return None;
        }
        self.sent_any = true;
        Some(Ok(piece))
    }
}

/// Appends the pieces of one shard, in order, to a stream file; the file
/// takes its name only when [`PieceWriter::finish`] is called after the last.
pub struct PieceWriter {
    writer: StreamWriter,
    next: u32,
}

impl PieceWriter {
    /// Starts the stream file at `path` (its directory must exist), fsynced
    /// when finished: a level file.
    pub fn create(path: &Path) -> Result<PieceWriter, LevelError> {
        Ok(PieceWriter { writer: StreamWriter::create(path)?, next: 0 })
    }

    /// Starts a scratch stream at `path`, not fsynced (pieces waiting for a merge).
    pub fn create_scratch(path: &Path) -> Result<PieceWriter, LevelError> {
        Ok(PieceWriter { writer: StreamWriter::create_scratch(path)?, next: 0 })
    }

    /// Appends piece number `piece`, which must be the next one.
    pub fn push(&mut self, piece: u32, shard: &LevelShard) -> Result<(), LevelError> {
        if piece != self.next {
            return Err(LevelError::BadParcel(format!("piece {piece} arrived where piece {} was due", self.next)));
        }
        self.next += 1;
        for (&key, &weight) in shard.keys.iter().zip(&shard.weights) {
            self.writer.push(key, weight)?;
        }
        Ok(())
    }

    /// Closes the stream after its last piece: (entries, bytes).
    pub fn finish(self) -> Result<(u64, u64), LevelError> {
        let entries = self.writer.entries();
        Ok((entries, self.writer.finish()?))
    }
}

/// Several shards arriving as pieces at once (interleaved or one after the
/// other), each appended to its own stream file, `K` naming the shard.
pub struct PieceFiles<K> {
    open: HashMap<K, PieceWriter>,
    durable: bool,
}

impl<K: Hash + Eq + Copy + Debug> PieceFiles<K> {
    /// Files fsynced when finished (`durable`: level files) or not (scratch).
    pub fn new(durable: bool) -> PieceFiles<K> {
        PieceFiles { open: HashMap::new(), durable }
    }

    /// Takes piece `piece` of shard `key`: piece 0 starts its file at
    /// `path()` (replacing one begun before), the others must follow in
    /// order. Returns the file's (entries, bytes) once the `last` piece is in.
    pub fn accept(
        &mut self,
        key: K,
        piece: u32,
        last: bool,
        shard: &LevelShard,
        path: impl FnOnce() -> PathBuf,
    ) -> Result<Option<(u64, u64)>, LevelError> {
        if piece == 0 {
            let path = path();
            let writer = if self.durable { PieceWriter::create(&path)? } else { PieceWriter::create_scratch(&path)? };
            self.open.insert(key, writer);
        }
        let writer = self
            .open
            .get_mut(&key)
            .ok_or_else(|| LevelError::BadParcel(format!("{key:?}: piece {piece} came first")))?;
        writer.push(piece, shard)?;
        if !last {
            return Ok(None);
        }
        Ok(Some(self.open.remove(&key).expect("just used").finish()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(n: usize) -> LevelShard {
        LevelShard { keys: (0..n as u64).map(|k| k * 3 + 1).collect(), weights: (0..n as u128).collect() }
    }

    #[test]
    fn pieces_put_back_together_give_the_same_stream() {
        let dir = std::env::temp_dir().join(format!("retro-pieces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for n in [0, 1, PIECE_ENTRIES, PIECE_ENTRIES + 7] {
            let original = shard(n);
            let whole = dir.join("whole.lvl");
            super::super::store::write_shard(&whole, &original).unwrap();
            let from_memory = shard_pieces(&original);
            let from_file: Vec<LevelShard> = FilePieces::open(&whole).unwrap().map(Result::unwrap).collect();
            assert_eq!(from_memory, from_file, "{n} entries");
            assert_eq!(from_file.len(), n.div_ceil(PIECE_ENTRIES).max(1), "{n} entries");
            let copy = dir.join("copy.lvl");
            let mut w = PieceWriter::create(&copy).unwrap();
            for (i, p) in from_file.iter().enumerate() {
                w.push(i as u32, p).unwrap();
            }
            assert_eq!(w.finish().unwrap().0, n as u64);
            assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&whole).unwrap(), "{n} entries");
        }
        let mut w = PieceWriter::create(&dir.join("skip.lvl")).unwrap();
        assert!(matches!(w.push(1, &shard(2)), Err(LevelError::BadParcel(_))), "a piece out of order is refused");
        // Two shards interleaved; a shard whose first piece never came is refused.
        let mut files = PieceFiles::new(false);
        let pieces = shard_pieces(&shard(PIECE_ENTRIES + 3));
        assert_eq!(files.accept('a', 0, false, &pieces[0], || dir.join("a.lvl")).unwrap(), None);
        assert!(files.accept('b', 0, true, &shard(0), || dir.join("b.lvl")).unwrap().is_some());
        let (entries, _) = files.accept('a', 1, true, &pieces[1], || unreachable!()).unwrap().unwrap();
        assert_eq!(entries, PIECE_ENTRIES as u64 + 3);
        assert!(matches!(files.accept('c', 1, true, &shard(1), || unreachable!()), Err(LevelError::BadParcel(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
