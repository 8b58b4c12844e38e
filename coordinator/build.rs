//! Finds which of the tools some integration tests need are on this machine,
//! so that a test that cannot run is reported by cargo as *ignored, with the
//! reason*, instead of printing SKIPPED and counting as passed:
//!
//! - `has_chromium`: a Chromium binary (`$CHROMIUM`, or a usual name on PATH)
//!   for the explorer's page tests;
//! - `has_shellcheck`: `shellcheck` on PATH for the scripts' lint test;
//! - `has_netns`: network namespaces can be made (root and `ip netns`) for the
//!   namespaced-cluster and chaos tests;
//! - `has_slurm`: root and Slurm's daemons and clients with munge on PATH
//!   (Debian's `slurm-wlm` and `munge`) for the batch script's test.
//!
//! The script runs again when PATH, CHROMIUM or a PATH directory changes (a
//! package installed), so installing a tool and running the tests again is
//! enough.

use std::path::PathBuf;
use std::process::Command;

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|d| names.iter().map(move |n| d.join(n))).find(|p| p.is_file())
}

/// Making (and at once removing) a namespace is the only sure test: being
/// root is not enough in a container without CAP_SYS_ADMIN.
fn namespaces_permitted() -> bool {
    let probe = format!("retro-build-probe-{}", std::process::id());
    let made = Command::new("ip").args(["netns", "add", &probe]).output().is_ok_and(|o| o.status.success());
    if made {
        let _ = Command::new("ip").args(["netns", "del", &probe]).output();
    }
    made
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_chromium)");
    println!("cargo::rustc-check-cfg=cfg(has_shellcheck)");
    println!("cargo::rustc-check-cfg=cfg(has_netns)");
    println!("cargo::rustc-check-cfg=cfg(has_slurm)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=CHROMIUM");
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path).filter(|d| d.is_dir()) {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
    }
    let chromium = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| on_path(&["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]));
    if chromium.is_some() {
        println!("cargo::rustc-cfg=has_chromium");
    }
    if on_path(&["shellcheck"]).is_some() {
        println!("cargo::rustc-cfg=has_shellcheck");
    }
    if namespaces_permitted() {
        println!("cargo::rustc-cfg=has_netns");
    }
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let slurm = ["munged", "slurmctld", "slurmd", "sbatch", "scontrol", "scancel"];
    if root && slurm.iter().all(|tool| on_path(&[tool]).is_some()) {
        println!("cargo::rustc-cfg=has_slurm");
    }
}
