//! The coordinator side of a level job on remote workers.
//!
//! Steps go START, then EXPAND(n) / MERGE(n + 1) until a merged level is
//! empty, then UPLOAD and FINISH. A step moves on once every worker has
//! reported it. The coordinator relays parcels through files
//! (`CHECKPOINTS/relay/`, one per shard and sender, emptied once the level is
//! merged and written again for the next: on ext4, creating and removing a
//! file per level, shard and sender cost about half a millisecond each),
//! records the last merged level in `CHECKPOINTS/levels-cluster.json` and,
//! after UPLOAD, writes the same level files an embedded run writes, piece by
//! piece as they arrive; the ledger is then computed from those files by the
//! same code. It never holds more than a few pieces of a level in memory
//! (`retro_engine::levels::pieces`).

use super::levels::LevelsIdentity;
use crate::CoordinatorError;
use crate::plan::Plan;
use crate::service::{Answer, ClusterJob, Joinable, long_poll};
use crate::status::{JobDetail, JobStatus, LevelStatus, StatusSource};
use prost::Message;
use retro_engine::durable::{read_checked_json, write_checked_json};
use retro_engine::levels::pieces::PieceFiles;
use retro_engine::levels::store::{self, LevelMarker};
use retro_engine::levels::{LevelError, decode_shard, owned_shards, shard_owner};
use retro_games::peg::Pegs;
use retro_games::peg::symmetry::Group;
use retro_node::fault::Fault;
use retro_node::roster::{Heard, Roster};
use retro_proto::levels_server::{Levels, LevelsServer};
use retro_proto::{
    JobKind, JoinReply, JoinRequest, LevelAck, LevelCollect, LevelNext, LevelParcel, LevelPlace, LevelStep,
    LevelStepKind,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tonic::{Request, Response, Status, Streaming};

/// How long a `Next` call waits for the step to change before answering WAIT.
const LONG_POLL: Duration = Duration::from_secs(10);

/// Why the level job refused a call or stopped: what the job's logic
/// returns, turned into a gRPC status only at the service boundary.
#[derive(Debug, thiserror::Error)]
pub enum LevelJobError {
    /// A worker id the job does not have.
    #[error("unknown worker id {0:?}; join first")]
    UnknownWorker(String),
    /// A worker whose data directory belongs to another plan.
    #[error(
        "the worker's data directory belongs to plan {data}, this coordinator runs plan {plan}; use another --data \
         directory"
    )]
    OtherPlan {
        /// The plan hash of the worker's data.
        data: String,
        /// This job's plan hash.
        plan: String,
    },
    /// A worker id from another job.
    #[error("worker id {0:?} is not part of this job; start it with an empty --data directory")]
    NotOurs(String),
    /// A join beyond the job's number of workers.
    #[error("the job already has its {0} workers")]
    Full(u32),
    /// A parcel delivered while no level is expanded.
    #[error("not expanding now")]
    NotExpanding,
    /// A parcel for another level, shard or sender than the step allows.
    #[error("parcel for level {level} shard {shard} from {from} does not fit step EXPAND({expanding})")]
    Misfit {
        /// The parcel's level.
        level: u32,
        /// Its shard.
        shard: u32,
        /// The sender it names.
        from: u32,
        /// The level being expanded.
        expanding: u32,
    },
    /// A piece of a shard before its first.
    #[error("shard {shard}: piece {piece} came first")]
    PieceFirst {
        /// The shard.
        shard: u32,
        /// The piece that came.
        piece: u32,
    },
    /// A piece out of order.
    #[error("shard {shard}: piece {piece} arrived where piece {due} was due")]
    PieceOutOfOrder {
        /// The shard.
        shard: u32,
        /// The piece that came.
        piece: u32,
        /// The piece due.
        due: u32,
    },
    /// A collect for a level not being merged.
    #[error("level {0} is not being merged")]
    NotMerging(u32),
    /// A sender's parcels for a shard that never came whole.
    #[error("level {level} shard {shard}: worker {from}'s parcels were never delivered whole")]
    NotDelivered {
        /// The level merged.
        level: u32,
        /// The shard.
        shard: u32,
        /// The sender.
        from: u32,
    },
    /// An upload of a shard the worker does not own.
    #[error("worker {worker} does not own shard {shard}")]
    NotOwner {
        /// The worker's index.
        worker: u32,
        /// The shard.
        shard: u32,
    },
    /// A level shard the workers reported uploaded and did not.
    #[error("level {level} shard {shard} was never uploaded")]
    NotUploaded {
        /// The level.
        level: u32,
        /// The shard.
        shard: u32,
    },
    /// A parcel or upload whose contents are damaged.
    #[error("{0}")]
    BadParcel(LevelError),
    /// The level files could not be written.
    #[error("{0}")]
    Store(LevelError),
    /// The manifest could not be written.
    #[error("{0}")]
    Manifest(#[from] retro_engine::durable::DurableError),
    /// A relay or level file could not be written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl LevelJobError {
    /// An I/O error on `path`.
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LevelJobError + '_ {
        move |source| LevelJobError::Io { path: path.to_path_buf(), source }
    }
}

