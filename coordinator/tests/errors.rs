//! Bad input gets a clear error and a non-zero exit, never a panic: broken
//! plans, missing or wrong tokens, workers of another protocol version or
//! plan, damaged tablebases, damaged checkpoints.

mod common;
use common::*;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn assert_clear_failure(out: &std::process::Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "expected failure mentioning {needle:?}, got success:\n{err}");
    assert!(err.contains(needle), "stderr should mention {needle:?}:\n{err}");
    assert!(!err.contains("panicked"), "no panic allowed:\n{err}");
}

#[test]
fn broken_plans_name_the_field() {
    let dir = TempDir::new("broken-plan");
    let good = std::fs::read_to_string(repo().join("plans/stage1.toml")).unwrap();
    for (edit, field) in [
        (good.replace("count = 6", "count = 0"), "shards.count"),
        (good.replace("order = 1", "order = \"one\""), "job.order"),
        (good.replace("[shards]", "[shards]\ncuont = 3"), "shards.cuont"),
        (good.replace("name = \"stage1\"", ""), "job.name"),
        (good.replace("[job]", "[job"), "not valid TOML"),
        (good.replace("[cluster]", "[cluster]\ntls_cert = \"c.pem\""), "cluster.tls_key"),
    ] {
        let path = dir.join("plan.toml");
        std::fs::write(&path, edit).unwrap();
        let mut c = Command::new(coordinator());
        c.arg("--plan").arg(&path).arg("--output").arg(dir.join("tb")).arg("--checkpoints").arg(dir.join("ck"));
        assert_clear_failure(&run(c, LIMIT), field);
    }
    let mut c = Command::new(coordinator());
    c.args(["--plan", "/nonexistent/plan.toml"]);
    assert_clear_failure(&run(c, LIMIT), "cannot read");
    // A plan too big to solve is refused up front.
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join("plans/stage3.toml"));
    assert_clear_failure(&run(c, LIMIT), "too large to solve");
}

/// Starts a coordinator that waits for one worker, with `token` required.
fn token_coordinator(dir: &TempDir, token: Option<&str>) -> (Proc, String) {
    let mut c = embedded_command(dir);
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "1"]);
    if let Some(t) = token {
        c.env("RETRO_TOKEN", t);
    }
    let p = Proc::start("coordinator", c, dir.join("coord.log"));
    let addr = listening_address(&p);
    (p, addr)
}

fn worker_run(dir: &TempDir, addr: &str, extra: &[&str], token: Option<&str>) -> std::process::Output {
    let mut c = Command::new(worker());
    c.args(["--connect", addr, "--listen", "127.0.0.1:0", "--data"]).arg(dir.join("w")).args(extra);
    c.env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    if let Some(t) = token {
        c.env("RETRO_TOKEN", t);
    }
    run(c, LIMIT)
}

#[test]
fn strangers_without_the_token_are_refused() {
    let dir = TempDir::new("token");
    let (coord, addr) = token_coordinator(&dir, Some("s3cret"));
    assert_clear_failure(&worker_run(&dir, &addr, &[], None), "missing cluster token");
    assert_clear_failure(&worker_run(&dir, &addr, &[], Some("guess")), "wrong cluster token");
    // Each refusal is logged by the coordinator, with where it came from.
    let log = coord.logs();
    assert!(log.contains("refused a call from 127.0.0.1:") && log.contains("no cluster token"), "{log}");
    assert!(log.contains("wrong cluster token"), "{log}");
    // The right token works, and the job completes.
    let ok = worker_run(&dir, &addr, &[], Some("s3cret"));
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
}

#[test]
fn workers_of_another_version_or_plan_are_refused() {
    let dir = TempDir::new("version");
    let (_coord, addr) = token_coordinator(&dir, None);
    assert_clear_failure(&worker_run(&dir, &addr, &["--protocol-version", "99"], None), "protocol version 99");
    assert_clear_failure(&worker_run(&dir, &addr, &["--plan-hash", "deadbeefdeadbeef"], None), "deadbeefdeadbeef");
}

