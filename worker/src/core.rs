//! The worker's tasks as blocking functions over its layer store. The async
//! pull loop ([`crate::run`]) runs them on blocking threads and does the
//! network part (sending batches, uploading blocks).

use crate::fault::Fault;
use crate::spec::{JobSpec, SpecError};
use crate::store::{self, LayerState, LayerStore, RoundRecord, STATE_FORMAT_VERSION, StoreError};
use retro_engine::batch::{self, BatchError};
use retro_engine::kernel::{self, KernelError};
use retro_engine::layout::Layout;
use retro_engine::shardfile;
use retro_engine::tablebase::{self, TablebaseError};
use retro_games::RetroGame;
use retro_games::cc3::Cc3;
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
    /// The task does not fit the worker's state.
    #[error("{0}")]
    State(String),
    /// A peer could not be reached; the task can be retried later.
    #[error("{0}")]
    PeerUnreachable(String),
}

/// What a worker's peer service needs to know to drop stale batches.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// Layer being solved, if any.
    pub layer: Option<u32>,
    /// Its committed round.
    pub committed: u32,
}

/// Updates produced by the generate step, kept for the apply step.
struct Pending {
    layer: u32,
    round: u32,
    local: Vec<(u32, Vec<u64>)>,
    frontier_chunks: BTreeMap<u32, Vec<u64>>,
    sent: BTreeMap<String, u64>,
    frontier: u64,
}

/// `(destination shard, sorted keys)` lists, by destination worker id.
type BatchesByWorker = BTreeMap<String, Vec<(u32, Vec<u64>)>>;

/// Update batches for one remote worker.
pub struct Outgoing {
    /// Destination worker id.
    pub worker_id: String,
    /// Its peer address.
    pub address: String,
    /// `(destination shard, sorted keys)`.
    pub batches: Vec<(u32, Vec<u64>)>,
}

/// Result of a task, as reported to the coordinator.
#[derive(Clone, Debug, Default)]
pub struct TaskOutcome {
    /// Record of the round (init: round 0).
    pub record: RoundRecord,
    /// Init counts (INIT only).
    pub init: Option<kernel::InitStats>,
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
    pub game: Cc3,
    /// Shard layout.
    pub layout: Layout,
    /// Kernel threads.
    pub threads: usize,
    /// Fault injection point.
    pub fault: Option<Fault>,
    /// Shared with the peer service.
    pub progress: Arc<Mutex<Progress>>,
    layer: Option<LayerStore>,
    pending: Option<Pending>,
}

impl WorkerCore {
    /// A core for `spec`, with nothing open yet.
    pub fn new(
        data: PathBuf,
        spec: JobSpec,
        worker_id: String,
        threads: usize,
        fault: Option<Fault>,
        progress: Arc<Mutex<Progress>>,
    ) -> Result<WorkerCore, TaskError> {
        let game = spec.game()?;
        let layout = spec.layout(game.position_count());
        Ok(WorkerCore { data, spec, worker_id, game, layout, threads, fault, progress, layer: None, pending: None })
    }

    fn set_progress(&self) {
        let mut p = self.progress.lock().expect("progress lock");
        match &self.layer {
            Some(l) => *p = Progress { layer: Some(l.state.layer), committed: l.state.committed_round },
            None => *p = Progress::default(),
        }
    }

    /// Opens (recovering) the layer's store if it is not open.
    fn open_layer(&mut self, layer: u32, shards: &[u32]) -> Result<Option<&mut LayerStore>, TaskError> {
        let is_open = self.layer.as_ref().is_some_and(|l| l.state.layer == layer && l.state.shards == shards);
        if !is_open {
            self.layer = None;
            self.pending = None;
            let dir = store::layer_dir(&self.data, layer);
            self.layer = LayerStore::open(&dir, self.layout, &self.spec.plan_hash, layer, shards)?;
            self.set_progress();
        }
        Ok(self.layer.as_mut())
    }

