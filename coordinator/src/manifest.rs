//! The coordinator's manifest: which workers own which shards, and per layer
//! the committed round, the round history and the finished tablebase. Written
//! atomically (checked JSON) every time the coordinator commits something.

use retro_engine::durable::{DurableError, read_checked_json, write_checked_json};
use retro_engine::kernel::InitStats;
use retro_engine::tablebase::TablebaseError;
use retro_probe::ProbeError;
pub use retro_probe::TablebaseEntry;
use retro_results::solved::{LayerSummary, SolvedJob, SolvedLayer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why checkpoints or their tablebases cannot be used. Each message says
/// what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The manifest file could not be read or written, or fails its checksum.
    #[error(transparent)]
    Durable(#[from] DurableError),
    /// A tablebase file could not be opened or read.
    #[error(transparent)]
    Tablebase(#[from] TablebaseError),
    /// A tablebase file is not the file the job wrote: another layer, plan,
    /// rank order, size or digest.
    #[error(transparent)]
    NotTheJobsFile(#[from] ProbeError),
    /// The checkpoints belong to another job, manifest format or rank order.
    #[error("{0}")]
    OtherCheckpoints(String),
    /// A finished layer's tablebase is missing, or its only copy unusable.
    #[error("{0}")]
    Missing(String),
    /// A file operation on the output directory failed.
    #[error("{0}")]
    Io(String),
}

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
    /// The layer's depth file ([`retro_engine::tablebase::DEPTH_ENCODING`]),
    /// written with the tablebase (absent in a manifest older than depth files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<TablebaseEntry>,
    /// Times the layer started again from its init pass because a worker was
    /// lost for good and replaced (every task names it; workers discard
    /// state of another attempt).
    #[serde(default)]
    pub attempt: u32,
    /// The layer started from LOSS positions earlier layers prove
    /// (`--seed-solo`), so its rounds are not the full layer's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seeded: bool,
}

impl LayerRecord {
    /// Positions decided so far: every committed round's WIN and LOSS, round
    /// 0 (the init pass) holding the terminal positions. Never more than the
    /// layer's positions (a status that added the terminal positions again
    /// showed a finished cc2 7 x 7 x 2 job at 1,276,656 of 1,271,256).
    pub fn decided(&self) -> u64 {
        self.rounds.iter().map(|r| r.win + r.loss).sum()
    }

    /// Rounds that decided something (round 0, the init pass, not counted).
    pub fn deciding_rounds(&self) -> u32 {
        self.rounds.iter().filter(|r| r.round > 0 && r.win + r.loss > 0).map(|r| r.round).max().unwrap_or(0)
    }
}

/// A worker's fence: which data directory may run as it. Every admitted
/// join gives the directory a new generation, which the worker stores in
/// its identity before its first pull; the pull makes it the worker's. A
/// join presenting any other generation comes from a copy of a directory
/// another process now runs as the worker (or from an old backup), and is
/// refused, so two processes never act as one worker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fence {
    /// The generation the worker last pulled with.
    pub confirmed: u64,
    /// The generation its latest join gave, not yet pulled with: the worker
    /// may have stored it or not (stopped in between), so both count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<u64>,
    /// The data directory's own name (`data-id.json`), so that a worker that
    /// stopped before storing its id is known by it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data_id: String,
}

impl Fence {
    /// Admits a join presenting `generation` and returns the generation it
    /// gets; `Err` with the newest generation given when it is stale.
    pub fn admit(&mut self, generation: u64) -> Result<u64, u64> {
        let newest = self.offered.unwrap_or(0).max(self.confirmed);
        if generation != self.confirmed && Some(generation) != self.offered {
            return Err(newest);
        }
        self.confirmed = generation;
        self.offered = Some(newest + 1);
        Ok(newest + 1)
    }

    /// A pull of the latest join's session: its generation is now the
    /// worker's. Returns whether anything changed (the manifest is saved).
    pub fn confirm(&mut self) -> bool {
        match self.offered.take() {
            Some(g) => {
                self.confirmed = g;
                true
            }
            None => false,
        }
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
    /// The output directory the job writes its tablebases to (absolute; absent
    /// in manifests older than the field, filled in when such a job resumes).
    /// Checkpoints belong to the output they produce: a run with another
    /// `--output` brings the finished layers' files over, checked, first.
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Shards of each worker, by worker id.
    pub workers: BTreeMap<String, Vec<u32>>,
    /// Number for the next new worker id.
    pub next_worker: u32,
    /// Workers lost for good, each with the id of the worker that took its
    /// shards (`worker --replace`); they are refused if they come back.
    #[serde(default)]
    pub replaced: BTreeMap<String, String>,
    /// Each worker's fence, by worker id (absent in manifests older than the
    /// field: their workers present generation 0 and get one).
    #[serde(default)]
    pub fences: BTreeMap<String, Fence>,
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
            output: None,
            workers: BTreeMap::new(),
            next_worker: 1,
            replaced: BTreeMap::new(),
            fences: BTreeMap::new(),
            layers: questions.iter().map(|q| LayerRecord { question: q.clone(), ..Default::default() }).collect(),
        }
    }

    /// Loads the manifest at `path`, checking that it belongs to this plan.
    pub fn load(path: &Path, job: &str, plan_hash: &str, rank_order: u32) -> Result<Option<Manifest>, ManifestError> {
        let mut m: Option<Manifest> = read_checked_json(path)?;
        if let Some(m) = &mut m {
            // Whose checkpoints these are comes first: another job's manifest
            // also differs in everything else, and the user must hear that it
            // is another job, not another program.
            if m.plan_hash != plan_hash || m.job != job {
                return Err(ManifestError::OtherCheckpoints(format!(
                    "{}: these checkpoints belong to job {} with plan {}, but this plan is job {job} with plan \
                     {plan_hash}; give this run its own checkpoint directory (--checkpoints DIR or the plan's \
                     [output] checkpoints), or remove this one if that job is no longer wanted",
                    path.display(),
                    m.job,
                    m.plan_hash
                )));
            }
            if m.format_version != MANIFEST_FORMAT_VERSION {
                return Err(ManifestError::OtherCheckpoints(format!(
                    "{}: manifest format {} (this build reads {MANIFEST_FORMAT_VERSION})",
                    path.display(),
                    m.format_version
                )));
            }
            match m.rank_order {
                Some(r) if r != rank_order => {
                    return Err(ManifestError::OtherCheckpoints(format!(
                        "{}: these checkpoints were written with rank order {r}, this program uses {rank_order}; \
                         finish the job with the program that started it, or remove the checkpoints",
                        path.display()
                    )));
                }
                Some(_) => {}
                None => m.rank_order = Some(rank_order),
            }
        }
        Ok(m)
    }

    /// Makes `output` this job's output directory. Every finished layer's
    /// tablebase must be there and be the file the job wrote
    /// ([`TablebaseEntry::open_checked`]). A run given another `--output`
    /// than the one the checkpoints were written for brings the files over
    /// from the recorded directory (checked, copied atomically) and says so;
    /// a file that is missing everywhere, or a different file under the name,
    /// is an error that names it. Returns what was done, to be logged.
    pub fn claim_output(&mut self, output: &Path) -> Result<Vec<String>, ManifestError> {
        let here = std::fs::canonicalize(output)
            .map_err(|e| ManifestError::Io(format!("output directory {}: {e}", output.display())))?;
        let recorded = self.output.clone().filter(|old| *old != here);
        let rank_order = self.rank_order.unwrap_or_default();
        let mut notes = Vec::new();
        for layer in &self.layers {
            let Some(entry) = &layer.tablebase else { continue };
            let q = &layer.question;
            let target = here.join(&entry.file);
            if target.exists() {
                entry.open_checked(&here, q, &self.plan_hash, rank_order)?;
                continue;
            }
            let Some(old) = &recorded else {
                return Err(ManifestError::Missing(format!(
                    "tablebase {} of the finished layer {q} is missing; restore it (sha256 {}), or solve the plan \
                     again into a fresh checkpoint directory",
                    target.display(),
                    entry.sha256
                )));
            };
            entry.open_checked(old, q, &self.plan_hash, rank_order).map_err(|e| {
                ManifestError::Missing(format!(
                    "these checkpoints wrote their finished layers to {}, and its copy of layer {q} is unusable \
                     ({e}); run with --output {} or give this run its own --checkpoints DIR",
                    old.display(),
                    old.display()
                ))
            })?;
            copy_atomic(&old.join(&entry.file), &target)?;
            entry.open_checked(&here, q, &self.plan_hash, rank_order)?;
            notes.push(format!(
                "layer {q} was finished earlier by these checkpoints with its tablebase in {}; copied {} ({} bytes, \
                 sha256 checked) to {}",
                old.display(),
                entry.file,
                entry.bytes,
                here.display()
            ));
        }
        notes.extend(self.claim_depth_files(&here, recorded.as_deref())?);
        self.output = Some(here);
        Ok(notes)
    }

    /// [`Self::claim_output`] for the depth files: each is checked where it
    /// is, or brought over from the recorded directory. A depth file missing
    /// everywhere is let go with a note (it only shortens the explorer's
    /// depth answers; the values are whole without it); a different file
    /// under its name is an error.
    fn claim_depth_files(&mut self, here: &Path, recorded: Option<&Path>) -> Result<Vec<String>, ManifestError> {
        let mut notes = Vec::new();
        for layer in &mut self.layers {
            let Some(entry) = layer.depth.clone() else { continue };
            let q = layer.question.clone();
            if !here.join(&entry.file).exists() {
                match recorded.filter(|old| old.join(&entry.file).exists()) {
                    Some(old) => {
                        entry.open_checked_depth(old, &q, &self.plan_hash)?;
                        copy_atomic(&old.join(&entry.file), &here.join(&entry.file))?;
                        notes.push(format!("copied the depth file {} of layer {q} from {}", entry.file, old.display()));
                    }
                    None => {
                        notes.push(format!(
                            "the depth file {} of layer {q} is missing; the layer's values are whole, its depths \
                             are searched for",
                            entry.file
                        ));
                        layer.depth = None;
                        continue;
                    }
                }
            }
            entry.open_checked_depth(here, &q, &self.plan_hash)?;
        }
        Ok(notes)
    }

    /// What the game's summary needs of this job: per layer the rounds that
    /// decided something, the time, the positions without a move and the
    /// recorded tablebase file.
    pub fn solved(&self) -> SolvedJob {
        SolvedJob {
            job: self.job.clone(),
            plan_hash: self.plan_hash.clone(),
            program_commit: retro_build_info::BUILD_COMMIT.into(),
            layers: self
                .layers
                .iter()
                .map(|l| SolvedLayer {
                    summary: LayerSummary {
                        question: l.question.clone(),
                        rounds: l.deciding_rounds(),
                        seconds: l.seconds,
                        decided_per_round: l
                            .rounds
                            .iter()
                            .filter(|r| r.win + r.loss > 0)
                            .map(|r| r.win + r.loss)
                            .collect(),
                        won_per_round: l.rounds.iter().filter(|r| r.win + r.loss > 0).map(|r| r.win).collect(),
                        seeded: l.seeded,
                    },
                    no_move: l.init.map_or(0, |i| i.no_move),
                    tablebase: l.tablebase.clone(),
                    depth: l.depth.clone(),
                })
                .collect(),
        }
    }

    /// Writes the manifest atomically.
    pub fn save(&self, path: &Path) -> Result<(), ManifestError> {
        Ok(write_checked_json(path, self)?)
    }
}

