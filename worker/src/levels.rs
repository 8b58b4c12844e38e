//! The worker side of breadth-first level jobs (peg solitaire): after the
//! join, do whatever step the coordinator names until it says FINISH.
//!
//! The worker owns the shards `k` with `k % workers == index` of every level
//! and keeps its part of each level on disk, as the level streams an embedded
//! run writes (`DATA/levels/level-NNN/shard-KKKK.lvl`), with a marker
//! (`part.json`) written last, so a restarted worker (same `--data`) picks up
//! where the job is. Nothing is held in memory between steps, and nothing
//! bigger than the job's memory bound within one: a part whose successors
//! would not fit is expanded on disk (`levels::disk`), and shards travel in
//! pieces (`levels::pieces`) that the receiver appends to stream files. Every
//! step is safe to repeat: a re-delivered shard replaces the old one, a
//! re-merged level overwrites its files with the same bytes.

use crate::link::with_token;
use crate::run::WorkerError;
use crate::store::{Identity, write_identity};
use crate::{MAX_BACKOFF, lock::DirLock};
use retro_engine::durable::{read_checked_json, write_checked_json};
use retro_engine::levels::pieces::{FilePieces, PieceFiles, shard_pieces};
use retro_engine::levels::spill::{SpillOptions, SpillRuns, merge_runs};
use retro_engine::levels::{self, LevelError, LevelShard, decode_shard, disk, encode_shard, expand_owned, store};
use retro_games::peg::{Board, BoardKind, Folded};
use retro_proto::levels_client::LevelsClient;
use retro_proto::{JoinReply, LevelCollect, LevelNext, LevelParcel, LevelStepKind, MAX_MESSAGE_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::transport::Channel;

/// This worker's place in the job, from its join.
#[derive(Clone)]
struct LevelJob {
    worker_id: String,
    job: String,
    index: u32,
    workers: u32,
    board: String,
    start: u64,
    shards: u32,
    memory_bytes: u64,
}

/// How a level worker runs.
#[derive(Clone, Debug)]
pub struct LevelWorkerOptions {
    /// Coordinator address (named in retry warnings).
    pub connect: String,
    /// Cluster token.
    pub token: Option<String>,
    /// The channel to the coordinator the worker joined through
    /// ([`crate::link::GrpcLink::channel`]; TLS, keepalive and timeouts set).
    pub channel: Channel,
    /// Data directory.
    pub data: PathBuf,
    /// Expansion threads.
    pub threads: usize,
    /// The figures `worker --status` serves.
    pub metrics: std::sync::Arc<crate::metrics::WorkerMetrics>,
}

/// The marker of this worker's part of a level, written after its shard
/// files: the shards it owns, with their keys and bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct PartMarker {
    shards: Vec<u32>,
    keys: Vec<u64>,
    bytes: Vec<u64>,
}

impl PartMarker {
    fn total_keys(&self) -> u64 {
        self.keys.iter().sum()
    }
}

/// Where the worker keeps its levels (the layout of `levels::store`).
fn levels_root(data: &Path) -> PathBuf {
    data.join("levels")
}

fn marker_path(root: &Path, level: u32) -> PathBuf {
    store::level_dir(root, level as usize).join("part.json")
}

fn shard_path(root: &Path, level: u32, k: u32) -> PathBuf {
    store::shard_file(root, level as usize, k as usize)
}

/// This worker's complete part of `level`: its marker, checked against the shards it owns.
fn read_part(root: &Path, level: u32, job: &LevelJob) -> Result<PartMarker, WorkerError> {
    let path = marker_path(root, level);
    let marker: PartMarker = read_checked_json(&path)
        .map_err(LevelError::from)?
        .ok_or_else(|| WorkerError::LevelMissing { path: path.clone(), level })?;
    let owned: Vec<u32> = owned(job).collect();
    if marker.shards != owned || marker.keys.len() != owned.len() {
        return Err(WorkerError::LevelNotOurs { path });
    }
    Ok(marker)
}

/// Writes the marker of this worker's part of `level` once `shard(k)` has
/// written each owned shard's file (returning its keys and bytes).
fn write_part(
    root: &Path,
    level: u32,
    job: &LevelJob,
    mut shard: impl FnMut(u32) -> Result<(u64, u64), LevelError>,
) -> Result<u64, WorkerError> {
    let mut marker = PartMarker::default();
    for k in owned(job) {
        let (keys, bytes) = shard(k)?;
        marker.shards.push(k);
        marker.keys.push(keys);
        marker.bytes.push(bytes);
    }
    write_checked_json(&marker_path(root, level), &marker).map_err(LevelError::from)?;
    Ok(marker.total_keys())
}

