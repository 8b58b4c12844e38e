//! The on-disk state of one layer on one worker, and its crash recovery.
//!
//! ```text
//! <data>/identity.json                 job, worker id, plan hash, generation (checked JSON)
//! <data>/data-id.json                  the directory's own name, made before its first join
//! <data>/layer-<L>/state.json          committed round, per-round records, chunk checksums
//! <data>/layer-<L>/shard-<S>.bin       one state byte per position (memory-mapped)
//! <data>/layer-<L>/shard-<S>.alt.bin   its second file (private mapping): checkpoints
//!                                      alternate between the two, `state.json` names one
//! <data>/layer-<L>/undo-r<R>-s<S>.bin  bytes at committed round R-1 of the chunks that
//!                                      rounds R, R+1, ... (up to the next checkpoint) touch
//!                                      (shared mapping)
//! <data>/layer-<L>/inbox/r<R>-from-<W>.inbox   update batches received for round R
//! ```
//!
//! Recovery design (undo at chunk granularity, see docs/RECOVERY.md): before a
//! round modifies a shard, the pre-round bytes of every chunk it will touch go
//! to an fsynced undo log. The round is committed by msync of the shard and an
//! atomic rename of `state.json`. On open, an undo log of the round after the
//! committed one is restored (the round died half-applied); any other undo log
//! is stale and removed. Then every chunk is checked against its checksum, so a
//! truncated or edited shard file is an error, never a silent wrong answer.
//!
//! With a private mapping (an embedded run, [`layer_mapping`]) nothing reaches
//! the files between checkpoints, so no undo log is needed: a checkpoint
//! writes the state to the shard's other file (the chunks changed since that
//! file's own checkpoint, once it is known to hold one) and then names it in
//! `state.json`; a crash before that rename leaves the last checkpoint's file
//! as it was.

use retro_engine::durable::{DurableError, read_checked_json, write_checked_json};
use retro_engine::kernel::InitStats;
use retro_engine::layout::Layout;
use retro_engine::shardfile::{self, Mapping, ShardFile};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Version of the worker's on-disk format. 2: a decided position's state
/// byte holds the round it was decided in ([`retro_engine::values::Codes`]);
/// a version-1 layer's bytes would read as other rounds, so it is refused.
pub const STATE_FORMAT_VERSION: u32 = 2;

/// Version of the move counts' on-disk format (unchanged by the state's
/// version 2: counts are the same bytes).
pub const COUNTS_FORMAT_VERSION: u32 = 1;

/// Errors of the worker's storage.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file could not be read or written, or fails its checksum.
    #[error(transparent)]
    Durable(#[from] DurableError),
    /// The state on disk belongs to another job or plan, or is inconsistent.
    #[error("{path}: {why}")]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// What does not match.
        why: String,
    },
}

/// Who this worker is, stored in its data directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Job name.
    pub job: String,
    /// Worker id assigned by the coordinator.
    pub worker_id: String,
    /// Plan hash of the job.
    pub plan_hash: String,
    /// The generation the coordinator gave this directory at its last join
    /// (0 in identities older than the field): presented at the next join,
    /// where an older one than the job's marks a stale copy.
    #[serde(default)]
    pub generation: u64,
}

/// The data directory's own name ([`data_id`]).
#[derive(Serialize, Deserialize)]
struct DataId {
    data_id: String,
}

/// The data directory's own name, made (and stored) on first use: the
/// coordinator knows a worker by it until the worker has stored its id, so
/// a worker stopped in between is not taken for one more worker.
pub fn data_id(data: &Path) -> Result<String, StoreError> {
    let path = data.join("data-id.json");
    if let Some(found) = read_checked_json::<DataId>(&path)? {
        return Ok(found.data_id);
    }
    // Unique enough without a random source: the clock in nanoseconds, the
    // process and the directory's inode tell two new directories apart.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let inode = {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(data).map_or(0, |m| m.ino())
    };
    let id = DataId { data_id: format!("{nanos:x}-{:x}-{inode:x}", std::process::id()) };
    fs::create_dir_all(data).map_err(retro_engine::durable::io_err(data)).map_err(StoreError::from)?;
    write_checked_json(&path, &id)?;
    Ok(id.data_id)
}

/// Reads the identity file, if any.
pub fn read_identity(data: &Path) -> Result<Option<Identity>, StoreError> {
    Ok(read_checked_json(&data.join("identity.json"))?)
}

