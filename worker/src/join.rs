//! Joining a job: one `Cluster.Join` call, whatever kind of job the
//! coordinator runs. The request carries what the worker knows (its data
//! directory's identity, `--plan-hash`, `--replace`, its Peer address and
//! resources); the reply names the kind of job, and the worker goes on with
//! that kind ([`crate::run`], [`crate::levels`], [`crate::tasks`]).

use crate::link::{CoordinatorLink, GrpcLink, LinkError};
use crate::run::{PeerEndpoint, WorkerError, WorkerOptions, lock_data, run_joined};
use crate::{MAX_BACKOFF, store};
use retro_proto::{JobKind, JoinReply, JoinRequest};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The identity a level worker kept before level and retrograde workers
/// shared `identity.json` (read so that its data directory still resumes).
const OLD_LEVEL_IDENTITY: &str = "levels-worker.json";

/// The worker id, job and plan hash its data directory belongs to, if any.
pub fn data_identity(data: &Path) -> Result<Option<store::Identity>, WorkerError> {
    if let Some(id) = store::read_identity(data)? {
        return Ok(Some(id));
    }
    #[derive(serde::Deserialize)]
    struct Old {
        worker_id: String,
        plan_hash: String,
    }
    let old: Option<Old> =
        retro_engine::durable::read_checked_json(&data.join(OLD_LEVEL_IDENTITY)).map_err(store::StoreError::from)?;
    Ok(old.map(|o| store::Identity {
        job: String::new(),
        worker_id: o.worker_id,
        plan_hash: o.plan_hash,
        generation: 0,
    }))
}

/// The join request of a worker started with `opts` whose Peer service
/// listens at `peer_address` (empty: none).
pub fn join_request(opts: &WorkerOptions, peer_address: &str) -> Result<JoinRequest, WorkerError> {
    let identity = data_identity(&opts.data)?;
    let data_id = store::data_id(&opts.data)?;
    let have = crate::resources::Available::measure(&opts.data);
    Ok(JoinRequest {
        protocol_version: opts.protocol_version,
        plan_hash: opts.plan_hash.clone().unwrap_or_default(),
        worker_id: identity.as_ref().map(|i| i.worker_id.clone()).unwrap_or_default(),
        job: identity.as_ref().map(|i| i.job.clone()).unwrap_or_default(),
        data_plan_hash: identity.as_ref().map(|i| i.plan_hash.clone()).unwrap_or_default(),
        generation: identity.as_ref().map_or(0, |i| i.generation),
        data_id,
        peer_address: peer_address.to_string(),
        cores: opts.threads as u32,
        // What this machine has, for the coordinator's log; each layer's
        // own check (resources::check at INIT) is what refuses.
        memory_bytes: have.memory.unwrap_or(0),
        disk_bytes: have.disk.map_or(0, |d| d.saturating_add(have.already_used)),
        // Only a worker without an identity replaces one (a restart of the
        // replacement is an ordinary restart).
        replaces: if identity.is_none() { opts.replace.clone().unwrap_or_default() } else { String::new() },
    })
}

/// Joins (or joins again after either side restarted), retrying while the
/// coordinator is unreachable; a refusal is final. The warning names the
/// coordinator's address, so that a wrong `--connect` shows in the first
/// lines of the log.
pub async fn join_with_retry<L: CoordinatorLink>(
    link: &L,
    opts: &WorkerOptions,
    peer_address: &str,
) -> Result<JoinReply, WorkerError> {
    let mut backoff = Duration::from_millis(100);
    let mut last_log = Instant::now() - Duration::from_secs(60);
    loop {
        // Built again for every try: a restarted worker's identity may have
        // been written by the previous session of this process.
        let req = join_request(opts, peer_address)?;
        match link.join(req).await {
            Ok(reply) => return Ok(reply),
            Err(LinkError::Rejected(m) | LinkError::BadAddress(m)) => return Err(WorkerError::Refused(m)),
            Err(LinkError::Unavailable(m)) => {
                if last_log.elapsed() > Duration::from_secs(10) {
                    let at = opts.coordinator.as_deref().unwrap_or("(in-process)");
                    tracing::warn!("coordinator {at} unreachable while joining its job ({m}); retrying");
                    last_log = Instant::now();
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// [`join_and_run`] for a caller that is not async (the `worker` binary): runs
/// it to its end on `runtime`. The binary has no async `main` because the
/// compiler would then generate the whole worker's state machine a second
/// time inside the binary (about half a minute of CPU in every clean build).
pub fn join_and_run_on(
    runtime: &tokio::runtime::Runtime,
    link: Arc<GrpcLink>,
    opts: WorkerOptions,
) -> Result<(), WorkerError> {
    runtime.block_on(join_and_run(link, opts))
}

/// What `worker --connect` does: binds the Peer listener, joins the job, and
/// works in it until it is done, as the reply says: retrograde layers
/// ([`run_joined`]), breadth-first levels ([`crate::levels::run`]) or tasks
/// ([`crate::tasks::run`]).
pub async fn join_and_run(link: Arc<GrpcLink>, opts: WorkerOptions) -> Result<(), WorkerError> {
    // One process per data directory, whatever the job: the lock comes
    // before the join, which claims the identity the directory holds.
    let lock = lock_data(&opts.data)?;
    // The Peer service is bound before the join, which announces its
    // address; only a retrograde job needs it, so a failure to bind matters
    // only once the reply says that is the kind of job.
    let peer = PeerEndpoint::bind(&opts).await;
    let address = peer.as_ref().map_or("", |p| p.address());
    let reply = match join_with_retry(link.as_ref(), &opts, address).await {
        Ok(r) => r,
        Err(e) => {
            return Err(WorkerError::JoinFailed { error: Box::new(e), peer: peer.err().map(|p| p.to_string()) });
        }
    };
    let connect = opts.coordinator.clone().unwrap_or_default();
    match JobKind::try_from(reply.kind) {
        Ok(JobKind::Retrograde) => run_joined(link, opts, peer?, reply, lock).await,
        Ok(JobKind::Levels) => {
            drop(peer);
            let level_opts = crate::levels::LevelWorkerOptions {
                connect,
                token: opts.token.clone(),
                channel: link.channel(),
                data: opts.data.clone(),
                threads: opts.threads,
                metrics: opts.metrics.clone(),
            };
            crate::levels::run(level_opts, reply, lock).await
        }
        Ok(JobKind::Tasks) => {
            drop(peer);
            let task_opts = crate::tasks::TaskWorkerOptions {
                connect,
                token: opts.token.clone(),
                channel: link.channel(),
                fault: opts.fault.clone(),
                metrics: opts.metrics.clone(),
            };
            // A task job keeps nothing on this worker: it announces no Peer
            // service when it joins again.
            let rejoin = || {
                let (link, opts) = (link.clone(), opts.clone());
                async move { join_with_retry(link.as_ref(), &opts, "").await }
            };
            // `lock` is held all the same, until this returns: one worker
            // process per --data.
            crate::tasks::run(task_opts, reply, rejoin).await
        }
        _ => Err(WorkerError::UnknownKind { kind: reply.kind }),
    }
}
