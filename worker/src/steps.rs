//! The worker's tasks as blocking functions over its layer store. The async
//! pull loop ([`crate::run`]) runs them on blocking threads and does the
//! network part (sending batches, uploading blocks).

use crate::fault::Fault;
use crate::spec::{JobSpec, SpecError};
use crate::store::{self, LayerState, LayerStore, RoundRecord, STATE_FORMAT_VERSION, StoreError};
use retro_engine::batch::{self, BatchError};
use retro_engine::kernel::{self, KernelError};
use retro_engine::layout::Layout;
use retro_engine::rankset::RankSet;
use retro_engine::routed;
use retro_engine::shardfile::{self, ShardFile};
use retro_engine::tablebase::{self, TablebaseError};
use retro_engine::values::Codes;
use retro_games::AnyGame;
use retro_games::RetroGame;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Errors while running a task.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// Storage failed or is inconsistent.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The kernel refused.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// An inbox or batch is unreadable.
    #[error(transparent)]
    Batch(#[from] BatchError),
    /// Tablebase block encoding failed.
    #[error(transparent)]
    Tablebase(#[from] TablebaseError),
    /// The job description is unusable.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A durable file failed.
    #[error(transparent)]
    Durable(#[from] retro_engine::durable::DurableError),
    /// The coordinator runs another attempt of the layer than this worker
    /// holds (a lost worker was replaced); the layer starts again with INIT.
    #[error(
        "this worker holds attempt {held} of layer {layer}, the coordinator runs attempt {running}; it starts the \
         layer again with INIT"
    )]
    AttemptMismatch {
        /// The layer.
        layer: u32,
        /// The attempt on this worker's disk.
        held: u32,
        /// The attempt the coordinator runs.
        running: u32,
    },
    /// A step names a round that does not follow the committed one.
    #[error("asked to {step} round {round} of layer {layer}, but round {committed} is committed here")]
    OutOfOrder {
        /// The step asked for ("generate", "apply").
        step: &'static str,
        /// The layer.
        layer: u32,
        /// The round asked for.
        round: u32,
        /// The round this worker has committed.
        committed: u32,
    },
    /// A layer's state file is missing, so no round can run on it.
    #[error("layer {layer} has no init: {} is missing (deleted, or never written)", state.display())]
    NoInit {
        /// The layer.
        layer: u32,
        /// The state file that should be there.
        state: PathBuf,
    },
    /// A round step came while no layer is open.
    #[error("no layer open")]
    NoLayerOpen,
    /// The generate step routed updates to a worker it has no stream to.
    #[error("no stream to worker {worker}")]
    NoStream {
        /// The worker.
        worker: String,
    },
    /// A shard the task names belongs to another worker.
    #[error("shard {shard} is not ours")]
    NotOurShard {
        /// The shard.
        shard: u32,
    },
    /// The peer table has no owner for a shard updates go to.
    #[error("no worker owns shard {shard} in the peer table")]
    NoOwner {
        /// The shard.
        shard: u32,
    },
    /// The frontier scan does not match the round that made the frontier:
    /// a hint missed a chunk, or the shard changed under the worker.
    #[error(
        "layer {layer} round {round}: the scan found {found} frontier positions, but round {} decided {decided} \
         here{}",
        round - 1,
        if *hinted { " (only the chunks it wrote were scanned)" } else { "" }
    )]
    FrontierMismatch {
        /// The layer.
        layer: u32,
        /// The round being generated.
        round: u32,
        /// The frontier positions the scan found.
        found: u64,
        /// The positions the previous round decided.
        decided: u64,
        /// Whether only the chunks of a hint were scanned.
        hinted: bool,
    },
    /// An inbox holds another number of records than its sender reported.
    #[error("{}: holds {got} records, worker {source_worker} reported sending {sent}", path.display())]
    InboxCount {
        /// The inbox file.
        path: PathBuf,
        /// The records it holds.
        got: u64,
        /// The sending worker.
        source_worker: String,
        /// The records it reported sending.
        sent: u64,
    },
    /// An inbox holds a batch for a shard this worker does not own.
    #[error("{}: batch for shard {shard}, not ours", path.display())]
    ForeignBatch {
        /// The inbox file.
        path: PathBuf,
        /// The shard.
        shard: u32,
    },
    /// A layer directory could not be removed.
    #[error("{}: {source}", path.display())]
    Remove {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The machine is too small for the layer (and resources are checked).
    #[error(transparent)]
    Resources(#[from] retro_node::NodeError),
    /// The known losses of a three-valued layer could not be read.
    #[error("{0}")]
    KnownLosses(String),
    /// A task of a kind this worker does not run.
    #[error("unexpected task kind {0}")]
    UnexpectedKind(String),
    /// A blocking thread running part of a task died.
    #[error("{what} thread failed: {detail}")]
    Thread {
        /// The thread ("task", "generate", "export").
        what: &'static str,
        /// The join error.
        detail: String,
    },
    /// The block stream to the coordinator ended before the export did.
    #[error("upload to the coordinator was interrupted")]
    UploadInterrupted,
    /// The coordinator stored fewer blocks than were sent.
    #[error("coordinator stored {stored} of {sent} blocks")]
    UploadShort {
        /// The blocks the coordinator stored.
        stored: u64,
        /// The blocks sent.
        sent: u64,
    },
    /// The upload call failed.
    #[error("upload failed: {0}")]
    Upload(#[source] crate::link::LinkError),
    /// A peer could not be reached; the task can be retried later.
    #[error("{0}")]
    PeerUnreachable(String),
}

/// How far this worker is (layer, committed round, attempt): what its peer
/// service needs to know to drop stale batches, those at or below it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Watermark {
    /// Layer being solved, if any.
    pub layer: Option<u32>,
    /// Its committed round.
    pub committed: u32,
    /// The attempt at the layer (batches of an earlier attempt are stale).
    pub attempt: u32,
}

/// What the current round has done on this worker so far (in memory; after a
/// restart the undo logs roll the shards back and the round starts afresh).
struct RoundWork {
    layer: u32,
    round: u32,
    /// Local records of the round have been applied (the generate step ran).
    local_applied: bool,
    /// Positions decided so far in this round.
    decided: kernel::Decided,
    /// Updates this worker's frontier sends to each worker (itself included).
    sent: BTreeMap<String, u64>,
    /// Frontier size.
    frontier: u64,
    /// Chunks holding frontier positions, per shard (settled at commit).
    frontier_chunks: BTreeMap<u32, Vec<u64>>,
    /// Chunks, per owned shard, this round's applies may have decided
    /// positions in (see [`FrontierHint`]).
    written: BTreeMap<u32, Vec<u64>>,
    /// The mid-apply fault point has been passed.
    fault_checked: bool,
    /// Where the round's time went so far.
    times: PhaseTimes,
}

/// Seconds spent in each phase of a round on this worker, logged at commit
/// so that a slow round says why.
#[derive(Clone, Copy, Debug, Default)]
struct PhaseTimes {
    /// Scanning the frontier into records.
    scan: f64,
    /// Grouping records by region.
    route: f64,
    /// Saving chunks to the undo logs.
    undo: f64,
    /// Generating and applying predecessors.
    apply: f64,
    /// Committing the round (a checkpoint's flush).
    flush: f64,
}

/// Where the frontier of the round after `round` of `layer` lies: the chunks,
/// per owned shard, in which that round decided positions (the chunks its
/// records' blocks overlap, which the undo logs protect for the same reason).
/// Late rounds decide a few positions in millions, so scanning only these
/// chunks instead of the whole state turns a tail round's scan from seconds
/// into milliseconds. Kept in memory only: after a restart the first round
/// scans everything.
struct FrontierHint {
    layer: u32,
    round: u32,
    chunks: BTreeMap<u32, Vec<u64>>,
}

/// Seconds since `t`.
fn secs(t: std::time::Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Where the generate step hands the records for another worker:
/// `(worker id, destination shard, records)`.
pub type RemoteSink<'a> = &'a mut dyn FnMut(&str, u32, Vec<u64>) -> Result<(), TaskError>;

/// Most records (decided positions) buffered before they are applied: about
/// 160 MB with the routing copy, whatever the size of the round's frontier.
/// Each record stands for all its predecessors (12.7 at stage 2), so a flush
/// still applies about a hundred million updates, enough to reuse each
/// region's cache lines many times.
pub const MAX_BUFFERED_RECORDS: usize = 1 << 23;

/// Fewest records buffered before they are applied, however small the state.
pub const MIN_BUFFERED_RECORDS: usize = 1 << 20;

/// Records buffered before they are applied, for a worker that holds
/// `positions` state bytes: one record per 128 positions (the buffer and its
/// routing copy cost an eighth of the state at most), between
/// [`MIN_BUFFERED_RECORDS`] and [`MAX_BUFFERED_RECORDS`]. What a flush gains
/// is records per region, so a small state needs fewer records for the
/// same reuse: on cc2 7 x 7 x 3 (141 M positions) 2 M records instead of
/// 8 M cost no measurable time and 50 MB less memory (docs/benchmarks/log.md,
/// 2026-12-02, the mirror fold), and 1.1 M instead of 2.2 M about 11 MiB more
/// (28-32 MiB anonymous down to 17-21: the same log, 2026-12-02).
pub fn buffered_records_limit(positions: u64) -> usize {
    ((positions / 128) as usize).clamp(MIN_BUFFERED_RECORDS, MAX_BUFFERED_RECORDS)
}
/// Positions scanned per generate slice.
pub const SLICE_POSITIONS: usize = 1 << 22;

/// Result of a task, as reported to the coordinator.
#[derive(Clone, Debug, Default)]
pub struct TaskOutcome {
    /// Record of the round (init: round 0).
    pub record: RoundRecord,
    /// Init counts (INIT only).
    pub init: Option<kernel::InitStats>,
    /// APPLY: seconds the round spent on durability (chunks saved to the undo
    /// logs, and the flush of a checkpoint), which the coordinator weighs
    /// against the time between checkpoints.
    pub durability_seconds: f64,
    /// INIT: the layer started from known LOSS positions.
    pub seeded: bool,
}

/// Records decoded and applied at once from a received inbox (whole batches,
/// each at most `MAX_KEYS_PER_MESSAGE`): as many as [`MAX_BUFFERED_RECORDS`],
/// whatever the size of the round. Apply is order-independent, so the groups
/// give the same bytes as applying the inbox whole.
const APPLY_GROUP_RECORDS: u64 = MAX_BUFFERED_RECORDS as u64;

/// Positions a layer will find LOSS, known before it starts from the layers
/// solved before it (see [`kernel::init_with_known_losses`]). An embedded
/// coordinator has their tablebases at hand and gives them; a cluster's
/// workers do not, and start every layer from the move counts alone: the
/// values are the same, the rounds fewer with them.
pub trait KnownLosses: Send + Sync {
    /// The known LOSS positions (for the MAX side) of three-valued layer
    /// `layer`, or `None` when nothing is known. Called at the layer's INIT.
    fn known_losses(&self, layer: u32) -> Result<Option<RankSet>, String>;
}

/// A [`KnownLosses`] as the worker's options carry it.
#[derive(Clone)]
pub struct KnownLossSource(pub Arc<dyn KnownLosses>);

impl std::fmt::Debug for KnownLossSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KnownLossSource")
    }
}

