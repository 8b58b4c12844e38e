//! `/healthz` and `/status` over plain HTTP beside the gRPC port
//! (`coordinator --status ADDR`): a job's progress for a person or a monitor,
//! without a gRPC client. Read-only; one request per connection.

use crate::scheduler::Scheduler;
use serde::Serialize;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Longest request head read (a GET needs a few hundred bytes).
const MAX_REQUEST_BYTES: usize = 8 * 1024;

/// One worker in the status.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerStatus {
    /// Worker id.
    pub id: String,
    /// Shards it owns.
    pub shards: Vec<u32>,
    /// Peer address it advertised.
    pub address: String,
    /// Seconds since its last call.
    pub seconds_since_seen: f64,
    /// Presumed lost (silent for longer than the heartbeat timeout).
    pub lost: bool,
}

/// One layer in the status.
#[derive(Clone, Debug, Serialize)]
pub struct LayerStatus {
    /// The question.
    pub question: String,
    /// Last committed round (0 = init), if any.
    pub committed_round: Option<u32>,
    /// Every round done and the tablebase written.
    pub solved: bool,
    /// Positions decided so far (terminal included).
    pub decided: u64,
    /// Wall time spent on the layer so far.
    pub seconds: f64,
    /// Positions decided per second in the last committed round.
    pub last_round_rate: Option<f64>,
}

/// The whole status document.
#[derive(Clone, Debug, Serialize)]
pub struct JobStatus {
    /// Job name.
    pub job: String,
    /// Plan hash.
    pub plan_hash: String,
    /// Positions per layer.
    pub positions: u64,
    /// Phase, e.g. `apply layer 0 round 12`.
    pub phase: String,
    /// Workers the job waits for.
    pub expected_workers: usize,
    /// Per worker.
    pub workers: Vec<WorkerStatus>,
    /// Per layer.
    pub layers: Vec<LayerStatus>,
    /// Layers not yet solved.
    pub layers_left: usize,
    /// A rough time left in seconds: the mean time of the solved layers times the
    /// layers left (none before the first layer is solved; round counts are not
    /// known in advance, so this is an estimate, not a promise).
    pub estimated_seconds_left: Option<f64>,
}

/// Serves `/healthz` (`ok`) and `/status` (JSON) until `shutdown` resolves.
pub async fn serve_http(
    scheduler: Arc<Scheduler>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    tokio::pin!(shutdown);
    loop {
        let conn = tokio::select! {
            c = listener.accept() => c,
            _ = &mut shutdown => return,
        };
        let Ok((mut stream, _)) = conn else { continue };
        let s = scheduler.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; MAX_REQUEST_BYTES];
            let mut len = 0;
            // Read the request head (until a blank line, the limit, or EOF).
            while len < buf.len() {
                match tokio::time::timeout(std::time::Duration::from_secs(5), stream.read(&mut buf[len..])).await {
                    Ok(Ok(0)) | Err(_) | Ok(Err(_)) => break,
                    Ok(Ok(n)) => len += n,
                }
                if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            let head = String::from_utf8_lossy(&buf[..len]);
            let (code, kind, body) = respond(&s, head.lines().next().unwrap_or(""));
            let reply = format!(
                "HTTP/1.1 {code}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

/// Status code, content type and body for a request line.
fn respond(s: &Scheduler, request_line: &str) -> (&'static str, &'static str, String) {
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    match (method, path) {
        ("GET", "/healthz") => ("200 OK", "text/plain", "ok\n".into()),
        ("GET", "/status") => match serde_json::to_string_pretty(&s.status()) {
            Ok(json) => ("200 OK", "application/json", json + "\n"),
            Err(e) => ("500 Internal Server Error", "text/plain", format!("{e}\n")),
        },
        ("GET", _) => ("404 Not Found", "text/plain", "try /healthz or /status\n".into()),
        _ => ("405 Method Not Allowed", "text/plain", "GET only\n".into()),
    }
}
