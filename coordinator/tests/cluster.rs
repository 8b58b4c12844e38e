//! The cluster path: a coordinator and three worker processes on loopback
//! ports chosen by the OS must produce the same tablebase bytes as the embedded
//! run, also when a worker or the coordinator is killed with SIGKILL mid-job and
//! started again with the same command.

use crate::common;
use crate::common::*;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);

fn embedded_checksums() -> BTreeMap<String, String> {
    let dir = TempDir::new("cluster-embedded");
    let out = run(embedded_command(&dir), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    checksums(&dir.join("tb"))
}

fn coordinator_cmd(dir: &TempDir, listen: &str, fault: Option<&str>) -> Command {
    let mut c = embedded_command(dir);
    c.args(["--listen", listen, "--expect-workers", "3"]);
    if let Some(f) = fault {
        c.env("RETRO_FAULT", f);
    }
    c
}

fn worker_cmd(dir: &TempDir, addr: &str, i: usize, fault: Option<&str>) -> Command {
    let mut c = Command::new(worker());
    c.args(["--connect", addr, "--listen", "127.0.0.1:0", "--threads", "1", "--data"]);
    c.arg(dir.join(&format!("w{i}")));
    c.env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    if let Some(f) = fault {
        c.env("RETRO_FAULT", f);
    }
    c
}

fn was_killed(status: std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(9)
}

#[test]
fn three_workers_match_embedded() {
    let want = embedded_checksums();
    let dir = TempDir::new("cluster-plain");
    let mut cmd = coordinator_cmd(&dir, "127.0.0.1:0", None);
    cmd.arg("--json");
    let mut coord = Proc::start("coordinator", cmd, dir.join("coord.log"));
    let addr = listening_address(&coord);
    let mut workers: Vec<Proc> = (1..=3)
        .map(|i| Proc::start(&format!("worker {i}"), worker_cmd(&dir, &addr, i, None), dir.join(&format!("w{i}.log"))))
        .collect();
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    for w in &mut workers {
        assert!(w.wait(LIMIT).success(), "{}", w.logs());
    }
    assert_eq!(checksums(&dir.join("tb")), want);
    // With --json, stdout is the summary and nothing else ("listening on"
    // goes to stderr), so a script can pipe it straight into a JSON reader.
    let summary: serde_json::Value = serde_json::from_str(&coord.stdout())
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", coord.stdout()));
    assert_eq!(summary["positions"].as_u64().map(|p| p > 0), Some(true), "{summary}");
    // Every worker logs what it sent and received per round; what all sent
    // is what all received, record for record, and the coordinator logs each
    // round's total.
    let total = |what: &str| -> u64 {
        workers
            .iter()
            .flat_map(|w| w.logs().lines().map(str::to_string).collect::<Vec<_>>())
            .filter_map(|l| l.split_once(&format!(": {what} ")).map(|(_, rest)| rest.to_string()))
            .map(|rest| rest.split_whitespace().next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    let (sent, received) = (total("sent"), total("received"));
    assert!(sent > 0, "three workers exchange records:\n{}", workers[0].logs());
    assert_eq!(sent, received, "records sent = records received");
    assert!(coord.logs().contains("records between workers"), "{}", coord.logs());
}

/// One worker dies at `fault`, is started again with the same command, and the
/// job still produces the embedded run's bytes.
fn worker_killed_and_restarted(fault: &str, name: &str, restart_log_says: &str) {
    let want = embedded_checksums();
    let dir = TempDir::new(name);
    let mut coord = Proc::start("coordinator", coordinator_cmd(&dir, "127.0.0.1:0", None), dir.join("coord.log"));
    let addr = listening_address(&coord);
    let mut w1 = Proc::start("worker 1", worker_cmd(&dir, &addr, 1, None), dir.join("w1.log"));
    let mut w2 = Proc::start("worker 2", worker_cmd(&dir, &addr, 2, Some(fault)), dir.join("w2.log"));
    let mut w3 = Proc::start("worker 3", worker_cmd(&dir, &addr, 3, None), dir.join("w3.log"));
    let status = w2.wait(LIMIT);
    assert!(was_killed(status), "worker 2 should have been killed at {fault}: {status:?}\n{}", w2.logs());
    assert!(w2.logs().contains("RETRO_FAULT"));
    let mut w2 = Proc::start("worker 2 again", worker_cmd(&dir, &addr, 2, None), dir.join("w2b.log"));
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    for w in [&mut w1, &mut w2, &mut w3] {
        assert!(w.wait(LIMIT).success(), "{}", w.logs());
    }
    assert!(w2.logs().contains(restart_log_says), "restarted worker log lacks {restart_log_says:?}:\n{}", w2.logs());
    assert_eq!(checksums(&dir.join("tb")), want);
}

#[test]
fn worker_killed_after_a_round_resumes() {
    worker_killed_and_restarted("after-apply:0:3", "cluster-kill-after-apply", "joined as worker");
}

#[test]
fn worker_killed_in_the_middle_of_a_round_rolls_back() {
    worker_killed_and_restarted("mid-apply:0:2", "cluster-kill-mid-apply", "rolled back to checkpoint round 1");
}

#[test]
fn worker_killed_after_sending_resumes() {
    worker_killed_and_restarted("after-generate:2:4", "cluster-kill-after-generate", "joined as worker");
}

/// A machine lost for good: a worker dies after round 2 of layer 1 and its
/// data directory is deleted; a new worker with an empty directory takes its
/// place (`--replace`), the layer starts again on every worker, and the job
/// gives the embedded run's bytes. A short heartbeat timeout (its own plan) so
/// that the loss is noticed quickly.
#[test]
fn a_machine_lost_for_good_is_replaced_by_an_empty_worker() {
    let dir = TempDir::new("cluster-lost-for-good");
    let plan = std::fs::read_to_string(repo().join("plans/stage1.toml"))
        .unwrap()
        .replace("heartbeat_timeout_secs = 30", "heartbeat_timeout_secs = 2");
    assert!(plan.contains("heartbeat_timeout_secs = 2"));
    let plan_path = dir.join("plan.toml");
    std::fs::write(&plan_path, plan).unwrap();
    let with_plan = |d: &TempDir| {
        let mut c = Command::new(coordinator());
        c.arg("--plan").arg(&plan_path);
        c.arg("--output").arg(d.join("tb")).arg("--checkpoints").arg(d.join("ck"));
        c.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
        c
    };
    let embedded = TempDir::new("cluster-lost-for-good-embedded");
    let out = run(with_plan(&embedded), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let want = checksums(&embedded.join("tb"));

    let mut c = with_plan(&dir);
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "3"]);
    let mut coord = Proc::start("coordinator", c, dir.join("c.log"));
    let addr = listening_address(&coord);
    let mut w1 = Proc::start("worker 1", worker_cmd(&dir, &addr, 1, None), dir.join("w1.log"));
    let mut w2 = Proc::start("worker 2", worker_cmd(&dir, &addr, 2, Some("after-apply:1:2")), dir.join("w2.log"));
    let mut w3 = Proc::start("worker 3", worker_cmd(&dir, &addr, 3, None), dir.join("w3.log"));
    assert!(was_killed(w2.wait(LIMIT)), "{}", w2.logs());
    let lost = w2.logs().split("joined as worker ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    // The machine and its disk are gone.
    std::fs::remove_dir_all(dir.join("w2")).unwrap();
    // Only a worker the coordinator counts as lost can be replaced.
    coord.wait_for_log("presumed lost", Duration::from_secs(60));
    let mut c = worker_cmd(&dir, &addr, 4, None);
    c.args(["--replace", &lost]);
    let mut w4 = Proc::start("worker 4", c, dir.join("w4.log"));
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    for w in [&mut w1, &mut w3, &mut w4] {
        assert!(w.wait(LIMIT).success(), "{}", w.logs());
    }
    assert!(coord.logs().contains(&format!("replaces worker {lost}")), "{}", coord.logs());
    assert!(w1.logs().contains("discarding attempt 0 of layer 1"), "{}", w1.logs());
    assert!(w4.logs().contains("move counts"), "the new worker computes its counts:\n{}", w4.logs());
    assert_eq!(checksums(&dir.join("tb")), want);
}

#[test]
fn coordinator_killed_and_restarted_resumes() {
    let want = embedded_checksums();
    let dir = TempDir::new("cluster-kill-coordinator");
    // A restarted coordinator must come back on the address the workers know.
    let listen = format!("127.0.0.1:{}", free_port());
    let mut coord =
        Proc::start("coordinator", coordinator_cmd(&dir, &listen, Some("after-commit:1:4")), dir.join("coord.log"));
    let addr = listening_address(&coord);
    let mut workers: Vec<Proc> = (1..=3)
        .map(|i| Proc::start(&format!("worker {i}"), worker_cmd(&dir, &addr, i, None), dir.join(&format!("w{i}.log"))))
        .collect();
    let status = coord.wait(LIMIT);
    assert!(was_killed(status), "coordinator should have been killed: {status:?}\n{}", coord.logs());
    let mut coord = Proc::start("coordinator again", coordinator_cmd(&dir, &listen, None), dir.join("coord2.log"));
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    assert!(coord.logs().contains("resuming job"), "{}", coord.logs());
    for w in &mut workers {
        assert!(w.wait(LIMIT).success(), "{}", w.logs());
    }
    assert_eq!(checksums(&dir.join("tb")), want);
}

#[test]
fn embedded_run_killed_and_rerun_gives_the_same_bytes() {
    let want = embedded_checksums();
    for fault in ["after-apply:1:3", "mid-apply:2:5", "after-commit:0:2", "after-counts-shard:0:4"] {
        let dir = TempDir::new("embedded-kill");
        let mut c = embedded_command(&dir);
        c.env("RETRO_FAULT", fault);
        let out = run(c, LIMIT);
        assert!(!out.status.success(), "{fault}: the run should have been killed");
        let out = run(embedded_command(&dir), LIMIT);
        assert!(out.status.success(), "{fault}: {}", String::from_utf8_lossy(&out.stderr));
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(log.contains("resuming job"), "{fault}: {log}");
        if fault.starts_with("after-counts-shard") {
            // Killed after computing the fourth shard, before recording it: the
            // three recorded shards of the count pass are kept, not redone.
            assert_eq!(log.matches("kept from an earlier run").count(), 3, "{log}");
        }
        assert_eq!(checksums(&dir.join("tb")), want, "{fault}");
    }
}

/// `--status ADDR`: `/healthz` answers `ok`, `/status` the job's progress as JSON.
#[test]
fn status_page_reports_progress() {
    let dir = TempDir::new("status-page");
    let status = format!("127.0.0.1:{}", free_port());
    let mut c = embedded_command(&dir);
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "1", "--status", &status]);
    let mut coord = Proc::start("coordinator", c, dir.join("coord.log"));
    let addr = listening_address(&coord);
    common::wait_for_port(&status, &coord);
    let health = http(&status, "GET /healthz HTTP/1.1\r\nHost: x\r\n");
    assert!(health.starts_with("HTTP/1.1 200") && health.ends_with("ok\n"), "{health}");
    let page = http(&status, "GET /status HTTP/1.1\r\nHost: x\r\n");
    let body = page.split("\r\n\r\n").nth(1).unwrap();
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["job"], "stage1");
    assert_eq!(v["kind"], "retrograde");
    assert_eq!(v["phase"], "joining");
    assert_eq!(v["expected_workers"], 1);
    assert_eq!(v["positions"], 1662);
    assert_eq!(v["layers"].as_array().unwrap().len(), 3);
    assert_eq!(v["layers_left"], 3);
    let metrics = http(&status, "GET /metrics HTTP/1.1\r\nHost: x\r\n");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(metrics.contains("\nretro_positions{retro_job=\"stage1\"} 1662\n"), "{metrics}");
    assert!(metrics.contains("\nretro_layers_left{retro_job=\"stage1\"} 3\n"), "{metrics}");
    assert!(http(&status, "GET /nothing HTTP/1.1\r\nHost: x\r\n").starts_with("HTTP/1.1 404"));
    assert!(http(&status, "POST /status HTTP/1.1\r\nHost: x\r\n").starts_with("HTTP/1.1 405"));
    assert!(http(&status, "\u{0}\u{1}garbage\r\n").starts_with("HTTP/1.1 400"));
    let mut w = Proc::start("worker", worker_cmd(&dir, &addr, 1, None), dir.join("w1.log"));
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    assert!(w.wait(LIMIT).success(), "{}", w.logs());
    assert!(coord.logs().contains("status on http://"), "{}", coord.logs());
}

