//! `/healthz`, `/status` (JSON) and `/metrics` (Prometheus text) over plain
//! HTTP beside the gRPC port (`coordinator --status ADDR`): a job's progress
//! for a person or a monitor, without a gRPC client. Read-only; one request
//! per connection.

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
    /// Updates it exchanged with the other workers since this coordinator
    /// started (payload bytes, as encoded on the wire).
    pub traffic: Traffic,
    /// The same for its last GENERATE (sent) and APPLY (received).
    pub last_round_traffic: Traffic,
}

/// Updates exchanged between workers.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Traffic {
    /// Updates sent to other workers.
    pub records_sent: u64,
    /// Their payload bytes.
    pub bytes_sent: u64,
    /// Updates received from other workers.
    pub records_received: u64,
    /// Their payload bytes.
    pub bytes_received: u64,
}

impl Traffic {
    /// What one task report says crossed the network; the sent and received
    /// halves come from different tasks (GENERATE, APPLY), so a report
    /// replaces only the half it carries.
    pub fn record(&mut self, last: &mut Traffic, rep: &retro_proto::RoundReport) {
        if rep.kind == retro_proto::TaskKind::Generate as i32 {
            (last.records_sent, last.bytes_sent) = (rep.records_sent, rep.bytes_sent);
        }
        if rep.kind == retro_proto::TaskKind::Apply as i32 {
            (last.records_received, last.bytes_received) = (rep.records_received, rep.bytes_received);
        }
        self.records_sent += rep.records_sent;
        self.bytes_sent += rep.bytes_sent;
        self.records_received += rep.records_received;
        self.bytes_received += rep.bytes_received;
    }
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

/// A label value in the Prometheus text format (backslash, quote and newline escaped).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The status as Prometheus text metrics (exposition format 0.0.4): positions,
/// per layer the committed round, positions decided, whether solved, seconds
/// and the last round's rate; workers expected, joined and lost; per worker
/// the records and bytes exchanged; layers and (estimated) seconds left.
pub fn metrics_text(st: &JobStatus) -> String {
    let job = label(&st.job);
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, samples: Vec<(String, f64)>| {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (labels, v) in samples {
            out.push_str(&format!("{name}{{job=\"{job}\"{labels}}} {v}\n"));
        }
    };
    family(
        "retro_positions",
        "gauge",
        "Positions in one layer's rank space.",
        vec![(String::new(), st.positions as f64)],
    );
    let per_layer = |f: &dyn Fn(&LayerStatus) -> Option<f64>| -> Vec<(String, f64)> {
        st.layers.iter().filter_map(|l| f(l).map(|v| (format!(",layer=\"{}\"", label(&l.question)), v))).collect()
    };
    family(
        "retro_layer_committed_round",
        "gauge",
        "Last committed round of the layer (0: init).",
        per_layer(&|l| l.committed_round.map(f64::from)),
    );
    family("retro_layer_decided", "gauge", "Positions decided so far.", per_layer(&|l| Some(l.decided as f64)));
    family(
        "retro_layer_solved",
        "gauge",
        "1 once every round is done and the tablebase written.",
        per_layer(&|l| Some(if l.solved { 1.0 } else { 0.0 })),
    );
    family("retro_layer_seconds", "gauge", "Wall time spent on the layer.", per_layer(&|l| Some(l.seconds)));
    family(
        "retro_layer_rate",
        "gauge",
        "Positions decided per second in the last committed round.",
        per_layer(&|l| l.last_round_rate),
    );
    let lost = st.workers.iter().filter(|w| w.lost).count();
    family(
        "retro_workers_expected",
        "gauge",
        "Workers the job waits for.",
        vec![(String::new(), st.expected_workers as f64)],
    );
    family(
        "retro_workers",
        "gauge",
        "Workers joined, by state.",
        vec![(",state=\"active\"".into(), (st.workers.len() - lost) as f64), (",state=\"lost\"".into(), lost as f64)],
    );
    let per_worker = |f: &dyn Fn(&Traffic) -> u64| -> Vec<(String, f64)> {
        st.workers.iter().map(|w| (format!(",worker=\"{}\"", label(&w.id)), f(&w.traffic) as f64)).collect()
    };
    family("retro_records_sent_total", "counter", "Records sent to other workers.", per_worker(&|t| t.records_sent));
    family("retro_bytes_sent_total", "counter", "Payload bytes sent to other workers.", per_worker(&|t| t.bytes_sent));
    family(
        "retro_records_received_total",
        "counter",
        "Records received from other workers.",
        per_worker(&|t| t.records_received),
    );
    family(
        "retro_bytes_received_total",
        "counter",
        "Payload bytes received from other workers.",
        per_worker(&|t| t.bytes_received),
    );
    family("retro_layers_left", "gauge", "Layers not yet solved.", vec![(String::new(), st.layers_left as f64)]);
    family(
        "retro_seconds_left",
        "gauge",
        "Estimated seconds left (absent until there is a basis for it).",
        st.estimated_seconds_left.map(|v| (String::new(), v)).into_iter().collect(),
    );
    out
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
        ("GET", "/metrics") => ("200 OK", "text/plain; version=0.0.4", metrics_text(&s.status())),
        ("GET", _) => ("404 Not Found", "text/plain", "try /healthz, /status or /metrics\n".into()),
        _ => ("405 Method Not Allowed", "text/plain", "GET only\n".into()),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn metrics_are_prometheus_text_with_escaped_labels() {
        let st = JobStatus {
            job: "st\"age".into(),
            plan_hash: "h".into(),
            positions: 1662,
            phase: "apply".into(),
            expected_workers: 2,
            workers: vec![WorkerStatus {
                id: "w1".into(),
                shards: vec![0],
                address: "a".into(),
                seconds_since_seen: 0.5,
                lost: false,
                traffic: Traffic { records_sent: 7, bytes_sent: 30, records_received: 5, bytes_received: 20 },
                last_round_traffic: Traffic::default(),
            }],
            layers: vec![LayerStatus {
                question: "solo(A)".into(),
                committed_round: Some(4),
                solved: false,
                decided: 900,
                seconds: 1.5,
                last_round_rate: None,
            }],
            layers_left: 3,
            estimated_seconds_left: None,
        };
        let text = metrics_text(&st);
        for line in [
            "retro_positions{job=\"st\\\"age\"} 1662",
            "retro_layer_committed_round{job=\"st\\\"age\",layer=\"solo(A)\"} 4",
            "retro_layer_decided{job=\"st\\\"age\",layer=\"solo(A)\"} 900",
            "retro_workers{job=\"st\\\"age\",state=\"lost\"} 0",
            "retro_bytes_sent_total{job=\"st\\\"age\",worker=\"w1\"} 30",
            "# TYPE retro_records_received_total counter",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
        }
        // No rate yet and no estimate: those families have no sample.
        assert!(!text.contains("retro_layer_rate{") && !text.contains("retro_seconds_left{"), "{text}");
        // Every sample line is `name{labels} number`.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, v) = l.rsplit_once(' ').unwrap();
            assert!(v.parse::<f64>().is_ok(), "{l}");
        }
    }

    use super::{JobStatus, LayerStatus, Traffic, WorkerStatus, metrics_text};
    use retro_proto::{RoundReport, TaskKind};

    #[test]
    fn traffic_adds_up_and_keeps_the_last_round_of_each_half() {
        let (mut total, mut last) = (Traffic::default(), Traffic::default());
        let generate = |n, b| RoundReport {
            kind: TaskKind::Generate as i32,
            records_sent: n,
            bytes_sent: b,
            ..Default::default()
        };
        let apply = |n, b| RoundReport {
            kind: TaskKind::Apply as i32,
            records_received: n,
            bytes_received: b,
            ..Default::default()
        };
        total.record(&mut last, &generate(10, 4));
        total.record(&mut last, &apply(7, 3));
        total.record(&mut last, &generate(5, 2));
        assert_eq!(total, Traffic { records_sent: 15, bytes_sent: 6, records_received: 7, bytes_received: 3 });
        assert_eq!(last, Traffic { records_sent: 5, bytes_sent: 2, records_received: 7, bytes_received: 3 });
    }
}