fn client(opts: &LevelWorkerOptions) -> LevelsClient<Channel> {
    LevelsClient::new(opts.channel.clone())
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
}

/// Works for the level job the worker joined (`reply`) until the
/// coordinator says FINISH; `_lock` is its data directory's lock
/// ([`crate::run::lock_data`]), held until then.
pub async fn run(opts: LevelWorkerOptions, reply: JoinReply, _lock: DirLock) -> Result<(), WorkerError> {
    let place =
        reply.level.ok_or_else(|| WorkerError::Refused("the join reply names no place in the level job".into()))?;
    let job = LevelJob {
        worker_id: reply.worker_id,
        job: reply.job,
        index: place.index,
        workers: place.workers,
        board: place.board,
        start: place.start,
        shards: place.shards,
        memory_bytes: place.memory_bytes,
    };
    if job.workers == 0 || job.index >= job.workers {
        return Err(WorkerError::Refused(format!(
            "the coordinator placed this worker at {} of {} workers",
            job.index, job.workers
        )));
    }
    let root = levels_root(&opts.data);
    std::fs::create_dir_all(&root).map_err(|source| WorkerError::Dir { path: root.clone(), source })?;
    if let Some(k) = crate::join::data_identity(&opts.data)?
        && k.plan_hash != reply.plan_hash
    {
        return Err(WorkerError::Refused(format!(
            "{} belongs to job {} but the coordinator runs {}; use another --data directory",
            opts.data.display(),
            k.plan_hash,
            reply.plan_hash
        )));
    }
    let identity = Identity {
        job: job.job.clone(),
        worker_id: job.worker_id.clone(),
        plan_hash: reply.plan_hash.clone(),
        generation: reply.generation,
    };
    write_identity(&opts.data, &identity)?;
    opts.metrics.joined(&job.job, &job.worker_id);
    let mut c = client(&opts);
    let heartbeat = Duration::from_millis(u64::from(reply.heartbeat_ms.max(100)));
    let kind = BoardKind::parse(&job.board)
        .ok_or_else(|| WorkerError::Refused(format!("the job's board {:?} is unknown to this worker", job.board)))?;
    // Folded by the start's own symmetries, as the coordinator's embedded run is.
    let board = Folded::of_start(Board::new(kind), job.start);
    tracing::info!("joined level job {} as worker {} of {} ({})", job.job, job.index, job.workers, job.worker_id);
    let mut done = (LevelStepKind::LevelStepUnspecified, 0u32, 0u64);
    loop {
        if done.0 != LevelStepKind::LevelStepUnspecified {
            opts.metrics.unit_done();
        }
        let next = LevelNext { worker_id: job.worker_id.clone(), done: done.0 as i32, level: done.1, keys: done.2 };
        let step = call(&opts.connect, "asking for the next level step", || {
            let (mut c, token, next) = (c.clone(), opts.token.clone(), next.clone());
            async move { c.next(with_token(next, &token)).await.map(|r| r.into_inner()) }
        })
        .await?;
        let level = step.level;
        done = match LevelStepKind::try_from(step.kind).unwrap_or(LevelStepKind::LevelStepUnspecified) {
            LevelStepKind::LevelWait | LevelStepKind::LevelStepUnspecified => {
                (LevelStepKind::LevelStepUnspecified, 0, 0)
            }
            LevelStepKind::LevelStart => {
                let all = levels::start_level(board.canonical(job.start), job.shards as usize);
                store::begin_level(&root, 0)?;
                let keys =
                    write_part(&root, 0, &job, |k| store::write_shard(&shard_path(&root, 0, k), &all[k as usize]))?;
                (LevelStepKind::LevelStart, 0, keys)
            }
            LevelStepKind::LevelExpand => {
                let (job2, board2, root2, threads) = (job.clone(), board.clone(), root.clone(), opts.threads);
                let expand = tokio::task::spawn_blocking(move || expand_part(&job2, &board2, &root2, level, threads));
                let outgoing = with_heartbeat(expand, &c, &opts.token, &job.worker_id, heartbeat)
                    .await
                    .map_err(|e| WorkerError::Thread { what: "expansion", detail: e.to_string() })??;
                let parcels = outgoing_parcels(job.clone(), level + 1, outgoing);
                match send(&mut c, &opts.token, parcels, true).await? {
                    Ok(()) => (LevelStepKind::LevelExpand, level, 0),
                    Err(e) => step_lost(e)?,
                }
            }
            LevelStepKind::LevelMerge => {
                let req = LevelCollect { worker_id: job.worker_id.clone(), level };
                let stream = match c.collect(with_token(req, &opts.token)).await {
                    Ok(r) => r.into_inner(),
                    Err(e) => {
                        done = step_lost(e)?;
                        continue;
                    }
                };
                let runs = match receive(stream, &job, &root.join("inbox")).await? {
                    Ok(runs) => runs,
                    Err(e) => {
                        done = step_lost(e)?;
                        continue;
                    }
                };
                let (job2, root2, threads) = (job.clone(), root.clone(), opts.threads);
                let merge = tokio::task::spawn_blocking(move || merge_part(&job2, &root2, level, runs, threads));
                let keys = with_heartbeat(merge, &c, &opts.token, &job.worker_id, heartbeat)
                    .await
                    .map_err(|e| WorkerError::Thread { what: "merge", detail: e.to_string() })??;
                (LevelStepKind::LevelMerge, level, keys)
            }
            LevelStepKind::LevelUpload => {
                for l in 0..=level {
                    read_part(&root, l, &job)?;
                }
                let parcels = upload_parcels(job.clone(), root.clone(), level);
                match send(&mut c, &opts.token, parcels, false).await? {
                    Ok(()) => (LevelStepKind::LevelUpload, level, 0),
                    Err(e) => step_lost(e)?,
                }
            }
            LevelStepKind::LevelFinish => {
                tracing::info!("level job finished");
                return Ok(());
            }
        };
    }
}

