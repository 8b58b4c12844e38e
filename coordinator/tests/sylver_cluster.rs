//! A Sylver table on three worker processes (the `Tasks` service) gives the
//! same table as the embedded run; a worker killed mid-class loses only its
//! unreported rows; a worker without the cluster token is refused.

use crate::common;

use crate::common::{Proc, TempDir, coordinator, listening_address, run, worker};
use retro_coordinator::sylver_job::{self, RunOptions, SylverPlan};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

/// Rows m = 4..9, n <= 24 (65 rows in six classes): a few seconds in all.
fn plan_text(dir: &TempDir, token: Option<&str>) -> String {
    let token = token.map_or(String::new(), |t| format!("token = \"{t}\"\n"));
    format!(
        "[job]\nname = \"sylver-cluster-test\"\ngame = \"sylver\"\nranges = [[4, 9, 24]]\n\
         [cluster]\nworkers = 3\nlisten = \"127.0.0.1:0\"\nheartbeat_timeout_secs = 2\n{token}\
         [output]\ndir = \"{}\"\ncheckpoints = \"{}\"\n",
        dir.join("out").display(),
        dir.join("ck").display()
    )
}

/// The rows of a summary without what depends on the machine or the run.
fn rows(summary: &Value, with_positions: bool) -> Vec<Value> {
    summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let o = r.as_object_mut().unwrap();
            o.remove("seconds");
            o.remove("resumed");
            if !with_positions {
                // A class resumed by another worker starts from an empty memo,
                // so its first row counts the positions earlier rows had added.
                o.remove("positions");
            }
            r
        })
        .collect()
}

fn summary(dir: &TempDir) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("out/summary.json")).unwrap()).unwrap()
}

/// Starts the coordinator of the test plan (with `args` added) and returns it with its address.
fn start_coordinator(dir: &TempDir, token: Option<&str>, args: &[&str]) -> (Proc, String) {
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, plan_text(dir, token)).unwrap();
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(&plan).args(args).env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    let coord = Proc::start("coordinator", c, dir.join("coordinator.log"));
    let addr = listening_address(&coord);
    (coord, addr)
}

/// Starts worker `i` with RETRO_FAULT `fault`.
fn start_worker(dir: &TempDir, addr: &str, i: usize, fault: Option<&str>, token: Option<&str>) -> Proc {
    let mut w = Command::new(worker());
    w.args(["--connect", addr]).arg("--data").arg(dir.join(&format!("w{i}")));
    w.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    if let Some(t) = token {
        w.env("RETRO_TOKEN", t);
    }
    if let Some(f) = fault {
        w.env("RETRO_FAULT", f);
    }
    Proc::start(&format!("worker{i}"), w, dir.join(&format!("w{i}.log")))
}

