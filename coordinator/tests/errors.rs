//! Bad input gets a clear error and a non-zero exit, never a panic: broken
//! plans, missing or wrong tokens, workers of another protocol version or
//! plan, damaged tablebases, damaged checkpoints.

use crate::common::*;
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

/// A worker of the job at `addr` on the data directory `dir/data`, without
/// the environment's token or fault point.
fn worker_command(dir: &TempDir, addr: &str, data: &str) -> Command {
    let mut c = Command::new(worker());
    c.args(["--connect", addr, "--listen", "127.0.0.1:0", "--data"]).arg(dir.join(data));
    c.env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    c
}

fn worker_run(dir: &TempDir, addr: &str, extra: &[&str], token: Option<&str>) -> std::process::Output {
    let mut c = worker_command(dir, addr, "w");
    c.args(extra);
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
    let (coord, addr) = token_coordinator(&dir, None);
    assert_clear_failure(&worker_run(&dir, &addr, &["--protocol-version", "99"], None), "protocol version 99");
    assert_clear_failure(&worker_run(&dir, &addr, &["--plan-hash", "deadbeefdeadbeef"], None), "deadbeefdeadbeef");
    // The coordinator's operator hears of both refusals too.
    let log = coord.logs();
    assert!(log.contains("refused") && log.contains("protocol version 99"), "{log}");
    assert!(log.contains("refused") && log.contains("deadbeefdeadbeef"), "{log}");
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
    let verify_json = |tb: &std::path::Path| {
        let mut c = Command::new(coordinator());
        c.args(["verify", "--json", "--tablebase"]).arg(tb);
        let out = run(c, LIMIT);
        (out.status.success(), serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap())
    };
    let (ok, report) = verify_json(&tb);
    assert!(ok && report["ok"] == true && report["recorded"] == true, "{report}");
    // Three layers, each with its values and its depth file.
    assert_eq!(report["files"].as_array().unwrap().len(), 6, "{report}");
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
    let (ok, report) = verify_json(&tb);
    assert!(!ok && report["ok"] == false, "{report}");
    let bad: Vec<_> = report["files"].as_array().unwrap().iter().filter(|f| f["ok"] == false).collect();
    assert_eq!(bad.len(), 1, "{report}");
    assert!(bad[0]["path"].as_str().unwrap().ends_with("solo_A.tb") && bad[0]["error"].is_string(), "{report}");
    std::fs::write(&file, &bytes).unwrap();

    // The depth files: a byte altered, another layer's file under the name,
    // the file gone.
    let depth = tb.join("solo_A.depth");
    let depth_bytes = std::fs::read(&depth).unwrap();
    let mut altered = depth_bytes.clone();
    let mid = altered.len() / 2;
    altered[mid] ^= 0x40;
    std::fs::write(&depth, &altered).unwrap();
    assert_clear_failure(&verify(&tb), "solo_A.depth");
    std::fs::copy(tb.join("enable_A_B.depth"), &depth).unwrap();
    assert_clear_failure(&verify(&tb), "holds layer enable(A>B)");
    std::fs::remove_file(&depth).unwrap();
    assert_clear_failure(&verify(&tb), "solo_A.depth: listed in summary.json but missing");
    std::fs::write(&depth, &depth_bytes).unwrap();
    assert!(verify(&tb).status.success(), "the restored files verify");
}

/// The embedded stage-1 run with a checkpoint after every round (and so its
/// shards mapped shared, with undo logs).
fn embedded_every_round(dir: &TempDir) -> Command {
    let mut c = embedded_command(dir);
    c.args(["--checkpoint-secs", "0"]);
    c
}