/// Successors of this worker's part of a level, one sorted shard per shard
/// of the next level: in memory, or as stream files in a directory.
enum Outgoing {
    Memory(Vec<LevelShard>),
    Disk(PathBuf),
}

/// Expands this worker's part of `level`: in memory when its successors fit
/// the job's bound, else on disk into `ROOT/outgoing/` (through passes or
/// spill files, `levels::disk`).
fn expand_part(
    job: &LevelJob,
    board: &Folded,
    root: &Path,
    level: u32,
    threads: usize,
) -> Result<Outgoing, WorkerError> {
    let marker = read_part(root, level, job)?;
    let shards = job.shards as usize;
    if levels::expands_in_memory(marker.total_keys(), job.memory_bytes) {
        let mut part = Vec::with_capacity(marker.shards.len());
        for (&k, &keys) in marker.shards.iter().zip(&marker.keys) {
            part.push((k, store::read_shard(&shard_path(root, level, k), keys)?));
        }
        return Ok(Outgoing::Memory(expand_owned(board, &part, shards, threads)?));
    }
    let out = root.join("outgoing");
    store::remove_dir_if_present(&out)?;
    std::fs::create_dir_all(&out).map_err(|source| WorkerError::Dir { path: out.clone(), source })?;
    let sources: Vec<PathBuf> = marker.shards.iter().map(|&k| shard_path(root, level, k)).collect();
    let dest = |k: usize| out.join(format!("shard-{k:04}.lvl"));
    let bound = SpillOptions { memory_bytes: job.memory_bytes, threads };
    let step = disk::expand_on_disk(board, &sources, shards, &dest, &root.join("spill"), &bound, || {})?;
    // Disk at the step's peak: the part read, the runs of a spill and what goes out.
    let outgoing_bytes: u64 = step.merged.bytes.iter().sum();
    let part_bytes: u64 = marker.bytes.iter().sum();
    tracing::info!(
        "level {}: {} source keys expanded on disk into {} successors ({} passes, {} entries spilled); disk {:.1} MB (part {:.1} MB, runs {:.1} MB, outgoing {:.1} MB)",
        level + 1,
        step.sources,
        step.successors,
        step.passes,
        step.spilled_entries,
        (part_bytes + step.runs_bytes.max(outgoing_bytes)) as f64 / 1e6,
        part_bytes as f64 / 1e6,
        step.runs_bytes as f64 / 1e6,
        outgoing_bytes as f64 / 1e6
    );
    Ok(Outgoing::Disk(out))
}

/// A shard's pieces, or the one error that kept its file from opening.
type Pieces = Box<dyn Iterator<Item = Result<LevelShard, LevelError>> + Send>;

