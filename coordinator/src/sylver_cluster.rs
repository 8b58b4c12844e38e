//! A Sylver table on remote workers: the coordinator serves the `Tasks`
//! service, hands out whole m-classes (the dearest first) and checkpoints
//! every row a worker reports, through the same [`RowStore`] the embedded
//! run uses, so both write the same table.
//!
//! Workers keep no state: a worker that dies loses only the rows it had not
//! reported. Its class goes back to the queue, with those rows only, once
//! it has been silent for `cluster.heartbeat_timeout_secs`. A coordinator
//! killed and started again reads its row checkpoints and hands out what is
//! missing; workers retry until it is back.

use crate::CoordinatorError;
use retro_games::GameKind;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use retro_node::roster::{Heard, Roster};
use retro_proto::tasks_server::{Tasks, TasksServer};
use retro_proto::{JobKind, JoinReply, JoinRequest, TaskAck, TaskGrant, TaskGrantKind, TaskReport, TaskTake};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;
use tonic::{Request, Response, Status};

use crate::service::{Answer, ClusterJob, Joinable, long_poll};
use crate::status::{JobDetail, JobStatus, StatusSource, TaskStatus};
use crate::sylver_job::{ClassUnit, RowResult, RowStore, RunOptions, SylverPlan};
use retro_results::sylver::table::Summary;

/// How long a `Take` waits for a unit before answering WAIT.
const LONG_POLL: Duration = Duration::from_secs(10);

/// Why the task job refused a call or stopped: what its logic returns,
/// turned into a gRPC status only at the service boundary.
#[derive(Debug, thiserror::Error)]
pub enum TaskJobError {
    /// A worker id this coordinator does not know (it restarted, say): the
    /// worker joins again.
    #[error("unknown worker id {0:?}; join first")]
    UnknownWorker(String),
    /// A report whose result is not a row.
    #[error("result is not a Sylver row: {0}")]
    NotARow(serde_json::Error),
    /// A row reported under another class than its own.
    #[error("row {{{m}, {n}}} is not in class {class}")]
    OtherClass {
        /// The row's m.
        m: u64,
        /// The row's n.
        n: u64,
        /// The class the report names.
        class: u64,
    },
    /// A row the job does not ask for, or answered under another question or cap.
    #[error("{0}")]
    Refused(CoordinatorError),
    /// A row that could not be checkpointed: the job ends.
    #[error("{0}")]
    Checkpoint(CoordinatorError),
    /// A class that could not be written out for its worker.
    #[error("class {m}: {error}")]
    Unit {
        /// The class.
        m: u64,
        /// The encoder's error.
        error: serde_json::Error,
    },
}

impl From<TaskJobError> for Status {
    fn from(e: TaskJobError) -> Status {
        let message = e.to_string();
        match e {
            // NOT_FOUND tells a worker to join again.
            TaskJobError::UnknownWorker(_) => Status::not_found(message),
            TaskJobError::NotARow(_) | TaskJobError::OtherClass { .. } | TaskJobError::Refused(_) => {
                Status::invalid_argument(message)
            }
            TaskJobError::Checkpoint(_) | TaskJobError::Unit { .. } => Status::internal(message),
        }
    }
}

/// A class a worker holds.
struct Lease {
    worker: String,
    unit: ClassUnit,
}

struct State {
    progress: RowStore,
    /// Classes to hand out, cheapest first (`pop` gives the dearest).
    queue: Vec<ClassUnit>,
    /// Held classes by m.
    leases: BTreeMap<u64, Lease>,
    /// Who joined, and who fell silent (their classes go back to the queue).
    roster: Roster,
    error: Option<String>,
}

/// The job the service runs.
pub struct TaskJobState {
    plan: SylverPlan,
    plan_hash: String,
    /// Workers to wait for before the first class is handed out, so the
    /// dearest classes are spread over them; later joiners are welcome.
    expect: usize,
    state: Mutex<State>,
    changed: Notify,
    /// When this process started the job, and the results it found done then
    /// (the basis of the time-left estimate).
    started: Instant,
    done_at_start: usize,
}