#[test]
fn damaged_checkpoints_are_detected() {
    // Kill an embedded run mid-layer, damage its state, and run it again.
    for (what, needle) in [("shard", "does not match its checksum"), ("truncate", "expected"), ("manifest", "checksum")]
    {
        let dir = TempDir::new("ckpt");
        // Every round a checkpoint: damage to a chunk saved since the last one
        // would be rolled back (and so harmless), not detected.
        let every_round = || embedded_every_round(&dir);
        let mut c = every_round();
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
        assert_clear_failure(&run(every_round(), LIMIT), needle);
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
    // The job waits for two workers, so the first one is certainly still
    // running (it holds its directory's lock) when the second process starts
    // on its directory.
    let mut c = embedded_command(&dir);
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "2"]);
    let mut first = Proc::start("coordinator", c, dir.join("coord.log"));
    let addr = listening_address(&first);
    assert_clear_failure(&run(embedded_command(&dir), LIMIT), "in use by another process");
    let worker_on = |data: &str| worker_command(&dir, &addr, data);
    let w = Proc::start("worker", worker_on("w"), dir.join("w.log"));
    first.wait_for_log("worker w1 joined", LIMIT);
    // A second worker on the first worker's data directory is refused before
    // it joins: the join would claim the first one's identity and take its
    // place in the job (a new epoch for w1), or join as a second worker.
    assert_clear_failure(&run(worker_on("w"), LIMIT), "in use by another process");
    assert_eq!(first.logs().matches(" joined (epoch").count(), 1, "{}", first.logs());
    // A worker of its own then completes the job with the first one.
    let mut other = Proc::start("worker", worker_on("w2"), dir.join("w2.log"));
    let mut w = w;
    assert!(w.wait(LIMIT).success(), "{}", w.logs());
    assert!(other.wait(LIMIT).success(), "{}", other.logs());
    assert!(first.wait(LIMIT).success(), "{}", first.logs());
    assert_eq!(checksums(&dir.join("tb")).len(), 6, "three layers, each with its depth file");
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

/// A valid tablebase of another layer copied over a layer's name passes every
/// checksum of its own; the job recorded each file's SHA-256 and layer, so a
/// finished job run again refuses it (naming the file) and leaves
/// summary.json as it was, and `verify` fails it against summary.json.
#[test]
fn a_tablebase_of_another_layer_under_a_layer_name_is_refused() {
    let dir = solved_stage1();
    let tb = dir.join("tb");
    let summary = std::fs::read(tb.join("summary.json")).unwrap();
    std::fs::copy(tb.join("enable_A_B.tb"), tb.join("enable_A_C.tb")).unwrap();
    let out = run(embedded_command(&dir), LIMIT);
    assert_clear_failure(&out, "enable_A_C.tb");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("enable(A>B)") || err.contains("sha256") || err.contains("bytes"), "{err}");
    assert_eq!(std::fs::read(tb.join("summary.json")).unwrap(), summary, "summary.json untouched");
    let v = verify(&tb);
    assert_clear_failure(&v, "failed verification");
    let listing = String::from_utf8_lossy(&v.stdout);
    assert!(listing.contains("BAD") && listing.contains("enable_A_C.tb"), "{listing}");
    assert!(listing.contains("ok ") && listing.contains("solo_A.tb"), "the good files still pass: {listing}");
    // The same file with its header's layer changed is refused by its layer
    // even where sizes happened to agree: rewrite A>B's values as "enable(A>C)"
    // of another plan.
    use retro_engine::tablebase::{TablebaseReader, TablebaseWriter, unpack_value};
    let mut r = TablebaseReader::open(&tb.join("enable_A_B.tb")).unwrap();
    let mut header = r.header().clone();
    let packed = r.read_all().unwrap();
    header.plan_hash = "0123456789abcdef".into();
    header.layer = "enable(A>C)".into();
    let (n, bp) = (header.positions, header.block_positions);
    let mut w = TablebaseWriter::create(&tb.join("enable_A_C.tb"), header).unwrap();
    for start in (0..n).step_by(bp as usize) {
        let values: Vec<u8> = (start..(start + bp).min(n)).map(|i| unpack_value(&packed, i)).collect();
        w.push_values(&values).unwrap();
    }
    w.finish().unwrap();
    assert_clear_failure(&run(embedded_command(&dir), LIMIT), "enable_A_C.tb");
    assert_clear_failure(&verify(&tb), "failed verification");
}

/// The embedded stage-1 run with its checkpoints in dir/ck and its output in `output`.
fn stage1_into(dir: &TempDir, output: &std::path::Path) -> Command {
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join("plans/stage1.toml"));
    c.arg("--output").arg(output).arg("--checkpoints").arg(dir.join("ck"));
    c.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    c
}

