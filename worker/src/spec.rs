//! The job as the coordinator hands it to workers (part of the plan).

use retro_engine::layout::Layout;
use retro_games::Question;
use retro_games::cc3::{Cc3, parse_question};
use serde::{Deserialize, Serialize};

/// Everything a worker needs to know about the job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    /// Job name (names directories).
    pub name: String,
    /// Game identifier (`cc3`).
    pub game: String,
    /// Star order.
    pub order: u32,
    /// The computed layers, by question name, in order.
    pub questions: Vec<String>,
    /// Number of shards.
    pub shards: u32,
    /// Positions per tablebase block.
    pub block_positions: u64,
    /// Bytes per undo/checksum chunk.
    pub chunk_bytes: u64,
    /// Hash of the plan's semantic part.
    pub plan_hash: String,
}

/// A spec that names something this build cannot run.
#[derive(Debug, thiserror::Error)]
#[error("job {job}: {why}")]
pub struct SpecError {
    /// The job.
    pub job: String,
    /// What is wrong.
    pub why: String,
}

impl JobSpec {
    fn err(&self, why: String) -> SpecError {
        SpecError { job: self.name.clone(), why }
    }

    /// Builds the game.
    pub fn game(&self) -> Result<Cc3, SpecError> {
        if self.game != "cc3" {
            return Err(self.err(format!("unknown game {:?}", self.game)));
        }
        let g = Cc3::new(self.order).map_err(|e| self.err(e.to_string()))?;
        if !g.ranker.fits_u64() {
            return Err(self.err(format!("order {} is too large to solve (estimate only)", self.order)));
        }
        Ok(g)
    }

    /// The shard layout over the game's rank space.
    pub fn layout(&self, positions: u64) -> Layout {
        Layout::new(positions, self.shards, self.block_positions, self.chunk_bytes)
    }

    /// The question of layer `layer`.
    pub fn question(&self, layer: u32) -> Result<Question, SpecError> {
        let name = self.questions.get(layer as usize).ok_or_else(|| self.err(format!("no layer {layer}")))?;
        parse_question(name).ok_or_else(|| self.err(format!("unknown question {name:?}")))
    }
}
