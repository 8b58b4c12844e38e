//! The scheduler driven by fake workers: each worker is only its pulls and
//! reports, written by the test, with no network and no worker code (the
//! manifest goes to a temporary directory, which the harness reads back to
//! check what a restarted coordinator would see). Each test walks one path
//! of the state machine: the normal one, and each way a worker can fail it.

use super::*;

/// Short, so a test can let a worker fall silent.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_millis(300);

/// A scheduler for the stage-1 plan and its fake workers.
struct Harness {
    s: Arc<Scheduler>,
    dir: PathBuf,
    /// Each worker's epoch, from its latest join.
    epochs: BTreeMap<String, u64>,
    /// Each worker's generation, from its latest join.
    generations: BTreeMap<String, u64>,
}

impl Harness {
    /// `workers` fake workers for a fresh stage-1 job, all joined; `spaced`
    /// gives the scheduler spaced checkpoints (an embedded run's).
    fn new(name: &str, workers: usize, spaced: Option<Duration>) -> Harness {
        let dir = std::env::temp_dir().join(format!("sched-harness-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let plan = crate::plan::Plan::from_toml_str(crate::plan::DEFAULT_PLAN, "stage1").unwrap();
        let spec = crate::job::job_spec(&plan);
        let layout = spec.layout(retro_games::RetroGame::position_count(&spec.game().unwrap()));
        let manifest = Manifest::new(&spec.name, &spec.plan_hash, spec.rank_order, &spec.questions);
        let path = dir.join("coordinator.json");
        let mut s = Scheduler::new(
            spec,
            layout,
            manifest,
            workers,
            HEARTBEAT_TIMEOUT,
            path,
            dir.join("staging"),
            dir.join("tb"),
        );
        s.checkpoint_every = spaced;
        let mut h = Harness { s: Arc::new(s), dir, epochs: BTreeMap::new(), generations: BTreeMap::new() };
        for _ in 0..workers {
            h.join("").unwrap();
        }
        h
    }

    /// A join (a fresh worker with `""`, or `id` again, as after its restart,
    /// presenting the generation it was last given).
    fn join(&mut self, id: &str) -> Result<JoinReply, JoinError> {
        let reply = self.s.join(JoinRequest {
            protocol_version: retro_proto::PROTOCOL_VERSION,
            worker_id: id.into(),
            generation: self.generations.get(id).copied().unwrap_or(0),
            ..Default::default()
        })?;
        self.epochs.insert(reply.worker_id.clone(), reply.epoch);
        self.generations.insert(reply.worker_id.clone(), reply.generation);
        Ok(reply)
    }

    /// One pull of worker `w` with its current epoch.
    fn pull(&self, w: &str, busy: u64, report: Option<RoundReport>) -> Task {
        self.pull_as(w, self.epochs[w], busy, report)
    }

    /// One pull of worker `w` with `epoch`.
    fn pull_as(&self, w: &str, epoch: u64, busy: u64, report: Option<RoundReport>) -> Task {
        self.s.pull_once(&PullRequest {
            worker_id: w.into(),
            epoch,
            coordinator_epoch: self.s.coordinator_epoch,
            busy_task_id: busy,
            report,
            ..Default::default()
        })
    }

    /// An idle pull: the task `w` is handed, or WAIT.
    fn idle(&self, w: &str) -> Task {
        self.pull(w, 0, None)
    }

    /// `w` reports `task` done, having decided `decided` (WIN, LOSS)
    /// positions; returns the answer to that pull.
    fn done(&self, w: &str, task: &Task, decided: (u64, u64)) -> Task {
        self.pull(w, 0, Some(ok_report(task, decided)))
    }

    /// Every worker takes the task of the step now and reports it done; each
    /// decides `decided`. Returns the tasks they ran.
    fn step(&self, decided: (u64, u64)) -> Vec<Task> {
        let tasks: Vec<(String, Task)> = self.workers().into_iter().map(|w| (w.clone(), self.idle(&w))).collect();
        for (w, t) in &tasks {
            assert_ne!(kind(t), TaskKind::Wait, "{w} was handed no task in {:?}", self.phase());
            self.done(w, t, decided);
        }
        tasks.into_iter().map(|(_, t)| t).collect()
    }

    fn workers(&self) -> Vec<String> {
        self.epochs.keys().cloned().collect()
    }

    fn phase(&self) -> Phase {
        self.s.state.lock().unwrap().phase.clone()
    }

    /// The manifest as a coordinator started now would read it.
    fn on_disk(&self) -> Manifest {
        let m = self.s.manifest();
        Manifest::load(&self.s.manifest_path, &m.job, &m.plan_hash, self.s.spec.rank_order).unwrap().unwrap()
    }

    /// The layer the job runs first.
    fn first_layer(&self) -> u32 {
        layer_order(&self.s.spec.questions, false)[0] as u32
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn kind(t: &Task) -> TaskKind {
    TaskKind::try_from(t.kind).unwrap()
}

/// The report of `task` done, `decided` (WIN, LOSS) positions decided.
fn ok_report(task: &Task, decided: (u64, u64)) -> RoundReport {
    RoundReport {
        task_id: task.task_id,
        kind: task.kind,
        layer: task.layer,
        round: task.round,
        ok: true,
        decided_win: decided.0,
        decided_loss: decided.1,
        ..Default::default()
    }
}

/// The report of `task` failed.
fn failed_report(task: &Task, retryable: bool) -> RoundReport {
    RoundReport {
        task_id: task.task_id,
        kind: task.kind,
        layer: task.layer,
        round: task.round,
        ok: false,
        error: "disk on fire".into(),
        retryable,
        ..Default::default()
    }
}

#[test]
fn a_layer_runs_from_init_to_export_and_every_round_is_on_disk() {
    let h = Harness::new("normal", 2, None);
    let l = h.first_layer();
    assert_eq!(h.phase(), Phase::Init(l));
    let inits = h.step((10, 5));
    assert!(inits.iter().all(|t| kind(t) == TaskKind::Init && t.layer == l));
    // Both shares of the init count: 2 x (10 + 5), durable before GENERATE.
    assert_eq!(h.phase(), Phase::Generate(l, 1));
    assert_eq!(h.on_disk().layers[l as usize].committed_round, Some(0));
    for r in 1..=3 {
        assert!(h.step((0, 0)).iter().all(|t| kind(t) == TaskKind::Generate && t.round == r));
        assert_eq!(h.phase(), Phase::Apply(l, r));
        // The round decides positions until the third, which decides none.
        let applied = h.step(if r < 3 { (2, 1) } else { (0, 0) });
        assert!(applied.iter().all(|t| kind(t) == TaskKind::Apply && t.round == r && t.checkpoint));
        let layer = &h.on_disk().layers[l as usize];
        assert_eq!(layer.committed_round, Some(r), "round {r} is on disk before anyone hears of it");
    }
    assert_eq!(h.phase(), Phase::Export(l));
    let layer = &h.on_disk().layers[l as usize];
    assert!(layer.solved);
    assert_eq!(layer.decided(), 2 * 15 + 2 * 2 * 3, "init and two rounds, both workers");
    assert!(h.workers().iter().all(|w| kind(&h.idle(w)) == TaskKind::Export));
}

#[test]
fn stale_reports_epochs_and_coordinators_are_told_apart() {
    let h = Harness::new("stale", 2, None);
    let task = h.idle("w1");
    assert_eq!(kind(&task), TaskKind::Init);
    // A report of another task (an earlier one, say) from w1, still busy
    // with this one, is ignored: the step still waits for its real report.
    let stale = RoundReport { task_id: task.task_id + 100, ..ok_report(&task, (1, 0)) };
    assert_eq!(kind(&h.pull("w1", task.task_id, Some(stale))), TaskKind::Wait);
    assert!(!h.s.state.lock().unwrap().assignments["w1"].done);
    // Another epoch than its latest join's, or another coordinator's: join again.
    assert_eq!(kind(&h.pull_as("w1", h.epochs["w1"] + 1, 0, None)), TaskKind::Reregister);
    let other = PullRequest {
        worker_id: "w1".into(),
        epoch: h.epochs["w1"],
        coordinator_epoch: h.s.coordinator_epoch + 1,
        ..Default::default()
    };
    assert_eq!(kind(&h.s.pull_once(&other)), TaskKind::Reregister);
    assert_eq!(kind(&h.pull_as("w9", 1, 0, None)), TaskKind::Reregister, "a worker the job never had");
    // The real report counts once, however often it is sent.
    h.done("w1", &task, (3, 0));
    h.done("w1", &task, (3, 0));
    let w2 = h.idle("w2");
    h.done("w2", &w2, (4, 0));
    assert_eq!(h.phase(), Phase::Generate(h.first_layer(), 1));
    assert_eq!(h.s.manifest().layers[h.first_layer() as usize].decided(), 7);
}

#[test]
fn a_silent_worker_is_presumed_lost_and_no_generate_goes_out_without_it() {
    let h = Harness::new("lost", 2, None);
    h.step((1, 0));
    let l = h.first_layer();
    assert_eq!(h.phase(), Phase::Generate(l, 1));
    // w1 keeps pulling; w2 falls silent past the timeout.
    let deadline = Instant::now() + HEARTBEAT_TIMEOUT + Duration::from_millis(100);
    while Instant::now() < deadline {
        h.s.state.lock().unwrap().roster.heard("w1", None);
        std::thread::sleep(Duration::from_millis(20));
    }
    h.s.check_heartbeats();
    assert!(!h.s.state.lock().unwrap().roster.is_alive("w2"));
    // A GENERATE needs every peer's address: w1 waits.
    assert_eq!(kind(&h.idle("w1")), TaskKind::Wait);
    assert!(h.s.status().workers.iter().any(|w| w.member.id == "w2" && w.member.lost));
    // w2 pulls again: it is back, and both get their GENERATE.
    assert_eq!(kind(&h.idle("w2")), TaskKind::Generate);
    assert_eq!(kind(&h.idle("w1")), TaskKind::Generate);
}

#[test]
fn a_lost_workers_unfinished_task_is_handed_out_again_when_it_returns() {
    let h = Harness::new("lost-task", 2, None);
    let first = h.idle("w2");
    assert_eq!(kind(&first), TaskKind::Init);
    std::thread::sleep(HEARTBEAT_TIMEOUT + Duration::from_millis(50));
    h.s.state.lock().unwrap().roster.heard("w1", None);
    h.s.check_heartbeats();
    // Its assignment was dropped: back, it is handed the init again, as a new task.
    let again = h.idle("w2");
    assert_eq!(kind(&again), TaskKind::Init);
    assert_ne!(again.task_id, first.task_id);
    // The report of the dropped task no longer counts.
    assert_eq!(kind(&h.pull("w2", again.task_id, Some(ok_report(&first, (1, 0))))), TaskKind::Wait);
    assert!(!h.s.state.lock().unwrap().assignments["w2"].done);
}

#[test]
fn the_job_fails_after_max_step_failures_of_one_step() {
    let h = Harness::new("failures", 1, None);
    let mut task = h.idle("w1");
    for n in 1..=MAX_STEP_FAILURES {
        assert_eq!(kind(&task), TaskKind::Init, "failure {n}: the step is handed out again");
        let answer = h.pull("w1", 0, Some(failed_report(&task, false)));
        if n < MAX_STEP_FAILURES {
            assert_ne!(answer.task_id, task.task_id, "failure {n} of {MAX_STEP_FAILURES}: a new task");
            task = answer;
        } else {
            assert_eq!(kind(&answer), TaskKind::Abort);
            assert!(answer.message.contains("failed") && answer.message.contains("disk on fire"), "{}", answer.message);
        }
    }
    assert!(matches!(h.phase(), Phase::Failed(_)));
}

#[test]
fn a_retryable_failure_pauses_and_never_fails_the_job() {
    let h = Harness::new("retry", 1, None);
    for _ in 0..MAX_STEP_FAILURES + 2 {
        let task = h.idle("w1");
        assert_eq!(kind(&task), TaskKind::Init);
        // Within the pause, nothing; after it, the step again.
        assert_eq!(kind(&h.pull("w1", 0, Some(failed_report(&task, true)))), TaskKind::Wait);
        assert_eq!(kind(&h.idle("w1")), TaskKind::Wait);
        std::thread::sleep(RETRY_PAUSE + Duration::from_millis(20));
    }
    assert_eq!(h.phase(), Phase::Init(h.first_layer()));
    let task = h.idle("w1");
    h.done("w1", &task, (1, 1));
    assert_eq!(h.phase(), Phase::Generate(h.first_layer(), 1));
}

#[test]
fn spaced_checkpoints_keep_rounds_in_memory_until_a_stop_makes_one_durable() {
    let h = Harness::new("spaced", 2, Some(Duration::from_secs(3600)));
    let l = h.first_layer();
    h.step((1, 0));
    // The init is not on disk: a restart now runs it again.
    assert_eq!(h.on_disk().layers[l as usize].committed_round, None);
    for r in 1..=2 {
        h.step((0, 0));
        let applied = h.step((1, 0));
        assert!(applied.iter().all(|t| !t.checkpoint), "round {r} is not a checkpoint");
        assert_eq!(h.s.manifest().layers[l as usize].committed_round, Some(r));
        assert_eq!(h.on_disk().layers[l as usize].committed_round, None);
    }
    // A stop asked for before a round's APPLY: it becomes a checkpoint, and
    // the job stops once it is on disk.
    assert!(h.s.request_stop().contains("Generate"));
    assert!(!h.s.stopped(), "rounds only in memory: not a safe point yet");
    h.step((0, 0));
    let applied = h.step((1, 0));
    assert!(applied.iter().all(|t| t.checkpoint));
    assert!(h.s.stopped());
    assert_eq!(h.on_disk().layers[l as usize].committed_round, Some(3));
    assert!(h.workers().iter().all(|w| kind(&h.idle(w)) == TaskKind::Abort));
}

#[test]
fn a_restarted_worker_joins_again_and_gets_its_unfinished_task() {
    let mut h = Harness::new("rejoin", 2, None);
    let first = h.idle("w1");
    assert_eq!(kind(&first), TaskKind::Init);
    h.idle("w2");
    let old_epoch = h.epochs["w1"];
    // w1 restarts: the same id, the generation it was given.
    let reply = h.join("w1").unwrap();
    assert_eq!(reply.worker_id, "w1");
    assert!(reply.epoch > old_epoch);
    // Its old session is told to join again; its new one gets the init anew.
    assert_eq!(kind(&h.pull_as("w1", old_epoch, first.task_id, None)), TaskKind::Reregister);
    let again = h.idle("w1");
    assert_eq!((kind(&again), again.layer), (TaskKind::Init, first.layer));
    assert_ne!(again.task_id, first.task_id);
    // A copy of its directory from before the restart presents an older
    // generation: refused, so two copies never both run.
    h.generations.insert("w1".into(), h.generations["w1"] - 1);
    match h.join("w1") {
        Err(JoinError::Stale { .. }) => {}
        other => panic!("a stale copy was not refused: {other:?}"),
    }
}
