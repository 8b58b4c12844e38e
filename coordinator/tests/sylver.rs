//! The Sylver coinage job and command: plan validation, the table against the
//! published rows, resume from row checkpoints, and bad positions.

use std::path::PathBuf;

use retro_coordinator::sylver::position_report;
use retro_coordinator::sylver_job::{Question, RowStatus, RunOptions, SylverPlan, run};

/// A fresh directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("sylver-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

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
    assert_eq!(p.question, Question::TWins);
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
    let ledger = retro_coordinator::summary::ledger_markdown(&json);
    assert!(ledger.contains("| 10 | 11 | 89 | solved | 24 28 47 |"), "{ledger}");

    // Killed after three rows (the fault hook), then run again.
    let dir = TempDir::new("resume");
    let (out, ck) = (dir.0.join("out"), dir.0.join("ck"));
    let e = run(&p, &out, &ck, &RunOptions { stop_after: Some(3) }).unwrap_err();
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
    ] {
        let e = position_report(text, 1000, 10, false).unwrap_err();
        assert!(e.contains(needle), "{text:?}: {e}");
    }
}
