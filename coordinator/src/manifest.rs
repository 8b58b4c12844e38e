//! The coordinator's manifest: which workers own which shards, and per layer
//! the committed round, the round history and the finished tablebase. Written
//! atomically (checked JSON) every time the coordinator commits something.

use retro_engine::durable::{DurableError, read_checked_json, write_checked_json};
use retro_engine::kernel::InitStats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the manifest format.
pub const MANIFEST_FORMAT_VERSION: u32 = 1;

/// One committed round.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundLog {
    /// Round number (0 = init).
    pub round: u32,
    /// Decided WIN for MAX.
    pub win: u64,
    /// Decided LOSS for MAX.
    pub loss: u64,
    /// Frontier that generated the round.
    pub frontier: u64,
    /// Wall time of the round.
    pub seconds: f64,
}

/// A finished tablebase file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TablebaseEntry {
    /// File name inside the output directory.
    pub file: String,
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256 of the file (as `sha256sum` prints it).
    pub sha256: String,
}

/// Progress of one layer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LayerRecord {
    /// The question this layer answers.
    pub question: String,
    /// Last committed round, if init is done.
    pub committed_round: Option<u32>,
    /// True once a round decided nothing (the fixpoint).
    pub solved: bool,
    /// Init pass counts.
    pub init: Option<InitStats>,
    /// Committed rounds, round 0 first.
    pub rounds: Vec<RoundLog>,
    /// Wall time spent on the layer so far.
    pub seconds: f64,
    /// The merged tablebase, once written.
    pub tablebase: Option<TablebaseEntry>,
}

impl LayerRecord {
    /// Rounds that decided something (round 0, the init pass, not counted).
    pub fn deciding_rounds(&self) -> u32 {
        self.rounds.iter().filter(|r| r.round > 0 && r.win + r.loss > 0).map(|r| r.round).max().unwrap_or(0)
    }
}

/// The coordinator's durable state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version.
    pub format_version: u32,
    /// Job name.
    pub job: String,
    /// Plan hash.
    pub plan_hash: String,
    /// Rank order version of the game's files (absent in manifests older than
    /// the field; filled in when such a job resumes).
    #[serde(default)]
    pub rank_order: Option<u32>,
    /// Shards of each worker, by worker id.
    pub workers: BTreeMap<String, Vec<u32>>,
    /// Number for the next new worker id.
    pub next_worker: u32,
    /// One record per layer.
    pub layers: Vec<LayerRecord>,
}

impl Manifest {
    /// A fresh manifest.
    pub fn new(job: &str, plan_hash: &str, rank_order: u32, questions: &[String]) -> Manifest {
        Manifest {
            format_version: MANIFEST_FORMAT_VERSION,
            job: job.to_string(),
            plan_hash: plan_hash.to_string(),
            rank_order: Some(rank_order),
            workers: BTreeMap::new(),
            next_worker: 1,
            layers: questions.iter().map(|q| LayerRecord { question: q.clone(), ..Default::default() }).collect(),
        }
    }

    /// Loads the manifest at `path`, checking that it belongs to this plan.
    pub fn load(path: &Path, job: &str, plan_hash: &str, rank_order: u32) -> Result<Option<Manifest>, String> {
        let mut m: Option<Manifest> = read_checked_json(path).map_err(|e: DurableError| e.to_string())?;
        if let Some(m) = &mut m {
            match m.rank_order {
                Some(r) if r != rank_order => {
                    return Err(format!(
                        "{}: these checkpoints were written with rank order {r}, this program uses {rank_order}; \
                         finish the job with the program that started it, or remove the checkpoints",
                        path.display()
                    ));
                }
                Some(_) => {}
                None => m.rank_order = Some(rank_order),
            }
            if m.format_version != MANIFEST_FORMAT_VERSION {
                return Err(format!(
                    "{}: manifest format {} (this build reads {MANIFEST_FORMAT_VERSION})",
                    path.display(),
                    m.format_version
                ));
            }
            if m.plan_hash != plan_hash || m.job != job {
                return Err(format!(
                    "{}: these checkpoints belong to job {} with plan {}, but this plan is job {job} with plan \
                     {plan_hash}; choose another [output] checkpoints directory or remove this one",
                    path.display(),
                    m.job,
                    m.plan_hash
                ));
            }
        }
        Ok(m)
    }

    /// Writes the manifest atomically.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        write_checked_json(path, self).map_err(|e| e.to_string())
    }
}
