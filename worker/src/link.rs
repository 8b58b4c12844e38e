//! How a worker reaches the coordinator and its peers.
//!
//! [`CoordinatorLink`] is implemented over gRPC here ([`GrpcLink`]) and
//! in-process by the coordinator's embedded mode, so one pull loop serves both.

use crate::{KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT, MAX_KEYS_PER_MESSAGE};
use retro_proto::cluster_client::ClusterClient;
use retro_proto::coordinator_client::CoordinatorClient;
use retro_proto::peer_client::PeerClient;
use retro_proto::{
    BlockUpload, JoinReply, JoinRequest, MAX_MESSAGE_BYTES, PullReply, PullRequest, TOKEN_METADATA, UpdateBatch,
    UploadReply,
};
use std::future::Future;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};

/// A failed call: worth retrying, or final.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The other side is unreachable or restarting; try again later.
    #[error("unreachable: {0}")]
    Unavailable(String),
    /// The other side refused (bad token, wrong plan, wrong version...).
    #[error("refused: {0}")]
    Rejected(String),
    /// The address is not `HOST:PORT`; the text says what is wrong.
    #[error("{0}")]
    BadAddress(String),
}

/// Whether a failed call may pass if tried again: the other side is
/// unreachable, restarting or busy, rather than refusing.
pub fn passes(s: &tonic::Status) -> bool {
    use tonic::Code::*;
    matches!(s.code(), Unavailable | DeadlineExceeded | Cancelled | Unknown | Aborted | ResourceExhausted)
}

impl From<tonic::Status> for LinkError {
    fn from(s: tonic::Status) -> Self {
        if passes(&s) {
            LinkError::Unavailable(s.message().to_string())
        } else {
            LinkError::Rejected(s.message().to_string())
        }
    }
}

/// The calls a worker makes to the coordinator.
pub trait CoordinatorLink: Send + Sync + 'static {
    /// Joins (or joins again): the first call of every kind of job.
    fn join(&self, req: JoinRequest) -> impl Future<Output = Result<JoinReply, LinkError>> + Send;
    /// Pulls the next task; also the heartbeat and the report channel.
    fn pull(&self, req: PullRequest) -> impl Future<Output = Result<PullReply, LinkError>> + Send;
    /// Uploads tablebase blocks.
    fn upload(
        &self,
        blocks: mpsc::Receiver<BlockUpload>,
    ) -> impl Future<Output = Result<UploadReply, LinkError>> + Send;
}

/// How a worker checks the coordinator's TLS certificate.
#[derive(Clone, Debug)]
pub struct ClientTls {
    /// PEM of the certificate authority the coordinator's certificate chains to.
    pub ca_pem: Vec<u8>,
    /// The name the certificate must carry (the coordinator's host name).
    pub domain: String,
}

/// Builds an endpoint with the keepalive and timeout settings every channel uses.
pub fn endpoint(address: &str) -> Result<Endpoint, LinkError> {
    endpoint_with(address, None)
}

/// Checks a coordinator address given as `HOST:PORT` (optionally with an
/// `http://` or `https://` scheme; an IPv6 host in brackets) and returns it
/// unchanged. A missing or zero port is the usual slip (`--connect 10.0.0.1`):
/// without this check the worker would retry that address forever.
pub fn check_host_port(address: &str) -> Result<String, LinkError> {
    let bad = |why: &str| {
        LinkError::BadAddress(format!("bad address {address:?}: {why}; expected HOST:PORT, e.g. 10.0.0.1:50051"))
    };
    let rest = address.split_once("://").map_or(address, |(_, r)| r);
    let Some((host, port)) = rest.rsplit_once(':') else { return Err(bad("no port")) };
    if host.is_empty() || host.contains(char::is_whitespace) || host.contains('/') {
        return Err(bad("no host"));
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(bad("an IPv6 host goes in brackets, e.g. [::1]:50051"));
    }
    match port.parse::<u16>() {
        Ok(0) => Err(bad("port 0")),
        Ok(_) => Ok(address.to_string()),
        Err(_) => Err(bad(&format!("port {port:?} is not a number from 1 to 65535"))),
    }
}

/// [`endpoint`], over TLS when `tls` is given.
pub fn endpoint_with(address: &str, tls: Option<&ClientTls>) -> Result<Endpoint, LinkError> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let uri = if address.contains("://") { address.to_string() } else { format!("{scheme}://{address}") };
    let mut e = Endpoint::from_shared(uri).map_err(|e| LinkError::Rejected(format!("bad address {address:?}: {e}")))?;
    if let Some(t) = tls {
        let cfg = tonic::transport::ClientTlsConfig::new()
            .ca_certificate(tonic::transport::Certificate::from_pem(&t.ca_pem))
            .domain_name(t.domain.clone());
        e = e.tls_config(cfg).map_err(|e| LinkError::Rejected(format!("TLS settings for {address}: {e}")))?;
    }
    Ok(e.connect_timeout(Duration::from_secs(5))
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(true)
        .tcp_nodelay(true))
}

