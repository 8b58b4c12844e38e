//! Finds whether `python3` with pytest is on this machine (`has_pytest`), so
//! that the package's test is reported by cargo as *ignored, with the
//! reason* where it cannot run, instead of passing untested. It runs again
//! when PATH or a PATH directory changes (`pip install pytest` adds its
//! script to one), so installing pytest and running the tests again is
//! enough. `.ci/run` installs it.

use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_pytest)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PATH");
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path).filter(|d| d.is_dir()) {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
    }
    let pytest = Command::new("python3").args(["-m", "pytest", "--version"]).output();
    if pytest.is_ok_and(|o| o.status.success()) {
        println!("cargo::rustc-cfg=has_pytest");
    }
}
