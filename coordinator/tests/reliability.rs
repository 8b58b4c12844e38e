//! No wrong answer, no lost output: the runs of the third adversarial probe
//! (issue 53) that ended with exit 0 and a result that was wrong or gone, or
//! could never resume, each reproduced as it was found.

use crate::common;
use crate::common::*;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);

fn failure(out: &std::process::Output, needle: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "expected a failure naming {needle:?}, got success:\n{err}");
    assert!(err.contains(needle), "stderr should name {needle:?}:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn plan_run(plan: &str, output: &std::path::Path, checkpoints: &std::path::Path) -> Command {
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join(plan)).arg("--output").arg(output).arg("--checkpoints").arg(checkpoints);
    c.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    c
}

/// An output directory inside the checkpoints (which a run rewrites and
/// deletes) was deleted after the run said where its results were; the
/// reverse mixes results with state. Both are refused before anything is
/// created.
#[test]
fn an_output_inside_the_checkpoints_or_around_them_is_refused_up_front() {
    let dir = TempDir::new("nested-output");
    let ck = dir.join("ck");
    for output in [ck.join("worker/counts"), ck.join("worker/layer-0"), ck.clone()] {
        let err = failure(&run(plan_run("plans/stage1.toml", &output, &ck), LIMIT), "checkpoint directory");
        assert!(err.contains("separate directories"), "{err}");
        assert!(!ck.exists(), "nothing was created: {}", output.display());
    }
    failure(&run(plan_run("plans/stage1.toml", &dir.join(""), &ck), LIMIT), "holds the checkpoint directory");
    // Peg and Sylver plans check the same way.
    for plan in ["plans/peg-english.toml", "plans/sylver-twins.toml"] {
        failure(&run(plan_run(plan, &ck.join("out"), &ck), LIMIT), "lies inside the checkpoint directory");
    }
    assert!(!ck.exists());
}

/// Two jobs on one output: the second is refused, naming the first, and the
/// first job's files are untouched; `--replace-output` replaces them; a job
/// run again on its own output resumes as before.
#[test]
fn another_jobs_output_is_refused_naming_the_job() {
    let dir = TempDir::new("two-jobs");
    let out = dir.join("out");
    let first = run(plan_run("plans/cc2-m7p2.toml", &out, &dir.join("ck1")), LIMIT);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let summary = std::fs::read(out.join("summary.json")).unwrap();
    let tb = std::fs::read(out.join("solo_1.tb")).unwrap();
    let err = failure(&run(plan_run("plans/chaos.toml", &out, &dir.join("ck2")), LIMIT), "job cc2-m7p2");
    assert!(err.contains("--replace-output"), "{err}");
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), summary);
    assert_eq!(std::fs::read(out.join("solo_1.tb")).unwrap(), tb);
    // The same job again (new checkpoints: it solves again) is its own output's owner.
    let again = run(plan_run("plans/cc2-m7p2.toml", &out, &dir.join("ck3")), LIMIT);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(std::fs::read(out.join("solo_1.tb")).unwrap(), tb, "the same job writes the same bytes");
    // A three-player job does not take it either, then replaces it when told.
    failure(&run(plan_run("plans/stage1.toml", &out, &dir.join("ck4")), LIMIT), "job cc2-m7p2");
    let mut replace = plan_run("plans/stage1.toml", &out, &dir.join("ck4"));
    replace.arg("--replace-output");
    let replaced = run(replace, LIMIT);
    assert!(replaced.status.success(), "{}", String::from_utf8_lossy(&replaced.stderr));
    assert!(!out.join("solo_1.tb").exists(), "the other job's listed tablebase was removed");
    assert!(!out.join("solo_1.depth").exists(), "and its depth file");
    assert_eq!(checksums(&out).len(), 6, "three layers, each with its depth file");

    // Two live jobs on one output: the second is refused while the first runs.
    let live = dir.join("live");
    // (a cluster coordinator waiting for its worker holds its output).
    let mut waiting = plan_run("plans/cc2-m7p2.toml", &live, &dir.join("ck5"));
    waiting.args(["--listen", "127.0.0.1:0", "--expect-workers", "1"]);
    let p = Proc::start("waiting", waiting, dir.join("waiting.log"));
    listening_address(&p);
    failure(&run(plan_run("plans/cc2-m7p2.toml", &live, &dir.join("ck6")), LIMIT), "in use by another run");
    drop(p);
}