/// A metrics page read by a real Prometheus text parser.
fn scrape(addr: &str) -> (String, prometheus_parse::Scrape) {
    let text = common::get_text(addr, "/metrics");
    let parsed = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .unwrap_or_else(|e| panic!("not Prometheus text ({e}):\n{text}"));
    (text, parsed)
}

/// The one sample of `name` whose labels include `with`, as a number.
fn sample(s: &prometheus_parse::Scrape, name: &str, with: &[(&str, &str)], text: &str) -> f64 {
    use prometheus_parse::Value;
    let found = s
        .samples
        .iter()
        .find(|x| x.metric == name && with.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .unwrap_or_else(|| panic!("no {name} {with:?} in:\n{text}"));
    match found.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
        _ => panic!("{name} is not a number"),
    }
}

/// What every page must follow: no `job` or `instance` label (the scraper
/// sets those and renames ours), counters end in `_total`, no pre-computed
/// rates, and what every process has.
fn check_conventions(s: &prometheus_parse::Scrape, text: &str) {
    for x in &s.samples {
        assert!(x.labels.get("job").is_none() && x.labels.get("instance").is_none(), "{}: {text}", x.metric);
        if matches!(x.value, prometheus_parse::Value::Counter(_)) {
            assert!(x.metric.ends_with("_total"), "counter {} does not end in _total", x.metric);
        }
        assert!(!x.metric.contains("rate"), "{} is a pre-computed rate", x.metric);
    }
    let build = s.samples.iter().find(|x| x.metric == "retro_build_info").expect("retro_build_info");
    assert!(build.labels.get("version").is_some() && build.labels.get("commit").is_some_and(|c| !c.is_empty()));
    assert!(sample(s, "process_resident_memory_bytes", &[], text) > 1e6, "{text}");
    assert!(sample(s, "retro_data_directory_bytes", &[], text) > 0.0, "{text}");
}