/// The worker's state between tasks.
pub struct WorkerCore {
    /// Data directory.
    pub data: PathBuf,
    /// The job.
    pub spec: JobSpec,
    /// This worker's id.
    pub worker_id: String,
    /// The game.
    pub game: AnyGame,
    /// Shard layout.
    pub layout: Layout,
    /// Kernel threads.
    pub threads: usize,
    /// Fault injection point.
    pub fault: Option<Fault>,
    /// Shared with the peer service.
    pub progress: Arc<Mutex<Watermark>>,
    /// Start a layer even when the machine lacks the memory or disk it needs
    /// (`--ignore-resources`; see [`crate::resources`]).
    pub ignore_resources: bool,
    /// What the layers solved before a layer prove about it (embedded runs).
    pub known_losses: Option<KnownLossSource>,
    /// How the layer's shard files are mapped ([`store::layer_mapping`]).
    pub state_mapping: retro_engine::shardfile::Mapping,
    layer: Option<LayerStore>,
    work: Option<RoundWork>,
    /// The layer attempt the current task belongs to ([`WorkerCore::set_attempt`]).
    attempt: u32,
    /// Where the next round's frontier lies, when the last round ran here.
    hint: Option<FrontierHint>,
}

impl WorkerCore {
    /// A core for `spec`, with nothing open yet.
    pub fn new(
        data: PathBuf,
        spec: JobSpec,
        worker_id: String,
        threads: usize,
        fault: Option<Fault>,
        progress: Arc<Mutex<Watermark>>,
    ) -> Result<WorkerCore, TaskError> {
        let game = spec.game()?;
        let layout = spec.layout(game.position_count());
        Ok(WorkerCore {
            data,
            spec,
            worker_id,
            game,
            layout,
            threads,
            fault,
            progress,
            ignore_resources: false,
            known_losses: None,
            state_mapping: retro_engine::shardfile::Mapping::Shared,
            layer: None,
            work: None,
            attempt: 0,
            hint: None,
        })
    }