/// Copies `from` to `to` through a temporary file, synced, then renamed: a
/// crash leaves either no file or the whole file at `to`.
fn copy_atomic(from: &Path, to: &Path) -> Result<(), ManifestError> {
    use retro_engine::durable::{fsync_parent_dir, tmp_path};
    let tmp = tmp_path(to);
    let err = |what: &str, e: std::io::Error| {
        ManifestError::Io(format!("copying {} to {}: {what}: {e}", from.display(), to.display()))
    };
    std::fs::copy(from, &tmp).map_err(|e| err("copy", e))?;
    std::fs::File::open(&tmp).and_then(|f| f.sync_all()).map_err(|e| err("sync", e))?;
    std::fs::rename(&tmp, to).map_err(|e| err("rename", e))?;
    fsync_parent_dir(to).map_err(|e| err("sync directory", e))
}

#[cfg(test)]
mod tests {
    use super::Fence;

    /// A worker restarted at any point of its join (before storing the new
    /// generation, after it, after pulling with it) is admitted again.
    #[test]
    fn a_restarted_worker_is_admitted_wherever_it_stopped() {
        let mut f = Fence::default();
        let g1 = f.admit(0).expect("new directory");
        assert_eq!(f.admit(0), Ok(g1 + 1), "stopped before storing g1: presents 0 again");
        let g2 = g1 + 1;
        let g3 = f.admit(g2).expect("stored g2, stopped before pulling");
        assert!(f.confirm());
        assert!(!f.confirm(), "a second pull of the session changes nothing");
        assert_eq!(f.admit(g3), Ok(g3 + 1), "pulled with g3, then restarted");
    }

    /// A frozen worker and a copy of its directory: whichever joins second
    /// with the old generation after the other pulled is refused, and so is
    /// the loser of a race between two joins.
    #[test]
    fn a_stale_copy_is_refused() {
        let mut f = Fence::default();
        let g = f.admit(0).expect("first join");
        assert!(f.confirm());
        // The copy joins with the directory's generation and pulls.
        let copy = f.admit(g).expect("the copy");
        assert!(f.confirm());
        // The original wakes up and joins with what its directory holds.
        assert_eq!(f.admit(g), Err(copy));
        // A race: both join before either pulls; the first one's offer is
        // replaced by the second's, so the first is refused when it comes back.
        let a = f.admit(copy).expect("a");
        let b = f.admit(copy).expect("b");
        assert_ne!(a, b);
        assert!(f.confirm());
        assert_eq!(f.admit(a), Err(b));
        assert!(f.admit(b).is_ok());
    }
}
