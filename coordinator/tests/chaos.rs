//! `scripts/chaos.sh` in the test command: the chaos plan on three namespaced
//! workers, undisturbed and under eight faults (a worker killed mid-round, a
//! cut link, the coordinator killed, a worker lost and restarted with its data,
//! a machine lost for good and replaced by an empty one, the coordinator
//! stopped by SIGTERM and everything started again, a frozen worker beside a
//! process on a copy of its directory, the coordinator's machine replaced and
//! resumed from a copy of its directories), byte-identical every time, in two
//! halves side by side. Ignored
//! (with the reason) where the build could not make network namespaces.

use crate::common::*;
use std::process::Command;
use std::time::Duration;

/// Runs `scripts/chaos.sh --cases CASES` on a cluster of its own (`tag` tells
/// the two halves' namespaces and subnets apart) and checks that all
/// `expected` cases passed.
fn chaos_cases(cases: &str, tag: (char, u32), expected: usize) {
    let bin = coordinator().parent().unwrap().to_path_buf();
    let mut c = Command::new(repo().join("scripts/chaos.sh"));
    c.arg("--bin").arg(&bin).args(["--cases", cases]).current_dir(repo());
    let pid = std::process::id();
    // At most 6 characters: cluster.sh's interface names are short.
    c.env("RETRO_CLUSTER_NAME", format!("c{}{}", pid % 10_000, tag.0))
        .env("RETRO_CLUSTER_SUBNET", format!("10.{}.{}", tag.1, pid % 250));
    c.env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    let out = run(c, Duration::from_secs(900));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("SKIPPED"), "the build could make network namespaces; the script could not:\n{stdout}");
    assert!(out.status.success(), "chaos.sh failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("{expected} passed, 0 failed")), "{stdout}");
}

// The eight cases in two halves, each on its own cluster, which cargo runs
// side by side: most of a case's time is waiting (for a heartbeat timeout, a
// round, a restart), so the two halves take little more than the longer one.

#[test]
#[cfg_attr(
    not(has_netns),
    ignore = "network namespaces could not be made when this was built (needs root and `ip netns`)"
)]
fn chaos_script_passes_the_worker_fault_cases() {
    chaos_cases("1,2,4,5", ('a', 80), 4);
}

#[test]
#[cfg_attr(
    not(has_netns),
    ignore = "network namespaces could not be made when this was built (needs root and `ip netns`)"
)]
fn chaos_script_passes_the_coordinator_and_split_brain_cases() {
    chaos_cases("3,6,7,8", ('b', 81), 4);
}