impl From<LevelJobError> for Status {
    fn from(e: LevelJobError) -> Status {
        use LevelJobError as E;
        let message = e.to_string();
        match e {
            E::UnknownWorker(_) => Status::permission_denied(message),
            // Not resource_exhausted for `Full`: workers retry that code, and this does not pass.
            E::OtherPlan { .. } | E::NotOurs(_) | E::Full(_) | E::NotExpanding | E::NotMerging(_) => {
                Status::failed_precondition(message)
            }
            E::Misfit { .. }
            | E::PieceFirst { .. }
            | E::PieceOutOfOrder { .. }
            | E::NotOwner { .. }
            | E::BadParcel(_) => Status::invalid_argument(message),
            E::NotDelivered { .. } | E::NotUploaded { .. } | E::Store(_) | E::Manifest(_) | E::Io { .. } => {
                Status::internal(message)
            }
        }
    }
}

/// The durable part of the coordinator's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Manifest {
    plan_hash: String,
    /// Worker ids by index.
    workers: Vec<String>,
    /// The last level every worker has merged (and written).
    committed: Option<u32>,
    /// The last level, once every level file is written from the uploads: a
    /// coordinator restarted after that goes straight to the ledger.
    #[serde(default)]
    written: Option<u32>,
    /// Keys in each merged level (level 0 first), for the status.
    #[serde(default)]
    positions: Vec<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Joining,
    Start,
    Expand(u32),
    Merge(u32),
    Upload(u32),
    Finish,
}

struct State {
    manifest: Manifest,
    phase: Phase,
    /// Workers that reported the current phase.
    done: BTreeSet<u32>,
    /// Workers that have spoken to this coordinator process (joined, or
    /// asked for a step after a coordinator restart), with their heartbeats.
    /// The job leaves `Joining` when all are here; a step report from a
    /// worker not yet here belongs to an earlier coordinator process and is
    /// ignored, since the parcels it delivered died with that process.
    roster: Roster,
    /// Keys each worker merged in the current MERGE.
    keys: BTreeMap<u32, u64>,
    /// Shards uploaded whole, written as level files: (level, shard) -> (keys, bytes).
    uploaded: BTreeMap<(u32, u32), (u64, u64)>,
    /// The last level with any key, once known.
    last_level: Option<u32>,
    /// The relay files delivered whole for the level being expanded or
    /// merged: (shard, sender index).
    relayed: BTreeSet<(u32, u32)>,
    /// When the level being computed began (this process's clock), and the
    /// seconds each level took here (0 for those an earlier process made),
    /// for the progress line.
    level_began: std::time::Instant,
    level_seconds: Vec<f64>,
    error: Option<String>,
}

/// The shared job.
pub struct LevelJobState {
    job: String,
    plan_hash: String,
    board: String,
    start: Pegs,
    shards: u32,
    workers: u32,
    /// The plan's memory bound for levels, passed on to the workers.
    memory_bytes: u64,
    manifest_path: PathBuf,
    levels_dir: PathBuf,
    /// Where delivered parcels wait for their owner's MERGE.
    relay_dir: PathBuf,
    state: Mutex<State>,
    changed: Notify,
    fault: Option<Fault>,
}

