//! `/healthz`, `/status` (JSON) and `/metrics` (Prometheus text) over plain
//! HTTP beside the gRPC port (`coordinator --status ADDR`): a job's progress
//! for a person or a monitor, without a gRPC client. Read-only. Every kind of
//! job (retrograde layers, breadth-first levels, task lists) describes itself
//! in one [`JobStatus`] through [`StatusSource`]: the fields every kind has,
//! and the [`JobDetail`] of its own kind, tagged by `kind`.

use crate::CoordinatorError;
use retro_games::JobKind;
use retro_node::roster::{MemberView, Roster};
use serde::Serialize;
use std::sync::Arc;

/// One worker in the status.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerStatus {
    /// Its id, seconds since its last call, and whether it is presumed lost
    /// (silent for longer than the heartbeat timeout).
    #[serde(flatten)]
    pub member: MemberView,
    /// Shards it owns (retrograde and level jobs).
    pub shards: Vec<u32>,
    /// Peer address it advertised (retrograde jobs).
    pub address: String,
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
    /// Positions decided so far (terminal included, illegal ones not):
    /// [`crate::manifest::LayerRecord::decided`].
    pub decided: u64,
    /// Wall time spent on the layer so far.
    pub seconds: f64,
    /// Positions decided per second in the last committed round.
    pub last_round_rate: Option<f64>,
}

/// One level of a level job in the status.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct LevelStatus {
    /// Level (pegs removed from the start).
    pub level: u32,
    /// Positions in it, up to the start's symmetry.
    pub positions: u64,
}

/// A task job's queue in the status.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct TaskStatus {
    /// Results the job computes (Sylver: table rows).
    pub results: u64,
    /// Results checkpointed so far.
    pub results_done: u64,
    /// Units waiting for a worker (Sylver: m-classes).
    pub units_queued: u64,
    /// Units a worker holds now.
    pub units_held: u64,
}

/// What one kind of job adds to the status. In the JSON its fields sit
/// beside the common ones, with `kind` (`retrograde`, `levels` or `tasks`)
/// saying which.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum JobDetail {
    /// Retrograde layers.
    Retrograde {
        /// Positions per layer.
        positions: u64,
        /// Per layer.
        layers: Vec<LayerStatus>,
        /// Layers not yet solved.
        layers_left: usize,
    },
    /// Breadth-first levels.
    Levels {
        /// Every level merged so far.
        levels: Vec<LevelStatus>,
    },
    /// Independent tasks.
    Tasks {
        /// The queue.
        tasks: TaskStatus,
    },
}

impl JobDetail {
    /// The kind of job this is the detail of.
    pub fn kind(&self) -> JobKind {
        match self {
            JobDetail::Retrograde { .. } => JobKind::Retrograde,
            JobDetail::Levels { .. } => JobKind::Levels,
            JobDetail::Tasks { .. } => JobKind::Tasks,
        }
    }
}

/// The whole status document.
#[derive(Clone, Debug, Serialize)]
pub struct JobStatus {
    /// Job name.
    pub job: String,
    /// Plan hash.
    pub plan_hash: String,
    /// Phase, e.g. `apply layer 0 round 12`, `expand level 7`, `running`.
    pub phase: String,
    /// Workers the job waits for.
    pub expected_workers: usize,
    /// Per worker.
    pub workers: Vec<WorkerStatus>,
    /// Joins since this coordinator started (restarts of workers included).
    pub worker_joins: u64,
    /// Times a worker was presumed lost since this coordinator started.
    pub worker_losses: u64,
    /// What the kind of job adds, with its `kind`.
    #[serde(flatten)]
    pub detail: JobDetail,
    /// A rough time left in seconds (retrograde: the mean time of the solved
    /// layers times the layers left, refined by the trend of the current
    /// layer's rounds; tasks: the rate of results so far). None until there
    /// is a basis; an estimate, not a promise.
    pub estimated_seconds_left: Option<f64>,
    /// The wall time of every committed round (retrograde jobs; init not
    /// counted), for the metrics' histogram; not in the JSON, whose layers
    /// give the totals.
    #[serde(skip)]
    pub round_seconds: Vec<f64>,
}