/// Writes the identity file.
pub fn write_identity(data: &Path, id: &Identity) -> Result<(), StoreError> {
    fs::create_dir_all(data).map_err(retro_engine::durable::io_err(data)).map_err(StoreError::from)?;
    Ok(write_checked_json(&data.join("identity.json"), id)?)
}

/// What one round did on this worker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundRecord {
    /// Round number (0 is the init pass).
    pub round: u32,
    /// Positions decided WIN for MAX in this round.
    pub win: u64,
    /// Positions decided LOSS for MAX in this round.
    pub loss: u64,
    /// Frontier size that generated this round's updates.
    pub frontier: u64,
    /// Updates this worker's frontier sent to each worker (by id, itself included).
    pub sent: BTreeMap<String, u64>,
}

/// The committed state of one layer on this worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerState {
    /// On-disk format version.
    pub format_version: u32,
    /// Plan hash of the job.
    pub plan_hash: String,
    /// Layer index.
    pub layer: u32,
    /// The shards this worker owns.
    pub shards: Vec<u32>,
    /// Last committed round (0 = init done).
    pub committed_round: u32,
    /// Init pass counts.
    pub init: InitStats,
    /// One record per committed round, round 0 first.
    pub rounds: Vec<RoundRecord>,
    /// CRC-32 of every chunk of every owned shard, at the committed round.
    pub chunk_crcs: BTreeMap<u32, Vec<u32>>,
    /// The coordinator's attempt at this layer (it starts a layer again when
    /// a lost worker is replaced); absent in older state files, which are
    /// first attempts.
    #[serde(default)]
    pub attempt: u32,
    /// The init started from LOSS positions earlier layers prove.
    #[serde(default)]
    pub seeded: bool,
    /// Which of each shard's two files holds the checkpoint: 0 `shard-<S>.bin`,
    /// 1 `shard-<S>.alt.bin` (only checkpoints of a private mapping move it).
    #[serde(default)]
    pub checkpoint_file: u8,
}

/// The attempt recorded in the layer directory `dir`, if it holds a layer.
pub fn layer_attempt(dir: &Path) -> Result<Option<u32>, StoreError> {
    let state: Option<LayerState> = read_checked_json(&dir.join("state.json"))?;
    Ok(state.map(|s| s.attempt))
}

/// One layer's files, open.
///
/// Rounds commit in two strengths. A checkpoint (durable commit) flushes the
/// shards, records the chunk checksums and writes `state.json`; a plain commit
/// only moves the live round on, in memory, and keeps the undo logs of the
/// rounds since the checkpoint, which save each chunk once however many of
/// those rounds touch it. A crash rolls back to the checkpoint, and the rounds
/// after it are replayed (they are deterministic).
pub struct LayerStore {
    /// The layer directory.
    pub dir: PathBuf,
    /// State at the last checkpoint (what `state.json` holds).
    pub state: LayerState,
    /// Owned shards and their mapped files.
    pub shards: BTreeMap<u32, ShardFile>,
    /// The shard layout.
    pub layout: Layout,
    /// Records of the rounds committed since the checkpoint, in order.
    live: Vec<RoundRecord>,
    /// Chunks changed since the checkpoint (saved to the undo logs first,
    /// with a shared mapping), per shard.
    saved: BTreeMap<u32, Vec<bool>>,
    /// How the shard files are mapped.
    mapping: Mapping,
    /// A private mapping's chunks changed between the checkpoint before the
    /// current one and the current one, per shard, when the file that is not
    /// current holds that earlier checkpoint (`None`: not known, after an open
    /// or a create): the next checkpoint, which writes that file, then writes
    /// only these chunks and the ones changed since.
    behind: Option<BTreeMap<u32, Vec<bool>>>,
}

/// How a layer's shard files are mapped: privately where checkpoints are
/// spaced (an embedded run), so that the rounds between two of them write
/// nothing to disk; shared where every round is one (a cluster worker, whose
/// shards may also be larger than its memory). See [`Mapping`].
pub fn layer_mapping(spaced_checkpoints: bool) -> Mapping {
    if spaced_checkpoints { Mapping::Private } else { Mapping::Shared }
}

/// Directory of layer `layer`.
pub fn layer_dir(data: &Path, layer: u32) -> PathBuf {
    data.join(format!("layer-{layer}"))
}

