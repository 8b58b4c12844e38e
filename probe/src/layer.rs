//! One layer's tablebase file, shared by many threads: each lookup takes
//! `&self`, and the last block read is kept, so a caller walking nearby
//! positions (a depth search, a line of play) decodes each block once. The
//! layer's depth file, where the job wrote one, answers the plies to the end
//! the same way.

use crate::{ProbeError, Value};
use retro_engine::tablebase::{DepthReader, TablebaseError, TablebaseReader, unpack_value};
use retro_engine::values::{DEPTH_NONE, DEPTH_UNKNOWN};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The last block a reader decoded, behind a short lock (held only to look
/// at or replace it, never while a block is read).
#[derive(Default)]
struct LastBlock(Mutex<Option<(u64, Arc<Vec<u8>>)>>);

impl LastBlock {
    /// Block `block`, from the cache or from `read`.
    fn get(
        &self,
        block: u64,
        read: impl FnOnce() -> Result<Vec<u8>, TablebaseError>,
    ) -> Result<Arc<Vec<u8>>, TablebaseError> {
        let cached = {
            let last = self.0.lock().unwrap_or_else(|e| e.into_inner());
            last.as_ref().filter(|(b, _)| *b == block).map(|(_, raw)| Arc::clone(raw))
        };
        match cached {
            Some(raw) => Ok(raw),
            None => {
                let raw = Arc::new(read()?);
                *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((block, Arc::clone(&raw)));
                Ok(raw)
            }
        }
    }
}

/// A tablebase file with a one-block cache, and its depth file if any.
pub struct Layer {
    reader: TablebaseReader,
    last: LastBlock,
    depth: Option<(DepthReader, LastBlock)>,
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
        Layer { reader, last: LastBlock::default(), depth: None }
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
        layer.depth = Some((depth, LastBlock::default()));
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
        let packed = self.last.get(block, || self.reader.read_block(block))?;
        Ok(Value::from_code(unpack_value(&packed, at)))
    }

    /// The plies to the end at `rank`, from the depth file.
    pub fn plies(&self, rank: u64) -> Result<Plies, ProbeError> {
        let Some((depth, last)) = &self.depth else { return Ok(Plies::Unknown) };
        let (block, at) = self.reader.locate(rank)?;
        let raw = last.get(block, || depth.read_block(block))?;
        Ok(match raw.get(at as usize).copied() {
            Some(DEPTH_NONE) => Plies::None,
            Some(DEPTH_UNKNOWN) | None => Plies::Unknown,
            Some(p) => Plies::Known(u32::from(p)),
        })
    }
}
