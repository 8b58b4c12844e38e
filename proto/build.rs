//! Compiles `retro.proto` with the vendored protoc, so a fresh machine needs no
//! system protoc, and records the git commit the binaries are built from
//! (`RETRO_BUILD_COMMIT`: `--version` and summary.json carry it).

use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY: build scripts are single-threaded; nothing else reads the environment concurrently.
    unsafe { std::env::set_var("PROTOC", protoc) };
    println!("cargo:rerun-if-changed=retro.proto");
    tonic_prost_build::configure().compile_protos(&["retro.proto"], &["."])?;
    println!("cargo:rustc-env=RETRO_BUILD_COMMIT={}", build_commit());
    Ok(())
}

/// The commit of the checkout (12 hex digits, `-dirty` with uncommitted
/// changes to tracked files), or `unknown` outside a git checkout (a source
/// archive, say) or without git.
fn build_commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return "unknown".into();
    };
    // Build again when HEAD moves or the index changes (a commit, a checkout,
    // `git add`): the paths come from git, so worktrees work too.
    for path in ["HEAD", "index"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(p) = git(&["rev-parse", "--git-path", &head])
    {
        println!("cargo:rerun-if-changed={p}");
    }
    // Without --no-optional-locks, `git status` rewrites the index to refresh its
    // file times whenever a file was touched, and the rerun-if-changed above
    // would then rebuild this crate and everything above it on every build.
    let dirty =
        git(&["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty { format!("{commit}-dirty") } else { commit }
}
