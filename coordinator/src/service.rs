//! The gRPC services: `Cluster.Join`, which every kind of job serves through
//! [`ClusterService`] over its [`Joinable`] job, the retrograde job's
//! Coordinator service (a thin shell over the [`Scheduler`]), and the server
//! they all run in.

use crate::CoordinatorError;
use crate::scheduler::Scheduler;
use retro_common::auth::check_token;
use retro_proto::cluster_server::{Cluster, ClusterServer};
use retro_proto::coordinator_server::{Coordinator, CoordinatorServer};
use retro_proto::{BlockUpload, JoinReply, JoinRequest, PullReply, PullRequest, UploadReply};
use std::future::Future;
use std::sync::Arc;
use tonic::{Request, Response, Status, Streaming};

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
        match check_join(&req, &self.0.plan_hash()).and_then(|()| self.0.join(req)) {
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
    let cluster = ClusterServer::new(ClusterService(job))
        .max_decoding_message_size(retro_proto::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(retro_proto::MAX_MESSAGE_BYTES);
    tonic::service::Routes::new(tonic::service::interceptor::InterceptedService::new(cluster, check_token(token)))
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
        let mut stream = request.into_inner();
        let mut blocks = Vec::new();
        let mut first: Option<BlockUpload> = None;
        while let Some(msg) = stream.message().await? {
            if first.is_none() {
                first = Some(BlockUpload { compressed: Vec::new(), ..msg.clone() });
            }
            if msg.last {
                if msg.blocks_sent != blocks.len() as u64 {
                    return Err(Status::data_loss("upload ended early"));
                }
                let head = first.take().expect("set above");
                let n = self
                    .scheduler
                    .accept_upload(&head, blocks)
                    .map_err(|e| Status::failed_precondition(e.to_string()))?;
                return Ok(Response::new(UploadReply { blocks: n }));
            }
            blocks.push(msg);
        }
        Err(Status::data_loss("upload stream ended without its final message"))
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

/// Serves the Coordinator service on `listener` until `shutdown` completes,
/// over TLS when `tls` is given.
pub async fn serve(
    scheduler: Arc<Scheduler>,
    token: Option<String>,
    tls: Option<ServerTls>,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let svc = CoordinatorServer::new(CoordinatorService { scheduler: scheduler.clone() })
        .max_decoding_message_size(retro_proto::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(retro_proto::MAX_MESSAGE_BYTES);
    let svc = tonic::service::interceptor::InterceptedService::new(svc, check_token(token.clone()));
    serve_routes(cluster_routes(scheduler, token).add_service(svc), tls, listener, shutdown).await
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
        .http2_keepalive_interval(Some(retro_common::KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(retro_common::KEEPALIVE_TIMEOUT))
        .add_routes(routes)
        .serve_with_incoming_shutdown(guarded_grpc(listener).incoming(), shutdown)
        .await
}

/// `listener` under the limits every gRPC port of the cluster has (idle
/// connections closed after [`retro_common::net::GRPC_IDLE`], at most a
/// quarter of the descriptor limit open).
pub fn guarded_grpc(listener: tokio::net::TcpListener) -> retro_common::net::GuardedListener {
    use retro_common::net::{ConnectionLimits, GRPC_IDLE, GuardedListener};
    GuardedListener::new(listener, "gRPC port", ConnectionLimits::for_listener(GRPC_IDLE))
}

/// A level or task job as its service runs it: joinable, with a status, a
/// heartbeat sweep, and an end it decides itself (the retrograde job's end is
/// the scheduler's phase, watched by `job::run`).
pub trait ServedJob: Joinable + crate::status::StatusSource {
    /// Whether the job is over (finished or failed).
    fn over(&self) -> bool;
    /// Finds the workers silent past the heartbeat timeout and does what the
    /// kind of job does with them.
    fn sweep(&self);
}

/// Runs a level or task job's service: its status on `status` (if any), the
/// heartbeat sweep every second, and `routes` on `listener` until the job is
/// over. The one runtime both kinds share.
pub async fn run_served<J: ServedJob>(
    job: Arc<J>,
    routes: tonic::service::Routes,
    tls: Option<ServerTls>,
    listener: tokio::net::TcpListener,
    status: Option<std::net::SocketAddr>,
) -> Result<(), CoordinatorError> {
    let over = |j: Arc<J>| move || j.over();
    crate::status::spawn_until(job.clone(), status, polled_until(over(job.clone()))).await?;
    every_second_until(over(job.clone()), {
        let job = job.clone();
        move || job.sweep()
    });
    serve_until(routes, tls, listener, over(job)).await
}

/// Runs `tick` every second in the background until `over()` turns true:
/// the heartbeat sweep of the level and task jobs, so that a silent worker
/// is found lost (and its unit handed to another) even when nobody calls.
pub fn every_second_until(over: impl Fn() -> bool + Send + 'static, tick: impl Fn() + Send + 'static) {
    tokio::spawn(async move {
        while !over() {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            tick();
        }
    });
}

/// Serves `routes` like [`serve_routes`] until `over()` turns true (checked
/// every 200 ms), then one more second so workers long-polling for their next
/// step hear that the job is over, then stops. For jobs whose end the service
/// itself decides (level and task jobs).
pub async fn serve_until(
    routes: tonic::service::Routes,
    tls: Option<ServerTls>,
    listener: tokio::net::TcpListener,
    over: impl Fn() -> bool + Send + 'static,
) -> Result<(), CoordinatorError> {
    let shutdown = async move {
        polled_until(over).await;
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    };
    Ok(serve_routes(routes, tls, listener, shutdown).await?)
}

/// Resolves once `over()` turns true, checked every 200 ms: the end of a job
/// whose service decides it (level and task jobs).
pub async fn polled_until(over: impl Fn() -> bool) {
    while !over() {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