    fn set_progress(&self) {
        let mut p = self.progress.lock().expect("progress lock");
        match &self.layer {
            Some(l) => {
                *p = Watermark {
                    layer: Some(l.state.layer),
                    committed: l.state.committed_round,
                    attempt: l.state.attempt,
                }
            }
            None => *p = Watermark::default(),
        }
    }

    /// Names the layer attempt of the task about to run (`Task.attempt`):
    /// INIT discards state of another attempt, the other tasks refuse it.
    pub fn set_attempt(&mut self, attempt: u32) {
        self.attempt = attempt;
    }

    /// Opens (recovering) the layer's store if it is not open.
    fn open_layer(&mut self, layer: u32, shards: &[u32]) -> Result<Option<&mut LayerStore>, TaskError> {
        let is_open = self.layer.as_ref().is_some_and(|l| l.state.layer == layer && l.state.shards == shards);
        if !is_open {
            self.layer = None;
            self.work = None;
            // What the disk holds may be older than the last round run here.
            self.hint = None;
            let dir = store::layer_dir(&self.data, layer);
            self.layer = LayerStore::open(&dir, self.layout, &self.spec.plan_hash, layer, shards, self.state_mapping)?;
            self.set_progress();
        }
        if let Some(l) = &self.layer
            && l.state.attempt != self.attempt
        {
            return Err(TaskError::AttemptMismatch { layer, held: l.state.attempt, running: self.attempt });
        }
        Ok(self.layer.as_mut())
    }

