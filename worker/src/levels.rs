//! The worker side of breadth-first level jobs (peg solitaire): after the
//! join, do whatever step the coordinator names until it says FINISH.
//!
//! The worker owns the shards `k` with `k % workers == index` of every level
//! and keeps its part of each level as a checked file
//! (`DATA/levels/level-NNN.bin`), so a restarted worker (same `--data`) picks
//! up where the job is. Every step is safe to repeat: a re-delivered parcel
//! replaces the old one, a re-merged level overwrites its file with the
//! same bytes.

use crate::link::with_token;
use crate::run::WorkerError;
use crate::store::{Identity, write_identity};
use crate::{MAX_BACKOFF, lock::DirLock};
use retro_engine::levels::{self, LevelShard, decode_shard, encode_shard, expand_owned, merge_shards};
use retro_games::peg::{Board, BoardKind, Folded};
use retro_proto::levels_client::LevelsClient;
use retro_proto::{JoinReply, LevelCollect, LevelNext, LevelParcel, LevelStepKind, MAX_MESSAGE_BYTES};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::transport::Channel;

/// This worker's place in the job, from its join.
struct LevelJob {
    worker_id: String,
    job: String,
    index: u32,
    workers: u32,
    board: String,
    start: u64,
    shards: u32,
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
}

/// This worker's part of one level: `(shard, keys)` for its own shards.
type Part = Vec<(u32, LevelShard)>;

fn part_path(data: &Path, level: u32) -> PathBuf {
    data.join("levels").join(format!("level-{level:03}.bin"))
}

fn client(opts: &LevelWorkerOptions) -> LevelsClient<Channel> {
    LevelsClient::new(opts.channel.clone())
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
}