impl JobStatus {
    /// A status with the fields every kind fills and `detail`; no workers
    /// yet ([`JobStatus::with_roster`]) and no estimate.
    pub fn new(detail: JobDetail, job: &str, plan_hash: &str, phase: String, expected_workers: usize) -> JobStatus {
        JobStatus {
            job: job.to_string(),
            plan_hash: plan_hash.to_string(),
            phase,
            expected_workers,
            workers: Vec::new(),
            worker_joins: 0,
            worker_losses: 0,
            detail,
            estimated_seconds_left: None,
            round_seconds: Vec::new(),
        }
    }

    /// The kind of job.
    pub fn kind(&self) -> JobKind {
        self.detail.kind()
    }

    /// Fills the workers, joins and losses from `roster`, `extra` giving the
    /// shards and address of each (the traffic stays zero; the scheduler fills
    /// it from its slots).
    pub fn with_roster(mut self, roster: &Roster, extra: impl Fn(&str) -> (Vec<u32>, String)) -> JobStatus {
        self.workers = roster
            .views()
            .into_iter()
            .map(|member| {
                let (shards, address) = extra(&member.id);
                WorkerStatus {
                    member,
                    shards,
                    address,
                    traffic: Traffic::default(),
                    last_round_traffic: Traffic::default(),
                }
            })
            .collect();
        self.worker_joins = roster.joins();
        self.worker_losses = roster.losses();
        self
    }
}

/// A job that can say where it stands.
pub trait StatusSource: Send + Sync + 'static {
    /// The status now.
    fn status(&self) -> JobStatus;
}

impl StatusSource for crate::scheduler::Scheduler {
    fn status(&self) -> JobStatus {
        crate::scheduler::Scheduler::status(self)
    }
}

