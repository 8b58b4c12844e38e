//! `deploy/local/cluster.sh`: a coordinator and three workers, each in its own
//! network namespace on a private bridge, solve stage 1 with the embedded run's
//! bytes, each process under GNU time (`RETRO_CLUSTER_TIME=1`, which records
//! its peak RSS); `down` leaves no namespace, link or process behind. Ignored (with the
//! reason) where the build could not make network namespaces (not root, no `ip`).

use crate::common::*;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

fn namespaces_permitted() -> bool {
    let probe = format!("rtprobe{}", std::process::id() % 10_000);
    let ok = Command::new("ip").args(["netns", "add", &probe]).output().is_ok_and(|o| o.status.success());
    if ok {
        let _ = Command::new("ip").args(["netns", "del", &probe]).output();
    }
    ok
}

fn leftovers(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for args in [&["netns", "list"][..], &["-o", "link", "show"][..]] {
        let o = Command::new("ip").args(args).output().unwrap();
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            if line.contains(&format!("{name}-")) {
                out.push(line.to_string());
            }
        }
    }
    out
}

#[test]
#[cfg_attr(
    not(has_netns),
    ignore = "network namespaces could not be made when this was built (needs root and `ip netns`)"
)]
fn three_namespaced_workers_match_embedded() {
    assert!(namespaces_permitted(), "the build could make a network namespace; this run cannot");
    let want = {
        let dir = TempDir::new("netns-embedded");
        let out = run(embedded_command(&dir), LIMIT);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        checksums(&dir.join("tb"))
    };
    let dir = TempDir::new("netns-cluster");
    let pid = std::process::id();
    let name = format!("t{}", pid % 10_000);
    let bin = coordinator().parent().unwrap().to_path_buf();
    let script = repo().join("deploy/local/cluster.sh");
    let cluster = |args: &[&str]| {
        let mut c = Command::new(&script);
        c.args(args).current_dir(repo());
        c.env("RETRO_CLUSTER_NAME", &name).env("RETRO_CLUSTER_SUBNET", format!("10.79.{}", pid % 250));
        c.env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT").env("RETRO_CLUSTER_TIME", "1");
        run(c, LIMIT)
    };
    let state = dir.join("state");
    let up = cluster(&[
        "up",
        "3",
        "--plan",
        "plans/stage1.toml",
        "--bin",
        bin.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ]);
    let waited = if up.status.success() { Some(cluster(&["wait"])) } else { None };
    let down = cluster(&["down"]);
    assert!(up.status.success(), "up: {}", String::from_utf8_lossy(&up.stderr));
    let waited = waited.unwrap();
    let log = std::fs::read_to_string(state.join("coordinator.log")).unwrap_or_default();
    assert!(waited.status.success(), "wait: {}\n{log}", String::from_utf8_lossy(&waited.stdout));
    assert!(down.status.success(), "down: {}", String::from_utf8_lossy(&down.stderr));
    // Each worker really was on its own address.
    for i in 1..=3 {
        let w = std::fs::read_to_string(state.join(format!("worker{i}.log"))).unwrap();
        assert!(w.contains("job stage1 is done"), "worker {i}:\n{w}");
    }
    assert_eq!(checksums(&state.join("tb")), want);
    // GNU time's record of each process, for the peaks a big run reports.
    for tag in ["coordinator", "worker1", "worker2", "worker3"] {
        let t = std::fs::read_to_string(state.join(format!("{tag}.time"))).unwrap_or_default();
        assert!(t.contains("Maximum resident set size") && t.contains("Exit status: 0"), "{tag}.time:\n{t}");
    }
    assert_eq!(leftovers(&name), Vec::<String>::new(), "down left namespaces or links behind");
    let procs = Command::new("pgrep").args(["-f", state.to_str().unwrap()]).output().unwrap();
    assert!(String::from_utf8_lossy(&procs.stdout).trim().is_empty(), "processes left behind");
}
