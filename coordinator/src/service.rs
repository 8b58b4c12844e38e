//! The gRPC services: `Cluster.Join`, which every kind of job serves through
//! [`ClusterService`] over its [`Joinable`] job, the retrograde job's
//! Coordinator service (a thin shell over the [`Scheduler`]), and the server
//! they all run in.

use crate::CoordinatorError;
use crate::scheduler::Scheduler;
use retro_proto::cluster_server::{Cluster, ClusterServer};
use retro_proto::coordinator_server::{Coordinator, CoordinatorServer};
use retro_proto::{BlockUpload, JoinReply, JoinRequest, PullReply, PullRequest, UploadReply};
use std::future::Future;
use std::sync::Arc;
use tonic::{Request, Response, Status, Streaming};

/// A generated gRPC server (`$server::new($service)`) as every service of
/// the cluster is served: messages up to [`retro_proto::MAX_MESSAGE_BYTES`]
/// both ways, every call checked for the cluster token.
macro_rules! grpc_service {
    ($server:ident, $service:expr, $token:expr) => {
        tonic::service::interceptor::InterceptedService::new(
            $server::new($service)
                .max_decoding_message_size(retro_proto::MAX_MESSAGE_BYTES)
                .max_encoding_message_size(retro_proto::MAX_MESSAGE_BYTES),
            retro_node::auth::check_token($token),
        )
    };
}
pub(crate) use grpc_service;

/// A job that workers join: retrograde, level and task jobs alike.
pub trait Joinable: Send + Sync + 'static {
    /// The hash a worker's `--plan-hash` must match.
    fn plan_hash(&self) -> String;
    /// Admits a worker whose protocol version and `--plan-hash` were checked;
    /// the reply names the kind of job.
    fn join(&self, req: JoinRequest) -> Result<JoinReply, Status>;
}

impl Joinable for Scheduler {
    fn plan_hash(&self) -> String {
        self.spec.plan_hash.clone()
    }

    fn join(&self, req: JoinRequest) -> Result<JoinReply, Status> {
        // The in-process worker of an embedded run needs no Peer service; a
        // remote one of a job with several workers does.
        if req.peer_address.is_empty() && self.expected_workers > 1 {
            return Err(Status::failed_precondition(
                "a worker of a retrograde job with several workers needs its Peer service (worker --listen), and \
                 this one announced no address",
            ));
        }
        Scheduler::join(self, req).map_err(|e| Status::failed_precondition(e.to_string()))
    }
}

/// What every kind of job checks before it admits a worker: the protocol
/// version, and the plan the worker was started for, if any.
pub fn check_join(req: &JoinRequest, plan_hash: &str) -> Result<(), Status> {
    if req.protocol_version != retro_proto::PROTOCOL_VERSION {
        return Err(Status::failed_precondition(format!(
            "worker speaks protocol version {}, this coordinator speaks {}; run the same release",
            req.protocol_version,
            retro_proto::PROTOCOL_VERSION
        )));
    }
    if !req.plan_hash.is_empty() && req.plan_hash != plan_hash {
        return Err(Status::failed_precondition(format!(
            "worker was started for plan {}, this coordinator runs plan {plan_hash}",
            req.plan_hash
        )));
    }
    Ok(())
}

/// The `Cluster` service over a job.
pub struct ClusterService<J>(pub Arc<J>);

#[tonic::async_trait]
impl<J: Joinable> Cluster for ClusterService<J> {
    async fn join(&self, request: Request<JoinRequest>) -> Result<Response<JoinReply>, Status> {
        let peer = request.remote_addr().map(|a| a.to_string()).unwrap_or_else(|| "a worker".into());
        let req = request.into_inner();
        // A join may write the job's manifest (under the job's lock).
        let job = self.0.clone();
        match crate::offload::blocking(move || check_join(&req, &job.plan_hash()).and_then(|()| job.join(req))).await {
            Ok(r) => Ok(Response::new(r)),
            Err(e) => {
                // The refused worker hears why; the operator watching the
                // coordinator must too, or a misstarted worker goes unnoticed.
                tracing::warn!("refused {peer}: {}", e.message());
                Err(e)
            }
        }
    }
}

/// The `Cluster` service over `job`, behind the token check: the routes a
/// job starts from, adding its own service (also behind the check).
pub fn cluster_routes<J: Joinable>(job: Arc<J>, token: Option<String>) -> tonic::service::Routes {
    tonic::service::Routes::new(grpc_service!(ClusterServer, ClusterService(job), token))
}

/// The gRPC face of the scheduler.
pub struct CoordinatorService {
    /// The scheduler.
    pub scheduler: Arc<Scheduler>,
}

