//! The coordinator's state machine. Every state change goes through here:
//! joins, pulls (which carry reports and double as heartbeats) and
//! uploads. It knows shards, rounds, owners and statistics; what a round does
//! belongs to the kernel on the workers.
//!
//! Phases of a layer: INIT (round 0), then GENERATE r / APPLY r until a round
//! decides nothing, then EXPORT (workers upload tablebase blocks; the
//! coordinator writes the file). A round is committed when every worker has
//! reported its APPLY; the manifest is then rewritten atomically. Tasks are
//! idempotent on the workers, so after any restart the coordinator simply
//! resumes at the first uncommitted step and hands the tasks out again.

use crate::CoordinatorError;
use crate::manifest::{Fence, Manifest, RoundLog, TablebaseEntry};
use crate::merge;
use crate::service::Answer;
use retro_engine::layout::Layout;
use retro_node::fault::Fault;
use retro_node::roster::{Heard, Roster};
use retro_node::spec::JobSpec;
use retro_proto::{
    BlockUpload, JobKind, JoinReply, JoinRequest, PeerInfo, PullReply, PullRequest, RoundReport, SourceCount, Task,
    TaskKind,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, watch};

/// How long a pull with nothing to do is held before answering WAIT.
pub const LONG_POLL: Duration = Duration::from_millis(1000);
/// Pause before a task that failed for a retryable reason is handed out again.
pub const RETRY_PAUSE: Duration = Duration::from_millis(500);
/// Consecutive failed attempts at one step before the job is aborted.
pub const MAX_STEP_FAILURES: u32 = 5;

/// Where the job stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the expected workers to join.
    Joining,
    /// Init pass of a layer.
    Init(u32),
    /// Generate step of (layer, round).
    Generate(u32, u32),
    /// Apply step of (layer, round).
    Apply(u32, u32),
    /// Tablebase export of a layer: the workers upload their blocks.
    Export(u32),
    /// Every block of the layer is staged; the tablebase is being written on
    /// a thread of its own, the scheduler's lock free meanwhile (workers are
    /// told to wait).
    Merge(u32),
    /// Every layer has its tablebase; the analysis runs.
    Finish,
    /// The job is complete.
    Done,
    /// The job cannot go on.
    Failed(String),
}

/// Why a join was refused (the protocol version and `--plan-hash` are
/// checked before, by [`crate::service::check_join`], for every kind of job).
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// The worker's data directory belongs to another plan or job.
    #[error("{0}")]
    WrongJob(String),
    /// All expected workers have joined.
    #[error(
        "the job already has its {0} workers; a replacement reuses a lost worker's --data directory, or starts \
         empty with --replace <lost worker id>"
    )]
    Full(usize),
    /// A replacement that cannot take the place it asks for, or a worker
    /// that was replaced.
    #[error("{0}")]
    Replace(String),
    /// A worker whose data directory is older than the one another process
    /// now runs as that worker (a copy, or an old backup).
    #[error(
        "worker {id}: this data directory is at generation {presented}, but job {job} has since given worker {id} \
         generation {newest}, to another process (started on a copy of this directory, or this directory was \
         restored from an older copy); two processes cannot run as one worker, so this one is refused and the \
         job goes on with the other. Stop this process; if the other one is gone for good, start a worker on \
         its directory, or one with an empty --data and --replace {id}"
    )]
    Stale {
        /// The worker id.
        id: String,
        /// The job.
        job: String,
        /// The generation the refused join presented.
        presented: u64,
        /// The newest generation given to the worker.
        newest: u64,
    },
}

/// What the retrograde job keeps per worker beside its [`Roster`] entry.
struct Slot {
    address: String,
    /// No new task before this instant (after a retryable failure).
    retry_after: Instant,
    /// Updates exchanged with other workers since this process started.
    traffic: crate::status::Traffic,
    /// The same for its last GENERATE and APPLY.
    last_traffic: crate::status::Traffic,
}

struct Assignment {
    task_id: u64,
    done: bool,
}

struct State {
    phase: Phase,
    manifest: Manifest,
    /// Who joined, epochs, heartbeats, lost workers.
    roster: Roster,
    slots: BTreeMap<String, Slot>,
    assignments: BTreeMap<String, Assignment>,
    reports: BTreeMap<String, RoundReport>,
    generate_reports: BTreeMap<String, RoundReport>,
    next_task: u64,
    failures: u32,
    step_started: Instant,
    layer_started: Instant,
    done_sent: BTreeSet<String>,
    /// When the manifest last recorded a durable round.
    last_checkpoint: Instant,
    /// The current APPLY step makes its round durable.
    checkpoint_now: bool,
    /// Seconds the workers spent on durability since the last checkpoint
    /// (undo-log copies; see [`DURABILITY_SPACING`]).
    epoch_durability: f64,
    /// The same for the last whole span between two checkpoints, its flush
    /// included: what the next checkpoint is expected to cost.
    checkpoint_cost: f64,
    /// A stop was asked for (SIGTERM, SIGINT): the next round is made
    /// durable and the job stops after it ([`Scheduler::request_stop`]).
    stop_requested: bool,
    /// The job stopped at a checkpoint on request (its phase is `Failed`
    /// with [`STOPPED`]).
    stopped: bool,
    /// Rounds were committed in memory only since the manifest was saved
    /// (embedded runs with spaced checkpoints).
    unsaved_rounds: bool,
    /// The merge of [`Phase::Merge`], running.
    merging: Option<std::thread::JoinHandle<Result<(TablebaseEntry, TablebaseEntry), CoordinatorError>>>,
    /// Counts the changes to `manifest` that must reach the disk before
    /// anyone hears of them ([`State::must_save`]); `durable` is the count
    /// the manifest file holds. While they differ no task goes out and the
    /// phase is not published: [`Scheduler::settle`] writes the file outside
    /// the lock, then lets them go.
    version: u64,
    /// The `version` known to be on disk.
    durable: u64,
    /// Directories to remove once the manifest that no longer needs them is
    /// on disk (the staging of a written or restarted layer).
    remove_when_saved: Vec<PathBuf>,
    /// The checkpointed round (layer, round) whose manifest `version` (the
    /// first number) is not on disk yet: once it is, `settle` says so if the
    /// job stops there, or checks the `after-commit` fault point.
    checkpointed: Option<(u64, u32, u32)>,
    /// Why a manifest write failed: nothing more is written, and every
    /// caller still waiting for its change to reach the disk hears it.
    save_failed: Option<String>,
}

impl State {
    /// The manifest changed in a way a restarted coordinator must see: it is
    /// written before the change is published or any task goes out.
    fn must_save(&mut self) {
        self.version += 1;
    }

    /// Every change to the manifest is on disk.
    fn saved(&self) -> bool {
        self.version == self.durable
    }
}

/// The phase message of a job stopped on request at a checkpoint.
pub const STOPPED: &str = retro_node::STOPPED_AT_CHECKPOINT;

/// An embedded run's checkpoints are at least this many times their own cost
/// apart (the undo-log copies of the chunks the rounds after a checkpoint
/// touch, and its flush), so that durability takes at most about 5 % of the
/// run whatever `--checkpoint-secs` says: at stage 2 a heavy round touches
/// the whole 14.8 GB state, and a checkpoint every five minutes cost about
/// 50 s each time (docs/benchmarks/log.md, 2026-12-04).
pub const DURABILITY_SPACING: f64 = 20.0;

/// Whether a round `since` after the last checkpoint should be made durable,
/// with `every` the least interval asked for and `cost` the seconds the last
/// checkpoint cost (see [`DURABILITY_SPACING`]).
pub fn checkpoint_due(since: Duration, every: Duration, cost: f64) -> bool {
    // A cost that is not a plain number of seconds (it comes from a report)
    // counts as nothing: checkpoints fall back to `every`, never stop.
    let spacing = Duration::try_from_secs_f64(DURABILITY_SPACING * cost).unwrap_or(Duration::ZERO);
    since >= every.max(spacing)
}