/// The README's first command, then the same plan with another --output and
/// the default checkpoints: the finished job's files are brought over,
/// checked, and the run succeeds with the same bytes. A job killed after its
/// first layer and resumed with another --output finishes the same way.
#[test]
fn checkpoints_follow_their_output() {
    let dir = TempDir::new("other-output");
    let cwd = dir.join("");
    let mut first = Command::new(coordinator());
    first.current_dir(&cwd).env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    let out = run(first, LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut second = Command::new(coordinator());
    second.current_dir(&cwd).args(["--output", "OTHER"]).env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    let out = run(second, LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("copied"), "the run says where the files came from: {err}");
    let want = checksums(&cwd.join("tablebases/stage1"));
    assert_eq!(want.len(), 6, "three layers, each with its depth file");
    assert_eq!(checksums(&cwd.join("OTHER")), want);

    // Killed in layer 1, resumed into another output directory.
    let mut c = embedded_command(&dir);
    c.env("RETRO_FAULT", "after-apply:1:2");
    assert!(!run(c, LIMIT).status.success());
    assert!(dir.join("tb").join("solo_A.tb").exists(), "layer 0 was finished before the kill");
    // Killed before layer 1's first checkpoint: its init was never written
    // (an embedded run keeps round 0 in memory), so the resume runs it again.
    let layer1 = dir.join("ck").join("worker").join("layer-1");
    assert!(!layer1.join("state.json").exists(), "an embedded init is not made durable");
    let out = run(stage1_into(&dir, &dir.join("moved")), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(checksums(&dir.join("moved")), want);
    // With the first output's copy gone too, the error names the missing file.
    std::fs::remove_file(dir.join("moved").join("solo_A.tb")).unwrap();
    std::fs::remove_file(dir.join("tb").join("solo_A.tb")).unwrap();
    assert_clear_failure(&run(stage1_into(&dir, &dir.join("moved")), LIMIT), "solo_A.tb");
}

/// Shard files are written through a memory map; on a full disk a sparse
/// file's write would kill the process with SIGBUS. Run cc2 7 x 7 with 2
/// pieces with its checkpoints on a 2 MB tmpfs (in a user and mount
/// namespace of this test's own): refused up front by the resource check,
/// and with --ignore-resources an error naming the shard file, never a
/// signal; then, with room, the same checkpoints resume to the same bytes as
/// a run that never ran out; and once solved, the job's analysis runs again
/// on the full disk (a solved job asks for no solving room).
#[test]
fn a_full_disk_is_an_error_never_sigbus() {
    let dir = TempDir::new("disk-full");
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let plan = repo().join("plans/cc2-m7p2.toml");
    let mut clean = Command::new(coordinator());
    clean.arg("--plan").arg(&plan).arg("--output").arg(dir.join("clean")).arg("--checkpoints").arg(dir.join("ck"));
    let out = run(clean, LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let script = format!(
        "set -u; mount -t tmpfs -o size=2m none {m} || exit 90; \
         {c} --plan {p} --output {o} --checkpoints {m}/ck; echo \"exit=$?\"; \
         {c} --plan {p} --output {o} --checkpoints {m}/ck --ignore-resources; echo \"exit=$?\"; \
         mount -o remount,size=64m {m} || exit 91; \
         {c} --plan {p} --output {o} --checkpoints {m}/ck; echo \"exit=$?\"; \
         head -c $(( ($(df -k --output=avail {m} | tail -n 1) - 256) * 1024 )) /dev/zero > {m}/filler || exit 92; \
         {c} --plan {p} --output {o} --checkpoints {m}/ck; echo \"exit=$?\"",
        m = mnt.display(),
        c = coordinator().display(),
        p = plan.display(),
        o = dir.join("full").display(),
    );
    let mut c = Command::new("unshare");
    c.args(["--user", "--map-root-user", "--mount", "sh", "-c", &script]).env_remove("RETRO_FAULT");
    let out = run(c, LIMIT);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "unshare and a tmpfs mount are needed (util-linux, unprivileged user namespaces): {stdout}\n{stderr}"
    );
    let exits: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("exit=")).collect();
    assert_eq!(
        exits,
        ["1", "1", "0", "0"],
        "refused, then a clear error (not 135 = SIGBUS), then done, then (the disk full again) only the analysis \
         again:\n{stderr}"
    );
    assert!(stderr.contains("every layer is written; only the analysis runs"), "{stderr}");
    assert!(stderr.contains("not enough disk"), "{stderr}");
    assert!(stderr.contains("cannot reserve") && stderr.contains(".bin"), "the error names the file: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("Bus error"), "{stderr}");
    let tb = |d: &str| std::fs::read(dir.join(d).join("solo_1.tb")).unwrap();
    assert_eq!(tb("full"), tb("clean"), "the resumed run wrote the same tablebase bytes");
}

/// Settings and inputs that would exhaust the machine are bounded or refused
/// before anything is allocated.
#[test]
fn unbounded_settings_are_bounded_or_refused() {
    let dir = TempDir::new("unbounded");
    let good = std::fs::read_to_string(repo().join("plans/stage1.toml")).unwrap();
    // threads = 100000 runs on the cores, with a warning.
    let path = dir.join("threads.toml");
    std::fs::write(&path, good.replace("threads = 0", "threads = 100000")).unwrap();
    assert!(good.contains("threads = 0"));
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(&path).arg("--output").arg(dir.join("tb")).arg("--checkpoints").arg(dir.join("ck"));
    let out = run(c, LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("threads = 100000") && err.contains("cores"), "{err}");
    // An endless plan file is refused after the size limit.
    let mut c = Command::new(coordinator());
    c.args(["--plan", "/dev/zero"]);
    assert_clear_failure(&run(c, Duration::from_secs(20)), "more than 1048576 bytes");
    // A plan far beyond this machine says what it needs and creates nothing big.
    let path = dir.join("huge.toml");
    let huge = std::fs::read_to_string(repo().join("plans/cc2-m7p2.toml"))
        .unwrap()
        .replace("size = 7", "size = 8")
        .replace("pieces = 2", "pieces = 5");
    std::fs::write(&path, huge).unwrap();
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(&path).arg("--output").arg(dir.join("huge-tb")).arg("--checkpoints").arg(dir.join("huge-ck"));
    let out = run(c, Duration::from_secs(60));
    assert_clear_failure(&out, "not enough memory");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--ignore-resources"));
    assert!(retro_node::resources::allocated_bytes(&dir.join("huge-ck")) < 1 << 20, "nothing big was created");
}

/// Messages that used to mislead now say what is wrong.
#[test]
fn messages_say_what_is_wrong() {
    let dir = solved_stage1();
    let tb = dir.join("tb");
    // A tablebase with a byte appended is not "truncated".
    let file = tb.join("solo_A.tb");
    let bytes = std::fs::read(&file).unwrap();
    let mut longer = bytes.clone();
    longer.push(0);
    std::fs::write(&file, &longer).unwrap();
    let v = verify(&tb);
    assert_clear_failure(&v, "failed verification");
    assert!(String::from_utf8_lossy(&v.stdout).contains("extra byte(s) after the end marker"));
    std::fs::write(&file, &bytes).unwrap();
    assert!(verify(&tb).status.success());
    // --output naming a file.
    assert_clear_failure(&run(stage1_into(&dir, &file), LIMIT), "is a file, not a directory");
    // Another job's plan on these checkpoints: another job, not another program.
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join("plans/cc2-m7p1.toml"));
    c.arg("--output").arg(dir.join("cc2")).arg("--checkpoints").arg(dir.join("ck"));
    let out = run(c, LIMIT);
    assert_clear_failure(&out, "belong to job stage1");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("rank order"));
    // probe on a two-player directory answers with its values.
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join("plans/cc2-m7p1.toml"));
    c.arg("--output").arg(dir.join("cc2")).arg("--checkpoints").arg(dir.join("ck2"));
    assert!(run(c, LIMIT).status.success());
    let mut c = Command::new(coordinator());
    c.arg("probe").arg("--tablebase").arg(dir.join("cc2"));
    let out = run(c, LIMIT);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("value for 1:"),
        "probe reads two-player tablebases too"
    );
    // peg solve with no budget is refused; an undecided search is not success.
    let mut c = Command::new(coordinator());
    c.args(["peg", "solve", "--budget", "0"]);
    assert_clear_failure(&run(c, LIMIT), "--budget 0");
    let mut c = Command::new(coordinator());
    c.args(["peg", "solve", "--budget", "5"]);
    assert_clear_failure(&run(c, LIMIT), "undecided");
}