impl LevelJobState {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The index of worker `id`, counting the call as its heartbeat.
    fn heard(&self, s: &mut State, id: &str) -> Result<u32, LevelJobError> {
        let index = self.index_of(s, id)?;
        if s.roster.heard(id, None) == Heard::Back {
            tracing::info!("worker {id} is back");
        }
        Ok(index)
    }

    fn index_of(&self, s: &State, id: &str) -> Result<u32, LevelJobError> {
        s.manifest
            .workers
            .iter()
            .position(|w| w == id)
            .map(|i| i as u32)
            .ok_or_else(|| LevelJobError::UnknownWorker(id.to_string()))
    }

    fn step(&self, s: &State, index: u32) -> LevelStep {
        let (kind, level) = match s.phase {
            Phase::Joining => (LevelStepKind::LevelWait, 0),
            _ if s.done.contains(&index) => (LevelStepKind::LevelWait, 0),
            Phase::Start => (LevelStepKind::LevelStart, 0),
            Phase::Expand(n) => (LevelStepKind::LevelExpand, n),
            Phase::Merge(n) => (LevelStepKind::LevelMerge, n),
            Phase::Upload(n) => (LevelStepKind::LevelUpload, n),
            Phase::Finish => (LevelStepKind::LevelFinish, 0),
        };
        LevelStep { kind: kind as i32, level }
    }

    fn save(&self, s: &State) -> Result<(), LevelJobError> {
        Ok(write_checked_json(&self.manifest_path, &s.manifest)?)
    }

    /// Counts worker `id` as here (a new epoch in the roster); the job leaves
    /// `Joining` (or resumes after the last committed level) once every
    /// worker of the manifest is. Returns the epoch.
    fn arrive(&self, s: &mut State, id: &str) -> u64 {
        let epoch = s.roster.admit(id);
        if s.phase == Phase::Joining && s.roster.len() == self.workers as usize {
            s.phase = match s.manifest.committed {
                Some(n) => Phase::Expand(n),
                None => Phase::Start,
            };
            tracing::info!("all {} workers are here", self.workers);
            self.changed.notify_waiters();
        }
        epoch
    }

    /// Logs workers that fell silent; the job waits for them (their parts
    /// of the levels are on their disks).
    fn sweep_locked(&self, s: &mut State) {
        let sweep = s.roster.sweep();
        for id in sweep.newly_lost {
            tracing::warn!(
                "worker {id} has been silent for over {}s: presumed lost. The job waits for it: restart it with the \
                 same --data directory",
                s.roster.timeout().as_secs()
            );
        }
        for (id, silent) in sweep.still_lost {
            tracing::warn!("still waiting for worker {id}, silent for {} min", silent.as_secs() / 60);
        }
    }

