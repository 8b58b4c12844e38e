//! The Sylver coinage job and command: plan validation, the table against the
//! published rows, resume from row checkpoints, and bad positions.

use crate::common::TempDir;
use std::path::PathBuf;

use retro_coordinator::sylver_job::{RowStatus, RunOptions, SylverPlan, SylverQuestion, run};
use retro_results::sylver::position::position_report;

fn plan(body: &str) -> Result<SylverPlan, String> {
    SylverPlan::from_toml_str(&format!("[job]\nname = \"t\"\ngame = \"sylver\"\n{body}"), "test.toml")
        .map_err(|e| e.to_string())
}

#[test]
fn plan_fields_are_checked() {
    let bad = [
        ("question = \"who\"", "job.question"),
        ("ranges = [[4, 3, 40]]", "job.ranges[0]"),
        ("ranges = [[1, 3, 40]]", "job.ranges[0]"),
        ("ranges = [[4, 5]]", "job.ranges[0]"),
        ("ranges = \"all\"", "job.ranges"),
        ("pairs = [[4, 6]]", "job.pairs[0]"),
        ("pairs = [[4, 0]]", "job.pairs[0]"),
        ("question = \"t_wins\"\npairs = [[2, 3]]", "job.pairs[0]"),
        ("ranges = [[60, 60, 200]]", "job.ranges"),
        ("pairs = [[4, 5]]\ncap = 0", "job.cap"),
        ("pairs = [[4, 5]]\ncolour = 1", "job.colour"),
        ("", "no rows"),
    ];
    for (body, field) in bad {
        let e = plan(body).unwrap_err();
        assert!(e.contains(field) && e.contains("test.toml"), "{body:?}: {e}");
    }
    let e = SylverPlan::from_toml_str("[job]\ngame = \"sylver\"\npairs = [[4, 5]]\n", "p").unwrap_err().to_string();
    assert!(e.contains("missing field `job.name`"), "{e}");
    // A cc3/cc2 command given a Sylver plan says so instead of listing unknown fields.
    let e = retro_coordinator::plan::Plan::from_toml_str("[job]\nname = \"t\"\ngame = \"sylver\"\nranges = []\n", "p")
        .unwrap_err()
        .to_string();
    assert!(e.contains("sylver"), "{e}");
}