/// Works for the level job the worker joined (`reply`) until the
/// coordinator says FINISH.
pub async fn run(opts: LevelWorkerOptions, reply: JoinReply) -> Result<(), WorkerError> {
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
    };
    if job.workers == 0 || job.index >= job.workers {
        return Err(WorkerError::Refused(format!(
            "the coordinator placed this worker at {} of {} workers",
            job.index, job.workers
        )));
    }
    let _lock = DirLock::acquire(&opts.data)?;
    std::fs::create_dir_all(opts.data.join("levels"))
        .map_err(|e| WorkerError::Other(format!("{}: {e}", opts.data.display())))?;
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
    let identity =
        Identity { job: job.job.clone(), worker_id: job.worker_id.clone(), plan_hash: reply.plan_hash.clone() };
    write_identity(&opts.data, &identity)?;
    let mut c = client(&opts);
    let heartbeat = Duration::from_millis(u64::from(reply.heartbeat_ms.max(100)));
    let kind = BoardKind::parse(&job.board)
        .ok_or_else(|| WorkerError::Refused(format!("the job's board {:?} is unknown to this worker", job.board)))?;
    // Folded by the start's own symmetries, as the coordinator's embedded run is.
    let board = Folded::of_start(Board::new(kind), job.start);
    tracing::info!("joined level job {} as worker {} of {} ({})", job.job, job.index, job.workers, job.worker_id);
    let mut done = (LevelStepKind::LevelStepUnspecified, 0u32, 0u64);
    let mut held: Option<(u32, Part)> = None;
    loop {
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
                let part: Part = owned(&job).map(|k| (k, all[k as usize].clone())).collect();
                let keys = save(&opts.data, 0, &part)?;
                held = Some((0, part));
                (LevelStepKind::LevelStart, 0, keys)
            }
            LevelStepKind::LevelExpand => {
                let part = match held.take() {
                    Some((l, p)) if l == level => p,
                    _ => load(&opts.data, level, &job)?,
                };
                let (board2, shards, threads) = (board.clone(), job.shards as usize, opts.threads);
                let expand = tokio::task::spawn_blocking(move || {
                    expand_owned(&board2, &part, shards, threads).map(|n| (n, part))
                });
                let (next, part) = with_heartbeat(expand, &c, &opts.token, &job.worker_id, heartbeat)
                    .await
                    .map_err(|e| WorkerError::Other(format!("the expansion thread failed: {e}")))??;
                held = Some((level, part));
                let parcels: Vec<LevelParcel> =
                    next.iter().enumerate().map(|(shard, s)| parcel(&job, level + 1, shard as u32, s)).collect();
                match send(&mut c, &opts.token, parcels, true).await {
                    Ok(()) => (LevelStepKind::LevelExpand, level, 0),
                    Err(e) => step_lost(e)?,
                }
            }
            LevelStepKind::LevelMerge => {
                let req = LevelCollect { worker_id: job.worker_id.clone(), level };
                let mut stream = match c.collect(with_token(req, &opts.token)).await {
                    Ok(r) => r.into_inner(),
                    Err(e) => {
                        done = step_lost(e)?;
                        continue;
                    }
                };
                let mut got: BTreeMap<u32, Vec<LevelShard>> = BTreeMap::new();
                let mut lost = None;
                loop {
                    let p = match stream.message().await {
                        Ok(Some(p)) => p,
                        Ok(None) => break,
                        Err(e) => {
                            lost = Some(e);
                            break;
                        }
                    };
                    if levels::shard_owner(p.shard, job.workers) != job.index {
                        return Err(WorkerError::Refused(format!(
                            "the coordinator sent shard {} that this worker does not own",
                            p.shard
                        )));
                    }
                    let shard = decode_shard(p.entries, p.crc32, &p.zstd)?;
                    got.entry(p.shard).or_default().push(shard);
                }
                if let Some(e) = lost {
                    done = step_lost(e)?;
                    continue;
                }
                let mut part = Part::new();
                for k in owned(&job) {
                    let parts = got.remove(&k).unwrap_or_default();
                    if parts.len() != job.workers as usize {
                        return Err(WorkerError::Other(format!(
                            "level {level} shard {k}: {} parcels, {} expected",
                            parts.len(),
                            job.workers
                        )));
                    }
                    part.push((k, merge_shards(parts)?));
                }
                let keys = save(&opts.data, level, &part)?;
                held = Some((level, part));
                (LevelStepKind::LevelMerge, level, keys)
            }
            LevelStepKind::LevelUpload => {
                let mut parcels = Vec::new();
                for l in 0..=level {
                    for (k, s) in load(&opts.data, l, &job)? {
                        parcels.push(parcel(&job, l, k, &s));
                    }
                }
                match send(&mut c, &opts.token, parcels, false).await {
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

fn parcel(job: &LevelJob, level: u32, shard: u32, s: &LevelShard) -> LevelParcel {
    let (entries, crc32, zstd) = encode_shard(s);
    LevelParcel { worker_id: job.worker_id.clone(), level, shard, from_index: job.index, entries, crc32, zstd }
}

async fn send(
    c: &mut LevelsClient<Channel>,
    token: &Option<String>,
    parcels: Vec<LevelParcel>,
    deliver: bool,
) -> Result<(), tonic::Status> {
    let stream = tokio_stream::iter(parcels);
    let req = with_token(stream, token);
    let r = if deliver { c.deliver(req).await } else { c.upload(req).await };
    r.map(|_| ())
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

fn save(data: &Path, level: u32, part: &Part) -> Result<u64, WorkerError> {
    let refs: Vec<(u32, &LevelShard)> = part.iter().map(|(k, s)| (*k, s)).collect();
    levels::write_part(&part_path(data, level), &refs)?;
    Ok(part.iter().map(|(_, s)| s.len() as u64).sum())
}

fn load(data: &Path, level: u32, job: &LevelJob) -> Result<Part, WorkerError> {
    let part = levels::read_part(&part_path(data, level))?;
    let expected: Vec<u32> = owned(job).collect();
    let found: Vec<u32> = part.iter().map(|(k, _)| *k).collect();
    if found != expected {
        return Err(WorkerError::Other(format!(
            "{} does not hold this worker's shards",
            part_path(data, level).display()
        )));
    }
    Ok(part)
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
