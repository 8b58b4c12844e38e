//! The level job driven by fake workers: each worker is only its `Next`
//! reports and the parcels it delivers, written by the test, with no network
//! and no worker code (the job's manifest and relay files go to a temporary
//! directory). Each test walks one path of the state machine.

use super::*;

/// An English-board ledger cut into four shards for two workers, whose
/// heartbeats time out after one second.
const PLAN: &str = "[job]\nname = \"peg-harness\"\ngame = \"peg\"\nboard = \"english\"\nvacancy = \"d4\"\n\
                    task = \"ledger\"\n[shards]\ncount = 4\n[cluster]\nworkers = 2\nheartbeat_timeout_secs = 1\n";

/// Shards in [`PLAN`].
const SHARDS: u32 = 4;

/// A level job and the ids of its fake workers (by index).
struct Harness {
    job: Arc<LevelJobState>,
    dir: PathBuf,
    plan: Plan,
    ids: Vec<String>,
}

impl Harness {
    /// A fresh job with both workers joined.
    fn new(name: &str) -> Harness {
        let dir = std::env::temp_dir().join(format!("levels-harness-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let plan = Plan::from_toml_str(PLAN, "harness.toml").unwrap();
        let mut h = Harness { job: Self::open(&plan, &dir), dir, plan, ids: Vec::new() };
        for _ in 0..2 {
            let id = h.join("").unwrap().worker_id;
            h.ids.push(id);
        }
        h
    }

    fn open(plan: &Plan, dir: &Path) -> Arc<LevelJobState> {
        let start = crate::peg::plan_start(plan).unwrap().2;
        LevelJobState::open(plan, start, 2, dir).unwrap().expect("levels still to compute")
    }

    /// The coordinator restarted: a new job state from the same checkpoints.
    fn restart(&mut self) {
        self.job = Self::open(&self.plan, &self.dir);
    }

    fn join(&self, id: &str) -> Result<JoinReply, Status> {
        self.job.join(JoinRequest {
            protocol_version: retro_proto::PROTOCOL_VERSION,
            worker_id: id.into(),
            ..Default::default()
        })
    }

    /// Worker `i` reports step `done` of `level` finished, with `keys`.
    fn report(&self, i: usize, done: LevelStepKind, level: u32, keys: u64) -> Result<(), Status> {
        let req = LevelNext { worker_id: self.ids[i].clone(), done: done as i32, level, keys };
        Ok(self.job.report(&req)?)
    }

    /// Both workers report the step now, worker `i` with `keys[i]`.
    fn both(&self, done: LevelStepKind, level: u32, keys: [u64; 2]) {
        for (i, k) in keys.into_iter().enumerate() {
            self.report(i, done, level, k).unwrap();
        }
    }

    /// The step worker `i` is told to do now.
    fn step(&self, i: usize) -> (LevelStepKind, u32) {
        let s = self.job.lock();
        let step = self.job.step(&s, self.job.index_of(&s, &self.ids[i]).unwrap());
        (LevelStepKind::try_from(step.kind).unwrap(), step.level)
    }

    fn phase(&self) -> Phase {
        self.job.lock().phase
    }

    /// Worker `i` delivers one whole parcel of `level` for every shard.
    fn deliver_all(&self, i: usize, level: u32) {
        let mut open = HashMap::new();
        for shard in 0..SHARDS {
            self.job.relay(&mut open, self.parcel(i, level, shard, 0, true)).unwrap();
        }
    }

    fn parcel(&self, i: usize, level: u32, shard: u32, piece: u32, last: bool) -> LevelParcel {
        LevelParcel {
            worker_id: self.ids[i].clone(),
            level,
            shard,
            from_index: i as u32,
            piece,
            last,
            ..Default::default()
        }
    }

    /// The manifest as a coordinator started now would read it.
    fn on_disk(&self) -> Manifest {
        read_checked_json(&self.dir.join("levels-cluster.json")).unwrap().unwrap()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

use LevelStepKind::{LevelExpand as Expand, LevelMerge as Merge, LevelStart as Start, LevelUpload as Upload};

#[test]
fn levels_are_expanded_and_merged_until_one_is_empty_then_uploaded() {
    let h = Harness::new("normal");
    assert_eq!(h.phase(), Phase::Start);
    assert_eq!(h.step(0), (Start, 0));
    h.report(0, Start, 0, 1).unwrap();
    // A worker that reported waits for the other.
    assert_eq!(h.step(0).0, LevelStepKind::LevelWait);
    assert_eq!(h.step(1), (Start, 0));
    h.report(1, Start, 0, 0).unwrap();
    assert_eq!(h.phase(), Phase::Expand(0));
    let m = h.on_disk();
    assert_eq!((m.committed, m.positions.clone()), (Some(0), vec![1]));
    // Each worker relays its successors of level 0, a parcel per shard.
    h.deliver_all(0, 1);
    h.deliver_all(1, 1);
    assert_eq!(h.job.lock().relayed.len(), 2 * SHARDS as usize);
    h.both(Expand, 0, [0, 0]);
    assert_eq!((h.phase(), h.step(1)), (Phase::Merge(1), (Merge, 1)));
    h.both(Merge, 1, [2, 3]);
    assert_eq!(h.phase(), Phase::Expand(1));
    let m = h.on_disk();
    assert_eq!((m.committed, m.positions.clone()), (Some(1), vec![1, 5]), "level 1 is on disk");
    // The spent relay files are emptied, kept for the next level.
    let relay = h.job.relay_file(0, 1);
    assert_eq!(std::fs::metadata(&relay).unwrap().len(), 0);
    assert!(h.job.lock().relayed.is_empty());
    // Level 2 is empty: the last level is 1, and the workers upload 0 and 1.
    h.both(Expand, 1, [0, 0]);
    h.both(Merge, 2, [0, 0]);
    assert_eq!((h.phase(), h.step(0)), (Phase::Upload(1), (Upload, 1)));
    assert_eq!(h.on_disk().committed, Some(1));
    // Reported done without the uploads: the levels cannot be written, and the job fails.
    h.report(0, Upload, 1, 0).unwrap();
    let e = h.report(1, Upload, 1, 0).unwrap_err();
    assert!(e.message().contains("was never uploaded"), "{}", e.message());
    assert!(crate::service::ServedJob::over(&*h.job));
    assert!(h.job.status().phase.starts_with("failed"), "{}", h.job.status().phase);
}

#[test]
fn a_stale_repeated_or_strangers_report_is_ignored_or_refused() {
    let h = Harness::new("stale");
    // A report of another step than the current one counts for nothing.
    h.report(0, Expand, 0, 9).unwrap();
    h.report(0, Merge, 1, 9).unwrap();
    assert!(h.job.lock().done.is_empty());
    // A repeated report counts once.
    h.report(0, Start, 0, 1).unwrap();
    h.report(0, Start, 0, 1).unwrap();
    assert_eq!((h.phase(), h.job.lock().done.len()), (Phase::Start, 1));
    h.report(1, Start, 0, 1).unwrap();
    assert_eq!(h.phase(), Phase::Expand(0));
    // A report of EXPAND(0) for another level does not end EXPAND(0).
    h.report(0, Expand, 3, 0).unwrap();
    assert!(h.job.lock().done.is_empty());
    // A worker the job does not know must join first.
    let e = h.job.report(&LevelNext { worker_id: "w9".into(), done: Start as i32, level: 0, keys: 0 }).unwrap_err();
    assert!(matches!(e, LevelJobError::UnknownWorker(ref id) if id == "w9"), "{e:?}");
    assert_eq!(Status::from(e).code(), tonic::Code::PermissionDenied);
}

#[test]
fn a_parcel_that_does_not_fit_the_step_is_refused() {
    let h = Harness::new("parcels");
    let mut open = HashMap::new();
    let e = h.job.relay(&mut open, h.parcel(0, 1, 0, 0, true)).unwrap_err();
    assert!(matches!(e, LevelJobError::NotExpanding), "not expanding yet: {e:?}");
    assert_eq!(Status::from(e).code(), tonic::Code::FailedPrecondition);
    h.both(Start, 0, [1, 0]);
    for (p, why) in [
        (h.parcel(0, 2, 0, 0, true), "a level that is not being made"),
        (h.parcel(0, 1, SHARDS, 0, true), "a shard the plan does not have"),
        (LevelParcel { from_index: 1, ..h.parcel(0, 1, 0, 0, true) }, "another worker's name"),
        (h.parcel(0, 1, 1, 1, true), "a piece before the first"),
    ] {
        let e = Status::from(h.job.relay(&mut open, p).unwrap_err());
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{why}: {e:?}");
    }
    h.job.relay(&mut open, h.parcel(0, 1, 2, 0, false)).unwrap();
    let e = h.job.relay(&mut open, h.parcel(0, 1, 2, 2, true)).unwrap_err();
    assert!(matches!(e, LevelJobError::PieceOutOfOrder { shard: 2, piece: 2, due: 1 }), "{e:?}");
    assert!(e.to_string().contains("piece 2 arrived where piece 1 was due"), "{e}");
    // A shard not delivered whole is not relayed: the merge would refuse it.
    assert!(!h.job.lock().relayed.contains(&(2, 0)));
}

#[test]
fn a_restarted_coordinator_waits_for_both_workers_then_resumes_after_the_last_merged_level() {
    let mut h = Harness::new("restart");
    h.both(Start, 0, [1, 0]);
    h.deliver_all(0, 1);
    h.deliver_all(1, 1);
    h.both(Expand, 0, [0, 0]);
    h.both(Merge, 1, [4, 0]);
    assert_eq!(h.phase(), Phase::Expand(1));
    h.restart();
    // The relayed parcels died with the process; the manifest did not.
    assert!(h.job.lock().relayed.is_empty());
    assert!(!h.job.relay_file(0, 1).exists());
    assert_eq!(h.phase(), Phase::Joining);
    // Each worker's next call (whatever it reports) says it is here.
    h.report(0, Expand, 1, 0).unwrap();
    assert_eq!((h.phase(), h.step(0).0), (Phase::Joining, LevelStepKind::LevelWait));
    h.report(1, Merge, 1, 4).unwrap();
    assert_eq!(h.phase(), Phase::Expand(1), "both back: level 1 is expanded again");
    assert!(h.job.lock().done.is_empty(), "reports to the earlier process count for nothing");
    // No one else takes part: not a stranger's id, not a third worker.
    let e = h.join("w7").unwrap_err();
    assert!(e.message().contains("not part of this job"), "{}", e.message());
    let e = h.join("").unwrap_err();
    assert!(e.message().contains("already has its 2 workers"), "{}", e.message());
}

#[test]
fn a_silent_worker_is_presumed_lost_and_the_job_waits_for_it() {
    let h = Harness::new("silent");
    h.report(0, Start, 0, 1).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_millis(1150);
    while std::time::Instant::now() < deadline {
        h.job.lock().roster.heard(&h.ids[0], None);
        std::thread::sleep(Duration::from_millis(50));
    }
    crate::service::ServedJob::sweep(&*h.job);
    let lost: Vec<String> =
        h.job.status().workers.iter().filter(|w| w.member.lost).map(|w| w.member.id.clone()).collect();
    assert_eq!(lost, [h.ids[1].clone()]);
    // Its part of the level is on its disk: the job does not go on without it.
    assert_eq!(h.phase(), Phase::Start);
    h.report(1, Start, 0, 0).unwrap();
    assert_eq!(h.phase(), Phase::Expand(0));
    assert!(h.job.status().workers.iter().all(|w| !w.member.lost), "heard again: back");
}