fn solved_stage1() -> TempDir {
    let dir = TempDir::new("solved");
    let out = run(embedded_command(&dir), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    dir
}

fn verify(dir: &std::path::Path) -> std::process::Output {
    let mut c = Command::new(coordinator());
    c.args(["verify", "--tablebase"]).arg(dir);
    run(c, LIMIT)
}

#[test]
fn damaged_tablebases_are_detected() {
    let dir = solved_stage1();
    let tb = dir.join("tb");
    assert!(verify(&tb).status.success());
    let file = tb.join("solo_A.tb");
    let bytes = std::fs::read(&file).unwrap();
    // Truncated.
    std::fs::write(&file, &bytes[..bytes.len() - 10]).unwrap();
    assert_clear_failure(&verify(&tb), "truncated");
    let mut probe = Command::new(coordinator());
    probe.args(["probe", "--tablebase"]).arg(&tb);
    assert_clear_failure(&run(probe, LIMIT), "solo_A.tb");
    // One byte altered in a block.
    let mut altered = bytes.clone();
    let mid = altered.len() / 2;
    altered[mid] ^= 0x40;
    std::fs::write(&file, &altered).unwrap();
    assert_clear_failure(&verify(&tb), "solo_A.tb");
}

#[test]
fn damaged_checkpoints_are_detected() {
    // Kill an embedded run mid-layer, damage its state, and run it again.
    for (what, needle) in [("shard", "does not match its checksum"), ("truncate", "expected"), ("manifest", "checksum")]
    {
        let dir = TempDir::new("ckpt");
        let mut c = embedded_command(&dir);
        c.env("RETRO_FAULT", "after-apply:0:3");
        assert!(!run(c, LIMIT).status.success());
        let layer = dir.join("ck").join("worker").join("layer-0");
        match what {
            "shard" => {
                let f = layer.join("shard-1.bin");
                let mut b = std::fs::read(&f).unwrap();
                b[5] ^= 1;
                std::fs::write(&f, b).unwrap();
            }
            "counts" => {
                let f = dir.join("ck").join("worker").join("counts").join("shard-0.bin");
                let mut b = std::fs::read(&f).unwrap();
                b[0] ^= 4;
                std::fs::write(&f, b).unwrap();
            }
            "truncate" => {
                let f = layer.join("shard-2.bin");
                let b = std::fs::read(&f).unwrap();
                std::fs::write(&f, &b[..b.len() - 1]).unwrap();
            }
            _ => {
                let f = dir.join("ck").join("coordinator.json");
                let t = std::fs::read_to_string(&f).unwrap();
                assert!(t.contains("\"next_worker\": 2"));
                std::fs::write(&f, t.replacen("\"next_worker\": 2", "\"next_worker\": 3", 1)).unwrap();
            }
        }
        assert_clear_failure(&run(embedded_command(&dir), LIMIT), needle);
    }
}

#[test]
fn checkpoints_of_another_plan_are_refused() {
    let dir = solved_stage1();
    let plan = std::fs::read_to_string(repo().join("plans/stage1.toml")).unwrap().replace("count = 6", "count = 5");
    let path = dir.join("other.toml");
    std::fs::write(&path, plan).unwrap();
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(&path).arg("--output").arg(dir.join("tb")).arg("--checkpoints").arg(dir.join("ck"));
    assert_clear_failure(&run(c, LIMIT), "belong to job");
}

/// The same command started twice on one checkpoint directory (the first still
/// running, say under nohup after a dropped SSH session): the second stops
/// with a clear error and leaves the first one's state alone. Likewise for a
/// worker data directory.
#[test]
fn a_second_process_on_the_same_state_is_refused() {
    let dir = TempDir::new("double-start");
    let (mut first, addr) = token_coordinator(&dir, None);
    assert_clear_failure(&run(embedded_command(&dir), LIMIT), "in use by another process");
    // The first one still finishes the job, with one worker.
    let w = Proc::start(
        "worker",
        {
            let mut c = Command::new(worker());
            c.args(["--connect", &addr, "--listen", "127.0.0.1:0", "--data"]).arg(dir.join("w"));
            c.env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
            c
        },
        dir.join("w.log"),
    );
    // A second worker on the first worker's data directory is refused.
    std::thread::sleep(Duration::from_millis(300));
    let second = worker_run(&dir, &addr, &[], None);
    if !second.status.success() {
        assert_clear_failure(&second, "in use by another process");
    }
    let mut w = w;
    assert!(w.wait(LIMIT).success(), "{}", w.logs());
    assert!(first.wait(LIMIT).success(), "{}", first.logs());
    assert_eq!(checksums(&dir.join("tb")).len(), 3);
}

/// Files written under another rank order (an older program) would be read as
/// a silent permutation of the right values, which no total shows: a manifest
/// or a tablebase that records another order is refused by name.
#[test]
fn files_of_another_rank_order_are_refused() {
    use retro_engine::durable::{read_checked_json, write_checked_json};
    use retro_engine::tablebase::{TablebaseReader, TablebaseWriter, unpack_value};
    let dir = solved_stage1();
    // The manifest.
    let path = dir.join("ck").join("coordinator.json");
    let mut m: serde_json::Value = read_checked_json(&path).unwrap().unwrap();
    assert_eq!(m["rank_order"], retro_games::cc3::RANK_ORDER);
    m["rank_order"] = serde_json::json!(retro_games::cc3::RANK_ORDER + 1);
    write_checked_json(&path, &m).unwrap();
    assert_clear_failure(&run(embedded_command(&dir), LIMIT), "written with rank order");
    // A tablebase, rewritten with the same values under another recorded order.
    let tb = dir.join("tb").join("solo_A.tb");
    let mut r = TablebaseReader::open(&tb).unwrap();
    let mut header = r.header().clone();
    assert_eq!(header.params["rank_order"], retro_games::cc3::RANK_ORDER);
    let packed = r.read_all().unwrap();
    header.params["rank_order"] = serde_json::json!(1);
    let (n, bp) = (header.positions, header.block_positions);
    let mut w = TablebaseWriter::create(&tb, header).unwrap();
    for start in (0..n).step_by(bp as usize) {
        let values: Vec<u8> = (start..(start + bp).min(n)).map(|i| unpack_value(&packed, i)).collect();
        w.push_values(&values).unwrap();
    }
    w.finish().unwrap();
    let mut c = Command::new(coordinator());
    c.arg("probe").arg("--tablebase").arg(dir.join("tb"));
    assert_clear_failure(&run(c, LIMIT), "rank order 1");
}