    /// Moves on when every worker has reported the current phase.
    fn advance(&self, s: &mut State) -> Result<(), LevelJobError> {
        if s.done.len() < self.workers as usize {
            return Ok(());
        }
        s.done.clear();
        s.phase = match s.phase {
            Phase::Joining | Phase::Finish => s.phase,
            Phase::Start => {
                s.manifest.positions = vec![s.keys.values().sum()];
                s.keys.clear();
                s.manifest.committed = Some(0);
                self.save(s)?;
                Phase::Expand(0)
            }
            Phase::Expand(n) => Phase::Merge(n + 1),
            Phase::Merge(m) => {
                let total: u64 = s.keys.values().sum();
                s.keys.clear();
                // Every owner has merged its shards: the relayed parcels are
                // spent. Their files are emptied, kept for the next level.
                for (shard, from) in std::mem::take(&mut s.relayed) {
                    let path = self.relay_file(shard, from);
                    let empty = std::fs::OpenOptions::new().write(true).open(&path).and_then(|f| f.set_len(0));
                    empty.map_err(LevelJobError::io(&path))?;
                }
                if total == 0 {
                    s.last_level = Some(m - 1);
                    Phase::Upload(m - 1)
                } else {
                    s.manifest.positions.truncate(m as usize);
                    s.manifest.positions.push(total);
                    s.level_seconds.resize(m as usize, 0.0);
                    s.level_seconds.push(s.level_began.elapsed().as_secs_f64());
                    s.level_began = std::time::Instant::now();
                    let last = super::progress::last_level(self.start.count_ones());
                    tracing::info!(
                        "{} (positions up to symmetry)",
                        super::progress::level_line(&s.manifest.positions, &s.level_seconds, last, false)
                    );
                    s.manifest.committed = Some(m);
                    self.save(s)?;
                    Phase::Expand(m)
                }
            }
            Phase::Upload(last) => {
                self.write_levels(s, last)?;
                s.manifest.written = Some(last);
                self.save(s)?;
                store::remove_dir_if_present(&self.relay_dir).map_err(LevelJobError::Store)?;
                Phase::Finish
            }
        };
        self.changed.notify_waiters();
        Ok(())
    }