/// The coordinator's scheduler, shared by the gRPC service and the in-process link.
pub struct Scheduler {
    /// The job.
    pub spec: JobSpec,
    /// Shard layout.
    pub layout: Layout,
    /// Workers the job waits for.
    pub expected_workers: usize,
    /// This process's epoch (changes at every start).
    pub coordinator_epoch: u64,
    /// Heartbeat timeout.
    pub heartbeat_timeout: Duration,
    /// Manifest file.
    pub manifest_path: PathBuf,
    /// Staging directory for uploaded blocks.
    pub staging: PathBuf,
    /// Output directory for tablebases.
    pub output: PathBuf,
    /// Fault injection.
    pub fault: Option<Fault>,
    /// How often a round is made durable; `None`: every round. Between
    /// checkpoints rounds commit in memory and a crash replays them, which
    /// is only safe when every worker dies with the coordinator (embedded).
    /// A layer's init is then not durable either: the manifest records it
    /// at the layer's first checkpoint.
    pub checkpoint_every: Option<Duration>,
    /// The order the layers run in ([`layer_order`]).
    layer_order: Vec<usize>,
    state: Mutex<State>,
    /// Serialises writes of the manifest file and holds the `version` it has,
    /// so that a writer that lost the race never puts an older one back. Never
    /// held together with `state`.
    manifest_file: Mutex<u64>,
    /// Wakes the pulls held by [`Scheduler::pull`]; shared with the merge thread.
    changed: Arc<Notify>,
    phase_tx: watch::Sender<Phase>,
}