    /// INIT: creates the layer's shard files and runs the init pass (round 0).
    pub fn init(&mut self, layer: u32, shards: &[u32]) -> Result<TaskOutcome, TaskError> {
        // Round 1 scans everything (its frontier is the terminal positions).
        self.hint = None;
        // The other layers are in the coordinator's tablebases by now (or
        // not started): one layer's state is on disk at a time.
        for l in (0..self.spec.questions.len() as u32).filter(|&l| l != layer) {
            let dir = store::layer_dir(&self.data, l);
            if dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(|source| TaskError::Remove { path: dir.clone(), source })?;
            }
        }
        // A layer the coordinator started again (a lost worker was replaced)
        // begins from nothing here too.
        let dir = store::layer_dir(&self.data, layer);
        if let Some(old) = store::layer_attempt(&dir)?
            && old != self.attempt
        {
            tracing::warn!(
                "discarding attempt {old} of layer {layer}: the coordinator started the layer again (attempt {})",
                self.attempt
            );
            self.layer = None;
            self.work = None;
            std::fs::remove_dir_all(&dir).map_err(|source| TaskError::Remove { path: dir.clone(), source })?;
        }
        if let Some(store) = self.open_layer(layer, shards)? {
            let rec = store.record(0).cloned().unwrap_or_default();
            let init = store.state.init;
            let seeded = store.state.seeded;
            return Ok(TaskOutcome { record: rec, init: Some(init), durability_seconds: 0.0, seeded });
        }
        let q = self.spec.question(layer)?;
        let state = LayerState {
            format_version: STATE_FORMAT_VERSION,
            plan_hash: self.spec.plan_hash.clone(),
            layer,
            shards: shards.to_vec(),
            committed_round: 0,
            init: Default::default(),
            rounds: Vec::new(),
            chunk_crcs: BTreeMap::new(),
            attempt: self.attempt,
            seeded: false,
            checkpoint_file: 0,
        };
        let stored: u64 = shards.iter().map(|&s| self.layout.range(s).end - self.layout.range(s).start).sum();
        let counts_missing = !store::counts_dir(&self.data).exists();
        let have = crate::resources::Available::measure(&self.data);
        let what = format!("layer {layer} on this worker ({} shards, {stored} positions)", shards.len());
        let needs = crate::resources::Needs::retrograde(stored, counts_missing);
        let line = crate::resources::check(&what, needs, have, &self.data, self.ignore_resources)?;
        tracing::info!("{line}");
        let counts = self.counts(shards)?;
        let known = match &self.known_losses {
            Some(source) if q.three_valued => source.0.known_losses(layer).map_err(TaskError::KnownLosses)?,
            _ => None,
        };
        let mut st = LayerStore::create(&store::layer_dir(&self.data, layer), self.layout, state, self.state_mapping)?;
        let mut init = kernel::InitStats::default();
        let mut decided = kernel::Decided::default();
        let started = std::time::Instant::now();
        for (&s, file) in st.shards.iter_mut() {
            let src = counts.shard(s)?;
            if let Some(known) = &known {
                let base = self.layout.range(s).start;
                let contains = |r| known.contains(r);
                let (i, d) = kernel::init_with_known_losses(
                    &self.game,
                    q,
                    base,
                    src.bytes(),
                    &contains,
                    file.bytes_mut(),
                    self.threads,
                )?;
                init.add(&i);
                decided.add(&d);
            } else {
                let i = kernel::init_from_counts(
                    q,
                    Codes::of(&self.game, false),
                    src.bytes(),
                    file.bytes_mut(),
                    self.threads,
                );
                init.add(&i);
                decided.add(&kernel::Decided { win: i.terminal_win, loss: i.terminal - i.terminal_win });
            }
        }
        if let Some(known) = &known {
            tracing::info!(
                "layer {layer} starts from {} positions known LOSS by the layers before it: {} decided at init, \
                 {:.1}s",
                known.count(),
                decided.total(),
                started.elapsed().as_secs_f64()
            );
        }
        st.state.init = init;
        st.state.seeded = known.is_some();
        let record = RoundRecord { round: 0, win: decided.win, loss: decided.loss, ..Default::default() };
        // With spaced checkpoints (an embedded run, the state private) round 0
        // is not made durable: it is the counts' image, recomputed in under a
        // minute, while writing it costs a whole copy of the state (14.8 GB at
        // stage 2, where the next two checkpoints write whole copies anyway).
        // A crash before the layer's first checkpoint starts the layer again
        // from its init, which the coordinator asks for: it does not save its
        // manifest at such an init either (`Scheduler::checkpoint_every`).
        st.commit(record.clone(), self.state_mapping == shardfile::Mapping::Shared)?;
        self.layer = Some(st);
        self.set_progress();
        Ok(TaskOutcome { record, init: Some(init), durability_seconds: 0.0, seeded: known.is_some() })
    }

    /// The move counts of the owned shards: opened, or computed once for the job.
    fn counts(&self, shards: &[u32]) -> Result<store::CountsStore, TaskError> {
        let dir = store::counts_dir(&self.data);
        if let Some(c) = store::CountsStore::open(&dir, self.layout, &self.spec.plan_hash, shards)? {
            return Ok(c);
        }
        let started = std::time::Instant::now();
        let mut done = 0u64;
        let mut n = 0;
        store::CountsStore::build(&dir, self.layout, &self.spec.plan_hash, shards, |s, bytes| {
            kernel::count_moves(&self.game, self.layout.range(s).start, bytes, self.threads)?;
            done += bytes.len() as u64;
            n += 1;
            let secs = started.elapsed().as_secs_f64();
            tracing::info!(
                "move counts: shard {s} done ({n} of {} shards, {done} positions, {:.1} M/s, {secs:.0}s)",
                shards.len(),
                done as f64 / secs.max(1e-9) / 1e6
            );
            Fault::check(&self.fault, "after-counts-shard", 0, n);
            Ok::<(), TaskError>(())
        })
    }

    /// Scans the frontier of `round` slice by slice: records (one per decided
    /// position, see [`routed`]) for this worker's shards are applied as they
    /// come (once per round, under undo protection), records for other
    /// workers go to `remote` (only when `send` is set).
    /// Memory stays bounded by [`buffered_records_limit`].
    fn run_generation(
        &mut self,
        layer: u32,
        round: u32,
        owner: &BTreeMap<u32, String>,
        send: bool,
        remote: RemoteSink<'_>,
    ) -> Result<(), TaskError> {
        let q = self.spec.question(layer)?;
        if !self.work.as_ref().is_some_and(|w| w.layer == layer && w.round == round) {
            self.work = Some(RoundWork {
                layer,
                round,
                local_applied: false,
                decided: Default::default(),
                sent: BTreeMap::new(),
                frontier: 0,
                frontier_chunks: BTreeMap::new(),
                written: BTreeMap::new(),
                fault_checked: false,
                times: PhaseTimes::default(),
            });
        }
        let mut work = self.work.take().expect("set above");
        let apply_local = !work.local_applied;
        work.sent.clear();
        work.frontier = 0;
        work.frontier_chunks.clear();
        let mut store = self.layer.take().ok_or(TaskError::NoLayerOpen)?;
        let result = (|| {
            let store = &mut store;
            let shards: Vec<u32> = store.shards.keys().copied().collect();
            let codes = store.codes(&self.game);
            let mut local: Vec<(u32, Vec<u64>)> = Vec::new();
            let mut buffered = 0usize;
            let limit = buffered_records_limit(store.shards.values().map(|s| s.bytes().len() as u64).sum());
            let hint = self.hint.as_ref().filter(|h| h.layer == layer && h.round + 1 == round);
            // The pieces of each shard to scan: all of it, or the chunks the
            // last round wrote.
            let mut pieces = Vec::new();
            for &s in &shards {
                let len = store.shards[&s].bytes().len();
                let ranges = match hint {
                    Some(h) => chunk_runs(h.chunks.get(&s).map_or(&[], |c| c.as_slice()), self.layout.chunk_len, len),
                    None => std::iter::once(0..len).collect(),
                };
                for range in ranges {
                    let mut lo = range.start;
                    while lo < range.end {
                        let hi = (lo + SLICE_POSITIONS).min(range.end);
                        pieces.push((s, lo..hi));
                        lo = hi;
                    }
                }
            }
            for (s, piece) in pieces {
                let start = self.layout.range(s).start;
                let bytes = &store.shards[&s].bytes()[piece.clone()];
                let t = std::time::Instant::now();
                let g = routed::scan_frontier(
                    &self.game,
                    &self.layout,
                    codes,
                    round,
                    start + piece.start as u64,
                    bytes,
                    self.threads,
                );
                work.times.scan += secs(t);
                work.frontier += g.frontier;
                work.frontier_chunks.entry(s).or_default().extend(g.frontier_chunks);
                for (dest, keys) in g.buckets {
                    let w = owner.get(&dest).ok_or(TaskError::NoOwner { shard: dest })?;
                    *work.sent.entry(w.clone()).or_default() += keys.len() as u64;
                    if *w == self.worker_id {
                        if apply_local {
                            buffered += keys.len();
                            local.push((dest, keys));
                        }
                    } else if send {
                        remote(w, dest, keys)?;
                    }
                }
                if buffered >= limit {
                    apply_buffered(self, store, &mut work, q, std::mem::take(&mut local))?;
                    buffered = 0;
                }
            }
            if apply_local {
                apply_buffered(self, store, &mut work, q, local)?;
            }
            // The frontier is what the last round decided here: a scan that
            // found another number (a hint that missed a chunk) is an error,
            // never a round applied with positions left out.
            if let Some(prev) = round.checked_sub(1).filter(|&r| r > 0).and_then(|r| store.record(r))
                && prev.win + prev.loss != work.frontier
            {
                return Err(TaskError::FrontierMismatch {
                    layer,
                    round,
                    found: work.frontier,
                    decided: prev.win + prev.loss,
                    hinted: hint.is_some(),
                });
            }
            for chunks in work.frontier_chunks.values_mut() {
                chunks.dedup();
            }
            Ok(())
        })();
        if result.is_ok() {
            work.local_applied = true;
        }
        self.layer = Some(store);
        self.work = Some(work);
        result
    }

    /// Opens the layer and checks that `round` is the next one: `Some` with the
    /// stored record when it is already committed here (the task is a repeat).
    fn round_status(
        &mut self,
        layer: u32,
        round: u32,
        shards: &[u32],
        step: &'static str,
    ) -> Result<Option<TaskOutcome>, TaskError> {
        let Some(store) = self.open_layer(layer, shards)? else { return Err(no_init(&self.data, layer)) };
        let committed = store.live_round();
        if committed >= round {
            let record = store.record(round).cloned().unwrap_or_default();
            return Ok(Some(TaskOutcome { record, init: None, durability_seconds: 0.0, seeded: false }));
        }
        if committed + 1 != round {
            return Err(TaskError::OutOfOrder { step, layer, round, committed });
        }
        Ok(None)
    }

    /// GENERATE: scans the frontier, applies this worker's own records and hands
    /// the others' to `remote` as they are produced. Repeating it (after a lost
    /// peer, or a restarted coordinator) resends the same batches and applies
    /// nothing twice. A round already committed here is reported from its record.
    pub fn generate(
        &mut self,
        layer: u32,
        round: u32,
        shards: &[u32],
        owner: &BTreeMap<u32, String>,
        remote: RemoteSink<'_>,
    ) -> Result<TaskOutcome, TaskError> {
        if let Some(done) = self.round_status(layer, round, shards, "generate")? {
            return Ok(done);
        }
        self.run_generation(layer, round, owner, true, remote)?;
        let work = self.work.as_ref().expect("set by run_generation");
        let record = RoundRecord { round, frontier: work.frontier, sent: work.sent.clone(), ..Default::default() };
        Ok(TaskOutcome { record, init: None, durability_seconds: 0.0, seeded: false })
    }

    /// APPLY: applies the records other workers sent (their inbox files, checked
    /// against the counts they reported), settles the previous frontier and
    /// commits the round. After a restart the local half is redone first.
    ///
    /// With `checkpoint` the round is made durable (see [`LayerStore`]): asked
    /// again of a round committed without one, it makes that round durable.
    #[allow(clippy::too_many_arguments)] // the task's fields, each distinct
    pub fn apply(
        &mut self,
        layer: u32,
        round: u32,
        shards: &[u32],
        owner: &BTreeMap<u32, String>,
        expected: &BTreeMap<String, u64>,
        checkpoint: bool,
    ) -> Result<TaskOutcome, TaskError> {
        if let Some(done) = self.round_status(layer, round, shards, "apply")? {
            if checkpoint {
                let store = self.layer.as_mut().expect("opened by round_status");
                if store.live_round() == round {
                    store.checkpoint()?;
                }
            }
            return Ok(done);
        }
        if !self.work.as_ref().is_some_and(|w| w.layer == layer && w.round == round && w.local_applied) {
            self.run_generation(layer, round, owner, false, &mut |_, _, _| Ok(()))?;
        }
        let q = self.spec.question(layer)?;
        let mut work = self.work.take().expect("set by run_generation");
        let mut store = self.layer.take().expect("opened by round_status");
        let result = (|| {
            let store = &mut store;
            for (source, &count) in expected {
                if *source == self.worker_id || count == 0 {
                    continue;
                }
                let path = store::inbox_path(&self.data, layer, round, source);
                // Checked whole before anything is applied; then applied a
                // group at a time, so memory does not grow with the round.
                let inbox = batch::Inbox::open(&path, count)?;
                let got = inbox.total();
                if got != count {
                    return Err(TaskError::InboxCount { path, got, source_worker: source.clone(), sent: count });
                }
                if let Some(dest) = inbox.shards().find(|d| !shards.contains(d)) {
                    return Err(TaskError::ForeignBatch { path, shard: dest });
                }
                for group in inbox.groups(APPLY_GROUP_RECORDS) {
                    apply_buffered(self, store, &mut work, q, group?)?;
                }
            }
            // Settle the frontier this round propagated (undo-protected too),
            // where its codes are the parity codes used again two rounds on;
            // a tagged round's codes stay, holding the positions' depth.
            let codes = store.codes(&self.game);
            let mut settle = 0.0;
            if codes.needs_settling(round - 1) {
                let frontier: Vec<(u32, Vec<u64>)> =
                    work.frontier_chunks.iter().map(|(&s, c)| (s, c.clone())).collect();
                let t = std::time::Instant::now();
                save_chunks(self, store, frontier)?;
                work.times.undo += secs(t);
                let t = std::time::Instant::now();
                for (&s, chunks) in &work.frontier_chunks {
                    let file = store.shards.get_mut(&s).expect("owned shard");
                    kernel::settle_frontier(&self.layout, codes, round, file.bytes_mut(), chunks, self.threads);
                }
                settle = secs(t);
            }
            let record = RoundRecord {
                round,
                win: work.decided.win,
                loss: work.decided.loss,
                frontier: work.frontier,
                sent: work.sent.clone(),
            };
            let t = std::time::Instant::now();
            store.commit(record.clone(), checkpoint)?;
            work.times.flush = secs(t);
            let times = work.times;
            tracing::info!(
                "layer {layer} round {round}: {} decided here, frontier {}; scan {:.2}s, route {:.2}s, undo \
                 {:.2}s, apply {:.2}s, settle {settle:.2}s, commit {:.2}s{}",
                work.decided.total(),
                work.frontier,
                times.scan,
                times.route,
                times.undo,
                times.apply,
                times.flush,
                if checkpoint { " (checkpoint)" } else { "" },
            );
            // Received batches of this round are applied for good.
            if let Ok(entries) = std::fs::read_dir(store::inbox_dir(&self.data, layer)) {
                let prefix = format!("r{round}-");
                for e in entries.flatten() {
                    if e.file_name().to_string_lossy().starts_with(&prefix) {
                        shardfile::remove_if_exists(&e.path())?;
                    }
                }
            }
            Ok(record)
        })();
        self.layer = Some(store);
        let record = match result {
            Ok(r) => r,
            Err(e) => {
                self.work = Some(work);
                return Err(e);
            }
        };
        let durability_seconds = work.times.undo + work.times.flush;
        let mut chunks = work.written;
        for c in chunks.values_mut() {
            c.sort_unstable();
            c.dedup();
        }
        self.hint = Some(FrontierHint { layer, round, chunks });
        self.work = None;
        self.set_progress();
        Fault::check(&self.fault, "after-apply", layer, round);
        Ok(TaskOutcome { record, init: None, durability_seconds, seeded: false })
    }

    /// EXPORT: the owned shards as compressed tablebase blocks, in order: each
    /// block's 2-bit values and its depth bytes.
    pub fn export(
        &mut self,
        layer: u32,
        shards: &[u32],
        mut emit: impl FnMut(ExportedBlock) -> bool,
    ) -> Result<u64, TaskError> {
        let bp = self.layout.block_positions;
        let layout = self.layout;
        if self.open_layer(layer, shards)?.is_none() {
            return Err(no_init(&self.data, layer));
        }
        // The layer is complete: each shard is unmapped as soon as it is
        // exported, so its pages (a whole layer at stage 2) leave this
        // process's resident set while the rest is packed, not after; the
        // export's own peak is then one shard's pages, not the layer's. A
        // retried export (the store is gone from `self`) maps it again.
        let mut store = self.layer.take().expect("opened above");
        let codes = store.codes(&self.game);
        self.work = None;
        let mut blocks = 0;
        while let Some((s, file)) = store.shards.pop_first() {
            let r = layout.range(s);
            let bytes = file.bytes();
            for (i, chunk) in bytes.chunks(bp as usize).enumerate() {
                let packed = tablebase::pack_values(&kernel::tablebase_values(codes, chunk));
                let depth = kernel::depths(codes, chunk);
                let block = ExportedBlock {
                    index: r.start / bp + i as u64,
                    values_crc: crc32fast::hash(&packed),
                    values: tablebase::compress_block(&packed)?,
                    depth_crc: crc32fast::hash(&depth),
                    depth: tablebase::compress_block(&depth)?,
                };
                if !emit(block) {
                    return Err(TaskError::UploadInterrupted);
                }
                blocks += 1;
            }
        }
        Ok(blocks)
    }

    /// DONE: removes the layer files (the coordinator holds the tablebases).
    pub fn finish(&mut self) {
        self.layer = None;
        self.work = None;
        for l in 0..self.spec.questions.len() as u32 {
            let _ = std::fs::remove_dir_all(store::layer_dir(&self.data, l));
        }
        let _ = std::fs::remove_dir_all(store::counts_dir(&self.data));
        self.set_progress();
    }
}