    /// Takes a worker's `Next` call as its heartbeat and its report of the
    /// step it finished, which may move the job on (writing the manifest,
    /// emptying relay files): run on a blocking thread ([`LevelService::next`]).
    fn report(&self, req: &LevelNext) -> Result<(), LevelJobError> {
        let mut s = self.lock();
        let index = self.index_of(&s, &req.worker_id)?;
        self.sweep_locked(&mut s);
        let done = LevelStepKind::try_from(req.done).unwrap_or(LevelStepKind::LevelStepUnspecified);
        // Only a report of the current phase counts; a repeated or stale one is ignored.
        let current = matches!((done, s.phase), (LevelStepKind::LevelStart, Phase::Start))
            || matches!((done, s.phase), (LevelStepKind::LevelExpand, Phase::Expand(n)) if n == req.level)
            || matches!((done, s.phase), (LevelStepKind::LevelMerge, Phase::Merge(n)) if n == req.level)
            || matches!((done, s.phase), (LevelStepKind::LevelUpload, Phase::Upload(n)) if n == req.level);
        if s.roster.get(&req.worker_id).is_none() {
            tracing::info!("worker {} is back (this coordinator restarted)", req.worker_id);
            self.arrive(&mut s, &req.worker_id);
            return Ok(());
        }
        self.heard(&mut s, &req.worker_id)?;
        if current {
            if matches!(done, LevelStepKind::LevelMerge | LevelStepKind::LevelStart) {
                s.keys.insert(index, req.keys);
            }
            s.done.insert(index);
            if let Err(e) = self.advance(&mut s) {
                s.error = Some(e.to_string());
                self.changed.notify_waiters();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Marks the uploaded level files complete, as an embedded run leaves them.
    fn write_levels(&self, s: &mut State, last: u32) -> Result<(), LevelJobError> {
        let identity = LevelsIdentity {
            board: self.board.clone(),
            start: self.start,
            shards: self.shards as usize,
            // The workers fold by the start's stabiliser (`Folded::of_start`).
            symmetries: Group::stabiliser(self.start).mask(),
        };
        // Every piece first: a worker that reports its uploads done without
        // them is named for what it left out, before anything is written.
        if let Some((level, k)) =
            (0..=last).flat_map(|l| (0..self.shards).map(move |k| (l, k))).find(|key| !s.uploaded.contains_key(key))
        {
            return Err(LevelJobError::NotUploaded { level, shard: k });
        }
        write_checked_json(&self.levels_dir.join("levels.json"), &identity)?;
        for level in 0..=last {
            let mut marker = LevelMarker::default();
            for k in 0..self.shards {
                let (keys, bytes) =
                    s.uploaded.remove(&(level, k)).ok_or(LevelJobError::NotUploaded { level, shard: k })?;
                marker.keys.push(keys);
                marker.bytes.push(bytes);
            }
            store::finish_level(&self.levels_dir, level as usize, &marker).map_err(LevelJobError::Store)?;
        }
        Ok(())
    }

    /// Writes one delivered parcel into its relay file (a blocking thread's
    /// work: [`LevelService::deliver`]); `open` holds this sender's files
    /// being written, by shard, with the piece due next.
    fn relay(
        &self,
        open: &mut HashMap<u32, (BufWriter<std::fs::File>, u32)>,
        p: LevelParcel,
    ) -> Result<(), LevelJobError> {
        let n = {
            let mut s = self.lock();
            let index = self.heard(&mut s, &p.worker_id)?;
            let Phase::Expand(n) = s.phase else {
                return Err(LevelJobError::NotExpanding);
            };
            if p.level != n + 1 || p.shard >= self.shards || p.from_index != index {
                return Err(LevelJobError::Misfit { level: p.level, shard: p.shard, from: p.from_index, expanding: n });
            }
            if p.piece == 0 {
                // Not whole again until its last piece is written.
                s.relayed.remove(&(p.shard, index));
            }
            n
        };
        let path = self.relay_file(p.shard, p.from_index);
        if p.piece == 0 {
            // Written from its start, and cut to what was written after
            // the last piece: a re-delivered shard replaces what came
            // before. Not truncated here: ext4 flushes a file truncated
            // to nothing and written again when it is closed
            // (`auto_da_alloc`), which made every level slower.
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(LevelJobError::io(&path))?;
            open.insert(p.shard, (BufWriter::new(file), 0));
        }
        let Some((out, next)) = open.get_mut(&p.shard) else {
            return Err(LevelJobError::PieceFirst { shard: p.shard, piece: p.piece });
        };
        if p.piece != *next {
            return Err(LevelJobError::PieceOutOfOrder { shard: p.shard, piece: p.piece, due: *next });
        }
        *next += 1;
        append_parcel(out, &p).map_err(LevelJobError::io(&path))?;
        if p.last {
            let (out, _) = open.remove(&p.shard).expect("just used");
            let file = out.into_inner().map_err(|e| LevelJobError::io(&path)(e.into_error()))?;
            let written = std::io::Seek::stream_position(&mut &file).map_err(LevelJobError::io(&path))?;
            file.set_len(written).map_err(LevelJobError::io(&path))?;
            self.lock().relayed.insert((p.shard, p.from_index));
        }
        Fault::check(&self.fault, "peg-mid-expand", 0, n);
        Ok(())
    }

    /// Checks one uploaded piece of a worker's level shard and writes it
    /// into the level file (a blocking thread's work: [`LevelService::upload`]).
    fn store_upload(&self, files: &mut PieceFiles<(u32, u32)>, p: LevelParcel) -> Result<(), LevelJobError> {
        let shard = decode_shard(p.entries, p.crc32, &p.zstd).map_err(LevelJobError::BadParcel)?;
        {
            let mut s = self.lock();
            let index = self.heard(&mut s, &p.worker_id)?;
            if shard_owner(p.shard, self.workers) != index || p.shard >= self.shards {
                return Err(LevelJobError::NotOwner { worker: index, shard: p.shard });
            }
        }
        let (level, k) = (p.level as usize, p.shard as usize);
        if p.piece == 0 {
            let dir = store::level_dir(&self.levels_dir, level);
            std::fs::create_dir_all(&dir).map_err(LevelJobError::io(&dir))?;
        }
        let written =
            files.accept((p.level, p.shard), p.piece, p.last, &shard, || store::shard_file(&self.levels_dir, level, k));
        let written = written.map_err(|e| match e {
            LevelError::BadParcel(_) | LevelError::Corrupt { .. } => LevelJobError::BadParcel(e),
            _ => LevelJobError::Store(e),
        })?;
        if let Some(written) = written {
            self.lock().uploaded.insert((p.level, p.shard), written);
        }
        Ok(())
    }

    /// The relay file of one sender's pieces of one shard (of the level
    /// being expanded or merged).
    fn relay_file(&self, shard: u32, from: u32) -> PathBuf {
        self.relay_dir.join(format!("shard-{shard:04}-from-{from:04}.parcels"))
    }
}

/// Appends a parcel to a relay file: its length (u32 LE), then the message.
fn append_parcel(out: &mut impl Write, p: &LevelParcel) -> std::io::Result<()> {
    let bytes = p.encode_to_vec();
    out.write_all(&(bytes.len() as u32).to_le_bytes())?;
    out.write_all(&bytes)
}

/// Reads the parcels of relay files in order, sending each to `tx`; a file
/// that cannot be read ends the stream with an error naming it.
fn read_relayed(files: Vec<PathBuf>, tx: tokio::sync::mpsc::Sender<Result<LevelParcel, Status>>) {
    let read = |path: &Path, tx: &tokio::sync::mpsc::Sender<Result<LevelParcel, Status>>| -> Result<bool, String> {
        let mut input = BufReader::new(std::fs::File::open(path).map_err(|e| e.to_string())?);
        loop {
            let mut len = [0u8; 4];
            match input.read_exact(&mut len) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(true),
                Err(e) => return Err(e.to_string()),
            }
            let len = u32::from_le_bytes(len) as usize;
            if len > retro_proto::MAX_MESSAGE_BYTES {
                return Err(format!("a parcel of {len} bytes, more than a message may hold (damaged file)"));
            }
            let mut bytes = vec![0u8; len];
            input.read_exact(&mut bytes).map_err(|e| e.to_string())?;
            let p = LevelParcel::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
            if tx.blocking_send(Ok(p)).is_err() {
                // The worker hung up; its MERGE is lost and will be asked again.
                return Ok(false);
            }
        }
    };
    for path in files {
        match read(&path, &tx) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                let _ = tx.blocking_send(Err(Status::internal(format!("{}: {e}", path.display()))));
                return;
            }
        }
    }
}

