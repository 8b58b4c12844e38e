//! What `worker --status ADDR` serves on `/metrics`: the worker's own
//! figures by the conventions of [`retro_node::metrics`] (the job's name in
//! `retro_job`, the worker's id in `retro_worker`, counters ending in
//! `_total`), beside what every process has (build info, resident memory,
//! the data directory's disk use).

use retro_proto::{RoundReport, TaskKind};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A worker's figures, shared between the loop that runs its tasks and the
/// status port.
#[derive(Debug)]
pub struct WorkerMetrics {
    data: PathBuf,
    inner: Mutex<Figures>,
}

#[derive(Debug, Default)]
struct Figures {
    job: String,
    worker_id: String,
    /// Tasks reported, by kind and outcome (`ok`, `failed`).
    tasks: BTreeMap<(&'static str, &'static str), u64>,
    /// Seconds of every task that succeeded, by kind, for the histogram.
    task_seconds: BTreeMap<&'static str, Vec<f64>>,
    records_sent: u64,
    bytes_sent: u64,
    records_received: u64,
    bytes_received: u64,
    /// The layer and round of the last task reported (retrograde jobs).
    last: Option<(u32, u32)>,
    /// Units finished (level jobs: steps done; task jobs: results reported).
    units: u64,
}

/// The name of a task kind in the metrics' `kind` label.
fn kind_name(kind: i32) -> &'static str {
    match TaskKind::try_from(kind) {
        Ok(TaskKind::Init) => "init",
        Ok(TaskKind::Generate) => "generate",
        Ok(TaskKind::Apply) => "apply",
        Ok(TaskKind::Export) => "export",
        _ => "other",
    }
}

impl WorkerMetrics {
    /// Figures of a worker whose data directory is `data`, none yet.
    pub fn new(data: PathBuf) -> Arc<WorkerMetrics> {
        Arc::new(WorkerMetrics { data, inner: Mutex::new(Figures::default()) })
    }

    fn figures(&self) -> std::sync::MutexGuard<'_, Figures> {
        // The figures stay usable after a panic elsewhere: they are counters.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The worker joined `job` as `worker_id`.
    pub fn joined(&self, job: &str, worker_id: &str) {
        let mut f = self.figures();
        (f.job, f.worker_id) = (job.to_string(), worker_id.to_string());
    }

    /// A retrograde task's report, as the coordinator is given it.
    pub fn reported(&self, r: &RoundReport) {
        let mut f = self.figures();
        let kind = kind_name(r.kind);
        *f.tasks.entry((kind, if r.ok { "ok" } else { "failed" })).or_default() += 1;
        if r.ok {
            f.task_seconds.entry(kind).or_default().push(r.seconds);
        }
        f.records_sent += r.records_sent;
        f.bytes_sent += r.bytes_sent;
        f.records_received += r.records_received;
        f.bytes_received += r.bytes_received;
        f.last = Some((r.layer, r.round));
    }

    /// A level step done or a task result reported.
    pub fn unit_done(&self) {
        self.figures().units += 1;
    }

    /// The Prometheus text. Reads the data directory: call it off the async
    /// runtime's threads.
    pub fn text(&self) -> String {
        use retro_node::metrics::{Exposition, ROUND_BUCKETS, one};
        let f = self.figures();
        let mut e = Exposition::new(&[("retro_job", &f.job), ("retro_worker", &f.worker_id)], true);
        let (tasks, task_seconds) = (f.tasks.clone(), f.task_seconds.clone());
        let traffic = [f.records_sent, f.bytes_sent, f.records_received, f.bytes_received];
        let (last, units) = (f.last, f.units);
        drop(f);
        e.process(retro_build_info::BUILD_COMMIT, Some(&self.data));
        e.family(
            "retro_worker_tasks_total",
            "counter",
            "Tasks this worker ran and reported, by kind and outcome.",
            tasks
                .iter()
                .map(|((k, o), n)| (vec![("kind", k.to_string()), ("outcome", o.to_string())], *n as f64))
                .collect(),
        );
        e.histogram(
            "retro_worker_task_duration_seconds",
            "Wall time of each task this worker ran and that succeeded, by kind.",
            &ROUND_BUCKETS,
            task_seconds.into_iter().map(|(k, v)| (vec![("kind", k.to_string())], v)).collect(),
        );
        let exchanged = [
            ("retro_worker_records_sent_total", "Updates sent to other workers."),
            ("retro_worker_bytes_sent_total", "Payload bytes of the updates sent."),
            ("retro_worker_records_received_total", "Updates received from other workers."),
            ("retro_worker_bytes_received_total", "Payload bytes of the updates received."),
        ];
        for ((name, help), n) in exchanged.into_iter().zip(traffic) {
            e.family(name, "counter", help, one(n as f64));
        }
        let (layer, round) = last.map_or((Vec::new(), Vec::new()), |(l, r)| (one(l as f64), one(r as f64)));
        e.family("retro_worker_layer", "gauge", "Layer of the last task reported (retrograde jobs).", layer);
        e.family("retro_worker_round", "gauge", "Round of the last task reported (retrograde jobs).", round);
        e.family(
            "retro_worker_units_done_total",
            "counter",
            "Level steps done (level jobs) or results reported (task jobs).",
            one(units as f64),
        );
        e.finish()
    }
}

/// Serves `metrics` on `addr` (`worker --status`) in the background for the
/// rest of the process. Binds before returning, so a busy or bad address is
/// an error now, not after the join.
pub async fn spawn(metrics: Arc<WorkerMetrics>, addr: std::net::SocketAddr) -> std::io::Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tracing::info!("metrics on http://{bound}/metrics");
    let page: Arc<dyn Fn() -> String + Send + Sync> = Arc::new(move || metrics.text());
    tokio::spawn(retro_node::metrics::serve_metrics(listener, "status port", page, std::future::pending()));
    Ok(bound)
}
