//! The Coordinator gRPC service (a thin shell over the [`Scheduler`]) and its server.

use crate::scheduler::Scheduler;
use retro_common::auth::check_token;
use retro_proto::coordinator_server::{Coordinator, CoordinatorServer};
use retro_proto::{BlockUpload, PullReply, PullRequest, RegisterReply, RegisterRequest, UploadReply};
use std::future::Future;
use std::sync::Arc;
use tonic::{Request, Response, Status, Streaming};

/// The gRPC face of the scheduler.
pub struct CoordinatorService {
    /// The scheduler.
    pub scheduler: Arc<Scheduler>,
}

#[tonic::async_trait]
impl Coordinator for CoordinatorService {
    async fn register(&self, request: Request<RegisterRequest>) -> Result<Response<RegisterReply>, Status> {
        let peer = request.remote_addr().map(|a| a.to_string()).unwrap_or_else(|| "a worker".into());
        match self.scheduler.register(request.into_inner()) {
            Ok(r) => Ok(Response::new(r)),
            Err(e) => {
                // The refused worker hears why; the operator watching the
                // coordinator must too, or a misstarted worker goes unnoticed.
                tracing::warn!("refused {peer}: {e}");
                Err(Status::failed_precondition(e.to_string()))
            }
        }
    }

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
                let n = self.scheduler.accept_upload(&head, blocks).map_err(Status::failed_precondition)?;
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
    let svc = CoordinatorServer::new(CoordinatorService { scheduler })
        .max_decoding_message_size(retro_proto::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(retro_proto::MAX_MESSAGE_BYTES);
    let svc = tonic::service::interceptor::InterceptedService::new(svc, check_token(token));
    serve_routes(tonic::service::Routes::new(svc), tls, listener, shutdown).await
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
        .serve_with_incoming_shutdown(tokio_stream::wrappers::TcpListenerStream::new(listener), shutdown)
        .await
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
) -> Result<(), String> {
    let shutdown = async move {
        while !over() {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    };
    serve_routes(routes, tls, listener, shutdown).await.map_err(|e| e.to_string())
}