/// Serves `/healthz` (`ok`), `/status` (JSON) and `/metrics` (Prometheus
/// text, with the disk use of `data_dir`) of `source` on `listener` until
/// `shutdown` resolves. The documents are made on a blocking thread: the
/// metrics walk the data directory.
pub async fn serve_http<S: StatusSource>(
    source: Arc<S>,
    data_dir: Option<std::path::PathBuf>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    use axum::routing::get;
    let status = {
        let source = source.clone();
        move || async move {
            let json = tokio::task::spawn_blocking(move || serde_json::to_string_pretty(&source.status())).await;
            match json {
                Ok(Ok(json)) => ([(header::CONTENT_TYPE, "application/json")], json + "\n").into_response(),
                Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
                Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
            }
        }
    };
    let metrics = move || async move {
        let text = tokio::task::spawn_blocking(move || metrics_text(&source.status(), data_dir.as_deref())).await;
        match text {
            Ok(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response(),
            Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
        }
    };
    let app = axum::Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
        .fallback(|| async { (StatusCode::NOT_FOUND, "try /healthz, /status or /metrics\n") });
    use retro_node::net::{ConnectionLimits, GuardedListener, HTTP_IDLE};
    let listener = GuardedListener::new(listener, "status page", ConnectionLimits::for_listener(HTTP_IDLE));
    retro_node::net::serve_http(listener, app, |io| io, shutdown).await;
}

/// The status page of a running job ([`spawn`]): it serves until
/// [`StatusServer::close_after`], or until it is dropped (a job that failed).
pub struct StatusServer {
    /// Where it serves; `None` when no address was asked for.
    addr: Option<std::net::SocketAddr>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl StatusServer {
    /// Keeps serving the job's final status for `linger` (`--status-linger`:
    /// so that a monitor's last scrape sees the end) or until `interrupted`
    /// resolves, then stops.
    pub async fn close_after(self, linger: std::time::Duration, interrupted: impl std::future::Future<Output = ()>) {
        if let Some(addr) = self.addr
            && !linger.is_zero()
        {
            tracing::info!(
                "the job is over; its final status stays on http://{addr}/status and /metrics for {} s \
                 (--status-linger; SIGTERM or SIGINT ends it sooner)",
                linger.as_secs_f64()
            );
            tokio::select! {
                _ = tokio::time::sleep(linger) => {}
                _ = interrupted => {}
            }
        }
        let _ = self.stop.send(true);
    }
}

/// Serves the status of `source` (and the disk use of `data_dir`) on `addr`
/// (if any) in the background until the returned server is closed or
/// dropped. Binds before returning, so a bad address is an error now.
pub async fn spawn<S: StatusSource>(
    source: Arc<S>,
    addr: Option<std::net::SocketAddr>,
    data_dir: Option<std::path::PathBuf>,
) -> Result<StatusServer, CoordinatorError> {
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let Some(addr) = addr else { return Ok(StatusServer { addr: None, stop }) };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| CoordinatorError::Io(format!("cannot serve the status on {addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| CoordinatorError::Io(e.to_string()))?;
    tracing::info!("status on http://{bound}/status");
    // Stops when told, or when the server handle is dropped.
    let shutdown = async move {
        let _ = stopped.wait_for(|s| *s).await;
    };
    tokio::spawn(serve_http(source, data_dir, listener, shutdown));
    Ok(StatusServer { addr: Some(bound), stop })
}

/// The status as Prometheus text metrics (exposition format 0.0.4; the
/// conventions of [`retro_node::metrics`]: the job's name in `retro_job`,
/// counters ending in `_total`, no rates). Every kind: what every process has
/// (build info, resident memory, the checkpoint directory's disk use when
/// `data_dir` is given), workers expected, active and lost, each worker's
/// last call, joins and losses, (estimated) seconds left. Retrograde jobs:
/// positions, per layer the committed round, positions decided, whether
/// solved and its seconds, the rounds' durations as a histogram, per worker
/// the records and bytes exchanged, layers left. Level jobs: positions per
/// level. Task jobs: results done and to do, units queued and held. Reads
/// `data_dir`: call it off the async runtime's threads.
pub fn metrics_text(st: &JobStatus, data_dir: Option<&std::path::Path>) -> String {
    use retro_node::metrics::{Exposition, ROUND_BUCKETS, Sample, one};
    let (positions, layers, layers_left, levels, tasks) = match &st.detail {
        JobDetail::Retrograde { positions, layers, layers_left } => {
            (Some(*positions), layers.as_slice(), Some(*layers_left), &[][..], None)
        }
        JobDetail::Levels { levels } => (None, &[][..], None, levels.as_slice(), None),
        JobDetail::Tasks { tasks } => (None, &[][..], None, &[][..], Some(tasks)),
    };
    let retrograde_job = st.kind() == JobKind::Retrograde;
    // A retrograde job declares its families from the first scrape on; the
    // other kinds leave out the families they never fill.
    let mut e = Exposition::new(&[("retro_job", &st.job)], retrograde_job);
    e.process(retro_build_info::BUILD_COMMIT, data_dir);
    let retrograde = |v: Option<u64>| v.map(|v| one(v as f64)).unwrap_or_default();
    e.family("retro_positions", "gauge", "Positions in one layer's rank space.", retrograde(positions));
    let per_layer = |f: &dyn Fn(&LayerStatus) -> Option<f64>| -> Vec<Sample> {
        layers.iter().filter_map(|l| f(l).map(|v| (vec![("layer", l.question.clone())], v))).collect()
    };
    e.family(
        "retro_layer_committed_round",
        "gauge",
        "Last committed round of the layer (0: init).",
        per_layer(&|l| l.committed_round.map(f64::from)),
    );
    e.family(
        "retro_layer_decided_total",
        "counter",
        "Positions of the layer decided so far (never more than retro_positions).",
        per_layer(&|l| Some(l.decided as f64)),
    );
    e.family(
        "retro_layer_solved",
        "gauge",
        "1 once every round is done and the tablebase written.",
        per_layer(&|l| Some(if l.solved { 1.0 } else { 0.0 })),
    );
    e.family(
        "retro_layer_seconds_total",
        "counter",
        "Wall time spent on the layer (its rounds, init and export), over every run of the job.",
        per_layer(&|l| Some(l.seconds)),
    );
    if retrograde_job {
        e.histogram(
            "retro_round_duration_seconds",
            "Wall time of each committed round (init not counted), over every run of the job.",
            &ROUND_BUCKETS,
            vec![(Vec::new(), st.round_seconds.clone())],
        );
    }
    let lost = st.workers.iter().filter(|w| w.member.lost).count();
    e.family("retro_workers_expected", "gauge", "Workers the job waits for.", one(st.expected_workers as f64));
    e.family(
        "retro_workers",
        "gauge",
        "Workers joined, by state.",
        vec![
            (vec![("state", "active".into())], (st.workers.len() - lost) as f64),
            (vec![("state", "lost".into())], lost as f64),
        ],
    );
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    e.family(
        "retro_worker_last_seen_timestamp_seconds",
        "gauge",
        "When the worker last called the coordinator, in seconds since the epoch.",
        st.workers.iter().map(|w| (vec![("worker", w.member.id.clone())], now - w.member.seconds_since_seen)).collect(),
    );
    e.family(
        "retro_worker_joins_total",
        "counter",
        "Joins since the coordinator started.",
        one(st.worker_joins as f64),
    );
    e.family(
        "retro_worker_losses_total",
        "counter",
        "Times a worker was presumed lost since the coordinator started.",
        one(st.worker_losses as f64),
    );
    let per_worker = |f: &dyn Fn(&Traffic) -> u64| -> Vec<Sample> {
        if !retrograde_job {
            return Vec::new();
        }
        st.workers.iter().map(|w| (vec![("worker", w.member.id.clone())], f(&w.traffic) as f64)).collect()
    };
    e.family("retro_records_sent_total", "counter", "Records sent to other workers.", per_worker(&|t| t.records_sent));
    e.family(
        "retro_bytes_sent_total",
        "counter",
        "Payload bytes sent to other workers.",
        per_worker(&|t| t.bytes_sent),
    );
    e.family(
        "retro_records_received_total",
        "counter",
        "Records received from other workers.",
        per_worker(&|t| t.records_received),
    );
    e.family(
        "retro_bytes_received_total",
        "counter",
        "Payload bytes received from other workers.",
        per_worker(&|t| t.bytes_received),
    );
    e.family("retro_layers_left", "gauge", "Layers not yet solved.", retrograde(layers_left.map(|n| n as u64)));
    e.family(
        "retro_level_positions",
        "gauge",
        "Positions in the level, up to the start's symmetry.",
        levels.iter().map(|l| (vec![("level", l.level.to_string())], l.positions as f64)).collect(),
    );
    let tasks = |f: &dyn Fn(&TaskStatus) -> u64| tasks.map(|t| one(f(t) as f64)).unwrap_or_default();
    e.family("retro_task_results", "gauge", "Results the task job computes.", tasks(&|t| t.results));
    e.family("retro_task_results_done_total", "counter", "Results checkpointed so far.", tasks(&|t| t.results_done));
    e.family("retro_task_units_queued", "gauge", "Units waiting for a worker.", tasks(&|t| t.units_queued));
    e.family("retro_task_units_held", "gauge", "Units held by a worker.", tasks(&|t| t.units_held));
    e.family(
        "retro_seconds_left",
        "gauge",
        "Estimated seconds left (absent until there is a basis for it).",
        st.estimated_seconds_left.map(one).unwrap_or_default(),
    );
    e.finish()
}

#[cfg(test)]
mod tests {

    #[test]
    fn metrics_are_prometheus_text_with_escaped_labels() {
        let layers = vec![LayerStatus {
            question: "solo(A)".into(),
            committed_round: Some(4),
            solved: false,
            decided: 900,
            seconds: 1.5,
            last_round_rate: None,
        }];
        let detail = JobDetail::Retrograde { positions: 1662, layers, layers_left: 3 };
        let mut st = JobStatus::new(detail, "st\"age", "h", "apply".into(), 2);
        st.workers = vec![WorkerStatus {
            member: MemberView { id: "w1".into(), seconds_since_seen: 0.5, lost: false },
            shards: vec![0],
            address: "a".into(),
            traffic: Traffic { records_sent: 7, bytes_sent: 30, records_received: 5, bytes_received: 20 },
            last_round_traffic: Traffic::default(),
        }];
        st.round_seconds = vec![0.3, 2.0, 2.5];
        let text = metrics_text(&st, None);
        for line in [
            "retro_round_duration_seconds_bucket{retro_job=\"st\\\"age\",le=\"1\"} 1",
            "retro_round_duration_seconds_bucket{retro_job=\"st\\\"age\",le=\"5\"} 3",
            "retro_round_duration_seconds_count{retro_job=\"st\\\"age\"} 3",
            "# TYPE retro_layer_decided_total counter",
            "retro_positions{retro_job=\"st\\\"age\"} 1662",
            "retro_layer_committed_round{retro_job=\"st\\\"age\",layer=\"solo(A)\"} 4",
            "retro_layer_decided_total{retro_job=\"st\\\"age\",layer=\"solo(A)\"} 900",
            "retro_workers{retro_job=\"st\\\"age\",state=\"lost\"} 0",
            "retro_bytes_sent_total{retro_job=\"st\\\"age\",worker=\"w1\"} 30",
            "# TYPE retro_records_received_total counter",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
        }
        // No estimate: that family has no sample; and no pre-computed rates.
        assert!(!text.contains("retro_seconds_left{") && !text.contains("_rate"), "{text}");
        // No label named job (a scraper renames it to exported_job).
        assert!(!text.contains("{job=") && !text.contains(",job="), "{text}");
        // Every counter ends in _total.
        for l in text.lines().filter(|l| l.starts_with("# TYPE") && l.ends_with(" counter")) {
            assert!(l.split(' ').nth(2).unwrap().ends_with("_total"), "{l}");
        }
        // Every sample line is `name{labels} number`.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, v) = l.rsplit_once(' ').unwrap();
            assert!(v.parse::<f64>().is_ok(), "{l}");
        }
    }

    use super::{JobDetail, JobStatus, LayerStatus, LevelStatus, TaskStatus, Traffic, WorkerStatus, metrics_text};
    use retro_node::roster::MemberView;

    #[test]
    fn metrics_of_level_and_task_jobs_leave_out_the_retrograde_families() {
        let detail = JobDetail::Levels {
            levels: vec![LevelStatus { level: 0, positions: 1 }, LevelStatus { level: 1, positions: 1 }],
        };
        let levels = JobStatus::new(detail, "peg", "h", "expand level 1".into(), 2);
        let text = metrics_text(&levels, None);
        assert!(text.lines().any(|l| l == "retro_level_positions{retro_job=\"peg\",level=\"1\"} 1"), "{text}");
        assert!(text.lines().any(|l| l == "retro_workers_expected{retro_job=\"peg\"} 2"), "{text}");
        assert!(!text.contains("retro_positions") && !text.contains("retro_layer_"), "{text}");
        assert!(!text.contains("retro_task_"), "{text}");
        let queue = TaskStatus { results: 10, results_done: 4, units_queued: 2, units_held: 1 };
        let tasks = JobStatus::new(JobDetail::Tasks { tasks: queue }, "sylver", "h", "running".into(), 1);
        let text = metrics_text(&tasks, None);
        for line in ["retro_task_results{retro_job=\"sylver\"} 10", "retro_task_units_held{retro_job=\"sylver\"} 1"] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
        }
        assert!(!text.contains("retro_level_positions") && !text.contains("retro_bytes_sent_total"), "{text}");
    }
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
