//! The worker side of task jobs (Sylver coinage tables): after the join, take a whole
//! m-class, solve its rows in order and report each as it finishes, until
//! the coordinator says FINISH.
//!
//! A task worker keeps nothing on disk: the coordinator checkpoints every
//! reported row, and a class whose worker died goes back to its queue. While
//! it solves, the worker heartbeats its class; when the coordinator answers
//! that the class is no longer this worker's, it stops after the row in hand.

use crate::fault::Fault;
use crate::levels::retry_unreachable;
use crate::link::with_token;
use crate::run::WorkerError;
use retro_engine::sylver::table::{ClassUnit, SOLVER_STACK, solve_class};
use retro_games::GameKind;
use retro_proto::tasks_client::TasksClient;
use retro_proto::{JoinReply, MAX_MESSAGE_BYTES, TaskGrantKind, TaskReport, TaskTake};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tonic::transport::Channel;

/// How a task worker runs.
#[derive(Clone, Debug)]
pub struct TaskWorkerOptions {
    /// Coordinator address (named in retry warnings).
    pub connect: String,
    /// Cluster token.
    pub token: Option<String>,
    /// The channel to the coordinator the worker joined through
    /// ([`crate::link::GrpcLink::channel`]; TLS, keepalive and timeouts set).
    pub channel: Channel,
    /// Fault point (tests): `task-after-rows:0:N` kills the worker right
    /// after its N-th reported row.
    pub fault: Option<Fault>,
    /// The figures `worker --status` serves.
    pub metrics: Arc<crate::metrics::WorkerMetrics>,
}

fn client(opts: &TaskWorkerOptions) -> TasksClient<Channel> {
    TasksClient::new(opts.channel.clone())
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
}

fn refused(s: tonic::Status) -> WorkerError {
    WorkerError::Refused(s.message().to_string())
}

/// Solves classes of the task job the worker joined (`reply`) until the
/// coordinator says FINISH. A coordinator restarted in between forgets this
/// worker's id; the worker then joins again through `rejoin`.
pub async fn run<J, F>(opts: TaskWorkerOptions, reply: JoinReply, mut rejoin: J) -> Result<(), WorkerError>
where
    J: FnMut() -> F,
    F: std::future::Future<Output = Result<JoinReply, WorkerError>>,
{
    let c = client(&opts);
    let mut reported = 0u32;
    let mut job = reply;
    loop {
        match session(&opts, &c, &job, &mut reported).await {
            Ok(()) => return Ok(()),
            Err(s) if s.code() == tonic::Code::NotFound => {
                tracing::warn!("{}; joining again", s.message());
                job = rejoin().await?;
            }
            Err(s) => return Err(refused(s)),
        }
    }
}

async fn session(
    opts: &TaskWorkerOptions,
    c: &TasksClient<Channel>,
    job: &JoinReply,
    reported: &mut u32,
) -> Result<(), tonic::Status> {
    // The units this worker can solve: Sylver m-classes.
    if job.task_kind.parse::<GameKind>() != Ok(GameKind::Sylver) {
        return Err(tonic::Status::failed_precondition(format!(
            "job {} has units of kind {:?}, which this worker does not know",
            job.job, job.task_kind
        )));
    }
    let heartbeat = Duration::from_millis(u64::from(job.heartbeat_ms.max(100)));
    tracing::info!("joined task job {} (plan {}) as {}", job.job, job.plan_hash, job.worker_id);
    opts.metrics.joined(&job.job, &job.worker_id);
    loop {
        let take = TaskTake { worker_id: job.worker_id.clone() };
        let grant = retry_unreachable(&opts.connect, "asking for a task", || {
            let (mut c, req) = (c.clone(), with_token(take.clone(), &opts.token));
            async move { c.take(req).await.map(|r| r.into_inner()) }
        })
        .await?;
        match TaskGrantKind::try_from(grant.kind).unwrap_or(TaskGrantKind::TaskGrantUnspecified) {
            TaskGrantKind::TaskFinish => {
                tracing::info!("task job finished");
                return Ok(());
            }
            TaskGrantKind::TaskUnit => {
                let unit: ClassUnit = serde_json::from_str(&grant.unit_json)
                    .map_err(|e| tonic::Status::invalid_argument(format!("unit {} is not a class: {e}", grant.unit)))?;
                solve_and_report(opts, c, job, grant.unit, unit, heartbeat, reported).await?;
            }
            TaskGrantKind::TaskWait | TaskGrantKind::TaskGrantUnspecified => {}
        }
    }
}

/// Solves one class on a thread of its own and reports every row; heartbeats
/// in between.
async fn solve_and_report(
    opts: &TaskWorkerOptions,
    c: &TasksClient<Channel>,
    job: &JoinReply,
    key: u64,
    unit: ClassUnit,
    heartbeat: Duration,
    reported: &mut u32,
) -> Result<(), tonic::Status> {
    tracing::info!("class m = {}: {} rows", unit.m, unit.ns.len());
    let keep = Arc::new(AtomicBool::new(true));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let solver = {
        let keep = keep.clone();
        std::thread::Builder::new()
            .name("sylver-class".into())
            .stack_size(SOLVER_STACK)
            .spawn(move || solve_class(&unit, |row| keep.load(Ordering::Relaxed) && tx.send(row).is_ok()))
            .map_err(|e| tonic::Status::internal(format!("cannot start a solver thread: {e}")))?
    };
    let mut tick = tokio::time::interval(heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let outcome = loop {
        let result_json = tokio::select! {
            row = rx.recv() => match row {
                Some(row) => match serde_json::to_string(&row) {
                    Ok(json) => json,
                    Err(e) => break Err(tonic::Status::internal(e.to_string())),
                },
                None => break Ok(()),
            },
            _ = tick.tick() => String::new(),
        };
        let is_row = !result_json.is_empty();
        let report = TaskReport { worker_id: job.worker_id.clone(), unit: key, result_json };
        let ack = retry_unreachable(&opts.connect, "reporting a finished task", || {
            let (mut c, req) = (c.clone(), with_token(report.clone(), &opts.token));
            async move { c.report(req).await.map(|r| r.into_inner()) }
        })
        .await;
        let ack = match ack {
            Ok(a) => a,
            Err(s) => break Err(s),
        };
        if is_row {
            *reported += 1;
            opts.metrics.unit_done();
            Fault::check(&opts.fault, "task-after-rows", 0, *reported);
        }
        if !ack.keep_going {
            // Finished, or handed to another worker after a silence.
            break Ok(());
        }
    };
    keep.store(false, Ordering::Relaxed);
    drop(rx);
    // The solver stops at its next row; wait for it so two classes' memos are
    // never held at once.
    let _ = tokio::task::spawn_blocking(move || solver.join()).await;
    outcome
}
