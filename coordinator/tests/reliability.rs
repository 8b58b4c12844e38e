//! No wrong answer, no lost output: the runs of the third adversarial probe
//! (issue 53) that ended with exit 0 and a result that was wrong or gone, or
//! could never resume, each reproduced as it was found.

mod common;
use common::*;
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
    assert_eq!(checksums(&out).len(), 3);

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
    let clean = run(plan_run("plans/stage1.toml", &dir.join("clean"), &dir.join("ck-clean")), LIMIT);
    assert!(clean.status.success());
    let mut killed = plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck"));
    killed.env("RETRO_FAULT", "after-apply:0:10");
    assert!(!run(killed, LIMIT).status.success());
    std::fs::remove_file(dir.join("ck/worker/identity.json")).unwrap();
    let resumed = run(plan_run("plans/stage1.toml", &dir.join("tb"), &dir.join("ck")), LIMIT);
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    assert!(err.contains("had no identity"), "{err}");
    assert_eq!(checksums(&dir.join("tb")), checksums(&dir.join("clean")));
}