/// One tablebase block of an export: its index, its packed 2-bit values and
/// its depth bytes, each compressed and with the crc32 of its raw bytes.
pub struct ExportedBlock {
    /// Block index in the layer.
    pub index: u64,
    /// The packed values, compressed ([`tablebase::compress_block`]).
    pub values: Vec<u8>,
    /// crc32 of the packed values.
    pub values_crc: u32,
    /// The depth bytes, compressed.
    pub depth: Vec<u8>,
    /// crc32 of the depth bytes.
    pub depth_crc: u32,
}

/// The position ranges of a shard of `len` positions covered by `chunks`
/// (sorted chunk numbers of `chunk_len` positions), consecutive chunks merged.
pub fn chunk_runs(chunks: &[u64], chunk_len: u64, len: usize) -> Vec<std::ops::Range<usize>> {
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for &c in chunks {
        let lo = ((c * chunk_len) as usize).min(len);
        let hi = (((c + 1) * chunk_len) as usize).min(len);
        match runs.last_mut() {
            Some(last) if last.end == lo => last.end = hi,
            _ if lo < hi => runs.push(lo..hi),
            _ => {}
        }
    }
    runs
}

/// Runs `f` on every item, on up to `threads` threads (contiguous groups), and
/// returns the results in item order.
fn par_map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 || threads <= 1 {
        return items.iter().map(f).collect();
    }
    let per = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            items.chunks(per).map(|group| scope.spawn(move || group.iter().map(f).collect::<Vec<R>>())).collect();
        handles.into_iter().flat_map(|h| h.join().expect("worker thread panicked")).collect()
    })
}