    /// INIT: creates the layer's shard files and runs the init pass (round 0).
    pub fn init(&mut self, layer: u32, shards: &[u32]) -> Result<TaskOutcome, TaskError> {
        // Earlier layers are in the coordinator's tablebases by now.
        for l in 0..layer {
            let dir = store::layer_dir(&self.data, l);
            if dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(|e| TaskError::State(format!("{}: {e}", dir.display())))?;
            }
        }
        if let Some(store) = self.open_layer(layer, shards)? {
            let rec = store.record(0).cloned().unwrap_or_default();
            let init = store.state.init;
            return Ok(TaskOutcome { record: rec, init: Some(init) });
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
        };
        let counts = self.counts(shards)?;
        let mut st = LayerStore::create(&store::layer_dir(&self.data, layer), self.layout, state)?;
        let mut init = kernel::InitStats::default();
        for (&s, file) in st.shards.iter_mut() {
            let src = counts.shards.get(&s).ok_or_else(|| TaskError::State(format!("no move counts for shard {s}")))?;
            init.add(&kernel::init_from_counts(q, src.bytes(), file.bytes_mut(), self.threads));
        }
        st.state.init = init;
        let record = RoundRecord {
            round: 0,
            win: init.terminal_win,
            loss: init.terminal - init.terminal_win,
            ..Default::default()
        };
        st.commit(record.clone(), &BTreeMap::new())?;
        self.layer = Some(st);
        self.set_progress();
        Ok(TaskOutcome { record, init: Some(init) })
    }

    /// The move counts of the owned shards: opened, or computed once for the job.
    fn counts(&self, shards: &[u32]) -> Result<store::CountsStore, TaskError> {
        let dir = store::counts_dir(&self.data);
        if let Some(c) = store::CountsStore::open(&dir, self.layout, &self.spec.plan_hash, shards)? {
            return Ok(c);
        }
        let mut c = store::CountsStore::create(&dir, self.layout, shards)?;
        for (&s, file) in c.shards.iter_mut() {
            kernel::count_moves(&self.game, self.layout.range(s).start, file.bytes_mut(), self.threads)?;
        }
        c.commit(&self.spec.plan_hash)?;
        Ok(c)
    }

    /// Runs the generate step over the owned shards (no sending).
    fn generate_all(
        &self,
        store: &LayerStore,
        round: u32,
        owner: &BTreeMap<u32, String>,
    ) -> Result<(Pending, BatchesByWorker), TaskError> {
        let mut local = Vec::new();
        let mut remote: BTreeMap<String, Vec<(u32, Vec<u64>)>> = BTreeMap::new();
        let mut frontier_chunks = BTreeMap::new();
        let mut sent: BTreeMap<String, u64> = BTreeMap::new();
        let mut frontier = 0;
        for (&s, file) in &store.shards {
            let base = self.layout.range(s).start;
            let g = kernel::generate(&self.game, &self.layout, round, base, file.bytes(), self.threads);
            frontier += g.frontier;
            frontier_chunks.insert(s, g.frontier_chunks);
            for (dest, keys) in g.buckets {
                let w = owner
                    .get(&dest)
                    .ok_or_else(|| TaskError::State(format!("no worker owns shard {dest} in the peer table")))?;
                *sent.entry(w.clone()).or_default() += keys.len() as u64;
                if *w == self.worker_id {
                    local.push((dest, keys));
                } else {
                    remote.entry(w.clone()).or_default().push((dest, keys));
                }
            }
        }
        let layer = store.state.layer;
        Ok((Pending { layer, round, local, frontier_chunks, sent, frontier }, remote))
    }

    /// Opens the layer and checks that `round` is the next one: `Some` with the
    /// stored record when it is already committed here (the task is a repeat).
    fn round_status(
        &mut self,
        layer: u32,
        round: u32,
        shards: &[u32],
        step: &str,
    ) -> Result<Option<TaskOutcome>, TaskError> {
        let store =
            self.open_layer(layer, shards)?.ok_or_else(|| TaskError::State(format!("layer {layer} has no init")))?;
        let committed = store.state.committed_round;
        if committed >= round {
            let record = store.record(round).cloned().unwrap_or_default();
            return Ok(Some(TaskOutcome { record, init: None }));
        }
        if committed + 1 != round {
            return Err(TaskError::State(format!(
                "asked to {step} round {round} of layer {layer}, but round {committed} is committed here"
            )));
        }
        Ok(None)
    }

    /// GENERATE: returns the batches to send to other workers, and the report.
    /// A round this worker already committed is reported from its record.
    pub fn generate(
        &mut self,
        layer: u32,
        round: u32,
        shards: &[u32],
        owner: &BTreeMap<u32, String>,
        addresses: &BTreeMap<String, String>,
    ) -> Result<(Vec<Outgoing>, TaskOutcome), TaskError> {
        if let Some(done) = self.round_status(layer, round, shards, "generate")? {
            return Ok((Vec::new(), done));
        }
        let store = self.layer.as_ref().expect("opened above");
        let (pending, remote) = self.generate_all(store, round, owner)?;
        let record =
            RoundRecord { round, frontier: pending.frontier, sent: pending.sent.clone(), ..Default::default() };
        let outgoing = remote
            .into_iter()
            .map(|(w, batches)| {
                let address = addresses.get(&w).cloned().unwrap_or_default();
                Outgoing { worker_id: w, address, batches }
            })
            .collect();
        self.pending = Some(pending);
        Ok((outgoing, TaskOutcome { record, init: None }))
    }

    /// APPLY: applies local and received updates of `round`, with undo logs,
    /// then commits. `expected` is how many updates each other worker sent here.
    pub fn apply(
        &mut self,
        layer: u32,
        round: u32,
        shards: &[u32],
        owner: &BTreeMap<u32, String>,
        expected: &BTreeMap<String, u64>,
    ) -> Result<TaskOutcome, TaskError> {
        if let Some(done) = self.round_status(layer, round, shards, "apply")? {
            return Ok(done);
        }
        // Local updates: from the generate step, or regenerated from the
        // committed state after a restart (generation is deterministic).
        let pending = match self.pending.take() {
            Some(p) if p.layer == layer && p.round == round => p,
            _ => {
                let store = self.layer.as_ref().expect("opened above");
                self.generate_all(store, round, owner)?.0
            }
        };
        // Received updates, checked against what the senders reported.
        let mut lists: BTreeMap<u32, Vec<Vec<u64>>> = BTreeMap::new();
        for (dest, keys) in pending.local {
            lists.entry(dest).or_default().push(keys);
        }
        for (source, &count) in expected {
            if *source == self.worker_id || count == 0 {
                continue;
            }
            let path = store::inbox_path(&self.data, layer, round, source);
            let batches = batch::read_inbox(&path, count)?;
            let got: u64 = batches.iter().map(|(_, k)| k.len() as u64).sum();
            if got != count {
                return Err(TaskError::State(format!(
                    "{}: holds {got} updates, worker {source} reported sending {count}",
                    path.display()
                )));
            }
            for (dest, keys) in batches {
                if !shards.contains(&dest) {
                    return Err(TaskError::State(format!("{}: batch for shard {dest}, not ours", path.display())));
                }
                lists.entry(dest).or_default().push(keys);
            }
        }
        let q = self.spec.question(layer)?;
        let store = self.layer.as_mut().expect("opened above");
        let mut decided = kernel::Decided::default();
        let mut touched_all = BTreeMap::new();
        let empty: Vec<u64> = Vec::new();
        for (&s, file) in store.shards.iter_mut() {
            let base = self.layout.range(s).start;
            let refs: Vec<&[u64]> = lists.get(&s).map(|l| l.iter().map(|v| v.as_slice()).collect()).unwrap_or_default();
            let fchunks = pending.frontier_chunks.get(&s).unwrap_or(&empty);
            let touched = kernel::touched_chunks(&self.layout, base, fchunks, &refs);
            if touched.is_empty() {
                continue;
            }
            shardfile::write_undo(
                &store::undo_path(&store.dir, round, s),
                file.bytes(),
                self.layout.chunk_len,
                &touched,
            )?;
            let d = kernel::apply(
                &self.game,
                q,
                &self.layout,
                round,
                base,
                file.bytes_mut(),
                fchunks,
                &refs,
                self.threads,
            )?;
            decided.add(&d);
            Fault::check(&self.fault, "mid-apply", layer, round);
            touched_all.insert(s, touched);
        }
        let record =
            RoundRecord { round, win: decided.win, loss: decided.loss, frontier: pending.frontier, sent: pending.sent };
        store.commit(record.clone(), &touched_all)?;
        for &s in shards {
            shardfile::remove_if_exists(&store::undo_path(&store.dir, round, s))?;
        }
        // Received batches of this round are applied for good.
        if let Ok(entries) = std::fs::read_dir(store::inbox_dir(&self.data, layer)) {
            let prefix = format!("r{round}-");
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    shardfile::remove_if_exists(&e.path())?;
                }
            }
        }
        self.set_progress();
        Fault::check(&self.fault, "after-apply", layer, round);
        Ok(TaskOutcome { record, init: None })
    }

    /// EXPORT: the owned shards as compressed 2-bit tablebase blocks, in order,
    /// as `(block index, compressed bytes, crc32 of the packed bytes)`.
    pub fn export(
        &mut self,
        layer: u32,
        shards: &[u32],
        mut emit: impl FnMut(u64, Vec<u8>, u32) -> bool,
    ) -> Result<u64, TaskError> {
        let bp = self.layout.block_positions;
        let layout = self.layout;
        let store =
            self.open_layer(layer, shards)?.ok_or_else(|| TaskError::State(format!("layer {layer} has no init")))?;
        let mut blocks = 0;
        for (&s, file) in &store.shards {
            let r = layout.range(s);
            let bytes = file.bytes();
            for (i, chunk) in bytes.chunks(bp as usize).enumerate() {
                let packed = tablebase::pack_values(&kernel::tablebase_values(chunk));
                let crc = crc32fast::hash(&packed);
                let compressed = tablebase::compress_block(&packed)?;
                if !emit(r.start / bp + i as u64, compressed, crc) {
                    return Err(TaskError::State("upload to the coordinator was interrupted".into()));
                }
                blocks += 1;
            }
        }
        Ok(blocks)
    }

    /// DONE: removes the layer files (the coordinator holds the tablebases).
    pub fn finish(&mut self) {
        self.layer = None;
        self.pending = None;
        for l in 0..self.spec.questions.len() as u32 {
            let _ = std::fs::remove_dir_all(store::layer_dir(&self.data, l));
        }
        let _ = std::fs::remove_dir_all(store::counts_dir(&self.data));
        self.set_progress();
    }
}