type ParcelStream = Pin<Box<dyn tokio_stream::Stream<Item = Result<LevelParcel, Status>> + Send>>;

impl StatusSource for LevelJobState {
    fn status(&self) -> JobStatus {
        let s = self.lock();
        let phase = match (&s.error, s.phase) {
            (Some(e), _) => format!("failed: {e}"),
            (None, Phase::Joining) => "joining".to_string(),
            (None, Phase::Start) => "start".to_string(),
            (None, Phase::Expand(n)) => format!("expand level {n}"),
            (None, Phase::Merge(n)) => format!("merge level {n}"),
            (None, Phase::Upload(n)) => format!("upload levels 0-{n}"),
            (None, Phase::Finish) => "done".to_string(),
        };
        let index = |id: &str| s.manifest.workers.iter().position(|w| w == id).map(|i| i as u32);
        let levels = s
            .manifest
            .positions
            .iter()
            .enumerate()
            .map(|(level, &positions)| LevelStatus { level: level as u32, positions })
            .collect();
        JobStatus::new(JobDetail::Levels { levels }, &self.job, &self.plan_hash, phase, self.workers as usize)
            .with_roster(&s.roster, |id| {
                let shards =
                    index(id).map(|i| owned_shards(i, self.workers, self.shards).collect()).unwrap_or_default();
                (shards, String::new())
            })
    }
}

impl crate::service::ServedJob for LevelJobState {
    fn over(&self) -> bool {
        let s = self.lock();
        s.phase == Phase::Finish || s.error.is_some()
    }

    fn changed(&self) -> &Notify {
        &self.changed
    }

    fn sweep(&self) {
        self.sweep_locked(&mut self.lock());
    }
}

impl Joinable for LevelJobState {
    fn plan_hash(&self) -> String {
        self.plan_hash.clone()
    }

