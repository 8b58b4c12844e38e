//! Helpers for the integration tests: binaries, temporary directories,
//! processes that are always reaped, and the published reference numbers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The coordinator binary built for this test run.
pub fn coordinator() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_coordinator"))
}

/// The worker binary, which `cargo test --workspace` builds next to the coordinator.
pub fn worker() -> PathBuf {
    let p = coordinator().with_file_name("worker");
    assert!(p.exists(), "{} is missing: run the tests with `cargo test --workspace`", p.display());
    p
}

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Free bytes in memory-backed `/dev/shm` below which the tests keep their
/// directories in the system's temporary directory (a container's 64 MB
/// `/dev/shm` would not hold a peg ledger's levels).
const SHM_MIN_FREE: u64 = 8 << 30;

/// Where the tests' directories go: `$TMPDIR` when set, else `/dev/shm` when
/// it has [`SHM_MIN_FREE`] bytes free, else the system's temporary directory.
///
/// Why memory: the cluster tests create and remove thousands of files (the
/// peg relay's parcels, level files, checkpoints), and on the project's
/// machine kind (ext4 on a virtual disk) a file created after many removals
/// costs about half a millisecond in the kernel's inode allocator: the
/// three-worker English ledger takes 59.5 s with its files in /tmp and 47.3 s
/// in /dev/shm (2026-12-04). What the tests check (bytes, renames, kills and
/// resumes) is the same on either.
pub fn scratch_root() -> PathBuf {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        if std::env::var_os("TMPDIR").is_some() {
            return std::env::temp_dir();
        }
        let shm = Path::new("/dev/shm");
        if free_bytes(shm).is_some_and(|free| free >= SHM_MIN_FREE) {
            return shm.to_path_buf();
        }
        std::env::temp_dir()
    })
    .clone()
}

