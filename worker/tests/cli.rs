//! The worker's command line: help, and clear errors for bad arguments.

use std::process::Command;

fn worker() -> Command {
    Command::new(env!("CARGO_BIN_EXE_worker"))
}

#[test]
fn help_names_the_connect_option() {
    let out = worker().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--connect") && text.contains("--data"));
}

#[test]
fn missing_or_bad_arguments_fail_clearly() {
    let out = worker().output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--connect"));
    let out = worker().args(["--connect", "not a uri", "--listen", "127.0.0.1:0"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad address"));
}
