//! The task job driven by fake workers: each worker is only its `Take`
//! calls and its reports, written by the test, with no network and no worker
//! process (the rows are solved here with the solver every worker runs, and
//! checkpointed in a temporary directory). Each test walks one path of the
//! state machine.

use super::*;
use crate::sylver_job::{SOLVER_STACK, solve_class};
use std::path::PathBuf;

/// A task job and its checkpoint directory.
struct Harness {
    job: Arc<TaskJobState>,
    dir: PathBuf,
    plan: SylverPlan,
}

impl Harness {
    /// Rows m = 4..5, n <= 13 (two classes, twelve rows: well under a second),
    /// `expect` workers awaited, heartbeats timing out after one second.
    fn new(name: &str, expect: usize) -> Harness {
        let dir = std::env::temp_dir().join(format!("tasks-harness-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let text = format!(
            "[job]\nname = \"tasks-harness\"\ngame = \"sylver\"\nranges = [[4, 5, 13]]\n[cluster]\n\
             heartbeat_timeout_secs = 1\n[output]\ndir = \"{}\"\ncheckpoints = \"{}\"\n",
            dir.join("out").display(),
            dir.join("ck").display()
        );
        let plan = SylverPlan::from_toml_str(&text, "harness.toml").unwrap();
        let job = TaskJobState::open(&plan, expect, &dir.join("ck"), &RunOptions::default()).unwrap();
        Harness { job, dir, plan }
    }

    /// The coordinator restarted: a new job state from the same checkpoints.
    fn restart(&mut self) {
        self.job =
            TaskJobState::open(&self.plan, self.job.expect, &self.dir.join("ck"), &RunOptions::default()).unwrap();
    }

    /// A new worker joins; its id.
    fn join(&self) -> String {
        self.job
            .join(JoinRequest { protocol_version: retro_proto::PROTOCOL_VERSION, ..Default::default() })
            .unwrap()
            .worker_id
    }

    /// What a `Take` of `w` is answered now (a unit, or WAIT or FINISH).
    fn take(&self, w: &str) -> TaskGrant {
        match self.job.grant(w).unwrap() {
            Answer::Now(g) | Answer::Later(g) => g,
        }
    }

    /// `w` reports `row` of class `unit` (or only that it still works on it).
    fn report(&self, w: &str, unit: u64, row: Option<&RowResult>) -> Result<TaskAck, TaskJobError> {
        let result_json = row.map(|r| serde_json::to_string(r).unwrap()).unwrap_or_default();
        self.job.report(TaskReport { worker_id: w.into(), unit, result_json })
    }

    fn queued(&self) -> Vec<u64> {
        self.job.lock().queue.iter().map(|u| u.m).collect()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn kind(g: &TaskGrant) -> TaskGrantKind {
    TaskGrantKind::try_from(g.kind).unwrap()
}

/// The class a grant hands out.
fn unit(g: &TaskGrant) -> ClassUnit {
    assert_eq!(kind(g), TaskGrantKind::TaskUnit, "{g:?}");
    serde_json::from_str(&g.unit_json).unwrap()
}

/// The rows of `unit`, solved as a worker solves them.
fn solve(unit: &ClassUnit) -> Vec<RowResult> {
    let unit = unit.clone();
    std::thread::Builder::new()
        .stack_size(SOLVER_STACK)
        .spawn(move || {
            let mut rows = Vec::new();
            solve_class(&unit, |row| {
                rows.push(row);
                true
            });
            rows
        })
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn classes_wait_for_the_awaited_workers_and_every_reported_row_is_checkpointed() {
    let h = Harness::new("normal", 2);
    let a = h.join();
    // One of two awaited workers: nothing is handed out yet.
    assert!(matches!(h.job.grant(&a).unwrap(), Answer::Later(ref g) if kind(g) == TaskGrantKind::TaskWait));
    let b = h.join();
    // The dearest class first (m = 5), then the other.
    let first = unit(&h.take(&a));
    let second = unit(&h.take(&b));
    assert_eq!((first.m, second.m), (5, 4));
    assert!(h.queued().is_empty());
    for (w, u) in [(&a, &first), (&b, &second)] {
        let rows = solve(u);
        assert_eq!(rows.len(), u.ns.len());
        for (i, row) in rows.iter().enumerate() {
            let ack = h.report(w, u.m, Some(row)).unwrap();
            // The worker goes on until its class's last row is in.
            assert_eq!(ack.keep_going, i + 1 < rows.len(), "class {} row {}", u.m, row.n);
            assert!(h.dir.join("ck/rows").join(format!("row-{}-{}.json", row.m, row.n)).exists());
        }
    }
    assert!(crate::service::ServedJob::over(&*h.job));
    assert_eq!(kind(&h.take(&a)), TaskGrantKind::TaskFinish);
    let status = h.job.status();
    assert_eq!(status.phase, "done");
    assert!(matches!(status.detail, JobDetail::Tasks { ref tasks } if tasks.results_done == 12 && tasks.results == 12));
}

#[test]
fn a_silent_workers_class_goes_back_with_only_its_unreported_rows() {
    let h = Harness::new("silent", 1);
    let a = h.join();
    let class = unit(&h.take(&a));
    let rows = solve(&class);
    h.report(&a, class.m, Some(&rows[0])).unwrap();
    // Another worker comes; `a` falls silent past the timeout.
    let b = h.join();
    let other = unit(&h.take(&b));
    assert_ne!(other.m, class.m);
    let deadline = Instant::now() + Duration::from_millis(1150);
    while Instant::now() < deadline {
        h.job.lock().roster.heard(&b, None);
        std::thread::sleep(Duration::from_millis(50));
    }
    crate::service::ServedJob::sweep(&*h.job);
    // Its class is queued again without the row it reported.
    let back = h.job.lock().queue.iter().find(|u| u.m == class.m).cloned().expect("the class is queued again");
    assert_eq!(back.ns, class.ns[1..]);
    // When `a` speaks again it is back, but the class is no longer its own.
    let ack = h.report(&a, class.m, Some(&rows[1])).unwrap();
    assert!(!ack.keep_going);
    // `b` is done with its class and takes the rest of `a`'s (its row 2 on: row 1 came in meanwhile).
    for row in solve(&other) {
        h.report(&b, other.m, Some(&row)).unwrap();
    }
    let rest = unit(&h.take(&b));
    assert_eq!((rest.m, rest.ns.clone()), (class.m, class.ns[1..].to_vec()), "queued before row 1 came");
}

#[test]
fn a_row_that_is_not_the_jobs_and_a_stranger_are_refused() {
    let h = Harness::new("refused", 1);
    let a = h.join();
    let class = unit(&h.take(&a));
    let row = solve(&class).remove(0);
    let refused = |row: RowResult, unit: u64, why: &str| {
        let e = h.report(&a, unit, Some(&row)).unwrap_err();
        assert_eq!(Status::from(e).code(), tonic::Code::InvalidArgument, "{why}");
    };
    let e = h.report(&a, class.m + 1, Some(&row)).unwrap_err();
    assert!(matches!(e, TaskJobError::OtherClass { m, class: c, .. } if m == class.m && c == class.m + 1), "{e:?}");
    refused(row.clone(), class.m + 1, "a row of another class than the one named");
    refused(RowResult { n: 14, ..row.clone() }, class.m, "a row the job does not have");
    refused(RowResult { cap: row.cap + 1, ..row.clone() }, class.m, "a row solved under another cap");
    let e = h.job.report(TaskReport { worker_id: a.clone(), unit: class.m, result_json: "{".into() }).unwrap_err();
    assert!(matches!(e, TaskJobError::NotARow(_)), "not a row at all: {e:?}");
    // None of them was checkpointed; the real row is.
    assert_eq!(h.job.lock().progress.done(), 0);
    h.report(&a, class.m, Some(&row)).unwrap();
    assert_eq!(h.job.lock().progress.done(), 1);
    // A worker this coordinator does not know (it restarted, say) must join.
    let e = h.report("t9-stranger", class.m, None).unwrap_err();
    assert!(matches!(e, TaskJobError::UnknownWorker(ref id) if id == "t9-stranger"), "{e:?}");
    assert_eq!(Status::from(e).code(), tonic::Code::NotFound, "the code that makes a worker join again");
    let e = h.job.grant("t9-stranger").err().map(Status::from);
    assert_eq!(e.map(|e| e.code()), Some(tonic::Code::NotFound));
}

#[test]
fn a_restarted_coordinator_hands_out_only_the_rows_still_missing() {
    let mut h = Harness::new("restart", 1);
    let a = h.join();
    let class = unit(&h.take(&a));
    let rows = solve(&class);
    for row in &rows[..2] {
        h.report(&a, class.m, Some(row)).unwrap();
    }
    h.restart();
    assert_eq!(h.job.lock().progress.done(), 2);
    let a = h.join();
    let mut handed = BTreeMap::new();
    loop {
        let grant = h.take(&a);
        if kind(&grant) == TaskGrantKind::TaskFinish {
            break;
        }
        let u = unit(&grant);
        for row in solve(&u) {
            h.report(&a, u.m, Some(&row)).unwrap();
        }
        handed.insert(u.m, u.ns);
    }
    assert_eq!(handed[&class.m], class.ns[2..], "the two rows from before the restart are not solved again");
    assert!(crate::service::ServedJob::over(&*h.job));
}