fn file_pieces(path: &Path) -> Pieces {
    match FilePieces::open(path) {
        Ok(pieces) => Box::new(pieces),
        Err(e) => Box::new(std::iter::once(Err(e))),
    }
}

/// The parcels of `outgoing`: every shard of `level`, in order, each in
/// numbered pieces read as they are sent.
fn outgoing_parcels(
    job: LevelJob,
    level: u32,
    outgoing: Outgoing,
) -> impl Iterator<Item = Result<LevelParcel, WorkerError>> + Send + 'static {
    (0..job.shards).flat_map(move |k| {
        let pieces: Pieces = match &outgoing {
            Outgoing::Memory(next) => Box::new(shard_pieces(&next[k as usize]).into_iter().map(Ok)),
            Outgoing::Disk(dir) => file_pieces(&dir.join(format!("shard-{k:04}.lvl"))),
        };
        numbered(job.clone(), level, k, pieces)
    })
}

/// The parcels of this worker's part of every level 0..=`last`, for UPLOAD.
fn upload_parcels(
    job: LevelJob,
    root: PathBuf,
    last: u32,
) -> impl Iterator<Item = Result<LevelParcel, WorkerError>> + Send + 'static {
    let owned: Vec<u32> = owned(&job).collect();
    (0..=last).flat_map(move |l| {
        let (job, root) = (job.clone(), root.clone());
        owned.clone().into_iter().flat_map(move |k| numbered(job.clone(), l, k, file_pieces(&shard_path(&root, l, k))))
    })
}

/// Numbers the pieces of shard `k` of `level` and flags the last.
fn numbered(
    job: LevelJob,
    level: u32,
    k: u32,
    pieces: Pieces,
) -> impl Iterator<Item = Result<LevelParcel, WorkerError>> + Send {
    let mut pieces = pieces.peekable();
    let mut piece = 0u32;
    std::iter::from_fn(move || {
        let shard = match pieces.next()? {
            Ok(shard) => shard,
            Err(e) => return Some(Err(e.into())),
        };
        let last = pieces.peek().is_none();
        let (entries, crc32, zstd) = encode_shard(&shard);
        let p = LevelParcel {
            worker_id: job.worker_id.clone(),
            level,
            shard: k,
            from_index: job.index,
            entries,
            crc32,
            zstd,
            piece,
            last,
        };
        piece += 1;
        Some(Ok(p))
    })
}

/// Receives the pieces of this worker's shards of the level being merged and
/// appends them to one stream file per (shard, sender) under `inbox`.
/// Returns the finished files by shard; the inner `Err` when the exchange
/// itself failed (the step is lost), the outer one when what came is wrong.
async fn receive(
    mut stream: tonic::Streaming<LevelParcel>,
    job: &LevelJob,
    inbox: &Path,
) -> Result<Result<BTreeMap<u32, Vec<PathBuf>>, tonic::Status>, WorkerError> {
    store::remove_dir_if_present(inbox)?;
    std::fs::create_dir_all(inbox).map_err(|source| WorkerError::Dir { path: inbox.to_path_buf(), source })?;
    let mut files = PieceFiles::new(false);
    let path = |shard: u32, from: u32| inbox.join(format!("shard-{shard:04}-from-{from:04}.lvl"));
    let mut runs: BTreeMap<u32, Vec<PathBuf>> = BTreeMap::new();
    loop {
        let p = match stream.message().await {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => return Ok(Err(e)),
        };
        if levels::shard_owner(p.shard, job.workers) != job.index || p.from_index >= job.workers {
            return Err(WorkerError::Refused(format!(
                "the coordinator sent shard {} from worker {}, which does not fit this worker",
                p.shard, p.from_index
            )));
        }
        let piece = decode_shard(p.entries, p.crc32, &p.zstd)?;
        let (shard, from) = (p.shard, p.from_index);
        if files.accept((shard, from), p.piece, p.last, &piece, || path(shard, from))?.is_some() {
            runs.entry(shard).or_default().push(path(shard, from));
        }
    }
    for k in owned(job) {
        let whole = runs.get(&k).map_or(0, Vec::len);
        if whole != job.workers as usize {
            return Err(WorkerError::PiecesMissing { shard: k, whole, expected: job.workers });
        }
    }
    Ok(Ok(runs))
}