impl Scheduler {
    /// A scheduler resuming from `manifest`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        spec: JobSpec,
        layout: Layout,
        manifest: Manifest,
        expected_workers: usize,
        heartbeat_timeout: Duration,
        manifest_path: PathBuf,
        staging: PathBuf,
        output: PathBuf,
    ) -> Scheduler {
        let coordinator_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            .max(1);
        let now = Instant::now();
        let mut st = State {
            phase: Phase::Joining,
            manifest,
            roster: Roster::new(heartbeat_timeout),
            slots: BTreeMap::new(),
            assignments: BTreeMap::new(),
            reports: BTreeMap::new(),
            generate_reports: BTreeMap::new(),
            next_task: 1,
            failures: 0,
            step_started: now,
            layer_started: now,
            done_sent: BTreeSet::new(),
            last_checkpoint: now,
            checkpoint_now: true,
            epoch_durability: 0.0,
            checkpoint_cost: 0.0,
            stop_requested: false,
            stopped: false,
            unsaved_rounds: false,
            merging: None,
            version: 0,
            durable: 0,
            remove_when_saved: Vec::new(),
            checkpointed: None,
            save_failed: None,
        };
        let questions: Vec<String> = st.manifest.layers.iter().map(|r| r.question.clone()).collect();
        if st.manifest.workers.len() >= expected_workers {
            st.phase = resume_phase(&st.manifest, &layer_order(&questions, false));
        }
        let (phase_tx, _) = watch::channel(st.phase.clone());
        Scheduler {
            spec,
            layout,
            expected_workers,
            coordinator_epoch,
            heartbeat_timeout,
            manifest_path,
            staging,
            output,
            fault: Fault::from_env(),
            checkpoint_every: None,
            layer_order: layer_order(&questions, false),
            state: Mutex::new(st),
            manifest_file: Mutex::new(0),
            changed: Arc::new(Notify::new()),
            phase_tx,
        }
    }

    /// Runs solo(A) after the two enable layers, so that an embedded worker
    /// can start it from the LOSS positions they prove (`--seed-solo`; see
    /// [`layer_order`]). Call before the job starts.
    pub fn seed_solo(&mut self) {
        let st = self.state.get_mut().expect("state lock");
        let questions: Vec<String> = st.manifest.layers.iter().map(|r| r.question.clone()).collect();
        self.layer_order = layer_order(&questions, true);
        if st.phase != Phase::Joining {
            st.phase = resume_phase(&st.manifest, &self.layer_order);
            self.phase_tx.send_replace(st.phase.clone());
        }
    }

    /// Watches the phase.
    pub fn phase(&self) -> watch::Receiver<Phase> {
        self.phase_tx.subscribe()
    }

    /// The job's progress for `/status`.
    pub fn status(&self) -> crate::status::JobStatus {
        use crate::status::{JobDetail, JobStatus, LayerStatus};
        let st = self.state.lock().expect("state lock");
        let m = &st.manifest;
        let phase = match &st.phase {
            Phase::Joining => "joining".to_string(),
            Phase::Init(l) => format!("init layer {l}"),
            Phase::Generate(l, r) => format!("generate layer {l} round {r}"),
            Phase::Apply(l, r) => format!("apply layer {l} round {r}"),
            Phase::Export(l) => format!("export layer {l}"),
            Phase::Merge(l) => format!("merge layer {l}"),
            Phase::Finish => "analysis".to_string(),
            Phase::Done => "done".to_string(),
            Phase::Failed(why) => format!("failed: {why}"),
        };
        let layers: Vec<LayerStatus> = m
            .layers
            .iter()
            .map(|l| LayerStatus {
                question: l.question.clone(),
                committed_round: l.committed_round,
                solved: l.solved,
                decided: l.decided(),
                seconds: l.seconds,
                last_round_rate: l
                    .rounds
                    .last()
                    .filter(|r| r.seconds > 0.0)
                    .map(|r| (r.win + r.loss) as f64 / r.seconds),
            })
            .collect();
        let layers_left = layers.iter().filter(|l| !l.solved).count();
        let detail = JobDetail::Retrograde { positions: self.layout.positions, layers, layers_left };
        let mut status =
            JobStatus::new(detail, &m.job, &m.plan_hash, phase, self.expected_workers).with_roster(&st.roster, |id| {
                let address = st.slots.get(id).map(|s| s.address.clone()).unwrap_or_default();
                (m.workers.get(id).cloned().unwrap_or_default(), address)
            });
        for w in &mut status.workers {
            if let Some(slot) = st.slots.get(&w.member.id) {
                (w.traffic, w.last_round_traffic) = (slot.traffic, slot.last_traffic);
            }
        }
        status.round_seconds =
            m.layers.iter().flat_map(|l| l.rounds.iter().filter(|r| r.round > 0).map(|r| r.seconds)).collect();
        status.estimated_seconds_left = crate::progress::seconds_left(&m.layers)
            .or_else(|| crate::progress::ceiling_seconds_left(&m.layers, self.layout.positions));
        status
    }

    /// A copy of the manifest.
    pub fn manifest(&self) -> Manifest {
        self.state.lock().expect("state lock").manifest.clone()
    }

    /// Asks the job to stop at its next safe point: the end of the next
    /// round, made durable whatever `checkpoint_every` says, or of a
    /// tablebase's export. A job still waiting for its workers stops now.
    /// Returns what the job is doing, for the log.
    pub fn request_stop(&self) -> String {
        let mut st = self.state.lock().expect("state lock");
        st.stop_requested = true;
        // Nothing handed out and nothing only in memory: the manifest on
        // disk is where the job stands (waiting for its workers, say, or for
        // a lost one), so this is a safe point already.
        let idle = matches!(st.phase, Phase::Joining | Phase::Init(_) | Phase::Generate(..) | Phase::Export(_))
            && st.assignments.is_empty()
            && !st.unsaved_rounds
            && st.saved();
        if idle {
            self.stop_here(&mut st);
        }
        let phase = format!("{:?}", st.phase);
        self.publish(&st);
        phase
    }

    /// True once the job stopped on request at a checkpoint.
    pub fn stopped(&self) -> bool {
        self.state.lock().expect("state lock").stopped
    }

    /// Stops the job here (a safe point: everything up to now is durable).
    fn stop_here(&self, st: &mut State) {
        st.stopped = true;
        st.phase = Phase::Failed(STOPPED.to_string());
        st.assignments.clear();
        st.reports.clear();
    }

    /// Publishes the phase; wakes held pulls only when it changed (new tasks exist).
    fn publish(&self, st: &State) {
        let changed = self.phase_tx.send_if_modified(|p| {
            if *p != st.phase {
                *p = st.phase.clone();
                true
            } else {
                false
            }
        });
        if changed {
            self.changed.notify_waiters();
        }
    }

    /// Admits a worker (first time, or again after a restart of either side).
    pub fn join(&self, req: JoinRequest) -> Result<JoinReply, JoinError> {
        if !req.data_plan_hash.is_empty() && req.data_plan_hash != self.spec.plan_hash {
            return Err(JoinError::WrongJob(format!(
                "worker's data directory belongs to plan {}, this coordinator runs job {} with plan {}; use another \
                 --data",
                req.data_plan_hash, self.spec.name, self.spec.plan_hash
            )));
        }
        if !req.job.is_empty() && req.job != self.spec.name {
            return Err(JoinError::WrongJob(format!(
                "worker's data directory belongs to job {}, this coordinator runs job {}",
                req.job, self.spec.name
            )));
        }
        let mut st = self.state.lock().expect("state lock");
        let version = st.version;
        if let Some(by) = st.manifest.replaced.get(&req.worker_id) {
            return Err(JoinError::Replace(format!(
                "worker {} was lost and replaced by worker {by}; its data directory is no longer part of job {}: \
                 delete it",
                req.worker_id, self.spec.name
            )));
        }
        // A worker that stopped between its first join and storing its id
        // is known by its data directory's name.
        let by_data_id = (req.worker_id.is_empty() && !req.data_id.is_empty())
            .then(|| st.manifest.fences.iter().find(|(_, f)| f.data_id == req.data_id).map(|(id, _)| id.clone()))
            .flatten()
            .filter(|id| st.manifest.workers.contains_key(id));
        let known = !req.worker_id.is_empty() && st.manifest.workers.contains_key(&req.worker_id);
        let id = if let Some(id) = by_data_id {
            tracing::info!("worker {id} joined again before it had stored its id; known by its data directory");
            id
        } else if known {
            req.worker_id.clone()
        } else if !req.replaces.is_empty() {
            self.replace(&mut st, &req.replaces)?
        } else if st.manifest.workers.len() < self.expected_workers {
            let id = if req.worker_id.is_empty() {
                let n = st.manifest.next_worker;
                st.manifest.next_worker += 1;
                format!("w{n}")
            } else {
                req.worker_id.clone()
            };
            st.manifest.workers.insert(id.clone(), Vec::new());
            id
        } else {
            return Err(JoinError::Full(self.expected_workers));
        };
        let fence = st.manifest.fences.entry(id.clone()).or_insert_with(|| Fence {
            data_id: req.data_id.clone(),
            // A worker the manifest has not recorded yet (the job still
            // gathering its workers, the coordinator restarted): whatever
            // its directory holds is its generation.
            confirmed: req.generation,
            offered: None,
        });
        let generation = fence.admit(req.generation).map_err(|newest| JoinError::Stale {
            id: id.clone(),
            job: self.spec.name.clone(),
            presented: req.generation,
            newest,
        })?;
        if fence.data_id.is_empty() {
            fence.data_id = req.data_id.clone();
        }
        // The generation given must survive this process before the worker
        // stores it: a coordinator started again must admit it (the reply
        // waits for `settle` below).
        if st.phase != Phase::Joining {
            st.must_save();
        }
        let epoch = st.roster.admit(&id);
        // A worker that joins again keeps its traffic counts.
        let (traffic, last_traffic) = st.slots.get(&id).map(|s| (s.traffic, s.last_traffic)).unwrap_or_default();
        st.slots.insert(
            id.clone(),
            Slot { address: req.peer_address.clone(), retry_after: Instant::now(), traffic, last_traffic },
        );
        // A restarted worker gets its unfinished task again.
        if st.assignments.get(&id).is_some_and(|a| !a.done) {
            st.assignments.remove(&id);
        }
        tracing::info!(
            "worker {id} joined (epoch {epoch}, generation {generation}, peer address {:?}, {} cores, {:.2} GB \
             memory available, {:.2} GB disk for its data)",
            req.peer_address,
            req.cores,
            req.memory_bytes as f64 / 1e9,
            req.disk_bytes as f64 / 1e9
        );
        if st.phase == Phase::Joining && st.manifest.workers.len() == self.expected_workers {
            self.assign_shards(&mut st);
            st.must_save();
            st.phase = resume_phase(&st.manifest, &self.layer_order);
            st.step_started = Instant::now();
            st.layer_started = Instant::now();
        }
        let (st, saved) = self.settle(st, version);
        self.publish(&st);
        if let Err(e) = saved {
            return Err(JoinError::Replace(format!("cannot record the join of worker {id}: {e}")));
        }
        let plan_json = serde_json::to_string(&self.spec).expect("spec serializes");
        Ok(JoinReply {
            worker_id: id,
            epoch,
            job: self.spec.name.clone(),
            plan_hash: self.spec.plan_hash.clone(),
            plan_json,
            coordinator_epoch: self.coordinator_epoch,
            kind: JobKind::Retrograde as i32,
            heartbeat_ms: retro_node::HEARTBEAT_INTERVAL.as_millis() as u32,
            generation,
            ..Default::default()
        })
    }

    /// Gives the shards of `lost` to a new worker id and starts the layer in
    /// progress again from its init pass (a new attempt) on every worker:
    /// the lost worker's state of the layer is gone, and every round of it
    /// depended on records that worker sent. Rounds are deterministic, so the
    /// new attempt reproduces the lost one exactly; finished layers are in
    /// the tablebases and need nothing.
    fn replace(&self, st: &mut State, lost: &str) -> Result<String, JoinError> {
        let Some(shards) = st.manifest.workers.get(lost).cloned() else {
            let known: Vec<&String> = st.manifest.workers.keys().collect();
            return Err(JoinError::Replace(format!(
                "--replace {lost}: job {} has no worker {lost} (its workers: {known:?})",
                self.spec.name
            )));
        };
        if let Some(member) = st.roster.get(lost)
            && !member.lost
        {
            return Err(JoinError::Replace(format!(
                "--replace {lost}: worker {lost} is alive (heard from {:.0}s ago); only a worker silent for longer \
                 than the heartbeat timeout ({}s) can be replaced",
                member.last_seen.elapsed().as_secs_f64(),
                self.heartbeat_timeout.as_secs()
            )));
        }
        let id = format!("w{}", st.manifest.next_worker);
        st.manifest.next_worker += 1;
        st.manifest.workers.remove(lost);
        st.manifest.workers.insert(id.clone(), shards.clone());
        st.manifest.replaced.insert(lost.to_string(), id.clone());
        st.manifest.fences.remove(lost);
        st.slots.remove(lost);
        st.roster.remove(lost);
        st.assignments.remove(lost);
        let restarted = self.restart_layer_in_progress(st);
        // On disk before the new worker hears its id (`join` settles).
        st.must_save();
        match restarted {
            Some((question, attempt, rounds)) => tracing::warn!(
                "worker {id} replaces worker {lost} (lost for good) and takes its shards {shards:?}; layer {question} \
                 starts again from its init pass on every worker (attempt {attempt}; {rounds} committed rounds to \
                 redo, and the new worker computes the move counts of its shards)"
            ),
            None => tracing::warn!(
                "worker {id} replaces worker {lost} (lost for good) and takes its shards {shards:?}; no layer was in \
                 progress"
            ),
        }
        Ok(id)
    }

    /// Resets the first unfinished layer to "not initialised" with a new
    /// attempt number, and the job to its init step if it was in that layer.
    /// Returns the layer's question, new attempt and the rounds it had.
    fn restart_layer_in_progress(&self, st: &mut State) -> Option<(String, u32, u32)> {
        let l = current_layer(&st.manifest, &self.layer_order)?;
        let rec = &mut st.manifest.layers[l];
        let rounds = rec.committed_round.unwrap_or(0);
        let had_state = rec.committed_round.is_some() || matches!(st.phase, Phase::Init(x) if x as usize == l);
        if !had_state {
            return None;
        }
        rec.attempt += 1;
        rec.committed_round = None;
        rec.solved = false;
        rec.init = None;
        rec.seeded = false;
        rec.rounds.clear();
        let (question, attempt) = (rec.question.clone(), rec.attempt);
        st.remove_when_saved.push(merge::staging_dir(self, l as u32));
        if st.phase != Phase::Joining {
            self.next_step(st, Phase::Init(l as u32));
            st.generate_reports.clear();
        }
        Some((question, attempt, rounds))
    }

    fn assign_shards(&self, st: &mut State) {
        if st.manifest.workers.values().any(|s| !s.is_empty()) {
            return;
        }
        let ids: Vec<String> = st.manifest.workers.keys().cloned().collect();
        let n = ids.len() as u64;
        let shards = self.layout.shards as u64;
        if shards < n {
            tracing::warn!("the plan has {shards} shards for {n} workers: some workers will idle");
        }
        // Round robin, not contiguous ranges: a round's frontier, and with it
        // the predecessor work, gathers in a few parts of the rank space, and
        // which parts moves from round to round; interleaved shards give every
        // worker a share of each round instead of leaving some idle while one
        // works (measured on cc2 7 x 7 x 3, two workers: docs/benchmarks/log.md, 2026-12-01).
        for s in 0..shards {
            let owner = &ids[(s % n) as usize];
            st.manifest.workers.get_mut(owner).expect("listed").push(s as u32);
        }
        for (id, shards) in &st.manifest.workers {
            tracing::info!("worker {id} owns shards {shards:?}");
        }
    }

    /// Handles one pull: records the report, advances the job, returns a task.
    /// A pull with nothing to do is held up to [`LONG_POLL`].
    /// The lock, and the manifest writes it leads to, are taken on a
    /// blocking thread, never on the runtime's.
    pub async fn pull(self: &Arc<Self>, req: PullRequest) -> PullReply {
        let mut req = req;
        let ask = || {
            let (me, asked) = (self.clone(), req.clone());
            // The report counts once; the pulls after it only look.
            req.report = None;
            async move {
                let busy = asked.busy_task_id != 0;
                let task = crate::offload::blocking(move || me.pull_once(&asked)).await;
                // A busy worker waits for its own task locally; only idle pulls are held.
                let wait = TaskKind::try_from(task.kind).unwrap_or(TaskKind::Wait) == TaskKind::Wait;
                Ok::<_, std::convert::Infallible>(if wait && !busy { Answer::Later(task) } else { Answer::Now(task) })
            }
        };
        let task = match crate::service::long_poll(&self.changed, LONG_POLL, LONG_POLL, ask).await {
            Ok(task) => task,
            Err(never) => match never {},
        };
        PullReply { task: Some(task) }
    }

    fn pull_once(&self, req: &PullRequest) -> Task {
        let mut st = self.state.lock().expect("state lock");
        let version = st.version;
        if req.coordinator_epoch != self.coordinator_epoch {
            return Task { kind: TaskKind::Reregister as i32, ..Default::default() };
        }
        match st.roster.heard(&req.worker_id, Some(req.epoch)) {
            Heard::Current => {}
            Heard::Back => tracing::info!("worker {} is back", req.worker_id),
            Heard::Stale | Heard::Unknown => return Task { kind: TaskKind::Reregister as i32, ..Default::default() },
        }
        // The latest join's session pulls: the generation it was given is
        // stored in its directory, and from now on the worker's.
        if st.manifest.fences.get_mut(&req.worker_id).is_some_and(|f| f.confirm()) && st.phase != Phase::Joining {
            st.must_save();
        }
        if let Some(rep) = &req.report {
            self.accept_report(&mut st, &req.worker_id, rep.clone());
        }
        self.advance(&mut st);
        let (mut st, _) = self.settle(st, version);
        let task = self.task_for(&mut st, &req.worker_id, req.busy_task_id);
        self.publish(&st);
        task
    }

    /// Writes the manifest when the lock holder changed it in a way that
    /// waits for the disk ([`State::must_save`]; `version` is the count it
    /// found when it took the lock), with the lock released meanwhile:
    /// another worker's pull, a heartbeat or `/status` is answered while the
    /// file is written and synced (and told to wait if it needs what is being
    /// saved). Then removes what the saved manifest no longer needs. Returns
    /// the lock again, and whether the write failed (the job has then failed).
    fn settle<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        version: u64,
    ) -> (MutexGuard<'a, State>, Result<(), String>) {
        // Only the caller's own changes are its to wait for.
        if st.version == version {
            return (st, Ok(()));
        }
        let target = st.version;
        let mut wrote = false;
        while st.durable < target && st.save_failed.is_none() {
            let (manifest, version) = (st.manifest.clone(), st.version);
            let remove = std::mem::take(&mut st.remove_when_saved);
            drop(st);
            let written = {
                let mut on_disk = self.manifest_file.lock().expect("manifest file lock");
                // A later snapshot, written by another thread meanwhile,
                // holds this change too.
                if *on_disk < version {
                    manifest.save(&self.manifest_path).map(|()| *on_disk = version).map_err(|e| e.to_string())
                } else {
                    Ok(())
                }
            };
            if written.is_ok() {
                for dir in &remove {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
            st = self.state.lock().expect("state lock");
            match written {
                Ok(()) => {
                    st.durable = st.durable.max(version);
                    wrote = true;
                    if let Some((v, l, r)) = st.checkpointed
                        && v <= st.durable
                    {
                        st.checkpointed = None;
                        if st.stopped {
                            tracing::info!("layer {l} round {r} is durable: stopping as asked");
                        } else {
                            Fault::check(&self.fault, "after-commit", l, r);
                        }
                    }
                }
                Err(e) => {
                    // Nothing more is written: the job ends here, failed,
                    // not stopped at a checkpoint.
                    st.stopped = false;
                    st.phase = Phase::Failed(format!("cannot write the manifest: {e}"));
                    st.save_failed = Some(e);
                }
            }
        }
        if wrote {
            // Pulls told to wait for the save hear it is done.
            self.changed.notify_waiters();
        }
        // A change not on disk because a write failed, this caller's or
        // another's: the caller must not answer as if it were durable.
        let outcome = match &st.save_failed {
            Some(e) if st.durable < target => Err(e.clone()),
            _ => Ok(()),
        };
        (st, outcome)
    }

    fn accept_report(&self, st: &mut State, worker: &str, rep: RoundReport) {
        let Some(a) = st.assignments.get_mut(worker) else { return };
        if a.task_id != rep.task_id || a.done {
            return; // a stale report (earlier task or epoch): ignored
        }
        if rep.ok {
            a.done = true;
            if let Some(slot) = st.slots.get_mut(worker) {
                slot.traffic.record(&mut slot.last_traffic, &rep);
            }
            st.reports.insert(worker.to_string(), rep);
        } else if rep.retryable {
            st.assignments.remove(worker);
            tracing::warn!("worker {worker}: {:?} will be retried: {}", st.phase, rep.error);
            if let Some(slot) = st.slots.get_mut(worker) {
                slot.retry_after = Instant::now() + RETRY_PAUSE;
            }
        } else {
            st.assignments.remove(worker);
            st.failures += 1;
            tracing::error!("worker {worker}: {:?} failed: {}", st.phase, rep.error);
            if st.failures >= MAX_STEP_FAILURES {
                st.phase = Phase::Failed(format!(
                    "worker {worker} failed {:?} {MAX_STEP_FAILURES} times; last error: {}",
                    st.phase, rep.error
                ));
            }
        }
    }

    fn task_for(&self, st: &mut State, worker: &str, busy: u64) -> Task {
        let wait = Task { kind: TaskKind::Wait as i32, wait_ms: 200, ..Default::default() };
        let (kind, layer, round) = match st.phase.clone() {
            Phase::Joining | Phase::Finish | Phase::Merge(_) => return wait,
            Phase::Done => {
                st.done_sent.insert(worker.to_string());
                return Task { kind: TaskKind::Done as i32, ..Default::default() };
            }
            Phase::Failed(m) => {
                st.done_sent.insert(worker.to_string());
                return Task { kind: TaskKind::Abort as i32, message: m, ..Default::default() };
            }
            Phase::Init(l) => (TaskKind::Init, l, 0),
            Phase::Generate(l, r) => (TaskKind::Generate, l, r),
            Phase::Apply(l, r) => (TaskKind::Apply, l, r),
            Phase::Export(l) => (TaskKind::Export, l, 0),
        };
        // The step's manifest is not on disk yet (`settle` is writing it).
        if !st.saved() {
            return wait;
        }
        if let Some(a) = st.assignments.get(worker)
            && (a.done || a.task_id == busy)
        {
            return wait;
        }
        if st.slots.get(worker).is_some_and(|s| s.retry_after > Instant::now()) {
            return wait;
        }
        // Sending needs every peer's current address: after a restart of the
        // coordinator, wait until every worker is back.
        let all_present = st.manifest.workers.keys().all(|w| st.roster.is_alive(w));
        if kind == TaskKind::Generate && !all_present {
            return wait;
        }
        let task_id = st.next_task;
        st.next_task += 1;
        st.assignments.insert(worker.to_string(), Assignment { task_id, done: false });
        let peers = st
            .manifest
            .workers
            .iter()
            .map(|(id, shards)| PeerInfo {
                worker_id: id.clone(),
                address: st.slots.get(id).map(|s| s.address.clone()).unwrap_or_default(),
                shards: shards.clone(),
            })
            .collect();
        let expected = if kind == TaskKind::Apply {
            st.generate_reports
                .iter()
                .map(|(src, rep)| SourceCount {
                    worker_id: src.clone(),
                    updates: rep.sent.iter().filter(|s| s.worker_id == worker).map(|s| s.updates).sum(),
                })
                .collect()
        } else {
            Vec::new()
        };
        Task {
            kind: kind as i32,
            task_id,
            layer,
            round,
            shards: st.manifest.workers.get(worker).cloned().unwrap_or_default(),
            peers,
            expected,
            wait_ms: 0,
            message: String::new(),
            checkpoint: kind == TaskKind::Apply && st.checkpoint_now,
            attempt: st.manifest.layers.get(layer as usize).map_or(0, |r| r.attempt),
        }
    }

    fn all_done(&self, st: &State) -> bool {
        st.manifest.workers.keys().all(|w| st.assignments.get(w).is_some_and(|a| a.done))
    }

    fn next_step(&self, st: &mut State, phase: Phase) {
        st.phase = phase;
        st.assignments.clear();
        st.reports.clear();
        st.failures = 0;
        st.step_started = Instant::now();
    }

    /// Starts writing layer `l`'s tablebase on a thread of its own: reading
    /// every staged upload and writing the file takes minutes at stage 2, and
    /// under the lock every worker's pull and `/status` would wait for it.
    fn start_merge(&self, st: &mut State, l: u32) {
        let job = merge::MergeJob::of(self, l);
        let changed = self.changed.clone();
        let spawned = std::thread::Builder::new().name(format!("merge-{l}")).spawn(move || {
            let written = job.run();
            // The pulls held for work hear of it at once.
            changed.notify_waiters();
            written
        });
        match spawned {
            Ok(handle) => {
                st.merging = Some(handle);
                self.next_step(st, Phase::Merge(l));
            }
            Err(e) => st.phase = Phase::Failed(format!("cannot start the merge of layer {l}: {e}")),
        }
    }

    /// The tablebase of layer `l` is written (or failed): record it, make it
    /// durable and go on to the next layer (or stop, if asked).
    fn merged(&self, st: &mut State, l: u32, written: Result<(TablebaseEntry, TablebaseEntry), CoordinatorError>) {
        match written {
            Ok((entry, depth)) => {
                let rec = &mut st.manifest.layers[l as usize];
                tracing::info!(
                    "layer {} solved in {} rounds: {} ({} bytes, sha256 {})",
                    rec.question,
                    rec.deciding_rounds(),
                    entry.file,
                    entry.bytes,
                    entry.sha256
                );
                rec.tablebase = Some(entry);
                rec.depth = Some(depth);
            }
            Err(e) => {
                st.phase = Phase::Failed(format!("writing the tablebase of layer {l}: {e}"));
                return;
            }
        }
        st.must_save();
        st.unsaved_rounds = false;
        st.remove_when_saved.push(merge::staging_dir(self, l));
        let next = resume_phase(&st.manifest, &self.layer_order);
        if st.stop_requested && next != Phase::Finish {
            tracing::info!("layer {l}'s tablebase is written: stopping as asked");
            self.stop_here(st);
            return;
        }
        self.next_step(st, next);
    }

    fn advance(&self, st: &mut State) {
        loop {
            if let Phase::Merge(l) = st.phase {
                match st.merging.take() {
                    // Merge is entered only with its handle (start_merge); were it
                    // missing, merging again is the safe answer.
                    None => {
                        self.start_merge(st, l);
                        return;
                    }
                    Some(handle) if !handle.is_finished() => {
                        st.merging = Some(handle);
                        return;
                    }
                    Some(handle) => {
                        let written = handle.join().unwrap_or_else(|_| {
                            Err(CoordinatorError::Thread {
                                what: format!("the merge of layer {l}"),
                                detail: "it panicked".into(),
                            })
                        });
                        self.merged(st, l, written);
                        continue;
                    }
                }
            }
            let phase = st.phase.clone();
            let step_done = matches!(phase, Phase::Init(_) | Phase::Generate(..) | Phase::Apply(..) | Phase::Export(_))
                && self.all_done(st);
            if !step_done {
                return;
            }
            match phase {
                Phase::Init(l) => {
                    let mut init = retro_engine::kernel::InitStats::default();
                    let (mut win, mut loss) = (0, 0);
                    for r in st.reports.values() {
                        init.illegal += r.illegal;
                        init.terminal += r.terminal;
                        init.terminal_win += r.terminal_win;
                        init.no_move += r.no_move;
                        win += r.decided_win;
                        loss += r.decided_loss;
                    }
                    let seconds = st.step_started.elapsed().as_secs_f64();
                    let rec = &mut st.manifest.layers[l as usize];
                    rec.init = Some(init);
                    rec.seeded = st.reports.values().any(|r| r.seeded);
                    rec.committed_round = Some(0);
                    rec.rounds = vec![RoundLog { round: 0, win, loss, frontier: 0, seconds }];
                    rec.seconds = seconds;
                    tracing::info!(
                        "layer {} init: {} terminal ({} won by MAX), {} illegal, {} without a move, {:.2}s",
                        rec.question,
                        init.terminal,
                        init.terminal_win,
                        init.illegal,
                        init.no_move,
                        seconds
                    );
                    st.layer_started = Instant::now();
                    st.unsaved_rounds = self.checkpoint_every.is_some();
                    // With spaced checkpoints the workers keep round 0 in
                    // memory only (see `WorkerCore::init`): the manifest on
                    // disk keeps the layer uninitialised until its first
                    // checkpoint, so a restart before then runs the init again.
                    if self.checkpoint_every.is_none() {
                        st.must_save();
                    }
                    st.last_checkpoint = Instant::now();
                    st.epoch_durability = 0.0;
                    self.next_step(st, Phase::Generate(l, 1));
                }
                Phase::Generate(l, r) => {
                    st.generate_reports = std::mem::take(&mut st.reports);
                    let started = st.step_started;
                    self.next_step(st, Phase::Apply(l, r));
                    st.step_started = started;
                    st.checkpoint_now = st.stop_requested
                        || self.checkpoint_every.is_none_or(|every| {
                            checkpoint_due(st.last_checkpoint.elapsed(), every, st.checkpoint_cost)
                        });
                }
                Phase::Apply(l, r) => {
                    let (win, loss): (u64, u64) =
                        st.reports.values().fold((0, 0), |(w, lo), rep| (w + rep.decided_win, lo + rep.decided_loss));
                    let frontier: u64 = st.generate_reports.values().map(|rep| rep.frontier).sum();
                    let (sent, sent_bytes): (u64, u64) = st
                        .generate_reports
                        .values()
                        .fold((0, 0), |(n, b), rep| (n + rep.records_sent, b + rep.bytes_sent));
                    let seconds = st.step_started.elapsed().as_secs_f64();
                    let positions = self.layout.positions;
                    let rec = &mut st.manifest.layers[l as usize];
                    rec.rounds.retain(|x| x.round < r);
                    rec.rounds.push(RoundLog { round: r, win, loss, frontier, seconds });
                    rec.committed_round = Some(r);
                    rec.seconds += seconds;
                    let solved = win + loss == 0;
                    rec.solved = solved;
                    let exchanged = if sent > 0 {
                        format!(
                            ", {sent} records between workers ({sent_bytes} bytes, {:.2} per decided position)",
                            sent_bytes as f64 / (win + loss).max(1) as f64
                        )
                    } else {
                        String::new()
                    };
                    // The fields after the line are for scripts (bench-cluster.sh,
                    // bench-scaling.sh): exact numbers, no separators.
                    tracing::info!(
                        layer = l,
                        round = r,
                        new_decided = win + loss,
                        round_seconds = seconds,
                        records_sent = sent,
                        bytes_sent = sent_bytes,
                        "{}{exchanged}",
                        crate::progress::round_line(&st.manifest.layers, l as usize, positions)
                    );
                    // Between checkpoints the manifest keeps the last durable
                    // round, which is where a restart resumes (and replays from).
                    st.epoch_durability += st.reports.values().map(|rep| rep.durability_seconds).sum::<f64>();
                    st.unsaved_rounds = !st.checkpoint_now;
                    if st.checkpoint_now {
                        st.must_save();
                        st.last_checkpoint = Instant::now();
                        st.checkpoint_cost = std::mem::take(&mut st.epoch_durability);
                        st.checkpointed = Some((st.version, l, r));
                        if st.stop_requested {
                            // Published only once `settle` has it on disk.
                            self.stop_here(st);
                            return;
                        }
                    } else {
                        Fault::check(&self.fault, "after-commit", l, r);
                    }
                    self.next_step(st, if solved { Phase::Export(l) } else { Phase::Generate(l, r + 1) });
                }
                Phase::Export(l) => {
                    self.start_merge(st, l);
                    return;
                }
                _ => return,
            }
        }
    }

    /// Whether an upload (the EXPORT step) from the worker and epoch `msg`
    /// names, of the layer it names, is wanted now; [`merge::UploadStager`]
    /// asks at its first message and at its last.
    pub fn check_upload(&self, msg: &BlockUpload) -> Result<(), CoordinatorError> {
        let st = self.state.lock().expect("state lock");
        if !st.roster.is_current(&msg.worker_id, msg.epoch) || msg.job != self.spec.name {
            return Err(CoordinatorError::Mismatch(
                "upload from an unknown worker or an earlier epoch; join again".into(),
            ));
        }
        if st.phase != Phase::Export(msg.layer) {
            return Err(CoordinatorError::Mismatch(format!("not exporting layer {} now ({:?})", msg.layer, st.phase)));
        }
        Ok(())
    }

    /// Marks workers silent for longer than the heartbeat timeout as lost
    /// (their unfinished task will be handed out again when they return).
    pub fn check_heartbeats(&self) {
        let mut st = self.state.lock().expect("state lock");
        let timeout = self.heartbeat_timeout;
        // A job that waits says so now and then, not once and then silence.
        let sweep = st.roster.sweep();
        for (id, silent) in sweep.still_lost {
            let shards = st.manifest.workers.get(&id).cloned().unwrap_or_default();
            tracing::warn!(
                "still waiting for worker {id} (shards {shards:?}), silent for {} min: restart it with the same --data \
                 directory, start a replacement with a copy of it, or, if the disk is gone, a new worker with an empty \
                 --data and --replace {id}",
                silent.as_secs() / 60
            );
        }
        for id in sweep.newly_lost {
            let shards = st.manifest.workers.get(&id).cloned().unwrap_or_default();
            tracing::warn!(
                "worker {id} (shards {shards:?}) has been silent for over {}s: presumed lost. The job waits for it: \
                 restart it with the same --data directory (or a replacement with a copy of that directory) and it \
                 resumes from its last checkpoint; if its machine and disk are gone, start a new worker with an empty \
                 --data and --replace {id} (the layer in progress then starts again)",
                timeout.as_secs()
            );
            if st.assignments.get(&id).is_some_and(|a| !a.done) {
                st.assignments.remove(&id);
            }
        }
    }

    /// Called by the job runner when the analysis is written.
    pub fn finish(&self, result: Result<(), String>) {
        let mut st = self.state.lock().expect("state lock");
        st.phase = match result {
            Ok(()) => Phase::Done,
            Err(e) => Phase::Failed(e),
        };
        self.publish(&st);
    }

    /// True once every worker that joined has been told the job ended.
    pub fn all_told(&self) -> bool {
        let st = self.state.lock().expect("state lock");
        st.roster.iter().all(|(id, m)| m.lost || st.done_sent.contains(id))
    }
}

/// The order the layers run in: the plan's, or with `seed_solo` solo(A)
/// after enable(A>B) and enable(A>C) when the plan has all three, so that it
/// can start from the LOSS positions they prove ([`retro_results::cc3::seeds`]).
/// The tablebases are the same bytes either way.
pub fn layer_order(questions: &[String], seed_solo: bool) -> Vec<usize> {
    use retro_results::cc3::seeds::{SEEDED, SEEDS};
    let at = |q: &str| questions.iter().position(|x| x == q);
    let mut order: Vec<usize> = (0..questions.len()).collect();
    if let (Some(seeded), true) = (at(SEEDED), seed_solo && SEEDS.iter().all(|q| at(q).is_some())) {
        order.retain(|&l| l != seeded);
        order.push(seeded);
    }
    order
}

/// The layer to work on: the one started and not written (a run resumed
/// with another order finishes it first), else the first in `order` without
/// its tablebase.
fn current_layer(m: &Manifest, order: &[usize]) -> Option<usize> {
    let started = m.layers.iter().position(|r| r.tablebase.is_none() && r.committed_round.is_some());
    started.or_else(|| order.iter().copied().find(|&l| m.layers[l].tablebase.is_none()))
}

/// The first step not yet committed in the manifest, the layers taken in `order`.
pub fn resume_phase(m: &Manifest, order: &[usize]) -> Phase {
    let Some(l) = current_layer(m, order) else {
        return Phase::Finish;
    };
    let rec = &m.layers[l];
    let l = l as u32;
    match rec.committed_round {
        None => Phase::Init(l),
        Some(_) if rec.solved => Phase::Export(l),
        Some(r) => Phase::Generate(l, r + 1),
    }
}

/// The tablebase file name of a question, e.g. `solo_A.tb`, `enable_A_B.tb`.
pub use retro_engine::tablebase::layer_file_name as tablebase_file_name;

/// Result of a finished export, for the manifest.
pub fn entry(file: String, bytes: u64, sha256: String) -> TablebaseEntry {
    TablebaseEntry { file, bytes, sha256 }
}

#[cfg(test)]
mod harness;

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Short, so the test can let a worker fall silent.
    const HEARTBEAT_TIMEOUT: Duration = Duration::from_millis(300);

    /// A scheduler for the stage-1 plan with three expected workers, its
    /// manifest in a fresh directory.
    fn scheduler(dir: &std::path::Path) -> Scheduler {
        let plan = crate::plan::Plan::from_toml_str(crate::plan::DEFAULT_PLAN, "stage1").unwrap();
        let spec = crate::job::job_spec(&plan);
        let layout = spec.layout(retro_games::RetroGame::position_count(&spec.game().unwrap()));
        let manifest = Manifest::new(&spec.name, &spec.plan_hash, spec.rank_order, &spec.questions);
        let path = dir.join("coordinator.json");
        Scheduler::new(spec, layout, manifest, 3, HEARTBEAT_TIMEOUT, path, dir.join("staging"), dir.join("tb"))
    }

    /// A fresh directory for test `name` and its scheduler with its three
    /// workers joined (their epochs by id).
    fn joined(name: &str) -> (std::path::PathBuf, Arc<Scheduler>, BTreeMap<String, u64>) {
        let dir = std::env::temp_dir().join(format!("sched-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let s = Arc::new(scheduler(&dir));
        let epochs = (0..3)
            .map(|_| {
                let r = register(&s, "", "").unwrap();
                (r.worker_id, r.epoch)
            })
            .collect();
        (dir, s, epochs)
    }

    #[test]
    fn checkpoints_are_spaced_by_their_cost_beyond_the_interval_asked_for() {
        let secs = Duration::from_secs;
        let every = secs(300);
        // Cheap checkpoints (or none measured yet): the interval asked for.
        assert!(!checkpoint_due(secs(299), every, 0.0));
        assert!(checkpoint_due(secs(300), every, 0.0));
        assert!(checkpoint_due(secs(300), every, 15.0));
        // A checkpoint that cost 50 s waits until 20 such costs have passed.
        assert!(!checkpoint_due(secs(999), every, 50.0));
        assert!(checkpoint_due(secs(1000), every, 50.0));
        // A nonsensical cost neither panics nor stops the checkpoints.
        for cost in [f64::INFINITY, f64::NAN, -5.0] {
            assert!(!checkpoint_due(secs(299), every, cost));
            assert!(checkpoint_due(secs(300), every, cost));
        }
    }

    fn register(s: &Scheduler, id: &str, replaces: &str) -> Result<JoinReply, JoinError> {
        s.join(JoinRequest {
            protocol_version: retro_proto::PROTOCOL_VERSION,
            worker_id: id.into(),
            replaces: replaces.into(),
            ..Default::default()
        })
    }

    #[test]
    fn a_lost_worker_is_replaced_and_its_layer_starts_again() {
        let dir = std::env::temp_dir().join(format!("sched-replace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = scheduler(&dir);
        let epochs: BTreeMap<String, u64> = (0..3)
            .map(|_| {
                let r = register(&s, "", "").unwrap();
                (r.worker_id, r.epoch)
            })
            .collect();
        // The job runs its first layer, round 3 committed.
        let first = layer_order(&s.spec.questions, false)[0];
        {
            let mut st = s.state.lock().unwrap();
            assert_eq!(st.phase, Phase::Init(first as u32));
            st.manifest.layers[first].committed_round = Some(3);
            st.manifest.layers[first].rounds = vec![RoundLog::default(); 4];
            s.next_step(&mut st, Phase::Generate(first as u32, 4));
        }
        let shards_of_w2 = s.manifest().workers["w2"].clone();
        // A live worker cannot be replaced, nor one the job never had.
        let e = register(&s, "", "w2").unwrap_err().to_string();
        assert!(e.contains("is alive"), "{e}");
        let e = register(&s, "", "w9").unwrap_err().to_string();
        assert!(e.contains("has no worker w9"), "{e}");
        // Once silent past the timeout, it can.
        std::thread::sleep(HEARTBEAT_TIMEOUT + Duration::from_millis(50));
        {
            let mut st = s.state.lock().unwrap();
            let others: Vec<String> = st.roster.iter().map(|(id, _)| id.clone()).filter(|id| id != "w2").collect();
            assert_eq!(others.len(), 2);
            for w in others {
                assert_eq!(st.roster.heard(&w, None), Heard::Current);
            }
        }
        s.check_heartbeats();
        let r = register(&s, "", "w2").unwrap();
        assert_eq!(r.worker_id, "w4");
        let m = s.manifest();
        assert_eq!(m.workers.get("w4"), Some(&shards_of_w2));
        assert!(!m.workers.contains_key("w2"));
        assert_eq!(m.replaced.get("w2").map(String::as_str), Some("w4"));
        let layer = &m.layers[first];
        assert_eq!((layer.attempt, layer.committed_round, layer.rounds.len()), (1, None, 0));
        assert_eq!(s.state.lock().unwrap().phase, Phase::Init(first as u32));
        // The manifest on disk says the same, so a restarted coordinator agrees.
        let saved = Manifest::load(&dir.join("coordinator.json"), &m.job, &m.plan_hash, s.spec.rank_order).unwrap();
        assert_eq!(saved.unwrap(), m);
        // The lost worker, if it comes back after all, is told it was replaced.
        let e = register(&s, "w2", "").unwrap_err().to_string();
        assert!(e.contains("replaced by worker w4"), "{e}");
        // Tasks now carry the new attempt.
        let reply = s.pull_once(&PullRequest {
            worker_id: "w1".into(),
            epoch: epochs["w1"],
            coordinator_epoch: s.coordinator_epoch,
            ..Default::default()
        });
        assert_eq!((TaskKind::try_from(reply.kind).unwrap(), reply.attempt), (TaskKind::Init, 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Uploads are staged block by block as they come and merged by reading
    /// each block in its turn: two workers' uploads, blocks out of order,
    /// merge into the values and depth files the blocks say; a stranger's
    /// message, one of another layer, and an upload short of its count are
    /// refused, the last leaving the earlier staging in place; a staged file
    /// cut short, or with a length past its end, is named as damaged.
    #[test]
    fn uploads_are_staged_as_they_come_and_merged_in_block_order() {
        use retro_engine::tablebase::{DepthReader, TablebaseReader, compress_block, pack_values};
        let (dir, s, epochs) = joined("stager");
        let l = layer_order(&s.spec.questions, false)[0] as u32;
        s.next_step(&mut s.state.lock().unwrap(), Phase::Export(l));
        let (bp, positions, total) = (s.layout.block_positions, s.layout.positions, s.layout.blocks());
        assert!(total >= 4, "enough blocks to split: {total}");
        let len = |i: u64| (positions - i * bp).min(bp) as usize;
        let value = |i: u64| 1 + (i % 3) as u8;
        let plies = |i: u64| (i % 200) as u8;
        let block = |w: &str, i: u64| {
            let packed = pack_values(&vec![value(i); len(i)]);
            let depth = vec![plies(i); len(i)];
            BlockUpload {
                job: s.spec.name.clone(),
                worker_id: w.into(),
                epoch: epochs[w],
                layer: l,
                block_index: i,
                raw_crc32: crc32fast::hash(&packed),
                compressed: compress_block(&packed).unwrap(),
                depth_raw_crc32: crc32fast::hash(&depth),
                depth_compressed: compress_block(&depth).unwrap(),
                ..Default::default()
            }
        };
        let last = |w: &str, n: u64| BlockUpload { last: true, blocks_sent: n, ..block(w, 0) };
        let upload = |msgs: Vec<BlockUpload>| {
            let mut stager = merge::UploadStager::default();
            let mut out = Ok(None);
            for m in msgs {
                out = stager.take(&s, m);
                if out.is_err() {
                    break;
                }
            }
            out
        };
        let ids: Vec<&String> = epochs.keys().collect();
        let (w1, w2) = (ids[0].as_str(), ids[1].as_str());
        // w1 the even blocks, from the end; w2 the odd ones.
        let evens: Vec<u64> = (0..total).filter(|i| i % 2 == 0).rev().collect();
        let odds: Vec<u64> = (0..total).filter(|i| i % 2 == 1).collect();
        let mut first: Vec<BlockUpload> = evens.iter().map(|&i| block(w1, i)).collect();
        first.push(last(w1, evens.len() as u64));
        assert_eq!(upload(first).unwrap(), Some(evens.len() as u64));
        // A stranger, another layer, an upload short of its count.
        let stranger = BlockUpload { worker_id: "w9".into(), ..block(w2, 1) };
        assert!(upload(vec![stranger]).unwrap_err().to_string().contains("unknown worker"));
        let other = BlockUpload { layer: l + 1, ..block(w2, 1) };
        assert!(upload(vec![other]).unwrap_err().to_string().contains("not exporting"));
        let short = vec![block(w1, 0), last(w1, 2)];
        assert!(upload(short).unwrap_err().to_string().contains("upload ended early"));
        let mut second: Vec<BlockUpload> = odds.iter().map(|&i| block(w2, i)).collect();
        second.push(last(w2, odds.len() as u64));
        assert_eq!(upload(second).unwrap(), Some(odds.len() as u64));

        let (values, depth) = merge::MergeJob::of(&s, l).run().unwrap();
        let mut v = TablebaseReader::open(&dir.join("tb").join(&values.file)).unwrap();
        let mut d = DepthReader::open(&dir.join("tb").join(&depth.file)).unwrap();
        v.verify().unwrap();
        d.verify().unwrap();
        for i in 0..total {
            let r = i * bp + len(i) as u64 - 1;
            assert_eq!(v.probe(r).unwrap(), value(i), "block {i}'s value");
            assert_eq!(d.probe(r).unwrap(), plies(i), "block {i}'s plies");
        }

        // Damage to a staged file: cut short, then a length past its end.
        let staged = merge::staging_dir(&s, l).join(format!("{w2}.blocks"));
        let bytes = std::fs::read(&staged).unwrap();
        std::fs::write(&staged, &bytes[..bytes.len() - 1]).unwrap();
        let e = merge::MergeJob::of(&s, l).run().unwrap_err();
        assert!(matches!(e, CoordinatorError::DamagedUpload { .. }), "{e}");
        let mut long = bytes.clone();
        long[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&staged, &long).unwrap();
        let e = merge::MergeJob::of(&s, l).run().unwrap_err();
        assert!(matches!(e, CoordinatorError::DamagedUpload { .. }), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The merge used to write the tablebase inside `advance`, under the
    /// lock: every other worker's pull (and `/status`) waited for it. Here the
    /// staged upload is a FIFO nobody writes yet, so the merge blocks on it
    /// for as long as the test likes: another worker's pull must still be
    /// answered (told to wait), and the merge's outcome, once it comes, must
    /// reach the job.
    #[test]
    fn another_workers_pull_is_answered_while_a_merge_runs() {
        let (dir, s, epochs) = joined("merge");
        let l = layer_order(&s.spec.questions, false)[0] as u32;
        let staged = merge::staging_dir(&s, l);
        std::fs::create_dir_all(&staged).unwrap();
        let fifo = staged.join("w1.blocks");
        assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        {
            let mut st = s.state.lock().unwrap();
            s.next_step(&mut st, Phase::Export(l));
            for w in epochs.keys() {
                st.assignments.insert(w.clone(), Assignment { task_id: 1, done: true });
            }
        }
        let pull = |s: &Arc<Scheduler>, w: &str| {
            let (s, req) = (
                s.clone(),
                PullRequest {
                    worker_id: w.into(),
                    epoch: epochs[w],
                    coordinator_epoch: s.coordinator_epoch,
                    ..Default::default()
                },
            );
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(s.pull_once(&req)).unwrap());
            rx.recv_timeout(Duration::from_secs(10)).expect("a pull answered while the merge runs")
        };
        // The last upload's pull starts the merge, which now waits on the FIFO.
        assert_eq!(TaskKind::try_from(pull(&s, "w1").kind).unwrap(), TaskKind::Wait);
        for w in ["w2", "w3", "w1"] {
            assert_eq!(TaskKind::try_from(pull(&s, w).kind).unwrap(), TaskKind::Wait, "{w}");
        }
        assert_eq!(s.status().phase, format!("merge layer {l}"));
        // The upload arrives empty: the merge fails, and the job hears of it.
        drop(std::fs::OpenOptions::new().write(true).open(&fifo).unwrap());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let task = pull(&s, "w2");
            if TaskKind::try_from(task.kind).unwrap() == TaskKind::Abort {
                assert!(task.message.contains("was never uploaded"), "{}", task.message);
                break;
            }
            assert!(Instant::now() < deadline, "the merge's outcome never reached the job");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The manifest used to be written and synced under the lock: a slow
    /// disk held up every worker's pull and `/status`. Here the manifest's
    /// temporary file is a FIFO nobody reads yet, so one worker's save blocks
    /// on it for as long as the test likes: another worker's pull must still
    /// be answered (told to wait, not handed a task the unsaved manifest
    /// leads to), and the save's failure, once it comes, must end the job.
    #[test]
    fn another_workers_pull_is_answered_while_the_manifest_is_written() {
        let (dir, s, epochs) = joined("save");
        let request = |w: &str, busy: u64| PullRequest {
            worker_id: w.into(),
            epoch: epochs[w],
            coordinator_epoch: s.coordinator_epoch,
            busy_task_id: busy,
            ..Default::default()
        };
        // Two workers confirm their generation (a save each, to a plain file)
        // and take their init tasks.
        let mut busy = BTreeMap::new();
        for w in ["w2", "w3"] {
            let task = s.pull_once(&request(w, 0));
            assert_eq!(TaskKind::try_from(task.kind).unwrap(), TaskKind::Init, "{w}");
            busy.insert(w, task.task_id);
        }
        let fifo = retro_engine::durable::tmp_path(&s.manifest_path);
        assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        // w1's first pull confirms its generation: that save now blocks.
        let (tx, blocked) = std::sync::mpsc::channel();
        let first = {
            let (s, req) = (s.clone(), request("w1", 0));
            std::thread::spawn(move || tx.send(s.pull_once(&req)).unwrap())
        };
        assert!(blocked.recv_timeout(Duration::from_millis(300)).is_err(), "w1's pull waits for its save");
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let (s, req) = (s.clone(), request("w2", busy["w2"]));
            std::thread::spawn(move || tx.send((s.pull_once(&req), s.status().phase)).unwrap());
        }
        let (task, phase) = rx.recv_timeout(Duration::from_secs(10)).expect("a pull answered while a save runs");
        assert_eq!(TaskKind::try_from(task.kind).unwrap(), TaskKind::Wait);
        assert!(phase.starts_with("init layer"), "{phase}");
        // The save's file is read (a FIFO cannot be synced): the save fails,
        // and w1 and then everyone hear that the job ended.
        let reader = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::io::Read::read_to_end(&mut std::fs::File::open(fifo).unwrap(), &mut Vec::new()).unwrap()
        });
        let task = blocked.recv_timeout(Duration::from_secs(10)).expect("the save ends");
        first.join().unwrap();
        reader.join().unwrap();
        assert_eq!(TaskKind::try_from(task.kind).unwrap(), TaskKind::Abort);
        assert!(task.message.contains("cannot write the manifest"), "{}", task.message);
        let task = s.pull_once(&request("w3", busy["w3"]));
        assert_eq!(TaskKind::try_from(task.kind).unwrap(), TaskKind::Abort);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn solo_a_runs_after_the_enable_layers_it_starts_from() {
        let q = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let stage = q(&["solo(A)", "enable(A>B)", "enable(A>C)"]);
        assert_eq!(layer_order(&stage, true), [1, 2, 0]);
        assert_eq!(layer_order(&stage, false), [0, 1, 2]);
        assert_eq!(layer_order(&q(&["enable(A>C)", "solo(A)", "enable(A>B)"]), true), [0, 2, 1]);
        // Without both enable layers, or for another game, the plan's order.
        assert_eq!(layer_order(&q(&["solo(A)", "enable(A>B)"]), true), [0, 1]);
        assert_eq!(layer_order(&q(&["solo(1)"]), true), [0]);
        // A resumed run finishes the layer it started, whatever the order.
        let mut m = Manifest::new("j", "h", 1, &stage);
        assert_eq!(resume_phase(&m, &layer_order(&stage, true)), Phase::Init(1));
        m.layers[0].committed_round = Some(4);
        assert_eq!(resume_phase(&m, &layer_order(&stage, true)), Phase::Generate(0, 5));
    }
}
