//! A worker of a retrograde job: after the join, pull tasks and run them
//! until the job is done.

use crate::fault::Fault;
use crate::join::join_with_retry;
use crate::link::{ClientTls, CoordinatorLink, LinkError, PeerStream};
use crate::metrics::WorkerMetrics;
use crate::peer::PeerService;
use crate::spec::JobSpec;
use crate::steps::{TaskError, TaskOutcome, Watermark, WorkerCore};
use crate::store::{self, Identity};
use crate::{HEARTBEAT_INTERVAL, MAX_BACKOFF};
use retro_proto::{
    BlockUpload, JoinReply, PROTOCOL_VERSION, PullRequest, RoundReport, SourceCount, Task, TaskKind, UpdateBatch,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How a worker is started.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// Data directory (checkpoints, inboxes, identity).
    pub data: PathBuf,
    /// Address the Peer service listens on; `None` runs without one (embedded).
    pub peer_listener: Option<std::net::SocketAddr>,
    /// Address other workers use to reach this one (default: the local
    /// address that routes to the coordinator, with the bound port).
    pub advertise: Option<String>,
    /// Coordinator address (for choosing the advertised address).
    pub coordinator: Option<String>,
    /// Kernel threads.
    pub threads: usize,
    /// Plan hash the worker was started with, if it was given the plan.
    pub plan_hash: Option<String>,
    /// Protocol version to announce (only tests change it).
    pub protocol_version: u32,
    /// Cluster token.
    pub token: Option<String>,
    /// Fault injection.
    pub fault: Option<Fault>,
    /// TLS between workers: this worker's Peer server identity and how it checks
    /// the other workers' (none: plain text on the private network).
    pub peer_tls: Option<PeerTls>,
    /// Start layers even when this machine lacks the memory or disk they need.
    pub ignore_resources: bool,
    /// The id of a worker lost for good whose place this one (with an empty
    /// data directory) takes.
    pub replace: Option<String>,
    /// What the layers solved before a layer prove about it (an embedded
    /// coordinator's tablebases; none in a cluster).
    pub known_losses: Option<crate::steps::KnownLossSource>,
    /// The coordinator spaces this worker's checkpoints (an embedded run):
    /// its layers' state is then mapped privately and written at checkpoints
    /// only ([`crate::store::layer_mapping`]).
    pub spaced_checkpoints: bool,
    /// The figures `worker --status` serves ([`crate::metrics`]).
    pub metrics: Arc<WorkerMetrics>,
}

/// TLS for the worker-to-worker update streams.
#[derive(Clone)]
pub struct PeerTls {
    /// This worker's certificate chain (PEM), presented to the other workers.
    pub cert_pem: Vec<u8>,
    /// Its private key (PEM).
    pub key_pem: Vec<u8>,
    /// The CA and the name every worker certificate carries.
    pub client: ClientTls,
}

impl std::fmt::Debug for PeerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        write!(f, "PeerTls {{ name: {:?}, .. }}", self.client.domain)
    }
}

impl WorkerOptions {
    /// Defaults for a worker with data directory `data`.
    pub fn new(data: PathBuf) -> WorkerOptions {
        let data_dir = data.clone();
        WorkerOptions {
            data,
            peer_listener: None,
            advertise: None,
            coordinator: None,
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            plan_hash: None,
            protocol_version: PROTOCOL_VERSION,
            token: None,
            fault: None,
            peer_tls: None,
            ignore_resources: false,
            replace: None,
            known_losses: None,
            spaced_checkpoints: false,
            metrics: WorkerMetrics::new(data_dir),
        }
    }
}