/// A run killed between the manifest's record of its embedded worker and
/// that worker's identity file could never resume ("the job already has its
/// 1 workers ... --replace"). Deterministic form: kill mid-layer, delete the
/// identity. The run resumes and writes the uninterrupted run's bytes.
#[test]
fn an_embedded_run_without_its_workers_identity_resumes() {
    let dir = TempDir::new("no-identity");
    let clean = solve_plan(&dir, "plans/stage1.toml", "clean");
    let mut killed = plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck"));
    killed.env("RETRO_FAULT", "after-apply:0:10");
    assert!(!run(killed, LIMIT).status.success());
    std::fs::remove_file(dir.join("ck/worker/identity.json")).unwrap();
    let resumed = run(plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck")), LIMIT);
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    assert!(err.contains("had no identity"), "{err}");
    assert_eq!(checksums(&dir.join("tb")), checksums(&clean));
}

/// `GET /status` once, `None` when the server is not (or no longer) there.
fn try_status(addr: &str) -> Option<serde_json::Value> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    serde_json::from_str(text.split("\r\n\r\n").nth(1)?).ok()
}

/// The status page ended a cc2 job on two workers with more positions
/// decided than the layer has (the init's terminal positions counted twice).
/// Watched all through the run, it never shows more than 100 %, and the
/// final count is the summary's wins and losses.
#[test]
fn the_status_never_counts_more_positions_than_there_are() {
    let dir = TempDir::new("status-count");
    let status = format!("127.0.0.1:{}", free_port());
    let mut c = plan_run("plans/cc2-m7p2.toml", &dir.join("tb"), &dir.join("ck"));
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "2", "--status", &status]);
    let mut coord = Proc::start("coordinator", c, dir.join("coord.log"));
    let addr = listening_address(&coord);
    let _workers = [loopback_worker(&dir, &addr, 1, "a"), loopback_worker(&dir, &addr, 2, "a")];
    let mut seen = 0u64;
    while coord.child.try_wait().unwrap().is_none() {
        if let Some(v) = try_status(&status) {
            let positions = v["positions"].as_u64().unwrap();
            for l in v["layers"].as_array().unwrap() {
                let decided = l["decided"].as_u64().unwrap();
                assert!(decided <= positions, "{decided} of {positions} decided: {v:#}");
                seen = seen.max(decided);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    assert!(seen > 0, "the status was read while the job ran");
    let manifest: retro_coordinator::manifest::Manifest =
        retro_engine::durable::read_checked_json(&dir.join("ck/coordinator.json")).unwrap().unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tb/summary.json")).unwrap()).unwrap();
    let stored = &summary["by_side_to_move"]["1"];
    let want = stored["wins"].as_u64().unwrap() + stored["losses"].as_u64().unwrap();
    assert_eq!(manifest.layers[0].decided(), want, "{stored:#}");
    assert!(seen <= want);
}

/// `ledger`, `check` and `verify` given `/dev/zero` as a summary grew memory
/// without bound; each stops at once with the limit named.
#[test]
fn an_endless_summary_is_refused_at_its_limit() {
    let dir = TempDir::new("endless-input");
    for args in [&["ledger", "--summary"][..], &["check", "--summary"]] {
        let mut c = Command::new(coordinator());
        c.args(args).arg("/dev/zero");
        failure(&run(c, Duration::from_secs(60)), "too large for a summary");
    }
    // verify reads the directory's summary.json: a device linked there.
    let tb = dir.join("tb");
    std::fs::create_dir_all(&tb).unwrap();
    std::fs::write(tb.join("solo_A.tb"), b"not checked before the summary").unwrap();
    std::os::unix::fs::symlink("/dev/zero", tb.join("summary.json")).unwrap();
    let mut c = Command::new(coordinator());
    c.args(["verify", "--tablebase"]).arg(&tb);
    failure(&run(c, Duration::from_secs(60)), "too large for a summary");
}

/// `probe --batch` read `/dev/zero` into memory as one endless line, and
/// stopped at a line that is not UTF-8 with the rest unanswered. Each bad line
/// now gets its own error line with its number, at once, and the others are
/// answered.
#[test]
fn probe_batch_answers_every_line_and_bounds_each() {
    use std::io::{BufRead, Write};
    let dir = TempDir::new("batch-lines");
    let tb = dir.join("tb");
    let out = run(plan_run("plans/stage1.toml", &tb, &dir.join("ck")), LIMIT);
    assert!(out.status.success());
    let mut c = Command::new(coordinator());
    c.args(["probe", "--batch", "--tablebase"]).arg(&tb);
    c.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut input = b"# a comment\n".to_vec();
    input.extend_from_slice(&[0xff, 0xfe, b'\n']);
    input.extend_from_slice(b"e1/b4/b1 A\n");
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "a bad line fails the batch at its end");
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["line"], 2);
    assert!(lines[0]["error"].as_str().unwrap().contains("not UTF-8"), "{}", lines[0]);
    assert!(lines[1].get("moves").is_some(), "the line after the bad one is answered: {}", lines[1]);

    // An endless line: its error comes before its end, in bounded memory.
    let mut c = Command::new(coordinator());
    c.args(["probe", "--batch", "--tablebase"]).arg(&tb);
    c.stdin(std::fs::File::open("/dev/zero").unwrap()).stdout(std::process::Stdio::piped());
    c.stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert!(v["error"].as_str().unwrap().contains("line 1 is longer than"), "{v}");
}