/// Inbox directory of a layer.
pub fn inbox_dir(data: &Path, layer: u32) -> PathBuf {
    layer_dir(data, layer).join("inbox")
}

/// Inbox file of round `round` from `source`.
pub fn inbox_path(data: &Path, layer: u32, round: u32, source: &str) -> PathBuf {
    inbox_dir(data, layer).join(format!("r{round}-from-{source}.inbox"))
}

fn shard_path(dir: &Path, s: u32) -> PathBuf {
    dir.join(format!("shard-{s}.bin"))
}

/// File `which` (0 or 1, see [`LayerState::checkpoint_file`]) of shard `s`.
pub fn layer_shard_path(dir: &Path, s: u32, which: u8) -> PathBuf {
    if which == 0 { shard_path(dir, s) } else { dir.join(format!("shard-{s}.alt.bin")) }
}

/// Undo log of round `round` for shard `s`.
pub fn undo_path(dir: &Path, round: u32, s: u32) -> PathBuf {
    dir.join(format!("undo-r{round}-s{s}.bin"))
}

impl LayerStore {
    /// The code layout of this layer's state bytes: the game's, seeded or not
    /// as the layer's init was.
    pub fn codes(&self, game: &impl retro_games::RetroGame) -> retro_engine::values::Codes {
        retro_engine::values::Codes::of(game, self.state.seeded)
    }

    /// Creates fresh shard files for a layer (any earlier attempt is wiped).
    pub fn create(dir: &Path, layout: Layout, state: LayerState, mapping: Mapping) -> Result<LayerStore, StoreError> {
        if dir.exists() {
            fs::remove_dir_all(dir).map_err(retro_engine::durable::io_err(dir)).map_err(StoreError::from)?;
        }
        fs::create_dir_all(dir.join("inbox")).map_err(retro_engine::durable::io_err(dir)).map_err(StoreError::from)?;
        let mut shards = BTreeMap::new();
        for &s in &state.shards {
            let r = layout.range(s);
            shards.insert(s, ShardFile::create_mapped(&shard_path(dir, s), r.end - r.start, mapping)?);
        }
        Ok(LayerStore {
            dir: dir.to_path_buf(),
            state,
            shards,
            layout,
            live: Vec::new(),
            saved: BTreeMap::new(),
            mapping,
            behind: None,
        })
    }

    /// Opens a layer whose init was committed, recovering from a crash mid-round.
    /// `Ok(None)` when the layer was never committed (init must run).
    pub fn open(
        dir: &Path,
        layout: Layout,
        plan_hash: &str,
        layer: u32,
        shards: &[u32],
        mapping: Mapping,
    ) -> Result<Option<LayerStore>, StoreError> {
        let state_path = dir.join("state.json");
        let Some(state): Option<LayerState> = read_checked_json(&state_path)? else {
            return Ok(None);
        };
        let mismatch = |why: String| StoreError::Mismatch { path: state_path.clone(), why };
        if state.format_version != STATE_FORMAT_VERSION {
            return Err(mismatch(format!(
                "format version {} (this build reads {STATE_FORMAT_VERSION}): finish the layer with the build \
                 that started it, or remove {} to start the layer again",
                state.format_version,
                dir.display()
            )));
        }
        if state.plan_hash != plan_hash {
            return Err(mismatch(format!(
                "belongs to plan {}, the job runs plan {plan_hash}; use another --data directory",
                state.plan_hash
            )));
        }
        if state.layer != layer || state.shards != shards {
            return Err(mismatch(format!(
                "holds layer {} shards {:?}, the coordinator assigned layer {layer} shards {shards:?}",
                state.layer, state.shards
            )));
        }
        let mut files = BTreeMap::new();
        for &s in shards {
            let r = layout.range(s);
            let path = layer_shard_path(dir, s, state.checkpoint_file);
            files.insert(s, ShardFile::open_mapped(&path, r.end - r.start, mapping)?);
        }
        let mut store = LayerStore {
            dir: dir.to_path_buf(),
            state,
            shards: files,
            layout,
            live: Vec::new(),
            saved: BTreeMap::new(),
            mapping,
            behind: None,
        };
        store.recover()?;
        Ok(Some(store))
    }