/// Why a worker stopped before the job was done.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The coordinator refused this worker.
    #[error("the coordinator refused this worker: {0}")]
    Refused(String),
    /// The job was aborted by the coordinator.
    #[error("the coordinator aborted the job: {0}")]
    Aborted(String),
    /// Local storage or state failed.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// The data directory is locked by another process, or unusable.
    #[error(transparent)]
    Common(#[from] retro_node::NodeError),
    /// A level file or parcel of a level job failed.
    #[error(transparent)]
    Levels(#[from] retro_engine::levels::LevelError),
    /// The coordinator's address is unusable.
    #[error(transparent)]
    Link(#[from] LinkError),
    /// The data directory's identity file is unreadable.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The join failed; when the Peer service could not bind either, that
    /// is said too, since it may be the cause.
    #[error("{error}{}", peer.as_ref().map(|p| format!(" ({p})")).unwrap_or_default())]
    JoinFailed {
        /// Why the join failed.
        error: Box<WorkerError>,
        /// Why the Peer service could not bind, if it could not.
        peer: Option<String>,
    },
    /// The coordinator runs a kind of job this build does not know.
    #[error("the coordinator runs a kind of job this worker does not know (kind {kind}); run the same release")]
    UnknownKind {
        /// The kind's number on the wire.
        kind: i32,
    },
    /// A directory the worker needs could not be created.
    #[error("{}: {source}", path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A socket could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The job description the coordinator sent does not parse.
    #[error("coordinator sent an unreadable job description: {0}")]
    BadSpec(#[source] serde_json::Error),
    /// The Peer service's TLS identity is unusable.
    #[error("peer TLS: {0}")]
    PeerTls(#[source] tonic::transport::Error),
    /// A blocking thread died.
    #[error("the {what} thread failed: {detail}")]
    Thread {
        /// The thread ("task", "expansion", "merge", "parcel reader").
        what: &'static str,
        /// The join error.
        detail: String,
    },
    /// A level this worker should hold is not on its disk.
    #[error("{} is missing: level {level} was never merged here", path.display())]
    LevelMissing {
        /// The level's marker file.
        path: PathBuf,
        /// The level.
        level: u32,
    },
    /// A level's marker names other shards than this worker owns.
    #[error("{} does not hold this worker's shards", path.display())]
    LevelNotOurs {
        /// The level's marker file.
        path: PathBuf,
    },
    /// Not every sender's piece of a shard arrived whole.
    #[error("shard {shard}: {whole} senders' pieces came whole, {expected} expected")]
    PiecesMissing {
        /// The shard.
        shard: u32,
        /// The pieces that came whole.
        whole: usize,
        /// The pieces expected (one per worker).
        expected: u32,
    },
}

/// One join's worth of who this process is in the job.
#[derive(Clone)]
struct Session {
    worker_id: String,
    epoch: u64,
    coordinator_epoch: u64,
    job: String,
    /// The data directory's generation (stored in its identity before the
    /// first pull of this session).
    generation: u64,
}

impl Session {
    fn of(reply: &JoinReply) -> Session {
        Session {
            worker_id: reply.worker_id.clone(),
            epoch: reply.epoch,
            coordinator_epoch: reply.coordinator_epoch,
            job: reply.job.clone(),
            generation: reply.generation,
        }
    }
}

fn advertised(opts: &WorkerOptions, bound: std::net::SocketAddr) -> String {
    if let Some(a) = &opts.advertise {
        return if a.contains(':') { a.clone() } else { format!("{a}:{}", bound.port()) };
    }
    if !bound.ip().is_unspecified() {
        return bound.to_string();
    }
    // The local address that routes to the coordinator (no packet is sent).
    let ip = opts
        .coordinator
        .as_deref()
        .and_then(|c| {
            let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
            let target = c.trim_start_matches("http://").trim_start_matches("https://");
            s.connect(target).ok()?;
            Some(s.local_addr().ok()?.ip())
        })
        .unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
    format!("{ip}:{}", bound.port())
}

/// Updates and payload bytes that crossed the network in one task.
#[derive(Clone, Copy, Debug, Default)]
struct Traffic {
    records_sent: u64,
    bytes_sent: u64,
    records_received: u64,
    bytes_received: u64,
}

fn report_of(task: &Task, result: Result<TaskOutcome, TaskError>, seconds: f64, traffic: Traffic) -> RoundReport {
    let mut r = RoundReport {
        task_id: task.task_id,
        kind: task.kind,
        layer: task.layer,
        round: task.round,
        seconds,
        records_sent: traffic.records_sent,
        bytes_sent: traffic.bytes_sent,
        records_received: traffic.records_received,
        bytes_received: traffic.bytes_received,
        ..Default::default()
    };
    match result {
        Ok(o) => {
            r.ok = true;
            r.decided_win = o.record.win;
            r.decided_loss = o.record.loss;
            r.frontier = o.record.frontier;
            r.durability_seconds = o.durability_seconds;
            r.seeded = o.seeded;
            r.sent = o.record.sent.iter().map(|(w, &n)| SourceCount { worker_id: w.clone(), updates: n }).collect();
            if let Some(i) = o.init {
                r.illegal = i.illegal;
                r.terminal = i.terminal;
                r.terminal_win = i.terminal_win;
                r.no_move = i.no_move;
            }
        }
        Err(e) => {
            r.ok = false;
            r.retryable = matches!(e, TaskError::PeerUnreachable(_));
            r.error = e.to_string();
        }
    }
    r
}

/// Runs one task to completion (blocking parts on blocking threads).
async fn execute<L: CoordinatorLink>(
    core: Arc<Mutex<WorkerCore>>,
    link: Arc<L>,
    session: Session,
    (token, peer_tls): (Option<String>, Option<ClientTls>),
    task: Task,
) -> RoundReport {
    let started = Instant::now();
    let Session { worker_id, epoch, job, generation, .. } = session;
    let kind = TaskKind::try_from(task.kind).unwrap_or(TaskKind::Wait);
    let shards = task.shards.clone();
    let (layer, round, attempt) = (task.layer, task.round, task.attempt);
    core.lock().expect("core lock").set_attempt(attempt);
    let owner: BTreeMap<u32, String> =
        task.peers.iter().flat_map(|p| p.shards.iter().map(|&s| (s, p.worker_id.clone()))).collect();
    let addresses: BTreeMap<String, String> =
        task.peers.iter().map(|p| (p.worker_id.clone(), p.address.clone())).collect();
    let mut traffic = Traffic::default();
    let result: Result<TaskOutcome, TaskError> = match kind {
        TaskKind::Init => {
            let core = core.clone();
            blocking(move || core.lock().expect("core lock").init(layer, &shards)).await
        }
        TaskKind::Generate => {
            let header = UpdateBatch {
                job: job.clone(),
                layer,
                round,
                source_worker: worker_id.clone(),
                source_epoch: epoch,
                source_generation: generation,
                attempt,
                ..Default::default()
            };
            let streams: BTreeMap<String, PeerStream> = addresses
                .iter()
                .filter(|(w, _)| **w != worker_id)
                .map(|(w, a)| (w.clone(), PeerStream::open(a, &token, peer_tls.as_ref(), header.clone())))
                .collect();
            let c = core.clone();
            let joined = tokio::task::spawn_blocking(move || {
                let mut streams = streams;
                let mut remote = |w: &str, shard: u32, keys: Vec<u64>| -> Result<(), TaskError> {
                    let stream = streams.get_mut(w).ok_or_else(|| TaskError::NoStream { worker: w.to_string() })?;
                    stream.push_blocking(shard, keys).map_err(|e| TaskError::PeerUnreachable(e.to_string()))
                };
                let r = c.lock().expect("core lock").generate(layer, round, &shards, &owner, &mut remote);
                (r, streams)
            })
            .await;
            match joined {
                Err(e) => Err(TaskError::Thread { what: "generate", detail: e.to_string() }),
                Ok((Err(e), _)) => Err(e),
                Ok((Ok(outcome), streams)) => {
                    let mut failed = None;
                    for (w, stream) in streams {
                        let (records, bytes) = stream.queued();
                        traffic.records_sent += records;
                        traffic.bytes_sent += bytes;
                        if let Err(e) = stream.finish().await {
                            failed = Some(TaskError::PeerUnreachable(format!("sending updates to worker {w}: {e}")));
                        }
                    }
                    match failed {
                        Some(e) => Err(e),
                        None => {
                            if traffic.records_sent > 0 {
                                tracing::info!(
                                    "layer {layer} round {round}: sent {} records ({} bytes) to {} workers",
                                    traffic.records_sent,
                                    traffic.bytes_sent,
                                    addresses.len().saturating_sub(1)
                                );
                            }
                            let fault = core.lock().expect("core lock").fault.clone();
                            Fault::check(&fault, "after-generate", layer, round);
                            Ok(outcome)
                        }
                    }
                }
            }
        }
        TaskKind::Apply => {
            let expected: BTreeMap<String, u64> =
                task.expected.iter().map(|s| (s.worker_id.clone(), s.updates)).collect();
            // What the other workers sent for this round, as their inboxes hold it.
            let data = core.lock().expect("core lock").data.clone();
            for (w, &n) in expected.iter().filter(|(w, _)| **w != worker_id) {
                traffic.records_received += n;
                traffic.bytes_received +=
                    std::fs::metadata(store::inbox_path(&data, layer, round, w)).map_or(0, |m| m.len());
            }
            if traffic.records_received > 0 {
                tracing::info!(
                    "layer {layer} round {round}: received {} records ({} bytes) from {} workers",
                    traffic.records_received,
                    traffic.bytes_received,
                    expected.keys().filter(|w| **w != worker_id).count()
                );
            }
            let core = core.clone();
            let checkpoint = task.checkpoint;
            blocking(move || {
                core.lock().expect("core lock").apply(layer, round, &shards, &owner, &expected, checkpoint)
            })
            .await
        }
        TaskKind::Export => export(core.clone(), link, (worker_id, epoch, job), layer, shards).await,
        _ => Err(TaskError::UnexpectedKind(format!("{kind:?}"))),
    };
    report_of(&task, result, started.elapsed().as_secs_f64(), traffic)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, TaskError> + Send + 'static,
) -> Result<T, TaskError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(TaskError::Thread { what: "task", detail: e.to_string() }))
}

async fn export<L: CoordinatorLink>(
    core: Arc<Mutex<WorkerCore>>,
    link: Arc<L>,
    (worker_id, epoch, job): (String, u64, String),
    layer: u32,
    shards: Vec<u32>,
) -> Result<TaskOutcome, TaskError> {
    let (tx, rx) = mpsc::channel::<BlockUpload>(16);
    let head = BlockUpload { job, worker_id, epoch, layer, ..Default::default() };
    let h2 = head.clone();
    let producer = tokio::task::spawn_blocking(move || {
        let mut c = core.lock().expect("core lock");
        let n = c.export(layer, &shards, |block| {
            let upload = BlockUpload {
                block_index: block.index,
                compressed: block.values,
                raw_crc32: block.values_crc,
                depth_compressed: block.depth,
                depth_raw_crc32: block.depth_crc,
                ..h2.clone()
            };
            tx.blocking_send(upload).is_ok()
        })?;
        let _ = tx.blocking_send(BlockUpload { last: true, blocks_sent: n, ..h2 });
        Ok::<u64, TaskError>(n)
    });
    let up = link.upload(rx).await;
    let n = producer.await.unwrap_or_else(|e| Err(TaskError::Thread { what: "export", detail: e.to_string() }))?;
    match up {
        Ok(reply) if reply.blocks == n => Ok(TaskOutcome::default()),
        Ok(reply) => Err(TaskError::UploadShort { stored: reply.blocks, sent: n }),
        Err(e) => Err(TaskError::Upload(e)),
    }
}

/// The Peer service's listening socket and the address other workers reach
/// it at (none in an embedded run).
pub struct PeerEndpoint {
    listener: Option<tokio::net::TcpListener>,
    address: String,
}

impl PeerEndpoint {
    /// Binds `opts.peer_listener`, if any.
    pub async fn bind(opts: &WorkerOptions) -> Result<PeerEndpoint, WorkerError> {
        let Some(addr) = opts.peer_listener else { return Ok(PeerEndpoint { listener: None, address: String::new() }) };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| WorkerError::Listen { addr: addr.to_string(), source })?;
        let address = advertised(
            opts,
            listener.local_addr().map_err(|source| WorkerError::Listen { addr: addr.to_string(), source })?,
        );
        Ok(PeerEndpoint { listener: Some(listener), address })
    }

    /// The address announced in the join (empty: no Peer service).
    pub fn address(&self) -> &str {
        &self.address
    }
}

/// Joins a retrograde job and runs until the coordinator says it is done
/// (the embedded run's in-process worker).
pub async fn run_worker<L: CoordinatorLink>(link: Arc<L>, opts: WorkerOptions) -> Result<(), WorkerError> {
    let lock = lock_data(&opts.data)?;
    let peer = PeerEndpoint::bind(&opts).await?;
    let reply = join_with_retry(link.as_ref(), &opts, peer.address()).await?;
    run_joined(link, opts, peer, reply, lock).await
}

/// Takes the lock of a worker's data directory (created if missing), before
/// the join: the join claims the identity the directory holds, so a second
/// process started on the same directory must stop before it joins as that
/// worker (it would otherwise take the first one's place in the job, then
/// find the directory locked, or wait for a job that ended).
pub fn lock_data(data: &std::path::Path) -> Result<crate::lock::DirLock, WorkerError> {
    std::fs::create_dir_all(data).map_err(|source| WorkerError::Dir { path: data.to_path_buf(), source })?;
    Ok(crate::lock::DirLock::acquire(data)?)
}

/// Runs a worker that has joined a retrograde job (`reply`) until the
/// coordinator says the job is done; `_lock` is its data directory's lock
/// ([`lock_data`]), held until then.
pub async fn run_joined<L: CoordinatorLink>(
    link: Arc<L>,
    opts: WorkerOptions,
    peer: PeerEndpoint,
    reply: JoinReply,
    _lock: crate::lock::DirLock,
) -> Result<(), WorkerError> {
    let progress = Arc::new(Mutex::new(Watermark::default()));
    let PeerEndpoint { listener, address: peer_address } = peer;
    if let Some(lost) = &opts.replace
        && let Some(existing) = store::read_identity(&opts.data)?
        && existing.worker_id != *lost
        && !existing.worker_id.is_empty()
    {
        tracing::info!(
            "--replace {lost}: data directory {} already belongs to worker {} (an earlier start of this \
             replacement); resuming as that worker",
            opts.data.display(),
            existing.worker_id
        );
    }
    let spec: JobSpec = serde_json::from_str(&reply.plan_json).map_err(WorkerError::BadSpec)?;
    if let Some(existing) = store::read_identity(&opts.data)?
        && (existing.job != spec.name || existing.plan_hash != spec.plan_hash)
    {
        return Err(WorkerError::Refused(format!(
            "data directory {} belongs to job {} (plan {}), the coordinator runs job {} (plan {}); use another --data",
            opts.data.display(),
            existing.job,
            existing.plan_hash,
            spec.name,
            spec.plan_hash
        )));
    }
    let identity = Identity {
        job: spec.name.clone(),
        worker_id: reply.worker_id.clone(),
        plan_hash: spec.plan_hash.clone(),
        generation: reply.generation,
    };
    store::write_identity(&opts.data, &identity)?;
    opts.metrics.joined(&spec.name, &reply.worker_id);
    tracing::info!(
        "joined as worker {} (epoch {}, generation {}) of job {}",
        reply.worker_id,
        reply.epoch,
        reply.generation,
        spec.name
    );
    let mut core = WorkerCore::new(
        opts.data.clone(),
        spec.clone(),
        reply.worker_id.clone(),
        opts.threads,
        opts.fault.clone(),
        progress.clone(),
    )?;
    core.ignore_resources = opts.ignore_resources;
    core.known_losses = opts.known_losses.clone();
    core.state_mapping = crate::store::layer_mapping(opts.spaced_checkpoints);
    let core = Arc::new(Mutex::new(core));
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    if let Some(listener) = listener {
        let svc = PeerService { data: opts.data.clone(), job: spec.name.clone(), progress, fence: Default::default() };
        let token = opts.token.clone();
        let mut rx = shutdown_rx.clone();
        let mut builder = tonic::transport::Server::builder();
        if let Some(t) = &opts.peer_tls {
            let identity = tonic::transport::Identity::from_pem(&t.cert_pem, &t.key_pem);
            builder = builder
                .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
                .map_err(WorkerError::PeerTls)?;
        }
        tokio::spawn(async move {
            let server = tonic::service::interceptor::InterceptedService::new(
                retro_proto::peer_server::PeerServer::new(svc)
                    .max_decoding_message_size(retro_proto::MAX_MESSAGE_BYTES),
                retro_node::auth::check_token(token),
            );
            use retro_node::net::{ConnectionLimits, GRPC_IDLE, GuardedListener};
            let incoming =
                GuardedListener::new(listener, "peer port", ConnectionLimits::for_listener(GRPC_IDLE)).incoming();
            let _ = builder
                .http2_keepalive_interval(Some(crate::KEEPALIVE_INTERVAL))
                .http2_keepalive_timeout(Some(crate::KEEPALIVE_TIMEOUT))
                .add_service(server)
                .serve_with_incoming_shutdown(incoming, async move {
                    let _ = rx.changed().await;
                })
                .await;
        });
    }
    let result = pull_loop(link.clone(), &opts, core, reply, &peer_address).await;
    let _ = shutdown_tx.send(true);
    result
}

async fn pull_loop<L: CoordinatorLink>(
    link: Arc<L>,
    opts: &WorkerOptions,
    core: Arc<Mutex<WorkerCore>>,
    reply: JoinReply,
    peer_address: &str,
) -> Result<(), WorkerError> {
    let mut session = Session::of(&reply);
    let mut running: Option<(u64, tokio::task::JoinHandle<RoundReport>)> = None;
    let mut report: Option<RoundReport> = None;
    let mut backoff = Duration::from_millis(100);
    loop {
        if report.is_none() {
            report = take_finished(&mut running, Duration::ZERO).await?;
        }
        let req = PullRequest {
            worker_id: session.worker_id.clone(),
            epoch: session.epoch,
            coordinator_epoch: session.coordinator_epoch,
            job: session.job.clone(),
            busy_task_id: running.as_ref().map(|r| r.0).unwrap_or(0),
            report: report.clone(),
        };
        let task = match link.pull(req).await {
            Ok(r) => {
                backoff = Duration::from_millis(100);
                report = None;
                r.task.unwrap_or_default()
            }
            Err(LinkError::Rejected(m) | LinkError::BadAddress(m)) => return Err(WorkerError::Refused(m)),
            Err(LinkError::Unavailable(m)) => {
                tracing::debug!("pull failed ({m}); retrying");
                if report.is_none() {
                    report = take_finished(&mut running, backoff).await?;
                } else {
                    tokio::time::sleep(backoff).await;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        let kind = TaskKind::try_from(task.kind).unwrap_or(TaskKind::Wait);
        match kind {
            TaskKind::Done => {
                if let Some((_, h)) = running.take() {
                    h.abort();
                }
                let c = core.clone();
                let _ = tokio::task::spawn_blocking(move || c.lock().expect("core lock").finish()).await;
                tracing::info!("job {} is done", session.job);
                return Ok(());
            }
            TaskKind::Abort => return Err(WorkerError::Aborted(task.message)),
            TaskKind::Reregister => {
                let r = join_with_retry(link.as_ref(), opts, peer_address).await?;
                // The new generation is stored before the next pull, which
                // is when the coordinator takes it as this directory's.
                store_generation(&opts.data, &r)?;
                tracing::info!(
                    "joined again as worker {} (epoch {}, generation {})",
                    r.worker_id,
                    r.epoch,
                    r.generation
                );
                session = Session::of(&r);
            }
            TaskKind::Init | TaskKind::Generate | TaskKind::Apply | TaskKind::Export => {
                if running.is_none() {
                    let id = task.task_id;
                    let run = execute(
                        core.clone(),
                        link.clone(),
                        session.clone(),
                        (opts.token.clone(), opts.peer_tls.as_ref().map(|t| t.client.clone())),
                        task,
                    );
                    let metrics = opts.metrics.clone();
                    let h = tokio::spawn(async move {
                        let report = run.await;
                        metrics.reported(&report);
                        report
                    });
                    running = Some((id, h));
                }
                report = take_finished(&mut running, HEARTBEAT_INTERVAL).await?;
            }
            TaskKind::Wait | TaskKind::Unspecified => {
                if running.is_some() {
                    report = take_finished(&mut running, HEARTBEAT_INTERVAL).await?;
                } else if task.wait_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(task.wait_ms as u64)).await;
                }
            }
        }
    }
}

/// Stores the generation a join gave this data directory in its identity.
fn store_generation(data: &std::path::Path, reply: &JoinReply) -> Result<(), WorkerError> {
    if let Some(mut identity) = store::read_identity(data)?
        && identity.generation != reply.generation
    {
        identity.generation = reply.generation;
        store::write_identity(data, &identity)?;
    }
    Ok(())
}

/// Waits up to `limit` for the running task; returns its report when it finished
/// (then a pull is due at once), `None` when the heartbeat is due first.
async fn take_finished(
    running: &mut Option<(u64, tokio::task::JoinHandle<RoundReport>)>,
    limit: Duration,
) -> Result<Option<RoundReport>, WorkerError> {
    let Some((_, h)) = running.as_mut() else {
        return Ok(None);
    };
    let done = if limit.is_zero() {
        if h.is_finished() { Some(h.await) } else { None }
    } else {
        tokio::time::timeout(limit, h).await.ok()
    };
    match done {
        Some(r) => {
            running.take();
            Ok(Some(r.map_err(|e| WorkerError::Thread { what: "task", detail: e.to_string() })?))
        }
        None => Ok(None),
    }
}