    fn join(&self, req: JoinRequest) -> Result<JoinReply, Status> {
        if !req.data_plan_hash.is_empty() && req.data_plan_hash != self.plan_hash {
            return Err(LevelJobError::OtherPlan { data: req.data_plan_hash, plan: self.plan_hash.clone() }.into());
        }
        let mut s = self.lock();
        let id = if s.manifest.workers.contains(&req.worker_id) {
            req.worker_id
        } else if !req.worker_id.is_empty() {
            return Err(LevelJobError::NotOurs(req.worker_id).into());
        } else if s.manifest.workers.len() < self.workers as usize {
            let id = retro_node::roster::fresh_id("w", s.manifest.workers.len());
            s.manifest.workers.push(id.clone());
            self.save(&s)?;
            id
        } else {
            return Err(LevelJobError::Full(self.workers).into());
        };
        tracing::info!("worker {id} joined ({} of {})", s.manifest.workers.len(), self.workers);
        let index = self.index_of(&s, &id)?;
        let epoch = self.arrive(&mut s, &id);
        Ok(JoinReply {
            worker_id: id,
            epoch,
            job: self.job.clone(),
            plan_hash: self.plan_hash.clone(),
            kind: JobKind::Levels as i32,
            heartbeat_ms: s.roster.heartbeat_interval().as_millis() as u32,
            level: Some(LevelPlace {
                index,
                workers: self.workers,
                board: self.board.clone(),
                start: self.start,
                shards: self.shards,
                memory_bytes: self.memory_bytes,
            }),
            ..Default::default()
        })
    }
}

/// The gRPC face of the job.
pub struct LevelService(pub Arc<LevelJobState>);

#[tonic::async_trait]
impl Levels for LevelService {
    async fn next(&self, req: Request<LevelNext>) -> Result<Response<LevelStep>, Status> {
        let j = &self.0;
        let req = req.into_inner();
        // The report may move the job on, which writes its manifest and
        // relay files: off the runtime's threads.
        let report = {
            let (j, req) = (j.clone(), req.clone());
            move || j.report(&req)
        };
        crate::offload::blocking(report).await?;
        // A worker waiting here is alive: heard at every wake.
        let step = || {
            let mut s = j.lock();
            let step = j.heard(&mut s, &req.worker_id).map(|index| j.step(&s, index));
            std::future::ready(step.map(|step| match step.kind == LevelStepKind::LevelWait as i32 {
                true => Answer::Later(step),
                false => Answer::Now(step),
            }))
        };
        Ok(Response::new(long_poll(&j.changed, LONG_POLL, Duration::from_secs(1), step).await?))
    }

    async fn deliver(&self, req: Request<Streaming<LevelParcel>>) -> Result<Response<LevelAck>, Status> {
        // This sender's relay files being written: shard -> (file, next piece).
        let mut open = HashMap::new();
        let job = self.0.clone();
        let count = crate::offload::drain(req.into_inner(), move |p| Ok(job.relay(&mut open, p)?)).await?;
        Ok(Response::new(LevelAck { parcels: count }))
    }

    type CollectStream = ParcelStream;

    async fn collect(&self, req: Request<LevelCollect>) -> Result<Response<ParcelStream>, Status> {
        let req = req.into_inner();
        let files = {
            let mut s = self.0.lock();
            let index = self.0.heard(&mut s, &req.worker_id)?;
            if s.phase != Phase::Merge(req.level) {
                return Err(LevelJobError::NotMerging(req.level).into());
            }
            let mut files = Vec::new();
            for shard in owned_shards(index, self.0.workers, self.0.shards) {
                for from in 0..self.0.workers {
                    let path = self.0.relay_file(shard, from);
                    if !s.relayed.contains(&(shard, from)) {
                        return Err(LevelJobError::NotDelivered { level: req.level, shard, from }.into());
                    }
                    files.push(path);
                }
            }
            files
        };
        // Read on a blocking thread, a piece or two ahead of the network.
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        tokio::task::spawn_blocking(move || read_relayed(files, tx));
        Ok(Response::new(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))))
    }

    async fn upload(&self, req: Request<Streaming<LevelParcel>>) -> Result<Response<LevelAck>, Status> {
        // Level files being written from this worker's pieces, by (level, shard).
        let mut files = PieceFiles::new(true);
        let job = self.0.clone();
        let count = crate::offload::drain(req.into_inner(), move |p| Ok(job.store_upload(&mut files, p)?)).await?;
        Ok(Response::new(LevelAck { parcels: count }))
    }
}