/// Adds the cluster token to a request.
pub fn with_token<T>(msg: T, token: &Option<String>) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    if let Some(t) = token
        && let Ok(v) = format!("Bearer {t}").parse()
    {
        req.metadata_mut().insert(TOKEN_METADATA, v);
    }
    req
}

/// The coordinator over gRPC.
pub struct GrpcLink {
    cluster: ClusterClient<Channel>,
    client: CoordinatorClient<Channel>,
    channel: Channel,
    token: Option<String>,
}

impl GrpcLink {
    /// A lazily connecting client (the first call connects; failures retry).
    pub fn new(address: &str, token: Option<String>) -> Result<GrpcLink, LinkError> {
        GrpcLink::with_tls(address, token, None)
    }

    /// [`GrpcLink::new`], checking the coordinator's certificate when `tls` is given.
    pub fn with_tls(address: &str, token: Option<String>, tls: Option<&ClientTls>) -> Result<GrpcLink, LinkError> {
        let channel = endpoint_with(address, tls)?.connect_lazy();
        let cluster = ClusterClient::new(channel.clone());
        let client = CoordinatorClient::new(channel.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        Ok(GrpcLink { cluster, client, channel, token })
    }

    /// The channel to the coordinator, for the services of the other kinds
    /// of job (levels, tasks): one connection for the join and the job.
    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }
}

impl CoordinatorLink for GrpcLink {
    async fn join(&self, req: JoinRequest) -> Result<JoinReply, LinkError> {
        Ok(self.cluster.clone().join(with_token(req, &self.token)).await?.into_inner())
    }

    async fn pull(&self, req: PullRequest) -> Result<PullReply, LinkError> {
        Ok(self.client.clone().pull(with_token(req, &self.token)).await?.into_inner())
    }

    async fn upload(&self, blocks: mpsc::Receiver<BlockUpload>) -> Result<UploadReply, LinkError> {
        let req = with_token(ReceiverStream::new(blocks), &self.token);
        Ok(self.client.clone().upload_blocks(req).await?.into_inner())
    }
}

/// One round's update stream to one peer, fed while the frontier is scanned.
/// The peer acknowledges only after its inbox file is durable.
pub struct PeerStream {
    tx: mpsc::Sender<UpdateBatch>,
    handle: tokio::task::JoinHandle<Result<u64, LinkError>>,
    header: UpdateBatch,
    total: u64,
    bytes: u64,
    address: String,
}

impl PeerStream {
    /// Opens the stream (connects in the background; call from async context).
    pub fn open(address: &str, token: &Option<String>, tls: Option<&ClientTls>, header: UpdateBatch) -> PeerStream {
        let (tx, rx) = mpsc::channel::<UpdateBatch>(8);
        let (addr, token, tls) = (address.to_string(), token.clone(), tls.cloned());
        let handle = tokio::spawn(async move {
            let channel = endpoint_with(&addr, tls.as_ref())?
                .connect()
                .await
                .map_err(|e| LinkError::Unavailable(format!("{addr}: {e}")))?;
            let mut client = PeerClient::new(channel)
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES);
            let ack = client.send_updates(with_token(ReceiverStream::new(rx), &token)).await?.into_inner();
            Ok(ack.received)
        });
        PeerStream { tx, handle, header, total: 0, bytes: 0, address: address.to_string() }
    }

    /// Queues the keys for one destination shard (from a blocking thread).
    pub fn push_blocking(&mut self, shard: u32, mut keys: Vec<u64>) -> Result<(), LinkError> {
        keys.sort_unstable();
        for part in keys.chunks(MAX_KEYS_PER_MESSAGE) {
            let payload = retro_engine::batch::encode_batch(part).map_err(|e| LinkError::Rejected(e.to_string()))?;
            let crc32 = retro_engine::batch::batch_crc(&payload);
            self.bytes += payload.len() as u64;
            let msg = UpdateBatch { shard, count: part.len() as u64, payload, crc32, ..self.header.clone() };
            self.tx
                .blocking_send(msg)
                .map_err(|_| LinkError::Unavailable(format!("the stream to {} broke", self.address)))?;
            self.total += part.len() as u64;
        }
        Ok(())
    }

    /// Updates queued so far, and their encoded payload bytes.
    pub fn queued(&self) -> (u64, u64) {
        (self.total, self.bytes)
    }

    /// Ends the stream and waits for the acknowledgement of every update.
    pub async fn finish(self) -> Result<u64, LinkError> {
        let last = UpdateBatch { last: true, total: self.total, ..self.header };
        let sent = self.tx.send(last).await;
        drop(self.tx);
        let acked = self.handle.await.map_err(|e| LinkError::Unavailable(format!("{}: {e}", self.address)))??;
        if sent.is_err() || acked != self.total {
            return Err(LinkError::Unavailable(format!(
                "{} acknowledged {acked} of {} updates",
                self.address, self.total
            )));
        }
        Ok(acked)
    }
}
