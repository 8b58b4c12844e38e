//! One layer's tablebase file, shared by many threads: each lookup takes
//! `&self`, and the last few blocks read are kept, so a caller walking nearby
//! positions (a depth search, a line of play, a position and its children)
//! decodes each block once. The
//! layer's depth file, where the job wrote one, answers the plies to the end
//! the same way.

use crate::{ProbeError, Value};
use retro_engine::tablebase::{DepthReader, TablebaseError, TablebaseReader, unpack_value};
use retro_engine::values::{DEPTH_NONE, DEPTH_UNKNOWN};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// How many decoded blocks a reader keeps. A position's answers and its
/// children's fall in a few blocks per layer (one per rotation of the ranks,
/// the children's ranks differing only in the mover's pieces), so a handful
/// kept serves a whole explorer answer from a few decodings instead of one
/// per lookup: at stage 2 a block is 2^20 positions, 256 KiB of values and
/// 1 MiB of depth bytes.
const KEPT_BLOCKS: usize = 8;

/// The blocks a reader decoded last, the latest first, behind a short lock
/// (held only to look at or replace them, never while a block is read).
#[derive(Default)]
struct RecentBlocks(Mutex<Vec<(u64, Arc<Vec<u8>>)>>);

impl RecentBlocks {
    /// Block `block`, from the kept ones or from `read`.
    fn get(
        &self,
        block: u64,
        read: impl FnOnce() -> Result<Vec<u8>, TablebaseError>,
    ) -> Result<Arc<Vec<u8>>, TablebaseError> {
        let kept = |recent: &mut Vec<(u64, Arc<Vec<u8>>)>| {
            let at = recent.iter().position(|(b, _)| *b == block)?;
            let hit = recent.remove(at);
            let raw = Arc::clone(&hit.1);
            recent.insert(0, hit);
            Some(raw)
        };
        if let Some(raw) = kept(&mut self.0.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(raw);
        }
        let raw = Arc::new(read()?);
        let mut recent = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept(&mut recent).is_none() {
            recent.insert(0, (block, Arc::clone(&raw)));
            recent.truncate(KEPT_BLOCKS);
        }
        Ok(raw)
    }
}

/// A tablebase file with the blocks it decoded last, and its depth file if any.
pub struct Layer {
    reader: TablebaseReader,
    recent: RecentBlocks,
    depth: Option<(DepthReader, RecentBlocks)>,
}

/// What a layer's depth file says of one position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plies {
    /// The plies from the position to the end under best play: the winner
    /// hurrying, the loser delaying (the round the position was decided in).
    Known(u32),
    /// The layer decided the position but did not keep its round (a round
    /// beyond the codes' reach, or a LOSS of a seeded layer), or the layer
    /// has no depth file.
    Unknown,
    /// A draw or an illegal placement: no end to count to.
    None,
}

impl Layer {
    /// Wraps an opened file.
    pub fn new(reader: TablebaseReader) -> Layer {
        Layer { reader, recent: RecentBlocks::default(), depth: None }
    }

    /// Wraps an opened file and the depth file at `depth_path`, when there is
    /// one: it must be this layer's (its header names the same layer, plan and
    /// positions), or the opening fails saying so.
    pub fn with_depth_at(reader: TablebaseReader, depth_path: &Path) -> Result<Layer, ProbeError> {
        let mut layer = Layer::new(reader);
        if !depth_path.exists() {
            return Ok(layer);
        }
        let depth = DepthReader::open(depth_path)?;
        let (v, d) = (layer.reader.header(), depth.header());
        if (&v.layer, &v.plan_hash, v.positions, v.block_positions)
            != (&d.layer, &d.plan_hash, d.positions, d.block_positions)
        {
            return Err(ProbeError::Mismatch(format!(
                "{}: the depth file of layer {} of plan {} ({} positions) lies beside the tablebase of layer {} of \
                 plan {} ({} positions); remove it, or put back the one the job wrote",
                depth_path.display(),
                d.layer,
                d.plan_hash,
                d.positions,
                v.layer,
                v.plan_hash,
                v.positions
            )));
        }
        layer.depth = Some((depth, RecentBlocks::default()));
        Ok(layer)
    }

    /// The file.
    pub fn reader(&self) -> &TablebaseReader {
        &self.reader
    }

    /// Whether the layer has a depth file.
    pub fn has_depth(&self) -> bool {
        self.depth.is_some()
    }

    /// The value at `rank`.
    pub fn value(&self, rank: u64) -> Result<Value, ProbeError> {
        let (block, at) = self.reader.locate(rank)?;
        let packed = self.recent.get(block, || self.reader.read_block(block))?;
        Ok(Value::from_code(unpack_value(&packed, at)))
    }

    /// The plies to the end at `rank`, from the depth file.
    pub fn plies(&self, rank: u64) -> Result<Plies, ProbeError> {
        let Some((depth, recent)) = &self.depth else { return Ok(Plies::Unknown) };
        let (block, at) = self.reader.locate(rank)?;
        let raw = recent.get(block, || depth.read_block(block))?;
        Ok(match raw.get(at as usize).copied() {
            Some(DEPTH_NONE) => Plies::None,
            Some(DEPTH_UNKNOWN) | None => Plies::Unknown,
            Some(p) => Plies::Known(u32::from(p)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept blocks are the latest used: a block read again within
    /// [`KEPT_BLOCKS`] others is not decoded again, one pushed out is.
    #[test]
    fn the_latest_blocks_are_kept_and_the_least_recent_goes() {
        let recent = RecentBlocks::default();
        let reads = std::cell::Cell::new(0);
        let get = |b: u64| {
            let raw = recent.get(b, || {
                reads.set(reads.get() + 1);
                Ok(vec![b as u8])
            });
            raw.unwrap()[0]
        };
        for b in 0..KEPT_BLOCKS as u64 {
            assert_eq!(get(b), b as u8);
        }
        assert_eq!(reads.get(), KEPT_BLOCKS);
        // Block 0 used again: block 1 is now the least recent.
        assert_eq!(get(0), 0);
        assert_eq!(reads.get(), KEPT_BLOCKS);
        assert_eq!(get(100), 100);
        assert_eq!(reads.get(), KEPT_BLOCKS + 1);
        assert_eq!(get(0), 0);
        assert_eq!(reads.get(), KEPT_BLOCKS + 1, "block 0 kept");
        assert_eq!(get(1), 1);
        assert_eq!(reads.get(), KEPT_BLOCKS + 2, "block 1 went first");
    }
}