/// Messages that did not say enough: a deleted `state.json` is named; a
/// foreign file among the three layers is the one blamed, not the next one;
/// a small job's needs are printed in a unit that shows them.
#[test]
fn messages_name_the_file_and_the_figure() {
    let dir = TempDir::new("messages");
    let mut killed = plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck"));
    killed.args(["--checkpoint-secs", "0"]).env("RETRO_FAULT", "after-apply:0:5");
    assert!(!run(killed, LIMIT).status.success());
    let state = dir.join("ck/worker/layer-0/state.json");
    std::fs::remove_file(&state).unwrap();
    let out = run(plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck")), LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("layer 0 has no init: {} is missing", state.display())), "{err}");

    // The stage-1 job solved twice under two plans (shard counts differ, so
    // do the plan hashes); one layer of the second copied over the first's.
    let first = run(plan_run("plans/stage1.toml", &dir.join("a"), &dir.join("ck-a")), LIMIT);
    assert!(first.status.success());
    let err = String::from_utf8_lossy(&first.stderr);
    assert!(!err.contains("0.00 GB"), "small needs in a unit that shows them: {err}");
    assert!(err.contains(" kB of memory") || err.contains(" MB of memory"), "{err}");
    let other = std::fs::read_to_string(repo().join("plans/stage1.toml")).unwrap().replace("count = 6", "count = 5");
    assert!(other.contains("count = 5"));
    std::fs::write(dir.join("other.toml"), other).unwrap();
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(dir.join("other.toml")).arg("--output").arg(dir.join("b"));
    c.arg("--checkpoints").arg(dir.join("ck-b")).env_remove("RETRO_FAULT");
    assert!(run(c, LIMIT).status.success());
    std::fs::copy(dir.join("b/solo_A.tb"), dir.join("a/solo_A.tb")).unwrap();
    let mut c = Command::new(coordinator());
    c.args(["probe", "--tablebase"]).arg(dir.join("a"));
    let err = failure(&run(c, LIMIT), "solo_A.tb");
    assert!(!err.contains("enable_A_B.tb"), "{err}");
}

fn sigterm(p: &Proc) {
    // SAFETY: kill(2) on a child of this test; no memory is involved.
    let rc = unsafe { libc::kill(p.child.id() as i32, libc::SIGTERM) };
    assert_eq!(rc, 0);
}

/// SIGTERM killed a run at once with no message, losing the rounds since its
/// last checkpoint. Now the first SIGTERM makes an embedded run stop after
/// its next round, made durable, with exit status 75 and a line saying how to
/// resume; run again, it writes the uninterrupted run's bytes.
#[test]
fn sigterm_stops_an_embedded_run_at_a_checkpoint_and_it_resumes() {
    let dir = TempDir::new("sigterm-embedded");
    let clean = solve_plan(&dir, "plans/stage1.toml", "clean");
    // The signal arrives mid-layer (the fault point sends a real SIGTERM to
    // the process at a reproducible round); checkpoints are five minutes
    // apart by default, so only the stop makes this round durable.
    let mut c = plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck"));
    c.env("RETRO_FAULT", "term-after-apply:1:3");
    let out = run(c, LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(err.contains("SIGTERM: stopping at the next checkpoint"), "{err}");
    assert!(err.contains("stopped at a checkpoint (layer enable(A>B) round 4") && err.contains("to resume"), "{err}");
    let resumed = run(plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck")), LIMIT);
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    assert!(
        err.contains("layer 1 round 5:") && !err.contains("layer 0 round") && !err.contains("layer 1 round 4:"),
        "the resume starts after the stop's round: {err}"
    );
    assert_eq!(checksums(&dir.join("tb")), checksums(&clean));
}

/// A SIGTERM during the analysis (every tablebase written) said the job
/// stopped, then the process went on computing the analysis it had given up:
/// dropping the runtime waited for the analysis's blocking task (25 minutes
/// at stage 2), and the second SIGTERM went unheard. Here the analysis never
/// ends (the `hang-` fault point): the stop must end the process by itself,
/// with status 75, the tablebases intact; run again, the summary is written.
#[test]
fn sigterm_during_the_analysis_stops_the_process_at_once() {
    let dir = TempDir::new("sigterm-analysis");
    let mut c = plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck"));
    c.env("RETRO_FAULT", "hang-analysis:0:0");
    let mut p = Proc::start("coordinator", c, dir.join("hang.log"));
    p.wait_for_log("this thread hangs at analysis", LIMIT);
    sigterm(&p);
    let status = p.wait(Duration::from_secs(60));
    let err = p.logs();
    assert_eq!(status.code(), Some(75), "{err}");
    assert!(err.contains("stopped during its analysis") && err.contains("run the same"), "{err}");
    assert!(!dir.join("tb/summary.json").exists(), "{err}");
    let resumed = run(plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck")), LIMIT);
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    assert!(err.contains("only the analysis runs"), "{err}");
    assert!(dir.join("tb/summary.json").exists());
    let clean = solve_plan(&dir, "plans/stage1.toml", "clean");
    assert_eq!(checksums(&dir.join("tb")), checksums(&clean));
}

/// The same on a two-worker cluster: a SIGTERM to the coordinator stops the
/// job at the next round's checkpoint and the workers with it (status 75
/// each, saying to start again with the same --data); a SIGTERM to a worker
/// stops it at once with the same status; started again, coordinator and
/// workers finish with the embedded run's bytes.
#[test]
fn sigterm_stops_a_cluster_and_it_resumes_to_the_same_bytes() {
    let dir = TempDir::new("sigterm-cluster");
    let plan = "plans/cc2-m7p2.toml";
    let embedded = solve_plan(&dir, plan, "embedded");
    let coordinator_command = |fault: Option<&str>| {
        let mut c = plan_run(plan, &dir.join("tb"), &dir.join("ck"));
        c.args(["--listen", "127.0.0.1:0", "--expect-workers", "2"]);
        if let Some(f) = fault {
            c.env("RETRO_FAULT", f);
        }
        c
    };
    // A worker stopped while the job waits for the other one.
    let mut coord = Proc::start("coordinator", coordinator_command(Some("term-after-commit:0:5")), dir.join("c1.log"));
    let addr = listening_address(&coord);
    let mut w1 = loopback_worker(&dir, &addr, 1, "r1");
    // (once its identity is written: a worker killed between the join and
    // that write comes back as a new worker)
    w1.wait_for_log("joined as worker w1", LIMIT);
    sigterm(&w1);
    assert_eq!(w1.wait(LIMIT).code(), Some(75), "{}", w1.logs());
    assert!(w1.logs().contains("SIGTERM: worker stopping") && w1.logs().contains("same --data"), "{}", w1.logs());
    // Both workers; the coordinator is sent SIGTERM after round 5.
    let mut workers = [loopback_worker(&dir, &addr, 1, "r2"), loopback_worker(&dir, &addr, 2, "r3")];
    assert_eq!(coord.wait(LIMIT).code(), Some(75), "{}", coord.logs());
    assert!(coord.logs().contains("stopped at a checkpoint (layer solo(1) round 6"), "{}", coord.logs());
    for w in &mut workers {
        assert_eq!(w.wait(LIMIT).code(), Some(75), "{}", w.logs());
        assert!(w.logs().contains("stopped the job at a checkpoint"), "{}", w.logs());
    }
    // A coordinator stopped before its workers came: at once.
    let mut waiting = Proc::start("coordinator", coordinator_command(None), dir.join("c2.log"));
    listening_address(&waiting);
    sigterm(&waiting);
    assert_eq!(waiting.wait(LIMIT).code(), Some(75), "{}", waiting.logs());
    // Everything started again.
    let mut coord = Proc::start("coordinator", coordinator_command(None), dir.join("c3.log"));
    let addr = listening_address(&coord);
    let mut workers = [loopback_worker(&dir, &addr, 1, "r4"), loopback_worker(&dir, &addr, 2, "r5")];
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    for w in &mut workers {
        assert!(w.wait(LIMIT).success(), "{}", w.logs());
    }
    assert!(coord.logs().contains("resuming job cc2-m7p2"), "{}", coord.logs());
    let sha = |d: &std::path::Path| retro_engine::tablebase::sha256_file(&d.join("solo_1.tb")).unwrap();
    assert_eq!(sha(&dir.join("tb")), sha(&embedded));
}

fn signal(p: &Proc, sig: i32) {
    // SAFETY: kill(2) on a child of this test; no memory is involved.
    let rc = unsafe { libc::kill(p.child.id() as i32, sig) };
    assert_eq!(rc, 0);
}

/// Split brain: a worker frozen (not dead) while a copy of its data
/// directory joined in its place made two processes act as one worker; the
/// job failed on a corrupt inbox, or could never resume. Now the copy's join
/// fences the original: woken, the original is refused at its next join with
/// a message that says why and what to do, nothing it still sends is taken,
/// and the job finishes with the embedded run's bytes.
#[test]
fn a_frozen_worker_and_a_copy_of_its_directory_never_act_as_one() {
    let dir = TempDir::new("split-brain");
    let plan = "plans/cc2-m7p2.toml";
    let embedded = solve_plan(&dir, plan, "embedded");
    let mut c = plan_run(plan, &dir.join("tb"), &dir.join("ck"));
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "2"]);
    let mut coord = Proc::start("coordinator", c, dir.join("c.log"));
    let addr = listening_address(&coord);
    let mut w1 = loopback_worker(&dir, &addr, 1, "r1");
    // Worker 2 freezes itself right after committing round 3 (kill -STOP
    // at a reproducible instant), its report not yet sent.
    let mut w = Command::new(worker());
    w.args(["--connect", &addr, "--listen", "127.0.0.1:0", "--threads", "1", "--data"]);
    w.arg(dir.join("w2")).env_remove("RETRO_TOKEN").env("RETRO_FAULT", "stop-after-apply:0:3");
    let mut original = Proc::start("worker 2", w, dir.join("w2-original.log"));
    original.wait_for_log("freezing this process", LIMIT);
    // Which id it has depends on the order the two joined in.
    let logs = original.logs();
    let id = logs.split("joined as worker ").nth(1).and_then(|s| s.split(' ').next()).expect("joined").to_string();
    // What the log tells an operator to do for a lost worker, done while the
    // original still lives: a replacement on a copy of its directory.
    let copied = Command::new("cp").arg("-a").arg(dir.join("w2")).arg(dir.join("w2-copy")).status().unwrap();
    assert!(copied.success());
    let mut w = Command::new(worker());
    w.args(["--connect", &addr, "--listen", "127.0.0.1:0", "--threads", "1", "--data"]);
    w.arg(dir.join("w2-copy")).env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    let mut copy = Proc::start("worker 2 (copy)", w, dir.join("w2-copy.log"));
    copy.wait_for_log(&format!("joined as worker {id} "), LIMIT);
    // The copy works (the job passes the frozen round), then the original wakes.
    coord.wait_for_log(" round 5: +", LIMIT);
    signal(&original, libc::SIGCONT);
    let status = original.wait(LIMIT);
    let logs = original.logs();
    assert!(!status.success(), "the stale original must stop: {logs}");
    assert!(
        logs.contains("two processes cannot run as one worker") && logs.contains("generation"),
        "the refusal says why: {logs}"
    );
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    assert!(copy.wait(LIMIT).success(), "{}", copy.logs());
    assert!(w1.wait(LIMIT).success(), "{}", w1.logs());
    assert!(coord.logs().contains("refused"), "the coordinator's log shows the refusal: {}", coord.logs());
    let rejoins = coord.logs().matches(&format!("worker {id} joined")).count();
    assert!(rejoins <= 3, "no storm of re-joins ({rejoins}): {}", coord.logs());
    let sha = |d: &std::path::Path| retro_engine::tablebase::sha256_file(&d.join("solo_1.tb")).unwrap();
    assert_eq!(sha(&dir.join("tb")), sha(&embedded));
}

/// Runs `c` with at most `n` open descriptors, soft and hard (what
/// `ulimit -n` sets, and systemd's default soft limit of 1,024), so that the
/// program cannot raise it.
fn limit_descriptors(c: &mut Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the
    // parent; this runs in the child between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: n, rlim_max: n };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
}

/// Up to `n` connections to `addr` that send nothing, kept open by the
/// caller; fewer when three in a row are not accepted within 3 s each (a
/// server that stopped accepting, its queue full).
fn idle_sockets(addr: &str, n: usize) -> Vec<std::net::TcpStream> {
    let at: std::net::SocketAddr = addr.parse().unwrap();
    let (mut held, mut failed) = (Vec::new(), 0);
    while held.len() < n && failed < 3 {
        match std::net::TcpStream::connect_timeout(&at, Duration::from_secs(3)) {
            Ok(s) => held.push(s),
            Err(_) => failed += 1,
        }
    }
    held
}

/// `GET path` at `addr` answered within `limit`: the whole answer, or why not.
fn get_within(addr: &str, path: &str, limit: Duration) -> Result<String, String> {
    use std::io::{Read, Write};
    let sock: std::net::SocketAddr = addr.parse().unwrap();
    let mut s = std::net::TcpStream::connect_timeout(&sock, limit).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(limit)).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut out = String::new();
    s.read_to_string(&mut out).map_err(|e| format!("no answer within {limit:?}: {e}"))?;
    Ok(out)
}

/// Idle connections exhausted the servers: about 1,100 sockets that send
/// nothing, on a coordinator limited to 1,024 descriptors (systemd's
/// default), made `/healthz` time out and kept workers from joining (a 3 s
/// job took 34 s); the explorer's `/api/info` the same. Now every server
/// closes the idlest connection when it is at its limit (a share of the
/// descriptors) or short of descriptors, and any connection idle too long:
/// the pages answer and the worker joins at once.
#[test]
fn idle_sockets_under_a_low_descriptor_limit_lock_nobody_out() {
    // This test itself holds a few thousand sockets.
    let mut own = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit on this process's own limit.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut own);
        own.rlim_cur = own.rlim_max.min(1 << 16);
        libc::setrlimit(libc::RLIMIT_NOFILE, &own);
    }
    assert!(own.rlim_cur >= 4096, "the test needs 4,096 descriptors; the hard limit here is {}", own.rlim_max);
    let dir = TempDir::new("idle-sockets");
    let status = format!("127.0.0.1:{}", free_port());
    let mut c = plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck"));
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "1", "--status", &status]);
    limit_descriptors(&mut c, 1024);
    let mut coord = Proc::start("coordinator", c, dir.join("c.log"));
    let addr = listening_address(&coord);
    common::wait_for_port(&status, &coord);
    let held = [idle_sockets(&addr, 1100), idle_sockets(&status, 1100)];
    let quick = Duration::from_secs(10);
    for path in ["/healthz", "/status"] {
        let answer = get_within(&status, path, quick).unwrap_or_else(|e| panic!("{path}: {e}\n{}", coord.logs()));
        assert!(answer.starts_with("HTTP/1.1 200"), "{path}: {answer}");
    }
    let mut w = Command::new(worker());
    w.args(["--connect", &addr, "--listen", "127.0.0.1:0", "--threads", "1", "--data"]);
    w.arg(dir.join("w1")).env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    limit_descriptors(&mut w, 1024);
    let mut w = Proc::start("worker", w, dir.join("w1.log"));
    // The peer port of the worker gets its share of idle sockets too.
    w.wait_for_log("joined as worker", quick);
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    assert!(w.wait(LIMIT).success(), "{}", w.logs());
    assert!(coord.logs().contains("closing the idlest"), "the coordinator says what it did: {}", coord.logs());
    drop(held);
    // The explorer over the job's tablebases.
    let mut c = Command::new(coordinator());
    c.args(["serve", "--listen", "127.0.0.1:0", "--tablebase"]).arg(dir.join("tb"));
    limit_descriptors(&mut c, 1024);
    let explorer = Proc::start("explorer", c, dir.join("explorer.log"));
    let at = listening_address(&explorer);
    let _held = idle_sockets(&at, 1100);
    let answer = get_within(&at, "/api/info", quick).unwrap_or_else(|e| panic!("/api/info: {e}\n{}", explorer.logs()));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