    /// Rolls back a half-applied round and verifies every chunk checksum.
    /// Undo logs are removed only once the checksums hold: a log that could
    /// not be read whole is named in the error and kept for inspection.
    fn recover(&mut self) -> Result<(), StoreError> {
        let next = self.state.committed_round + 1;
        let entries = fs::read_dir(&self.dir).map_err(retro_engine::durable::io_err(&self.dir))?;
        let mut logs = Vec::new();
        // Per shard, an undo log of the half-applied round with bytes that
        // did not form a segment: torn (harmless) or damaged (the checksums tell).
        let mut unread: BTreeMap<u32, (PathBuf, usize)> = BTreeMap::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(rest) = name.strip_prefix("undo-r").and_then(|r| r.strip_suffix(".bin")) else {
                continue;
            };
            let parsed =
                rest.split_once("-s").and_then(|(r, s)| Some((r.parse::<u32>().ok()?, s.parse::<u32>().ok()?)));
            if let Some((round, s)) = parsed
                && round == next
                && let Some(file) = self.shards.get_mut(&s)
            {
                let restored = shardfile::restore_undo(&entry.path(), file.bytes_mut())?;
                if restored.unread_bytes > 0 {
                    unread.insert(s, (entry.path(), restored.unread_bytes));
                }
                if restored.segments > 0 {
                    file.flush()?;
                    tracing::warn!(
                        "layer {} shard {s}: rolled back to checkpoint round {} from its undo log (the rounds \
                         after it are replayed)",
                        self.state.layer,
                        self.state.committed_round
                    );
                }
            }
            logs.push(entry.path());
        }
        for (&s, file) in &self.shards {
            let expect = self.state.chunk_crcs.get(&s).ok_or_else(|| StoreError::Mismatch {
                path: self.dir.join("state.json"),
                why: format!("no checksums for shard {s}"),
            })?;
            let actual = shardfile::chunk_crcs(file.bytes(), self.layout.chunk_len);
            if let Some(bad) = (0..expect.len().max(actual.len())).find(|&i| expect.get(i) != actual.get(i)) {
                if let Some((log, bytes)) = unread.get(&s) {
                    return Err(StoreError::Mismatch {
                        path: log.clone(),
                        why: format!(
                            "this undo log is damaged ({bytes} bytes at its end are not a complete segment), so \
                             the half-applied round {next} of shard {s} could not be rolled back (chunk {bad} \
                             differs from committed round {}); remove this worker's --data directory to redo \
                             the layer",
                            self.state.committed_round
                        ),
                    });
                }
                return Err(StoreError::Mismatch {
                    path: layer_shard_path(&self.dir, s, self.state.checkpoint_file),
                    why: format!(
                        "checkpoint chunk {bad} does not match its checksum at committed round {} (the file was \
                         altered or damaged); remove this worker's --data directory to redo the layer",
                        self.state.committed_round
                    ),
                });
            }
        }
        for log in logs {
            shardfile::remove_if_exists(&log)?;
        }
        Ok(())
    }

    /// The last committed round, checkpoint or not.
    pub fn live_round(&self) -> u32 {
        self.live.last().map_or(self.state.committed_round, |r| r.round)
    }

    /// The undo logs of the rounds since the checkpoint are named after the
    /// first of them.
    pub fn undo_round(&self) -> u32 {
        self.state.committed_round + 1
    }

    /// Whether a chunk is saved to the undo log before its first change since
    /// the checkpoint (a shared mapping); with a private one, nothing is.
    pub fn keeps_undo_logs(&self) -> bool {
        self.mapping == Mapping::Shared
    }

    /// Which chunks of shard `s` are changed (and, with undo logs, saved) since the checkpoint.
    pub fn saved_mut(&mut self, s: u32) -> &mut Vec<bool> {
        let chunks = self.layout.chunks(s) as usize;
        self.saved.entry(s).or_insert_with(|| vec![false; chunks])
    }

    /// Commits the current bytes as round `record.round`. With `checkpoint`:
    /// the shards made durable (msync of a shared mapping; a private one's
    /// write to its other file), checksums of every chunk changed since the
    /// last checkpoint, `state.json`, and the undo logs go. Without: the round is committed in
    /// memory only, and a crash replays it from the last checkpoint.
    pub fn commit(&mut self, record: RoundRecord, checkpoint: bool) -> Result<(), StoreError> {
        self.live.retain(|r| r.round < record.round);
        self.live.push(record);
        if checkpoint { self.checkpoint() } else { Ok(()) }
    }

    /// Makes the live round durable (a no-op when it already is).
    pub fn checkpoint(&mut self) -> Result<(), StoreError> {
        let Some(last) = self.live.last().map(|r| r.round) else {
            return Ok(());
        };
        // A private mapping writes the state to the shard's other file, which
        // `state.json` names last: a crash before then leaves the checkpoint's
        // file as it was. Where that other file holds the checkpoint before
        // the current one, only the chunks changed since are written. A shared
        // mapping flushes in place (its undo logs roll back a crash half-way).
        let target = 1 - self.state.checkpoint_file.min(1);
        // A created layer has no checksums until its first checkpoint.
        let had_checkpoint = !self.state.chunk_crcs.is_empty();
        let chunk_len = self.layout.chunk_len;
        let listed = |flags: Option<&Vec<bool>>| -> Vec<u64> {
            flags.map_or(Vec::new(), |f| f.iter().enumerate().filter(|(_, f)| **f).map(|(c, _)| c as u64).collect())
        };
        // One thread flushes, on purpose: msync write-protects each dirty page,
        // and with another thread of this process running on the other core
        // every page costs a TLB-shootdown interrupt (flushing the shards on two
        // threads took twice as long, 10 s against 4 s over the 7 x 7 game).
        for (&s, file) in &self.shards {
            match (self.mapping, &self.behind) {
                (Mapping::Shared, _) => file.flush()?,
                (Mapping::Private, None) => file.write_to(&layer_shard_path(&self.dir, s, target), None)?,
                (Mapping::Private, Some(behind)) => {
                    let mut chunks = listed(self.saved.get(&s));
                    chunks.extend(listed(behind.get(&s)));
                    chunks.sort_unstable();
                    chunks.dedup();
                    let runs = crate::steps::chunk_runs(&chunks, chunk_len, file.bytes().len());
                    file.write_to(&layer_shard_path(&self.dir, s, target), Some(&runs))?;
                }
            }
        }
        // The new state is written first and kept only once it is on disk: a
        // failed write leaves this store as it was, and a retry writes the
        // same file again (never the one `state.json` names).
        let mut next = self.state.clone();
        for (&s, file) in &self.shards {
            let crcs = next.chunk_crcs.entry(s).or_default();
            if crcs.is_empty() {
                *crcs = shardfile::chunk_crcs(file.bytes(), chunk_len);
            } else {
                shardfile::update_chunk_crcs(crcs, file.bytes(), chunk_len, &listed(self.saved.get(&s)));
            }
        }
        if self.mapping == Mapping::Private {
            next.checkpoint_file = target;
        }
        let undo_round = self.undo_round();
        next.committed_round = last;
        let first = self.live.first().map_or(last, |r| r.round);
        next.rounds.retain(|r| r.round < first);
        next.rounds.extend(self.live.iter().cloned());
        write_checked_json(&self.dir.join("state.json"), &next)?;
        self.state = next;
        self.live.clear();
        for &s in self.shards.keys() {
            shardfile::remove_if_exists(&undo_path(&self.dir, undo_round, s))?;
        }
        // The file just left holds the checkpoint before this one, if the
        // layer had one: the next checkpoint writes only what changed since.
        let changed = std::mem::take(&mut self.saved);
        self.behind = (self.mapping == Mapping::Private && had_checkpoint).then_some(changed);
        Ok(())
    }

    /// The record of a committed round.
    pub fn record(&self, round: u32) -> Option<&RoundRecord> {
        self.state.rounds.iter().chain(&self.live).find(|r| r.round == round)
    }
}