/// Merges the received runs of each owned shard into this worker's part of
/// `level` (weights of equal keys added), then writes the part's marker.
fn merge_part(
    job: &LevelJob,
    root: &Path,
    level: u32,
    mut runs: BTreeMap<u32, Vec<PathBuf>>,
    threads: usize,
) -> Result<u64, WorkerError> {
    let owned: Vec<u32> = owned(job).collect();
    store::begin_level(root, level as usize)?;
    let runs = SpillRuns {
        runs: owned.iter().map(|k| runs.remove(k).unwrap_or_default()).collect(),
        childless: 0,
        sources: 0,
        entries: 0,
        bytes: 0,
    };
    let dest = |i: usize| shard_path(root, level, owned[i]);
    let merged = merge_runs(&runs, &dest, threads)?;
    let mut sizes = merged.keys.into_iter().zip(merged.bytes);
    let keys = write_part(root, level, job, |_| Ok(sizes.next().expect("one merged shard per owned shard")))?;
    store::remove_dir_if_present(&root.join("inbox"))?;
    Ok(keys)
}

/// Awaits `work` while telling the coordinator every `every` that this
/// worker is alive (a `Next` that reports nothing), so that a long step does
/// not read as a lost worker in `/status`.
async fn with_heartbeat<T>(
    work: impl std::future::Future<Output = T>,
    c: &LevelsClient<Channel>,
    token: &Option<String>,
    worker_id: &str,
    every: Duration,
) -> T {
    tokio::pin!(work);
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = tick.tick() => {
                let next = LevelNext { worker_id: worker_id.to_string(), ..Default::default() };
                // Best effort: a missed heartbeat only shows in /status.
                let _ = c.clone().next(with_token(next, token)).await;
            }
        }
    }
}

fn owned(job: &LevelJob) -> impl Iterator<Item = u32> + '_ {
    levels::owned_shards(job.index, job.workers, job.shards)
}

/// Streams `parcels` to the coordinator (DELIVER or UPLOAD), read on a
/// blocking thread as they go, so a level on disk is never held whole. The
/// outer error is the worker's own (a shard it could not read), the inner one
/// the exchange's (the step is lost).
async fn send(
    c: &mut LevelsClient<Channel>,
    token: &Option<String>,
    parcels: impl Iterator<Item = Result<LevelParcel, WorkerError>> + Send + 'static,
    deliver: bool,
) -> Result<Result<(), tonic::Status>, WorkerError> {
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let reader = tokio::task::spawn_blocking(move || {
        for p in parcels {
            // A closed channel means the call ended early; its status says why.
            if tx.blocking_send(p?).is_err() {
                break;
            }
        }
        Ok::<(), WorkerError>(())
    });
    let req = with_token(tokio_stream::wrappers::ReceiverStream::new(rx), token);
    let r = if deliver { c.deliver(req).await } else { c.upload(req).await };
    reader.await.map_err(|e| WorkerError::Thread { what: "parcel reader", detail: e.to_string() })??;
    Ok(r.map(|_| ()))
}

/// A step whose exchange with the coordinator failed: when the coordinator
/// went away or moved on (it restarted, and resumes from its last committed
/// level), the step is simply not reported and the worker asks for the
/// current one; any other refusal ends the worker with the reason.
fn step_lost(e: tonic::Status) -> Result<(LevelStepKind, u32, u64), WorkerError> {
    if e.code() == tonic::Code::FailedPrecondition || crate::link::passes(&e) {
        tracing::warn!("the step was lost ({}); asking the coordinator for the current one", e.message());
        Ok((LevelStepKind::LevelStepUnspecified, 0, 0))
    } else {
        Err(WorkerError::Refused(format!("{} (while taking this worker's parcels)", e.message())))
    }
}

/// Retries a call while the coordinator is unreachable (it may be restarting);
/// a refusal becomes an error that says so.
async fn call<T, F, Fut>(address: &str, doing: &str, f: F) -> Result<T, WorkerError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    retry_unreachable(address, doing, f).await.map_err(|s| WorkerError::Refused(s.message().to_string()))
}

/// Retries a call while the coordinator at `address` is unreachable; returns
/// the first answer, or the first refusal as it came. The warning names the
/// address and what the worker was `doing`, so that a wrong `--connect` is
/// visible in the first line of the log.
pub(crate) async fn retry_unreachable<T, F, Fut>(address: &str, doing: &str, mut f: F) -> Result<T, tonic::Status>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let mut backoff = Duration::from_millis(200);
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(s) if crate::link::passes(&s) => {
                tracing::warn!("coordinator {address} unreachable while {doing} ({}); retrying", s.message());
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(s) => return Err(s),
        }
    }
}