/// The twins plan covers the article's 528 pairs ({2, 3} is among them but
/// has t = 1, so 527 are asked).
#[test]
fn twins_plan_has_the_articles_pairs() {
    let p = SylverPlan::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plans/sylver-twins.toml")).unwrap();
    assert_eq!(p.question, SylverQuestion::TWins);
    assert_eq!(p.rows.len() + 1, 528);
    let t = SylverPlan::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plans/sylver-table.toml")).unwrap();
    let coprime = (4..40u64).flat_map(|m| (m + 1..=40).map(move |n| (m, n))).filter(|&(m, n)| gcd(m, n) == 1).count();
    assert_eq!(t.rows.len(), coprime);
    assert!(t.rows.contains(&(13, 27)) && t.rows.contains(&(19, 20)));
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Sicherman's rows that the reference lists are reproduced, and a run
/// stopped half-way redoes only the rows without a checkpoint.
#[test]
fn table_matches_published_rows_and_resumes() {
    let body = "pairs = [[4, 5], [5, 6], [7, 9], [10, 11], [5, 14], [5, 18], [4, 9], [6, 7], [8, 9]]\nthreads = 2";
    let p = plan(body).unwrap();
    let clean_dir = TempDir::new("clean");
    let clean = run(&p, &clean_dir.0.join("out"), &clean_dir.0.join("ck"), &RunOptions::default()).unwrap();
    assert_eq!(clean.rows.len(), 9);
    assert_eq!(clean.solved, 9);
    assert_eq!(clean.compared, 7, "the seven published {{m, n}} rows");
    assert_eq!(clean.mismatches, 0);
    let table = std::fs::read_to_string(clean_dir.0.join("out/table.tsv")).unwrap();
    assert_eq!(table.lines().count(), 10);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(clean_dir.0.join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), 9);
    for key in ["m", "n", "t", "winning", "positions", "seconds", "status"] {
        assert!(json["rows"][0].get(key).is_some(), "{key}");
    }
    let ledger = retro_results::report::ledger_markdown(&json);
    assert!(ledger.contains("| 10 | 11 | 89 | solved | 24 28 47 |"), "{ledger}");

    // Killed after three rows (the fault hook), then run again.
    let dir = TempDir::new("resume");
    let (out, ck) = (dir.0.join("out"), dir.0.join("ck"));
    let e = run(&p, &out, &ck, &RunOptions { stop_after: Some(3) }).unwrap_err().to_string();
    assert!(e.contains("stopped after 3 rows"), "{e}");
    let kept = std::fs::read_dir(ck.join("rows"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(kept, 3);
    // Plant a wrong answer in one checkpoint: a resumed run must take it as
    // done (not recompute it), which shows the row was not solved again.
    let planted = ck.join("rows/row-6-7.json");
    let mut row: retro_coordinator::sylver_job::RowResult =
        retro_engine::durable::read_checked_json(&planted).unwrap().unwrap_or_else(|| {
            let mut r = clean.rows.iter().find(|r| r.result.m == 6).unwrap().result.clone();
            r.status = RowStatus::Solved;
            r
        });
    row.winning = vec![999];
    retro_engine::durable::write_checked_json(&planted, &row).unwrap();
    let resumed = run(&p, &out, &ck, &RunOptions::default()).unwrap();
    let from_checkpoints = resumed.rows.iter().filter(|r| r.resumed).count();
    assert!((3..=4).contains(&from_checkpoints), "{from_checkpoints}");
    let six = resumed.rows.iter().find(|r| r.result.m == 6 && r.result.n == 7).unwrap();
    assert!(six.resumed && six.result.winning == vec![999]);
    // Every other row is identical to the clean run's.
    for (a, b) in resumed.rows.iter().zip(&clean.rows) {
        if (a.result.m, a.result.n) != (6, 7) {
            assert_eq!((a.result.m, a.result.n, &a.result.winning), (b.result.m, b.result.n, &b.result.winning));
        }
    }

    // Another row's checkpoint copied under a row's name passes its checksum;
    // it must not stand for that row (the table listed {5, 14} twice).
    std::fs::copy(ck.join("rows/row-5-14.json"), ck.join("rows/row-5-6.json")).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    let swapped = run(&p, &out, &ck, &RunOptions::default()).unwrap();
    let rows: Vec<(u64, u64)> = swapped.rows.iter().map(|r| (r.result.m, r.result.n)).collect();
    let clean_rows: Vec<(u64, u64)> = clean.rows.iter().map(|r| (r.result.m, r.result.n)).collect();
    assert_eq!(rows, clean_rows);
    let five_six = swapped.rows.iter().find(|r| (r.result.m, r.result.n) == (5, 6)).unwrap();
    assert!(!five_six.resumed, "the swapped file was solved again");
    let clean_five_six = clean.rows.iter().find(|r| (r.result.m, r.result.n) == (5, 6)).unwrap();
    assert_eq!(five_six.result.winning, clean_five_six.result.winning);
}

#[test]
fn capped_rows_are_reported() {
    let p = plan("pairs = [[7, 9], [7, 30], [7, 31]]\ncap = 2000").unwrap();
    let dir = TempDir::new("capped");
    let s = run(&p, &dir.0.join("out"), &dir.0.join("ck"), &RunOptions::default()).unwrap();
    let status: Vec<_> = s.rows.iter().map(|r| r.result.status).collect();
    assert_eq!(status, vec![RowStatus::Solved, RowStatus::Capped, RowStatus::Capped]);
    assert!(s.rows[1].result.positions > 0);
    assert_eq!(s.capped, 2);
}

#[test]
fn positions_from_the_command() {
    let r = position_report("14 5", 1_000_000, 60, false).unwrap();
    assert_eq!(r.t, Some(51));
    assert_eq!(r.winning, vec![18]);
    assert!(r.ender && r.quiet_ender);
    assert_eq!(r.nameable.as_ref().map(Vec::len), Some(26));
    let r = position_report("6 4", 1_000_000, 60, false).unwrap();
    assert_eq!(r.value, "P");
    for (text, needle) in [
        ("", "empty"),
        ("5 0", "0 cannot"),
        ("5 -2", "negative"),
        ("five", "not a number"),
        ("99999999999", "too large"),
        (
            "1048575 1048576",
            "position {1048575, 1048576}: reference number m = 1048575 is outside the solver's range 2..=64",
        ),
        ("66 65 67", "position {65, 66, 67}: reference number m = 65"),
        ("3 1000", "at most 255 a class"),
    ] {
        let e = position_report(text, 1000, 10, false).unwrap_err().to_string();
        assert!(e.contains(needle), "{text:?}: {e}");
    }
    // The limits come first, named by their flags.
    let e = position_report("5 14", 0, 10, false).unwrap_err().to_string();
    assert!(e.starts_with("--cap 0:") && e.contains("1..=4294967296"), "{e}");
    let e = position_report("1048575 1048576", 1000, 1 << 40, false).unwrap_err().to_string();
    assert!(e.starts_with("--bound 1099511627776:") && e.contains("1048576"), "{e}");
}

/// What one run of `coordinator sylver` did.
struct Ran {
    /// Exit code (`None`: killed by a signal, an abort among them).
    code: Option<i32>,
    stdout: String,
    stderr: String,
    seconds: f64,
}

/// Runs `coordinator sylver ARGS` under `ulimit -v` (KiB of address space)
/// and kills it after `limit_s` seconds.
#[cfg(unix)]
fn sylver_under(vmem_kib: u64, limit_s: u64, args: &[&str]) -> Ran {
    use std::io::Read;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let started = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {vmem_kib} && exec \"$0\" sylver \"$@\""))
        .arg(env!("CARGO_BIN_EXE_coordinator"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drain both pipes on threads so a chatty child cannot block on them.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).unwrap();
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(limit_s) {
            child.kill().unwrap();
            panic!("coordinator sylver {args:?} still running after {limit_s} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Issue 19, item 5: numbers the solver cannot take are refused, naming the
/// limit, before memory is sized by them. Each run gets 256 MB of address
/// space and 20 seconds: `{1048575, 1048576}` used to build a list of its
/// 5.5e11 nameable numbers (an abort after asking for 8 GB), and
/// `--openings 100000000` a table of 10^8 rows.
#[cfg(unix)]
#[test]
fn out_of_range_inputs_are_refused_naming_the_limit() {
    let cases: &[(&[&str], &str)] = &[
        (&["--position", "1048575 1048576"], "outside the solver's range 2..=64"),
        (&["--position", "1048575 1048576", "--json"], "2..=64"),
        (&["--position", "65 66"], "2..=64"),
        (&["--position", "3 1000"], "at most 255 a class"),
        (&["--position", "5 1048577"], "numbers up to 1048576"),
        (&["--position", "99999999999999999999999 5"], "numbers up to 1048576"),
        (&["--openings", "100000000"], "N from 1 to 1048576"),
        (&["--openings", "100000000", "--json"], "N from 1 to 1048576"),
        (&["--openings", "0"], "N from 1 to 1048576"),
        (&["--openings", "99999999999999999999999"], "N from 1 to 1048576"),
        (&["--position", "5 14", "--cap", "0"], "outside 1..=4294967296"),
        (&["--position", "5 14", "--cap", "4294967297"], "outside 1..=4294967296"),
        (&["--position", "5 14", "--cap", "99999999999999999999999"], "from 1 to 4294967296"),
        (&["--openings", "30", "--cap", "18446744073709551615"], "outside 1..=4294967296"),
        (&["--position", "4 6", "--bound", "1048577"], "above 1048576"),
        (&["--openings", "30", "--bound", "18446744073709551615"], "above 1048576"),
        (&["--position", "4 6", "--bound=-1"], "from 0 to 1048576"),
    ];
    for &(args, limit) in cases {
        let r = sylver_under(256 << 10, 20, args);
        assert!(
            matches!(r.code, Some(1 | 2)),
            "{args:?}: exit {:?} (a signal when None)\nstdout {}\nstderr {}",
            r.code,
            r.stdout,
            r.stderr
        );
        assert!(r.stderr.contains(limit), "{args:?}: wanted {limit:?} in\n{}", r.stderr);
        assert!(!r.stderr.contains("panicked") && !r.stderr.contains("memory allocation"), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        assert!(r.seconds < 10.0, "{args:?}: {:.1} s", r.seconds);
    }
    // The limits themselves are accepted under the same address space: m = 64
    // (64..=127 named, each class holding one nameable number), the largest
    // cap and bound.
    let all: Vec<String> = (64..128).map(|n| n.to_string()).collect();
    let r = sylver_under(256 << 10, 20, &["--position", &all.join(" "), "--cap", "1000"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("t = 63") && r.stdout.contains("open: capped"), "{}", r.stdout);
    let r = sylver_under(256 << 10, 20, &["--position", "5 14", "--cap", "4294967296", "--bound", "1048576"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("N: winning moves 18"), "{}", r.stdout);
    let r = sylver_under(256 << 10, 20, &["--position", "4 6", "--bound", "1048576"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("P: the player to move loses"), "{}", r.stdout);
    // An infinite position may name numbers up to 2^20 (its Apéry set has
    // 1048574 entries, half of them finite: the generators no longer cost m^2).
    let r = sylver_under(256 << 10, 20, &["--position", "1048574 1048576", "--bound", "3"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("position {1048574, 1048576}  (gcd 2)"), "{}", r.stdout);
}

/// `--help` names the limits the checks use.
#[test]
fn help_names_the_limits() {
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_coordinator")).args(["sylver", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let options = help.split_once("Options:").map(|(_, o)| o).unwrap_or_else(|| panic!("{help}"));
    let help = options.split_whitespace().collect::<Vec<_>>().join(" ");
    for (what, limit) in [
        ("--cap", retro_engine::sylver::MAX_CAP),
        ("--bound", retro_engine::sylver::theory::MAX_BOUND),
        ("--openings", retro_results::sylver::position::MAX_OPENINGS),
        ("--position", retro_games::sylver::MAX_NUMBER),
        ("--position", retro_engine::sylver::MAX_M as u64),
        ("--position", retro_engine::sylver::MAX_K),
    ] {
        let from = help.find(&format!("{what} <")).unwrap_or_else(|| panic!("{what} in {help}"));
        let line = &help[from..];
        let line = &line[..line[2..].find(" --").map_or(line.len(), |i| i + 2)];
        assert!(line.contains(&format!(" {limit} ")), "{what}: {limit} not in {line:?}");
    }
}

/// The memo asks for each larger table; one the allocator refuses ends the
/// solve as `open` with the reason, not an abort. 48 MB of address space
/// holds the program and a memo of 393,216 positions of {17, 19} (which needs
/// millions).
#[cfg(unix)]
#[test]
fn a_memo_the_machine_cannot_hold_is_an_open_answer() {
    let r = sylver_under(48 << 10, 60, &["--position", "5 14"]);
    assert_eq!(r.code, Some(0), "the program itself runs in 48 MB: {}", r.stderr);
    let r = sylver_under(48 << 10, 60, &["--position", "17 19", "--cap", "4294967296", "--stats"]);
    assert_eq!(r.code, Some(0), "exit {:?}\nstdout {}\nstderr {}", r.code, r.stdout, r.stderr);
    assert!(r.stdout.contains("open: out of memory: the memo of"), "{}", r.stdout);
    assert!(r.stdout.contains("ask for a lower cap"), "{}", r.stdout);
}

/// The first-move table is written as it is made (JSON included) and a
/// reader that stops early ends it quietly.
#[cfg(unix)]
#[test]
fn openings_stream() {
    let r = sylver_under(256 << 10, 60, &["--openings", "12", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let rows: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 12);
    assert_eq!((rows[4]["n"].as_u64(), rows[4]["result"].as_str()), (Some(5), Some("wins")));
    // 1..=1048576 would take days: the first rows come at once, and a reader
    // that closes the pipe after three lines ends the run with success.
    use std::io::BufRead;
    use std::time::{Duration, Instant};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_coordinator"))
        .args(["sylver", "--openings", "1048576"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let lines: Vec<String> = std::io::BufReader::new(stdout).lines().take(3).map(Result::unwrap).collect();
        tx.send(lines).unwrap();
        // The pipe closes here.
    });
    let lines = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(lines) => lines,
        Err(_) => {
            child.kill().unwrap();
            panic!("no three rows of --openings 1048576 within 30 s");
        }
    };
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("   1  loses"), "{lines:?}");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("--openings 1048576 still running 30 s after its reader left");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}