/// The move counts of every owned position, computed once per job and shared
/// by every layer's init (`<data>/counts/`). Count files are mapped one shard
/// at a time, so building or reading them adds one shard to the resident memory,
/// not a second copy of the whole space.
pub struct CountsStore {
    /// The directory.
    pub dir: PathBuf,
    shards: Vec<u32>,
    layout: Layout,
}

/// The committed state of the counts files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct CountsState {
    format_version: u32,
    plan_hash: String,
    shards: Vec<u32>,
    chunk_crcs: BTreeMap<u32, Vec<u32>>,
}

/// One finished shard of a count build that has not committed yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ShardDone {
    plan_hash: String,
    shard: u32,
    chunk_crcs: Vec<u32>,
}

impl CountsStore {
    /// Opens complete count files (every chunk verified), or `Ok(None)` when
    /// they were never completed.
    pub fn open(
        dir: &Path,
        layout: Layout,
        plan_hash: &str,
        shards: &[u32],
    ) -> Result<Option<CountsStore>, StoreError> {
        let state_path = dir.join("state.json");
        let Some(state): Option<CountsState> = read_checked_json(&state_path)? else {
            return Ok(None);
        };
        if state.format_version != COUNTS_FORMAT_VERSION || state.plan_hash != plan_hash || state.shards != shards {
            return Err(StoreError::Mismatch {
                path: state_path,
                why: format!(
                    "move counts of plan {} shards {:?}, the job runs plan {plan_hash} shards {shards:?}; use another \
                     --data directory",
                    state.plan_hash, state.shards
                ),
            });
        }
        let store = CountsStore { dir: dir.to_path_buf(), shards: shards.to_vec(), layout };
        for &s in shards {
            let file = store.shard(s)?;
            let crcs = shardfile::chunk_crcs(file.bytes(), layout.chunk_len);
            if state.chunk_crcs.get(&s) != Some(&crcs) {
                return Err(StoreError::Mismatch {
                    path: shard_path(dir, s),
                    why: "move counts do not match their checksums (altered or damaged); remove this worker's --data \
                          directory to recompute them"
                        .into(),
                });
            }
        }
        Ok(Some(store))
    }