/// `/metrics` of a worker (`worker --status`) and of the coordinator, read
/// by a Prometheus text parser: the worker's own figures while its
/// coordinator is gone (killed after a round), then the coordinator's final
/// status, kept up after the job by `--status-linger` until a SIGTERM: every
/// layer solved, decided never above the positions, one histogram sample per
/// committed round, the worker's last call.
#[test]
fn metrics_of_worker_and_coordinator_follow_the_prometheus_conventions() {
    let dir = TempDir::new("metrics");
    let mut c = embedded_command(&dir);
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "1"]).env("RETRO_FAULT", "after-commit:1:4");
    let mut coord = Proc::start("coordinator", c, dir.join("coord.log"));
    let addr = listening_address(&coord);
    let worker_status = format!("127.0.0.1:{}", free_port());
    let mut wc = worker_cmd(&dir, &addr, 1, None);
    wc.args(["--status", &worker_status]);
    let mut w = Proc::start("worker", wc, dir.join("w1.log"));
    assert!(was_killed(coord.wait(LIMIT)), "{}", coord.logs());
    let (text, s) = scrape(&worker_status);
    check_conventions(&s, &text);
    let ours = [("retro_job", "stage1"), ("kind", "apply"), ("outcome", "ok")];
    assert!(sample(&s, "retro_worker_tasks_total", &ours, &text) >= 4.0, "{text}");
    assert!(s.samples.iter().all(|x| x.labels.get("retro_worker").is_some_and(|w| !w.is_empty())), "{text}");
    assert_eq!(sample(&s, "retro_worker_layer", &[], &text), 1.0, "{text}");

    // The coordinator again: it resumes, finishes, and keeps its final status up.
    let status = format!("127.0.0.1:{}", free_port());
    let mut c = embedded_command(&dir);
    c.args(["--listen", &addr, "--expect-workers", "1", "--status", &status, "--status-linger", "120"]);
    let mut coord = Proc::start("coordinator again", c, dir.join("coord2.log"));
    coord.wait_for_log("its final status stays on", LIMIT);
    assert!(w.wait(LIMIT).success(), "{}", w.logs());
    let (text, s) = scrape(&status);
    check_conventions(&s, &text);
    let positions = sample(&s, "retro_positions", &[], &text);
    let json = common::get_json(&status, "/status");
    let mut rounds = 0.0;
    for layer in json["layers"].as_array().unwrap() {
        let q = layer["question"].as_str().unwrap();
        assert_eq!(sample(&s, "retro_layer_solved", &[("layer", q)], &text), 1.0, "{text}");
        let decided = sample(&s, "retro_layer_decided_total", &[("layer", q)], &text);
        assert!(decided > 0.0 && decided <= positions, "{q}: {decided} of {positions}");
        rounds += layer["committed_round"].as_f64().unwrap();
    }
    assert_eq!(sample(&s, "retro_layers_left", &[], &text), 0.0);
    assert_eq!(sample(&s, "retro_round_duration_seconds_count", &[], &text), rounds, "{text}");
    let histogram = s.samples.iter().find(|x| x.metric == "retro_round_duration_seconds").expect("the histogram");
    let prometheus_parse::Value::Histogram(buckets) = &histogram.value else { panic!("not a histogram") };
    assert!(buckets.windows(2).all(|b| b[0].count <= b[1].count), "cumulative: {text}");
    assert_eq!(buckets.last().map(|b| b.count), Some(rounds), "+Inf holds every round: {text}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let seen = s.samples.iter().find(|x| x.metric == "retro_worker_last_seen_timestamp_seconds").expect("last seen");
    let prometheus_parse::Value::Gauge(seen) = seen.value else { panic!("last seen is not a gauge") };
    assert!((now - 120.0..=now + 1.0).contains(&seen), "last seen {seen}, now {now}");
    // A stop signal ends the linger at once; the job finished, so it exits 0.
    unsafe { libc::kill(coord.child.id() as i32, libc::SIGTERM) };
    assert!(coord.wait(Duration::from_secs(30)).success(), "{}", coord.logs());
    assert_eq!(checksums(&dir.join("tb")), embedded_checksums());
}