/// For each `(shard, chunks)`, saves the chunks not yet saved since the last
/// checkpoint to the shard's undo log (fsynced; a shared mapping only, see
/// [`LayerStore::keeps_undo_logs`]) and marks them saved, so they may now be
/// modified. Each shard has its own log, so the shards are saved at
/// once: the copy into the page cache and the fsync are otherwise the serial
/// part of a round.
fn save_chunks(core: &WorkerCore, store: &mut LayerStore, wanted: Vec<(u32, Vec<u64>)>) -> Result<(), TaskError> {
    let undo = store.keeps_undo_logs();
    let mut jobs = Vec::new();
    for (s, chunks) in wanted {
        if !store.shards.contains_key(&s) {
            return Err(TaskError::NotOurShard { shard: s });
        }
        let flags = store.saved_mut(s);
        let mut fresh: Vec<u64> = chunks.into_iter().filter(|&c| !flags[c as usize]).collect();
        fresh.sort_unstable();
        fresh.dedup();
        if !fresh.is_empty() {
            jobs.push((s, fresh));
        }
    }
    // With a private mapping the files keep the checkpoint until the next
    // one: the chunks are only marked as changed (for their checksums).
    if undo {
        let chunk_len = core.layout.chunk_len;
        let undo_round = store.undo_round();
        let files: Vec<(&ShardFile, PathBuf, &Vec<u64>)> = jobs
            .iter()
            .map(|(s, fresh)| (&store.shards[s], store::undo_path(&store.dir, undo_round, *s), fresh))
            .collect();
        par_map(&files, core.threads, |(file, path, fresh)| {
            shardfile::append_undo(path, file.bytes(), chunk_len, fresh)
        })
        .into_iter()
        .collect::<Result<(), _>>()?;
    }
    for (s, fresh) in jobs {
        let flags = store.saved_mut(s);
        for c in fresh {
            flags[c as usize] = true;
        }
    }
    Ok(())
}