    /// Builds the count files shard by shard with `fill`, then commits them.
    /// Each finished shard is recorded with its checksums (`shard-N.done`), so
    /// a build killed part-way resumes at the first unfinished shard: the pass
    /// takes a quarter of an hour at stage 2.
    pub fn build<E: From<StoreError>>(
        dir: &Path,
        layout: Layout,
        plan_hash: &str,
        shards: &[u32],
        mut fill: impl FnMut(u32, &mut [u8]) -> Result<(), E>,
    ) -> Result<CountsStore, E> {
        fs::create_dir_all(dir).map_err(retro_engine::durable::io_err(dir)).map_err(StoreError::from)?;
        let mut chunk_crcs = BTreeMap::new();
        for &s in shards {
            let r = layout.range(s);
            let done_path = dir.join(format!("shard-{s}.done"));
            let done: Option<ShardDone> = read_checked_json(&done_path).ok().flatten();
            if let Some(done) = done.filter(|d| d.plan_hash == plan_hash && d.shard == s) {
                // Finished before a restart: keep it if the bytes still match.
                if let Ok(file) = ShardFile::open(&shard_path(dir, s), r.end - r.start)
                    && shardfile::chunk_crcs(file.bytes(), layout.chunk_len) == done.chunk_crcs
                {
                    tracing::info!("move counts: shard {s} kept from an earlier run");
                    chunk_crcs.insert(s, done.chunk_crcs);
                    continue;
                }
            }
            let mut file = ShardFile::create(&shard_path(dir, s), r.end - r.start).map_err(StoreError::from)?;
            fill(s, file.bytes_mut())?;
            file.flush().map_err(StoreError::from)?;
            let crcs = shardfile::chunk_crcs(file.bytes(), layout.chunk_len);
            let done = ShardDone { plan_hash: plan_hash.to_string(), shard: s, chunk_crcs: crcs.clone() };
            write_checked_json(&done_path, &done).map_err(StoreError::from)?;
            chunk_crcs.insert(s, crcs);
        }
        let state = CountsState {
            format_version: COUNTS_FORMAT_VERSION,
            plan_hash: plan_hash.to_string(),
            shards: shards.to_vec(),
            chunk_crcs,
        };
        write_checked_json(&dir.join("state.json"), &state).map_err(StoreError::from)?;
        Ok(CountsStore { dir: dir.to_path_buf(), shards: shards.to_vec(), layout })
    }

    /// Maps the count file of one owned shard.
    pub fn shard(&self, s: u32) -> Result<ShardFile, StoreError> {
        if !self.shards.contains(&s) {
            return Err(StoreError::Mismatch { path: self.dir.clone(), why: format!("no move counts for shard {s}") });
        }
        let r = self.layout.range(s);
        Ok(ShardFile::open(&shard_path(&self.dir, s), r.end - r.start)?)
    }
}

/// Directory of the move counts.
pub fn counts_dir(data: &Path) -> PathBuf {
    data.join("counts")
}