impl StatusSource for TaskJobState {
    fn status(&self) -> JobStatus {
        let s = self.lock();
        let (done, total) = (s.progress.done(), self.plan.rows.len());
        let phase = match &s.error {
            Some(e) => format!("failed: {e}"),
            None if s.progress.is_complete() => "done".to_string(),
            None if s.roster.len() < self.expect && s.leases.is_empty() => "joining".to_string(),
            None => "running".to_string(),
        };
        let tasks = TaskStatus {
            results: total as u64,
            results_done: done as u64,
            units_queued: s.queue.len() as u64,
            units_held: s.leases.len() as u64,
        };
        let mut st = JobStatus::new(JobDetail::Tasks { tasks }, &self.plan.name, &self.plan_hash, phase, self.expect)
            .with_roster(&s.roster, |_| (Vec::new(), String::new()));
        // The rate of results since this process started; rows differ in
        // cost by orders of magnitude, so this is rough.
        let new = done.saturating_sub(self.done_at_start);
        if new > 0 && done < total {
            st.estimated_seconds_left = Some(self.started.elapsed().as_secs_f64() / new as f64 * (total - done) as f64);
        }
        st
    }
}

impl TaskJobState {
    /// The table job of `plan` for `expect` awaited workers, its rows
    /// resumed from what `checkpoints` holds.
    fn open(
        plan: &SylverPlan,
        expect: usize,
        checkpoints: &Path,
        opts: &RunOptions,
    ) -> Result<Arc<TaskJobState>, CoordinatorError> {
        let progress = RowStore::open(plan, checkpoints, opts)?;
        let done_at_start = progress.done();
        let queue = progress.pending_units(plan);
        tracing::info!(
            "sylver job {}: {} rows, {} from checkpoints, {} classes for the workers",
            plan.name,
            plan.rows.len(),
            progress.done(),
            queue.len()
        );
        Ok(Arc::new(TaskJobState {
            plan: plan.clone(),
            plan_hash: plan_hash(plan),
            expect,
            state: Mutex::new(State {
                progress,
                queue,
                leases: BTreeMap::new(),
                roster: Roster::new(Duration::from_secs(plan.cluster.heartbeat_timeout_secs)),
                error: None,
            }),
            changed: Notify::new(),
            started: Instant::now(),
            done_at_start,
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a call from `worker` as its heartbeat.
    fn heard(&self, s: &mut State, worker: &str) -> Result<(), TaskJobError> {
        match s.roster.heard(worker, None) {
            Heard::Current => Ok(()),
            Heard::Back => {
                tracing::info!("worker {worker} is back");
                Ok(())
            }
            Heard::Stale | Heard::Unknown => Err(TaskJobError::UnknownWorker(worker.to_string())),
        }
    }

    /// Puts a lease's unreported rows back in the queue.
    fn release(&self, s: &mut State, m: u64) {
        let Some(lease) = s.leases.remove(&m) else { return };
        let mut unit = lease.unit;
        unit.ns.retain(|&n| !s.progress.has(m, n));
        if !unit.ns.is_empty() {
            tracing::warn!(
                "class m = {m} goes back to the queue with {} rows (worker {} silent or gone)",
                unit.ns.len(),
                lease.worker
            );
            let cost = crate::sylver_job::expected_cost(&unit);
            let at = s.queue.partition_point(|u| crate::sylver_job::expected_cost(u) < cost);
            s.queue.insert(at, unit);
        }
    }

    /// Takes back the classes of workers silent for longer than the heartbeat
    /// timeout (run every second, and before a class is handed out).
    fn sweep_locked(&self, s: &mut State) {
        for id in s.roster.sweep().newly_lost {
            tracing::warn!("worker {id} has been silent for over {}s: presumed lost", s.roster.timeout().as_secs());
        }
        self.release_where(s, |l, roster| !roster.is_alive(&l.worker));
    }

    /// Takes back the classes of lost workers, and any class `worker` still
    /// holds (it asks for a new one only when done with the last).
    fn reclaim(&self, s: &mut State, worker: &str) {
        self.sweep_locked(s);
        self.release_where(s, |l, _| l.worker == worker);
    }

    fn release_where(&self, s: &mut State, stale: impl Fn(&Lease, &Roster) -> bool) {
        let stale: Vec<u64> = s.leases.iter().filter(|(_, l)| stale(l, &s.roster)).map(|(&m, _)| m).collect();
        for m in stale {
            self.release(s, m);
        }
    }

    fn fail(&self, s: &mut State, e: CoordinatorError) -> TaskJobError {
        tracing::error!("{e}");
        s.error = Some(e.to_string());
        self.changed.notify_waiters();
        TaskJobError::Checkpoint(e)
    }

    fn is_over(s: &State) -> bool {
        s.progress.is_complete() || s.error.is_some()
    }
}

impl crate::service::ServedJob for TaskJobState {
    fn changed(&self) -> &Notify {
        &self.changed
    }

    fn over(&self) -> bool {
        TaskJobState::is_over(&self.lock())
    }

    fn sweep(&self) {
        self.sweep_locked(&mut self.lock());
    }
}

impl TaskJobState {
    /// A class for `worker` if there is one (and every awaited worker has
    /// joined), the end if the job is over, else nothing yet.
    fn grant(&self, worker: &str) -> Result<Answer<TaskGrant>, TaskJobError> {
        let mut s = self.lock();
        self.heard(&mut s, worker)?;
        if TaskJobState::is_over(&s) {
            return Ok(Answer::Now(TaskGrant { kind: TaskGrantKind::TaskFinish as i32, ..Default::default() }));
        }
        self.reclaim(&mut s, worker);
        let gathered = s.roster.len() >= self.expect;
        let Some(unit) = s.queue.pop_if(|_| gathered) else {
            return Ok(Answer::Later(TaskGrant { kind: TaskGrantKind::TaskWait as i32, ..Default::default() }));
        };
        let json = serde_json::to_string(&unit).map_err(|error| TaskJobError::Unit { m: unit.m, error })?;
        tracing::info!("class m = {} ({} rows) to worker {worker}", unit.m, unit.ns.len());
        let m = unit.m;
        s.leases.insert(m, Lease { worker: worker.to_string(), unit });
        Ok(Answer::Now(TaskGrant { kind: TaskGrantKind::TaskUnit as i32, unit: m, unit_json: json }))
    }

    /// Takes a worker's report: a row it solved (checked, then written to
    /// the checkpoints) and whether it still holds its class. Blocking work:
    /// run by [`TaskService::report`] on a blocking thread.
    fn report(&self, req: TaskReport) -> Result<TaskAck, TaskJobError> {
        let row: Option<RowResult> = if req.result_json.is_empty() {
            None
        } else {
            let row: RowResult = serde_json::from_str(&req.result_json).map_err(TaskJobError::NotARow)?;
            if row.m != req.unit {
                return Err(TaskJobError::OtherClass { m: row.m, n: row.n, class: req.unit });
            }
            Some(row)
        };
        let mut s = self.lock();
        self.heard(&mut s, &req.worker_id)?;
        if let Some(row) = row {
            s.progress.check(&self.plan, &row).map_err(TaskJobError::Refused)?;
            // A correct answer counts whoever holds the class now: rows do not
            // depend on who solved them.
            if let Err(e) = s.progress.record(row) {
                return Err(self.fail(&mut s, e));
            }
            if TaskJobState::is_over(&s) {
                self.changed.notify_waiters();
            }
        }
        let st = &mut *s;
        let held = match st.leases.get_mut(&req.unit) {
            Some(l) if l.worker == req.worker_id => {
                let all_done = l.unit.ns.iter().all(|&n| st.progress.has(req.unit, n));
                if all_done {
                    st.leases.remove(&req.unit);
                }
                !all_done
            }
            _ => false,
        };
        Ok(TaskAck { keep_going: held && !TaskJobState::is_over(&s) })
    }
}

impl Joinable for TaskJobState {
    fn plan_hash(&self) -> String {
        self.plan_hash.clone()
    }

    /// Workers of a task job keep no state: each join gets a fresh id, and a
    /// data directory's identity (from another kind of job) is ignored.
    fn join(&self, _req: JoinRequest) -> Result<JoinReply, Status> {
        let mut s = self.lock();
        let worker_id = retro_node::roster::fresh_id("t", s.roster.joins() as usize);
        let epoch = s.roster.admit(&worker_id);
        tracing::info!("worker {worker_id} joined ({} so far, {} awaited)", s.roster.len(), self.expect);
        self.changed.notify_waiters();
        Ok(JoinReply {
            worker_id,
            epoch,
            job: self.plan.name.clone(),
            plan_hash: self.plan_hash.clone(),
            kind: JobKind::Tasks as i32,
            heartbeat_ms: s.roster.heartbeat_interval().as_millis() as u32,
            // The kind of unit a task worker checks before it solves anything.
            task_kind: GameKind::Sylver.to_string(),
            ..Default::default()
        })
    }
}

/// The gRPC face of the job.
pub struct TaskService(pub Arc<TaskJobState>);

#[tonic::async_trait]
impl Tasks for TaskService {
    async fn take(&self, req: Request<TaskTake>) -> Result<Response<TaskGrant>, Status> {
        let j = &self.0;
        let worker = req.into_inner().worker_id;
        // Asked at least every second: a silent worker's class is taken back
        // only when someone looks.
        let grant = || std::future::ready(j.grant(&worker));
        Ok(Response::new(long_poll(&j.changed, LONG_POLL, Duration::from_secs(1), grant).await?))
    }

    async fn report(&self, req: Request<TaskReport>) -> Result<Response<TaskAck>, Status> {
        // A row is written to the checkpoints under the job's lock: off the
        // runtime's threads.
        let (job, req) = (self.0.clone(), req.into_inner());
        let ack = crate::offload::blocking(move || job.report(req)).await?;
        Ok(Response::new(ack))
    }
}

/// A short hash of what the plan computes (rows, question, cap), shown to
/// workers so an operator can check they joined the intended job.
pub fn plan_hash(plan: &SylverPlan) -> String {
    let text = format!("{:?}|{:?}|{}", plan.rows, plan.question, plan.cap);
    Sha256::digest(text.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Serves the table of `plan` to `job.workers` remote workers (no class is
/// handed out before that many have joined) until every row is
/// checkpointed in `job.checkpoints`, then writes `table.tsv` and
/// `summary.json` into `output`.
/// Runs on `runtime` and returns when done: the caller is not async (see
/// [`crate::job::run_on`] for why).
pub fn run(
    runtime: &tokio::runtime::Runtime,
    plan: &SylverPlan,
    output: &Path,
    opts: &RunOptions,
    job: ClusterJob,
) -> Result<Summary, CoordinatorError> {
    let ClusterJob { workers: expect, checkpoints, serve } = job;
    let state = TaskJobState::open(plan, expect, &checkpoints, opts)?;
    let svc = crate::service::grpc_service!(TasksServer, TaskService(state.clone()), serve.token.clone());
    let routes = crate::service::cluster_routes(state.clone(), serve.token.clone()).add_service(svc);
    // Only the serving needs the runtime.
    runtime.block_on(crate::service::run_served(state.clone(), routes, serve, &checkpoints))?;
    let s = state.lock();
    match &s.error {
        Some(e) => Err(CoordinatorError::Failed(e.clone())),
        None => s.progress.finish(plan, output),
    }
}

#[cfg(test)]
mod harness;
