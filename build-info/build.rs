//! Records the git commit the binaries are built from (`RETRO_BUILD_COMMIT`).
//!
//! What makes the value change, and so what this script watches: HEAD, the
//! branch it names (a commit, a checkout), and the build inputs (`-dirty`).
//! Not the git index: a plain `git status` rewrites the index to refresh its
//! file times, and watching it rebuilt the whole workspace after every
//! `git status`. The dirty flag is taken over the same build inputs it
//! watches, so it cannot go stale and a doc edit does not make a build dirty.

use std::path::Path;
use std::process::Command;

/// The tracked paths a binary is built from: the crates, the manifests and the
/// plans one of them embeds (`include_str!`). Docs, scripts and deploy files
/// are not build inputs.
const BUILD_INPUTS: &[&str] = &[
    "Cargo.toml",
    "Cargo.lock",
    ".cargo",
    "build-info",
    "proto",
    "games",
    "engine",
    "probe",
    "common",
    "results",
    "explorer",
    "worker",
    "coordinator",
    "plans",
];

fn main() {
    println!("cargo:rustc-env=RETRO_BUILD_COMMIT={}", build_commit());
}

/// Runs git in the workspace root, `None` when git is missing or fails.
fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .current_dir("..")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Asks cargo to run this script again when `path` changes. Only for paths
/// that exist: cargo treats a missing one as changed on every build.
fn watch(path: &str) {
    if Path::new(path).exists() {
        println!("cargo:rerun-if-changed={path}");
    }
}

/// The commit of the checkout (12 hex digits, `-dirty` with uncommitted
/// changes to tracked build inputs), or `unknown` outside a git checkout (a
/// source archive, say) or without git.
fn build_commit() -> String {
    // Outside git nothing can change the value: watching build.rs alone keeps
    // cargo from rerunning this on every build.
    println!("cargo:rerun-if-changed=build.rs");
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return "unknown".into();
    };
    // The paths come from git (absolute or relative to the root), so worktrees work too.
    let absolute = |p: String| if Path::new(&p).is_absolute() { p } else { format!("../{p}") };
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", path]) {
            watch(&absolute(p));
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", &branch])
    {
        watch(&absolute(p));
    }
    let tracked = git(&[&["ls-files", "--"][..], BUILD_INPUTS].concat()).unwrap_or_default();
    for file in tracked.lines() {
        watch(&format!("../{file}"));
    }
    // --no-optional-locks: this status must not rewrite the index itself.
    let status =
        [&["--no-optional-locks", "status", "--porcelain", "--untracked-files=no", "--"][..], BUILD_INPUTS].concat();
    let dirty = git(&status).is_some_and(|s| !s.is_empty());
    if dirty { format!("{commit}-dirty") } else { commit }
}