#[test]
fn three_workers_give_the_embedded_table() {
    let embedded = TempDir::new("sylver-embedded");
    let plan = SylverPlan::from_toml_str(&plan_text(&embedded, None), "test.toml").unwrap();
    let e = sylver_job::run(&plan, &embedded.join("out"), &embedded.join("ck"), &RunOptions::default()).unwrap();
    assert_eq!(e.rows.len(), 65);
    assert_eq!((e.solved, e.mismatches), (65, 0));
    assert!(e.compared >= 6, "published rows among them: {}", e.compared);
    let reference = summary(&embedded);

    // Three workers, no faults: the same table, positions included.
    let dir = TempDir::new("sylver-cluster");
    let token = Some("s3cret");
    let status = format!("127.0.0.1:{}", common::free_port());
    let (mut coord, addr) = start_coordinator(&dir, token, &["--status", &status]);
    // Before any worker: the status page shows the queue, nobody joined.
    common::wait_for_port(&status, &coord);
    let v = common::get_json(&status, "/status");
    assert_eq!((v["kind"].as_str(), v["phase"].as_str()), (Some("tasks"), Some("joining")), "{v:#}");
    assert_eq!(v["expected_workers"], 3);
    assert_eq!(v["workers"].as_array().map(Vec::len), Some(0));
    let queue = &v["tasks"];
    assert_eq!((queue["results"].as_u64(), queue["results_done"].as_u64()), (Some(65), Some(0)), "{v:#}");
    assert_eq!((queue["units_queued"].as_u64(), queue["units_held"].as_u64()), (Some(6), Some(0)), "{v:#}");
    let metrics = common::get_text(&status, "/metrics");
    assert!(metrics.contains("\nretro_task_results{retro_job=\"sylver-cluster-test\"} 65\n"), "{metrics}");
    assert!(!metrics.contains("retro_layer_"), "{metrics}");
    let workers: Vec<Proc> = (0..3).map(|i| start_worker(&dir, &addr, i, None, token)).collect();
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    for mut w in workers {
        assert!(w.wait(Duration::from_secs(30)).success(), "{}", w.logs());
    }
    assert_eq!(rows(&summary(&dir), true), rows(&reference, true));
    assert_eq!(
        std::fs::read_to_string(dir.join("out/table.tsv")).unwrap().lines().count(),
        std::fs::read_to_string(embedded.join("out/table.tsv")).unwrap().lines().count()
    );
    // Every worker took at least one class (the coordinator waits for all three).
    let log = coord.logs();
    for i in 0..3 {
        assert!(log.contains(&format!("to worker t{i}-")), "worker {i} got no class:\n{log}");
    }

    // Worker 0, alone at first, takes the dearest class and is killed
    // (SIGKILL) right after reporting its first row. Two workers started
    // after it finish the table: the class goes back to the queue with the
    // unreported rows only, and the answers are still the embedded ones.
    let dir = TempDir::new("sylver-cluster-fault");
    let status = format!("127.0.0.1:{}", common::free_port());
    let (mut coord, addr) = start_coordinator(&dir, None, &["--expect-workers", "1", "--status", &status]);
    let mut first = start_worker(&dir, &addr, 0, Some("task-after-rows:0:1"), None);
    assert!(!first.wait(Duration::from_secs(60)).success(), "the fault point must kill worker 0");
    // Silent past the heartbeat timeout (2 s), worker 0 is presumed lost
    // without anyone calling, and its class is back in the queue.
    let v = common::status_until(&status, &coord, |v| v["worker_losses"] == 1);
    assert_eq!(v["workers"][0]["lost"], true, "{v:#}");
    assert_eq!(v["tasks"]["units_held"], 0, "{v:#}");
    assert_eq!(v["tasks"]["results_done"], 1, "{v:#}");
    let workers: Vec<Proc> = (1..3).map(|i| start_worker(&dir, &addr, i, None, None)).collect();
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    for mut w in workers {
        assert!(w.wait(Duration::from_secs(30)).success(), "{}", w.logs());
    }
    let log = coord.logs();
    assert!(log.contains("goes back to the queue"), "{log}");
    assert_eq!(rows(&summary(&dir), false), rows(&reference, false));

    // The coordinator started again on the same checkpoints hands nothing
    // out: every row comes from its checkpoint, no worker needed.
    std::fs::remove_dir_all(dir.join("out")).unwrap();
    let (mut coord, _) = start_coordinator(&dir, None, &["--expect-workers", "1"]);
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    let again = summary(&dir);
    assert!(again["rows"].as_array().unwrap().iter().all(|r| r["resumed"] == true));
    assert_eq!(rows(&again, false), rows(&reference, false));
}

#[test]
fn a_worker_without_the_token_is_refused() {
    let dir = TempDir::new("sylver-stranger");
    let (_coord, addr) = start_coordinator(&dir, Some("s3cret"), &[]);
    let mut w = Command::new(worker());
    w.args(["--connect", &addr]).arg("--data").arg(dir.join("w")).env_remove("RETRO_TOKEN");
    let out = run(w, Duration::from_secs(60));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused"), "{err}");
    assert!(!dir.join("ck/rows").read_dir().unwrap().any(|_| true), "no row was written");
}
