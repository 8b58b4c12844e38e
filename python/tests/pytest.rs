//! The Python package as its users meet it: stage 1 solved here (through the
//! coordinator's library), the extension module this build made imported by
//! `python3`, and pytest run on `tests/test_retro.py` against both. The
//! Python side checks the answers against the run's summary.json, a path
//! that shares nothing with the probe but the files.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The extension module cargo built for this test: the cdylib beside the
/// test binary (`target/<profile>/deps/`) or one directory up.
fn extension_module() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's directory");
    let candidates = [deps.join("libretro.so"), deps.parent().unwrap_or(deps).join("libretro.so")];
    candidates.iter().find(|p| p.is_file()).cloned().unwrap_or_else(|| panic!("no extension module at {candidates:?}"))
}

/// Solves plans/stage1.toml embedded into `dir`/tb.
fn solve_stage1(dir: &Path) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the repository");
    let plan = retro_coordinator::plan::Plan::load(&repo.join("plans/stage1.toml")).expect("the stage-1 plan");
    let out = dir.join("tb");
    let opts = retro_coordinator::job::RunOptions {
        output: out.clone(),
        checkpoints: dir.join("ck"),
        listen: None,
        expect_workers: 0,
        token: None,
        on_listen: None,
        status_listen: None,
        status_linger: Duration::ZERO,
        tls: None,
        ignore_resources: false,
        checkpoint_every: Duration::ZERO,
        seed_solo: false,
        replace_output: false,
        handle_signals: false,
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    retro_coordinator::job::run_on(&runtime, &plan, opts).expect("stage 1 solves");
    out
}

#[test]
#[cfg_attr(not(has_pytest), ignore = "needs python3 with pytest (pip install pytest); .ci/run installs it")]
fn pytest_passes_against_the_built_module_and_a_stage1_run() {
    let dir = std::env::temp_dir().join(format!("retro-python-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let pkg = dir.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    // Python imports an abi3 extension module by this suffix.
    std::fs::copy(extension_module(), pkg.join("retro.abi3.so")).unwrap();
    let tb = solve_stage1(&dir);
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/test_retro.py");
    let out = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&tests)
        .env("PYTHONPATH", &pkg)
        .env("RETRO_TEST_TABLEBASE", &tb)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pytest failed:\n{log}");
    assert!(log.contains(" passed"), "{log}");
    std::fs::remove_dir_all(&dir).unwrap();
}
