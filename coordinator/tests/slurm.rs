//! The Slurm batch script on a real Slurm: `deploy/slurm/local.sh` starts
//! munged, slurmctld and one slurmd on loopback, and `deploy/slurm/retro.sbatch`
//! runs plans through it as a user's `sbatch` would. The tablebases must be
//! the embedded run's bytes, also after a stop signal mid-run and the requeue
//! it makes.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A Slurm on this machine for the length of a test; stopped when dropped.
struct LocalSlurm {
    dir: PathBuf,
    conf: PathBuf,
}

impl LocalSlurm {
    fn up(dir: &Path) -> LocalSlurm {
        let out = Command::new(repo().join("deploy/slurm/local.sh")).arg("up").arg(dir).arg("4").output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "local Slurm did not start:\n{text}");
        LocalSlurm { dir: dir.to_path_buf(), conf: dir.join("slurm.conf") }
    }

    /// A Slurm client command (`sbatch`, `scontrol`, ...) on this Slurm.
    fn command(&self, name: &str) -> Command {
        let mut c = Command::new(name);
        c.env("SLURM_CONF", &self.conf).current_dir(repo());
        c.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
        c
    }

    /// Submits the batch script with `plan`, its state under `state`, and returns the job id.
    fn submit(&self, plan: &str, state: &Path, log: &Path, fault: Option<&str>) -> String {
        let mut c = self.command("sbatch");
        c.args(["--parsable", "--nodes=1", "--ntasks-per-node=2", "-o"]).arg(log);
        c.arg("deploy/slurm/retro.sbatch").arg(plan);
        // worker() fails, saying why, where a partial `cargo test` did not build it.
        c.env("RETRO_BIN", worker().parent().unwrap()).env("RETRO_STATE", state);
        if let Some(f) = fault {
            c.env("RETRO_FAULT", f);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "sbatch: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `scontrol show job` of `id`, one line.
    fn job(&self, id: &str) -> String {
        let out = self.command("scontrol").args(["show", "job", "--oneliner", id]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Waits until `ready` holds of the job's `scontrol` line, failing the test after `limit`.
    fn wait_for(&self, id: &str, log: &Path, limit: Duration, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let job = self.job(id);
            if ready(&job) {
                return job;
            }
            assert!(
                Instant::now() < deadline,
                "job {id} did not get there within {limit:?}: {job}\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for LocalSlurm {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("deploy/slurm/local.sh")).arg("down").arg(&self.dir).output();
    }
}

fn completed(job: &str) -> bool {
    job.contains("JobState=COMPLETED")
}

fn log_of(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
#[cfg_attr(
    not(has_slurm),
    ignore = "Slurm was not found when this was built (needs root and Debian's slurm-wlm and munge)"
)]
fn the_batch_script_runs_plans_on_slurm_and_a_stop_requeues_to_the_same_bytes() {
    let dir = TempDir::new("slurm");
    let slurm = LocalSlurm::up(&dir.join("slurm"));

    // Stage 1: two workers on the allocation, the coordinator beside them.
    let log = dir.join("stage1.log");
    let id = slurm.submit("plans/stage1.toml", &dir.join("stage1"), &log, None);
    let job = slurm.wait_for(&id, &log, Duration::from_secs(120), |j| {
        !j.contains("JobState=PENDING") && !j.contains("JobState=RUNNING")
    });
    assert!(completed(&job) && job.contains("ExitCode=0:0"), "{job}\n{}", log_of(&log));
    let text = log_of(&log);
    assert!(text.contains("2 worker(s)") && text.contains("retro: done"), "{text}");
    assert!(!text.contains("requeueing"), "a finished job is not requeued: {text}");
    let clean = solve_plan(&dir, "plans/stage1.toml", "stage1-embedded");
    assert_eq!(checksums(&dir.join("stage1/tb")), checksums(&clean));
    // The token never reached a command line (ps shows those to every user).
    assert!(!text.contains("--token"), "{text}");

    // cc2 7 x 7 x 2, stopped mid-run by Slurm's signal to the batch shell (what
    // `--signal=B:TERM@120` sends before the time limit): the coordinator
    // freezes itself after committing round 3 (`stop-` fault point), so that
    // the signal lands mid-run at a known place, and is let go on after it.
    let log = dir.join("cc2.log");
    let state = dir.join("cc2");
    let id = slurm.submit("plans/cc2-m7p2.toml", &state, &log, Some("stop-after-commit:0:3"));
    let deadline = Instant::now() + Duration::from_secs(120);
    while !log_of(&log).contains("freezing this process") {
        assert!(Instant::now() < deadline, "the run never reached round 3: {}", log_of(&log));
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = slurm.command("scancel").args(["--batch", "--signal=TERM", &id]).output().unwrap();
    assert!(out.status.success(), "scancel: {}", String::from_utf8_lossy(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !log_of(&log).contains("retro: stop signal") {
        assert!(Instant::now() < deadline, "the batch shell never heard the signal: {}", log_of(&log));
        std::thread::sleep(Duration::from_millis(100));
    }
    let output_flag = format!("--output {}", state.join("tb").display());
    let cont = Command::new("pkill").args(["-CONT", "-f", "--", &output_flag]).status().unwrap();
    assert!(cont.success(), "no coordinator running with {output_flag}");
    // Slurm makes a requeued job wait two minutes before it may start; the
    // administrator's StartTime=now lets it go at once.
    slurm.wait_for(&id, &log, Duration::from_secs(60), |j| j.contains("Restarts=1") && j.contains("JobState=PENDING"));
    let update = slurm.command("scontrol").args(["update", &format!("JobId={id}"), "StartTime=now"]).status().unwrap();
    assert!(update.success());
    let job = slurm.wait_for(&id, &log, Duration::from_secs(120), |j| {
        j.contains("Restarts=1") && !j.contains("JobState=PENDING") && !j.contains("JobState=RUNNING")
    });
    assert!(completed(&job) && job.contains("ExitCode=0:0"), "{job}\n{}", log_of(&log));
    let text = log_of(&log);
    assert!(text.contains("requeueing job") && text.contains("(start 2)") && text.contains("retro: done"), "{text}");
    assert!(text.contains("round 4 is durable: stopping as asked"), "stopped at a checkpoint: {text}");
    assert!(text.contains("resuming job cc2-m7p2"), "the second start resumed: {text}");
    let clean = solve_plan(&dir, "plans/cc2-m7p2.toml", "cc2-embedded");
    assert_eq!(checksums_of(&state.join("tb"), 1), checksums_of(&clean, 1));
}