/// A damaged undo log is named as such, not blamed on the shard it could not
/// roll back, and it is kept for inspection.
#[test]
fn a_damaged_undo_log_is_named() {
    let dir = TempDir::new("undo");
    // Undo logs are kept where every round is a checkpoint (the shards mapped
    // shared, as a cluster worker's are); other embedded runs keep none.
    let every_round = || embedded_every_round(&dir);
    let mut c = every_round();
    c.env("RETRO_FAULT", "mid-apply:0:3");
    assert!(!run(c, LIMIT).status.success());
    let layer = dir.join("ck").join("worker").join("layer-0");
    let logs: Vec<_> = std::fs::read_dir(&layer)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("undo-r")))
        .collect();
    assert!(!logs.is_empty(), "the kill left the undo logs of the half-applied round");
    for log in &logs {
        let mut b = std::fs::read(log).unwrap();
        b[0] ^= 0xff;
        std::fs::write(log, b).unwrap();
    }
    assert_clear_failure(&run(every_round(), LIMIT), "undo log is damaged");
    assert!(logs.iter().all(|l| l.exists()), "the damaged logs are kept");
}

/// In a cluster each worker checks its own share before its first layer: a
/// worker whose --data is on a 2 MB tmpfs (its own user and mount namespace)
/// stops with an error naming what it lacks, and creates no shard file; the
/// coordinator logs what the worker reported having.
#[test]
fn a_worker_without_room_for_its_shards_says_so() {
    let dir = TempDir::new("worker-room");
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join("plans/cc2-m7p2.toml"));
    c.arg("--output").arg(dir.join("tb")).arg("--checkpoints").arg(dir.join("ck"));
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "1"]).env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    let coord = Proc::start("coordinator", c, dir.join("coord.log"));
    let addr = listening_address(&coord);
    let script = format!(
        "mount -t tmpfs -o size=2m none {m} || exit 90; exec {w} --connect {addr} --listen 127.0.0.1:0 --data {m}/w",
        m = mnt.display(),
        w = worker().display(),
    );
    let mut c = Command::new("unshare");
    c.args(["--user", "--map-root-user", "--mount", "sh", "-c", &script]).env_remove("RETRO_TOKEN");
    let out = run(c, LIMIT);
    assert_ne!(out.status.code(), Some(90), "unshare and a tmpfs mount are needed (util-linux, user namespaces)");
    assert_clear_failure(&out, "not enough disk");
    let log = coord.logs();
    assert!(log.contains("GB disk for its data"), "the coordinator logs what the worker has: {log}");
    assert!(log.contains("each of the 1 workers needs about"), "{log}");
}