/// Runs the level job of `plan` from `start` on `job.workers` remote
/// workers: serves the Levels service until the workers have uploaded every
/// level into `job.checkpoints/levels`, then returns (the caller computes the
/// ledger).
/// Runs on `runtime` and returns when done: the caller is not async (see
/// [`crate::job::run_on`] for why).
pub fn run(
    runtime: &tokio::runtime::Runtime,
    plan: &Plan,
    start: Pegs,
    job: ClusterJob,
) -> Result<(), CoordinatorError> {
    let ClusterJob { workers, checkpoints, serve } = job;
    let Some(state) = LevelJobState::open(plan, start, workers, &checkpoints)? else {
        return Ok(());
    };
    let svc = crate::service::grpc_service!(LevelsServer, LevelService(state.clone()), serve.token.clone());
    let routes = crate::service::cluster_routes(state.clone(), serve.token.clone()).add_service(svc);
    // Only the serving needs the runtime.
    runtime.block_on(crate::service::run_served(state.clone(), routes, serve, &checkpoints))?;
    let s = state.lock();
    match &s.error {
        Some(e) => Err(CoordinatorError::Failed(e.clone())),
        None => Ok(()),
    }
}

impl LevelJobState {
    /// The level job of `plan` from `start` for `workers` workers, resumed
    /// from what `checkpoints` holds; `None` when an earlier run already
    /// wrote every level (the ledger is all that is left).
    fn open(
        plan: &Plan,
        start: Pegs,
        workers: usize,
        checkpoints: &Path,
    ) -> Result<Option<Arc<LevelJobState>>, CoordinatorError> {
        std::fs::create_dir_all(checkpoints)
            .map_err(|source| CoordinatorError::File { path: checkpoints.to_path_buf(), source })?;
        let manifest_path = checkpoints.join("levels-cluster.json");
        let mut manifest: Manifest = read_checked_json(&manifest_path)?.unwrap_or_default();
        if manifest.plan_hash.is_empty() {
            manifest.plan_hash = plan.hash();
        } else if manifest.plan_hash != plan.hash() {
            return Err(CoordinatorError::ForeignCheckpoints {
                dir: checkpoints.to_path_buf(),
                other: "another plan".into(),
            });
        }
        if manifest.workers.len() > workers {
            return Err(CoordinatorError::WorkerCount { path: manifest_path, started: manifest.workers.len() });
        }
        if let Some(last) = manifest.written {
            tracing::info!("every level (0-{last}) was written by an earlier run; computing the ledger");
            return Ok(None);
        }
        if let Some(n) = manifest.committed {
            tracing::info!("resuming after level {n}; waiting for the workers to come back");
        }
        // Parcels relayed by an earlier process are delivered again from its last committed level.
        let relay = checkpoints.join("relay");
        store::remove_dir_if_present(&relay)?;
        std::fs::create_dir_all(&relay)
            .map_err(|e| CoordinatorError::Io(format!("cannot create {}: {e}", relay.display())))?;
        Ok(Some(Arc::new(LevelJobState {
            job: plan.job.name.clone(),
            plan_hash: plan.hash(),
            board: super::plan_start(plan)?.0.kind().name().into(),
            start,
            shards: plan.shards.count,
            workers: workers as u32,
            memory_bytes: plan.memory_bytes(),
            manifest_path,
            levels_dir: checkpoints.join("levels"),
            relay_dir: relay,
            state: Mutex::new(State {
                manifest,
                phase: Phase::Joining,
                done: BTreeSet::new(),
                roster: Roster::new(Duration::from_secs(plan.cluster.heartbeat_timeout_secs)),
                keys: BTreeMap::new(),
                uploaded: BTreeMap::new(),
                last_level: None,
                relayed: BTreeSet::new(),
                level_began: std::time::Instant::now(),
                level_seconds: Vec::new(),
                error: None,
            }),
            changed: Notify::new(),
            fault: Fault::from_env(),
        })))
    }
}

#[cfg(test)]
mod harness;