/// Bytes free to an unprivileged writer in the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `statvfs` is a plain C struct, for which all zero bytes are a
    // valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` is a valid out-pointer.
    (unsafe { libc::statvfs(path.as_ptr(), &mut st) } == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// A fresh temporary directory under [`scratch_root`], removed on drop.
pub struct TempDir(pub PathBuf);
impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let root = scratch_root();
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = root.join(format!("retro-test-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn join(&self, s: &str) -> PathBuf {
        self.0.join(s)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process that is killed when dropped (a failing test leaves nothing behind).
pub struct Proc {
    pub child: Child,
    pub name: String,
    pub log: PathBuf,
}
impl Proc {
    /// Starts `cmd` with stdout and stderr going to `log` (and `log`.out).
    pub fn start(name: &str, mut cmd: Command, log: PathBuf) -> Proc {
        let err = std::fs::File::create(&log).unwrap();
        let out = std::fs::File::create(log.with_extension("out")).unwrap();
        let child = cmd.stdout(out).stderr(err).spawn().unwrap();
        Proc { child, name: name.into(), log }
    }
    /// Waits for exit, failing the test after `limit`.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("{} did not finish within {limit:?}; log:\n{}", self.name, self.logs());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    /// Waits until the process's output contains `text`, failing the test
    /// after `limit`.
    pub fn wait_for_log(&self, text: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.logs().contains(text) {
            assert!(Instant::now() < deadline, "{:?} never appeared within {limit:?}:\n{}", text, self.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    pub fn logs(&self) -> String {
        let e = std::fs::read_to_string(&self.log).unwrap_or_default();
        let o = std::fs::read_to_string(self.log.with_extension("out")).unwrap_or_default();
        format!("--- stderr\n{e}\n--- stdout\n{o}")
    }
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(self.log.with_extension("out")).unwrap_or_default()
    }
}
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until the coordinator prints `listening on ADDR` (on stderr: stdout
/// carries only results) and returns ADDR.
pub fn listening_address(p: &Proc) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stderr = std::fs::read_to_string(&p.log).unwrap_or_default();
        if let Some(line) = stderr.lines().find(|l| l.starts_with("listening on ")) {
            return line.trim_start_matches("listening on ").trim().to_string();
        }
        assert!(Instant::now() < deadline, "coordinator never listened:\n{}", p.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a command to completion (with a time limit) and returns its output.
pub fn run(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "command did not finish within {limit:?}:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The embedded stage-1 run into `dir` (tablebases in dir/tb, checkpoints in dir/ck).
pub fn embedded_command(dir: &TempDir) -> Command {
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join("plans/stage1.toml"));
    c.arg("--output").arg(dir.join("tb")).arg("--checkpoints").arg(dir.join("ck"));
    c.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    c
}

/// Worker `i` of a loopback cluster at `addr`: one kernel thread, its data in
/// `dir`/w`i`, its log in `dir`/w`i`-`run`.log (`run` tells the starts of one
/// worker apart).
pub fn loopback_worker(dir: &TempDir, addr: &str, i: u32, run: &str) -> Proc {
    let mut w = Command::new(worker());
    w.args(["--connect", addr, "--listen", "127.0.0.1:0", "--threads", "1", "--data"]);
    w.arg(dir.join(&format!("w{i}")));
    w.env_remove("RETRO_TOKEN").env_remove("RETRO_FAULT");
    Proc::start(&format!("worker {i}"), w, dir.join(&format!("w{i}-{run}.log")))
}

/// SHA-256 of every tablebase file in a directory of a first-winner job
/// (three layers), by file name.
pub fn checksums(dir: &Path) -> BTreeMap<String, String> {
    checksums_of(dir, 3)
}

/// SHA-256 of every tablebase file and depth file in a directory that holds
/// `layers`, by file name: two runs that must agree byte for byte agree on
/// the plies too.
pub fn checksums_of(dir: &Path, layers: usize) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "tb" || x == "depth") {
            out.insert(
                p.file_name().unwrap().to_string_lossy().to_string(),
                retro_engine::tablebase::sha256_file(&p).unwrap(),
            );
        }
    }
    assert_eq!(out.len(), 2 * layers, "{layers} tablebase files and their depth files in {}", dir.display());
    out
}

/// The published numbers (`key -> value`) from results/reference/cc3.tsv.
pub fn reference() -> BTreeMap<String, String> {
    let f = std::fs::File::open(repo().join("results/reference/cc3.tsv")).unwrap();
    BufReader::new(f)
        .lines()
        .map(|l| l.unwrap())
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.split('\t');
            (parts.next().unwrap().to_string(), parts.next().unwrap_or("").to_string())
        })
        .collect()
}

/// A reference number.
pub fn reference_u64(key: &str) -> u64 {
    reference()[key].parse().unwrap_or_else(|_| panic!("reference {key} is not a number"))
}

/// A free loopback port (bound then released; used where a restarted
/// coordinator must come back on the same address).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Sends `request` (a request line and headers, without the blank line that
/// ends them) with `Connection: close`, and reads the whole answer.
pub fn http(addr: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(format!("{request}Connection: close\r\n\r\n").as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The JSON body of `GET path` at `addr`, which must answer 200.
pub fn get_json(addr: &str, path: &str) -> serde_json::Value {
    let answer = http(addr, &format!("GET {path} HTTP/1.1\r\nHost: x\r\n"));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap()
}

/// The text body of `GET path` at `addr`, which must answer 200.
pub fn get_text(addr: &str, path: &str) -> String {
    let answer = http(addr, &format!("GET {path} HTTP/1.1\r\nHost: x\r\n"));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    answer.split("\r\n\r\n").nth(1).unwrap().to_string()
}

/// Waits (up to 30 s) until something listens on `addr`, which `p` opens.
pub fn wait_for_port(addr: &str, p: &Proc) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(std::time::Instant::now() < deadline, "nothing listens on {addr}:\n{}", p.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `GET /status` at `addr` until `ready` holds for it (up to 60 s).
pub fn status_until(addr: &str, p: &Proc, ready: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let v = get_json(addr, "/status");
        if ready(&v) {
            return v;
        }
        assert!(std::time::Instant::now() < deadline, "status never got there: {v:#}\n{}", p.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Solves the plan at `plan` (relative to the repository) into `dir`/`name`,
/// checkpoints in `dir`/`name`-ck, and returns the output directory.
pub fn solve_plan(dir: &TempDir, plan: &str, name: &str) -> PathBuf {
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join(plan));
    c.arg("--output").arg(dir.join(name)).arg("--checkpoints").arg(dir.join(&format!("{name}-ck")));
    c.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    let out = run(c, Duration::from_secs(300));
    assert!(out.status.success(), "{plan}: {}", String::from_utf8_lossy(&out.stderr));
    dir.join(name)
}