/// `coordinator ledger` run where no summary is at the default path says
/// which flag names one, and `-h` starts with what the program does (not the
/// crate's internal description).
#[test]
fn ledger_without_a_summary_hints_at_the_flag_and_help_says_what_it_does() {
    let dir = TempDir::new("ledger-hint");
    let mut c = Command::new(coordinator());
    c.arg("ledger").current_dir(&dir.0);
    let out = run(c, LIMIT);
    assert_clear_failure(&out, "--summary PATH");
    assert_clear_failure(&out, "no such file");
    let out = run(
        {
            let mut c = Command::new(coordinator());
            c.arg("-h");
            c
        },
        LIMIT,
    );
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.starts_with("Strongly solves games by distributed retrograde analysis"), "{help}");
    assert!(!help.contains("Binary `coordinator`"), "{help}");
}

/// `--log-format json` writes every log line as one JSON object with its
/// level and message; `-q` keeps only warnings and errors, `-v` adds debug
/// lines. The results on stdout are the same whatever the log.
#[test]
fn log_flags_shape_the_log() {
    let solve = |flags: &[&str]| {
        let dir = TempDir::new("log-flags");
        let mut c = embedded_command(&dir);
        c.args(flags).arg("--json").env_remove("RUST_LOG");
        let out = run(c, LIMIT);
        assert!(out.status.success(), "{flags:?}: {}", String::from_utf8_lossy(&out.stderr));
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (summary["scopes"].clone(), String::from_utf8(out.stderr).unwrap())
    };
    let (text_counts, text_log) = solve(&[]);
    assert!(text_log.contains(" INFO "), "{text_log}");
    let (json_counts, json_log) = solve(&["--log-format", "json"]);
    assert_eq!(json_counts, text_counts);
    let lines: Vec<serde_json::Value> =
        json_log.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    assert!(!lines.is_empty());
    assert!(lines.iter().all(|l| l["level"].is_string() && l["fields"].is_object()), "{json_log}");
    assert!(lines.iter().any(|l| l["fields"]["message"].as_str().is_some_and(|m| m.contains("solved"))), "{json_log}");
    let (_, quiet_log) = solve(&["-q"]);
    assert!(!quiet_log.contains(" INFO "), "{quiet_log}");
    let (_, verbose_log) = solve(&["-v"]);
    assert!(verbose_log.lines().count() >= text_log.lines().count(), "{verbose_log}");
}