#[tonic::async_trait]
impl Coordinator for CoordinatorService {
    async fn pull(&self, request: Request<PullRequest>) -> Result<Response<PullReply>, Status> {
        Ok(Response::new(self.scheduler.pull(request.into_inner()).await))
    }

    async fn upload_blocks(&self, request: Request<Streaming<BlockUpload>>) -> Result<Response<UploadReply>, Status> {
        // Staged block by block as the messages come, off the runtime's threads.
        let scheduler = self.scheduler.clone();
        let staged = Arc::new(std::sync::Mutex::new(None));
        let result = staged.clone();
        let mut stager = crate::merge::UploadStager::default();
        crate::offload::drain(request.into_inner(), move |msg| {
            let taken = stager.take(&scheduler, msg).map_err(|e| Status::failed_precondition(e.to_string()))?;
            if taken.is_some() {
                *result.lock().expect("upload result lock") = taken;
            }
            Ok(())
        })
        .await?;
        let blocks = staged.lock().expect("upload result lock").take();
        let blocks = blocks.ok_or_else(|| Status::data_loss("upload stream ended without its final message"))?;
        Ok(Response::new(UploadReply { blocks }))
    }
}

/// The coordinator's TLS identity (PEM certificate chain and private key).
#[derive(Clone)]
pub struct ServerTls {
    /// Certificate chain, PEM.
    pub cert_pem: Vec<u8>,
    /// Private key, PEM.
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.write_str("ServerTls { .. }")
    }
}

/// Serves the retrograde job's Coordinator service (and `Cluster.Join`) as
/// `serve` says until `shutdown` fires (its status page is served apart, for
/// embedded runs too).
pub async fn serve(
    scheduler: Arc<Scheduler>,
    serve: ServeOptions,
    shutdown: Shutdown,
) -> Result<(), tonic::transport::Error> {
    let svc =
        grpc_service!(CoordinatorServer, CoordinatorService { scheduler: scheduler.clone() }, serve.token.clone());
    serve_routes(cluster_routes(scheduler, serve.token).add_service(svc), serve.tls, serve.listener, shutdown.fired())
        .await
}

/// Serves `routes` (services already wrapped in the token check) on
/// `listener` until `shutdown`, over TLS when `tls` is given, with the
/// keepalive every coordinator service uses. Shared by the retrograde, level
/// and task services so they are reachable the same way.
pub async fn serve_routes(
    routes: tonic::service::Routes,
    tls: Option<ServerTls>,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let mut builder = tonic::transport::Server::builder();
    if let Some(t) = tls {
        let identity = tonic::transport::Identity::from_pem(t.cert_pem, t.key_pem);
        builder = builder.tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))?;
    }
    builder
        .http2_keepalive_interval(Some(retro_node::KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(retro_node::KEEPALIVE_TIMEOUT))
        .add_routes(routes)
        .serve_with_incoming_shutdown(guarded_grpc(listener).incoming(), shutdown)
        .await
}

/// `listener` under the limits every gRPC port of the cluster has (idle
/// connections closed after [`retro_node::net::GRPC_IDLE`], at most a
/// quarter of the descriptor limit open).
pub fn guarded_grpc(listener: tokio::net::TcpListener) -> retro_node::net::GuardedListener {
    use retro_node::net::{ConnectionLimits, GRPC_IDLE, GuardedListener};
    GuardedListener::new(listener, "gRPC port", ConnectionLimits::for_listener(GRPC_IDLE))
}

/// How a job's workers reach it, the same for every kind of job: the bound
/// gRPC listener, TLS, the cluster token, and the status page's address.
pub struct ServeOptions {
    /// The gRPC port, bound (so a busy port is an error before the job starts).
    pub listener: tokio::net::TcpListener,
    /// Serve over TLS with this identity.
    pub tls: Option<ServerTls>,
    /// The cluster token every call must carry.
    pub token: Option<String>,
    /// Serve `/healthz`, `/status` and `/metrics` here.
    pub status: Option<std::net::SocketAddr>,
    /// How long the status page keeps serving the final state once the job is
    /// over (`--status-linger`; zero: it stops with the job).
    pub status_linger: std::time::Duration,
}

/// What a level or task job's `run` is given beside its plan: the workers
/// it waits for, its checkpoint directory, and how they reach it.
pub struct ClusterJob {
    /// Remote workers the job waits for.
    pub workers: usize,
    /// The job's checkpoint directory.
    pub checkpoints: std::path::PathBuf,
    /// The listener and the rest of what serving needs.
    pub serve: ServeOptions,
}

/// The end of a job's service: one signal for everything that serves the
/// job (the gRPC server, the status page, the heartbeat sweep), fired once.
#[derive(Clone)]
pub struct Shutdown(tokio::sync::watch::Receiver<bool>);