/// Applies buffered `(destination shard, records)` lists to the owned shards:
/// routes each shard's records to its regions, saves every chunk their blocks
/// overlap to the undo logs, then applies them region by region.
fn apply_buffered(
    core: &WorkerCore,
    store: &mut LayerStore,
    work: &mut RoundWork,
    q: retro_games::Question,
    batches: Vec<(u32, Vec<u64>)>,
) -> Result<(), TaskError> {
    let mut by_shard: BTreeMap<u32, Vec<Vec<u64>>> = BTreeMap::new();
    for (dest, keys) in batches {
        by_shard.entry(dest).or_default().push(keys);
    }
    for (s, lists) in by_shard {
        let t = std::time::Instant::now();
        let refs: Vec<&[u64]> = lists.iter().map(|v| v.as_slice()).collect();
        let routed = routed::route(&core.game, &core.layout, s, &refs, core.threads)?;
        // The records live on grouped in `routed`.
        drop(refs);
        drop(lists);
        work.times.route += secs(t);
        let t = std::time::Instant::now();
        save_chunks(core, store, vec![(s, routed.touched.clone())])?;
        work.times.undo += secs(t);
        work.written.entry(s).or_default().extend_from_slice(&routed.touched);
        let t = std::time::Instant::now();
        let codes = store.codes(&core.game);
        let file = store.shards.get_mut(&s).expect("save_chunks refuses a shard that is not ours");
        let d = routed::apply_routed(&core.game, q, codes, work.round, file.bytes_mut(), &routed, core.threads)?;
        work.times.apply += secs(t);
        work.decided.add(&d);
        if !work.fault_checked {
            work.fault_checked = true;
            Fault::check(&core.fault, "mid-apply", work.layer, work.round);
        }
    }
    Ok(())
}

/// Why a layer cannot be opened for a round: its state file is missing (never
/// written, or deleted), named so that the operator can look.
fn no_init(data: &std::path::Path, layer: u32) -> TaskError {
    let state = store::layer_dir(data, layer).join("state.json");
    TaskError::NoInit { layer, state }
}
