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

#[test]
fn connect_is_checked_as_host_and_port() {
    for (bad, why) in [("127.0.0.1", "no port"), ("127.0.0.1:0", "port 0"), ("coord:http", "not a number")] {
        let out = worker().args(["--connect", bad]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("HOST:PORT") && err.contains(why) && err.contains(bad), "{bad}: {err}");
    }
}

#[test]
fn help_starts_with_what_the_worker_does() {
    let out = worker().arg("-h").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.starts_with("A worker of a retrograde-analysis job"), "{help}");
    assert!(!help.contains("Binary `worker`"), "{help}");
}

/// A worker pointed at an address where no coordinator listens keeps trying
/// (the coordinator may be starting), and its warning names that address, so
/// that a wrong --connect shows in the first lines of the log.
#[test]
fn retry_warnings_name_the_address() {
    use std::io::Read;
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let address = format!("127.0.0.1:{port}");
    let data = std::env::temp_dir().join(format!("retro-worker-cli-{}", std::process::id()));
    let mut child = worker()
        .args(["--connect", &address, "--listen", "127.0.0.1:0", "--data"])
        .arg(&data)
        .env_remove("RETRO_TOKEN")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&seen).contains("retrying") {
                break;
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !reader.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    let log = reader.join().unwrap();
    let _ = std::fs::remove_dir_all(&data);
    assert!(log.contains(&format!("coordinator {address} unreachable while")), "{log}");
}