impl Shutdown {
    /// A signal not fired yet, and what fires it (`send(true)`, or dropping it).
    pub fn new() -> (tokio::sync::watch::Sender<bool>, Shutdown) {
        let (tx, rx) = tokio::sync::watch::channel(false);
        (tx, Shutdown(rx))
    }

    /// Resolves once the signal fired (or whoever held it is gone).
    pub async fn fired(mut self) {
        let _ = self.0.wait_for(|over| *over).await;
    }
}

/// Runs `tick` every second in the background until `shutdown` fires: the
/// heartbeat sweep of every kind of job, so that a silent worker is found
/// lost (and its work handed to another) even when nobody calls.
pub fn every_second(shutdown: Shutdown, tick: impl Fn() + Send + 'static) {
    tokio::spawn(async move {
        let over = shutdown.fired();
        tokio::pin!(over);
        let mut clock = tokio::time::interval(std::time::Duration::from_secs(1));
        clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        clock.tick().await; // the first tick is now
        loop {
            tokio::select! {
                () = &mut over => return,
                _ = clock.tick() => tick(),
            }
        }
    });
}

/// What a long-poll's question answers: something to send now, or only
/// the answer for "nothing yet", sent if nothing comes before the deadline.
pub enum Answer<T> {
    /// Send this now.
    Now(T),
    /// Nothing yet; this is what to send at the deadline.
    Later(T),
}

/// Answers a long-poll, the one loop every kind of job holds its idle
/// workers in: asks `ask` now, again each time `changed` fires and at least
/// every `tick` (a question that looks at heartbeats must be asked now and
/// then even when nothing changes), until it answers [`Answer::Now`] or
/// `hold` has passed, then sends the last answer.
pub async fn long_poll<T, E, Q>(
    changed: &tokio::sync::Notify,
    hold: std::time::Duration,
    tick: std::time::Duration,
    mut ask: impl FnMut() -> Q,
) -> Result<T, E>
where
    Q: Future<Output = Result<Answer<T>, E>>,
{
    let deadline = tokio::time::Instant::now() + hold;
    loop {
        // Made before asking: a change between the answer and the wait
        // still wakes it.
        let notified = changed.notified();
        match ask().await? {
            Answer::Now(answer) => return Ok(answer),
            Answer::Later(answer) if tokio::time::Instant::now() >= deadline => return Ok(answer),
            Answer::Later(_) => {}
        }
        let wake = deadline.min(tokio::time::Instant::now() + tick);
        let _ = tokio::time::timeout_at(wake, notified).await;
    }
}

/// A level or task job as its service runs it: joinable, with a status, a
/// heartbeat sweep, and an end it decides itself (the retrograde job's end is
/// the scheduler's phase, watched by `job::run`).
pub trait ServedJob: Joinable + crate::status::StatusSource {
    /// Whether the job is over (finished or failed).
    fn over(&self) -> bool;
    /// Fires whenever the job's state changes, its end included.
    fn changed(&self) -> &tokio::sync::Notify;
    /// Finds the workers silent past the heartbeat timeout and does what the
    /// kind of job does with them.
    fn sweep(&self);
}

/// Resolves once `job` is over: checked at every change of its state.
async fn ended<J: ServedJob>(job: &J) {
    loop {
        let notified = job.changed().notified();
        if job.over() {
            return;
        }
        notified.await;
    }
}

/// Runs a level or task job's service: its status page (if asked for, with
/// the disk use of `data_dir`), the heartbeat sweep every second, and
/// `routes` until the job is over, then one more second so workers
/// long-polling for their next step hear that it is over, then the status
/// page's linger. The one runtime both kinds share.
pub async fn run_served<J: ServedJob>(
    job: Arc<J>,
    routes: tonic::service::Routes,
    serve: ServeOptions,
    data_dir: &std::path::Path,
) -> Result<(), CoordinatorError> {
    let (fire, shutdown) = Shutdown::new();
    let status_page = crate::status::spawn(job.clone(), serve.status, Some(data_dir.to_path_buf())).await?;
    every_second(shutdown, {
        let job = job.clone();
        move || job.sweep()
    });
    let over = async move {
        ended(&*job).await;
        let _ = fire.send(true);
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    };
    serve_routes(routes, serve.tls, serve.listener, over).await?;
    // No signal handler for the linger: one installed now would stay for the
    // rest of the process (a peg ledger computed after it), and a stop signal
    // ending the process during the linger loses nothing (the levels and
    // results are on disk; the same command finishes the job).
    status_page.close_after(serve.status_linger, std::future::pending::<()>()).await;
    Ok(())
}
