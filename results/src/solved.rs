//! What a finished retrograde job hands to its game's summary: the job, its
//! plan, the program that solved it, and per layer the rounds, the time and
//! the recorded tablebase file. The control plane builds it from its
//! manifest; the summaries read nothing else of the job.

use crate::ResultsError;
use retro_engine::tablebase::TablebaseReader;
use retro_probe::TablebaseEntry;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One layer in a summary (read back by the explorer's statistics).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LayerSummary {
    /// The question.
    pub question: String,
    /// Rounds that decided something (the init pass is round 0, not counted).
    pub rounds: u32,
    /// Wall time of the layer.
    pub seconds: f64,
    /// Positions decided in each round, round 0 (terminal positions) first.
    pub decided_per_round: Vec<u64>,
    /// Of those, the WIN positions, round by round (the rest are LOSS);
    /// absent from summaries written before it was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub won_per_round: Vec<u64>,
    /// The layer started from LOSS positions earlier layers prove
    /// (`coordinator --seed-solo`): round 0 holds them, and its rounds are
    /// fewer than the full layer's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seeded: bool,
}

/// One tablebase file in a summary (read back by the explorer's downloads).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TablebaseSummary {
    /// The question.
    pub question: String,
    /// File name in the output directory.
    pub file: String,
    /// Size.
    pub bytes: u64,
    /// SHA-256, as `sha256sum` prints it.
    pub sha256: String,
}

/// One solved layer.
#[derive(Clone, Debug)]
pub struct SolvedLayer {
    /// Its question, rounds and time, as the summary shows them.
    pub summary: LayerSummary,
    /// Non-terminal positions whose player to move has no move (from the init pass).
    pub no_move: u64,
    /// The tablebase file the job recorded, once written.
    pub tablebase: Option<TablebaseEntry>,
    /// The layer's depth file the job recorded, once written.
    pub depth: Option<TablebaseEntry>,
}

/// A finished job, as its summary needs it.
#[derive(Clone, Debug)]
pub struct SolvedJob {
    /// Job name.
    pub job: String,
    /// Plan hash (every tablebase header names it).
    pub plan_hash: String,
    /// The git commit of the program that solved it (`unknown` outside git).
    pub program_commit: String,
    /// The layers, in the plan's order.
    pub layers: Vec<SolvedLayer>,
}

impl SolvedJob {
    /// The per-layer part of a summary.
    pub fn layer_summaries(&self) -> Vec<LayerSummary> {
        self.layers.iter().map(|l| l.summary.clone()).collect()
    }

    /// The tablebase files of a summary.
    pub fn tablebase_summaries(&self) -> Vec<TablebaseSummary> {
        self.layers
            .iter()
            .filter_map(|l| {
                l.tablebase.as_ref().map(|t| TablebaseSummary {
                    question: l.summary.question.clone(),
                    file: t.file.clone(),
                    bytes: t.bytes,
                    sha256: t.sha256.clone(),
                })
            })
            .collect()
    }

    /// The depth files of a summary.
    pub fn depth_summaries(&self) -> Vec<TablebaseSummary> {
        self.layers
            .iter()
            .filter_map(|l| {
                l.depth.as_ref().map(|t| TablebaseSummary {
                    question: l.summary.question.clone(),
                    file: t.file.clone(),
                    bytes: t.bytes,
                    sha256: t.sha256.clone(),
                })
            })
            .collect()
    }

    /// Opens layer `question`'s tablebase in `dir`, proven to be the file the
    /// job wrote ([`TablebaseEntry::open_checked`]).
    pub fn open(&self, dir: &Path, question: &str, rank_order: u32) -> Result<TablebaseReader, ResultsError> {
        let layer = self.layers.iter().find(|l| l.summary.question == question).ok_or_else(|| {
            ResultsError::Unsupported(format!("the plan does not compute {question}, which the summary needs"))
        })?;
        let tb = layer
            .tablebase
            .as_ref()
            .ok_or_else(|| ResultsError::Unsupported(format!("layer {question} has no tablebase yet")))?;
        Ok(tb.open_checked(dir, question, &self.plan_hash, rank_order)?)
    }
}
