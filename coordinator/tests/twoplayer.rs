//! Two-player Chinese checkers through the whole job: the plans' embedded runs
//! against Sturtevant's rows (tests/reference/cc2.tsv), and the same plan on two
//! worker processes giving the same tablebase bytes.

use crate::common::*;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

/// `(size, pieces, positions, wins, draws, illegal)` rows of the reference table.
fn reference_rows() -> Vec<[u64; 6]> {
    rows_of("tests/reference/cc2.tsv")
}

/// The rows of a reference table under the crate, as their tab-separated
/// fields (comment and blank lines left out).
fn fields_of(file: &str) -> Vec<Vec<String>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').map(|x| x.trim().to_string()).collect())
        .collect()
}

/// The rows of a reference table of six numbers a row.
fn rows_of(file: &str) -> Vec<[u64; 6]> {
    fields_of(file)
        .into_iter()
        .map(|f| f.iter().map(|x| x.parse().unwrap()).collect::<Vec<u64>>().try_into().unwrap())
        .collect()
}

/// The coordinator on `plan` (relative to the repository, or absolute),
/// writing into `dir`.
fn plan_command(plan: impl AsRef<std::path::Path>, dir: &TempDir) -> Command {
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join(plan));
    c.arg("--output").arg(dir.join("tb")).arg("--checkpoints").arg(dir.join("ck"));
    c.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    c
}

/// Runs `command` to success and reads the summary it wrote into `dir`.
fn summary_of(command: Command, dir: &TempDir) -> Value {
    let out = run(command, LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(dir.join("tb/summary.json")).unwrap()).unwrap()
}

/// The summary keys two foldings of the same game must agree on.
const SAME_COUNTS: [&str; 7] = ["positions", "wins", "losses", "draws", "illegal", "by_side_to_move", "start"];

fn sha(dir: &TempDir) -> String {
    retro_engine::tablebase::sha256_file(&dir.join("tb").join("solo_1.tb")).unwrap()
}

#[test]
fn plans_reproduce_sturtevants_rows() {
    let rows = reference_rows();
    assert_eq!(rows.len(), 2, "the 7 x 7 rows for 1 and 2 pieces");
    for [m, p, positions, wins, draws, illegal] in rows {
        let dir = TempDir::new(&format!("cc2-m{m}p{p}"));
        let out = run(plan_command(format!("plans/cc2-m{m}p{p}.toml"), &dir), LIMIT);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let s: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("tb/summary.json")).unwrap()).unwrap();
        assert_eq!(s["game"], "cc2");
        assert_eq!((s["size"].as_u64(), s["pieces"].as_u64()), (Some(m), Some(p)));
        assert_eq!(s["positions"], positions);
        assert_eq!(s["wins"], wins, "{m}x{m} {p}: won for player 1");
        assert_eq!(s["losses"], wins, "{m}x{m} {p}: won for player 2 (as many, by colour symmetry)");
        assert_eq!(s["draws"], draws);
        assert_eq!(s["illegal"], illegal);
        // The split by side to move adds up and mirrors (colour symmetry).
        let (one, two) = (&s["by_side_to_move"]["1"], &s["by_side_to_move"]["2"]);
        assert_eq!(one["wins"], two["losses"]);
        assert_eq!(one["illegal"].as_u64().unwrap() + two["illegal"].as_u64().unwrap(), illegal);
        assert_eq!(s["start"]["value"], "win", "every solved size is a first-player win from the start");
        assert!(s["layers"][0]["rounds"].as_u64().unwrap() > 0);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("two-player Chinese checkers"), "{text}");
    }
}

/// The summaries of the real runs committed under docs/results/ reproduce
/// the larger published rows (too big to solve in a test): the 7 x 7 x 3 one
/// always, any other whose summary has been committed.
#[test]
fn committed_summaries_reproduce_the_larger_rows() {
    let mut checked = Vec::new();
    for [m, p, positions, wins, draws, illegal] in rows_of("tests/reference/cc2-large.tsv") {
        let path = repo().join(format!("docs/results/cc2-m{m}p{p}-summary.json"));
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let s: Value = serde_json::from_str(&text).unwrap();
        assert_eq!((s["size"].as_u64(), s["pieces"].as_u64()), (Some(m), Some(p)), "{}", path.display());
        assert_eq!(s["positions"], positions, "{m}x{m} {p}");
        assert_eq!(s["wins"], wins, "{m}x{m} {p}: won for player 1");
        assert_eq!(s["losses"], wins, "{m}x{m} {p}: won for player 2");
        assert_eq!(s["draws"], draws, "{m}x{m} {p}");
        assert_eq!(s["illegal"], illegal, "{m}x{m} {p}");
        assert_eq!(s["start"]["value"], "win", "{m}x{m} {p}");
        checked.push(p);
    }
    assert!(checked.contains(&3), "docs/results/cc2-m7p3-summary.json is committed");
    assert!(checked.contains(&4), "docs/results/cc2-m7p4-summary.json is committed");
}

/// `(size, reading, [positions, wins, draws, illegal])` rows of the six-piece
/// reference table (tests/reference/cc2-six.tsv), by our plans' reading
/// names: the paper's rows are what `as-published` must give, except on
/// 4 x 4, where both readings are one rule and the paper's row is not what
/// Sturtevant's solver computes.
fn six_piece_rows() -> Vec<(u64, &'static str, [u64; 4])> {
    let rows: Vec<(u64, String, [u64; 4])> = fields_of("tests/reference/cc2-six.tsv")
        .into_iter()
        .map(|f| {
            let n = |i: usize| f[i].parse::<u64>().unwrap();
            assert_eq!(n(1), 6, "{f:?}");
            (n(0), f[2].clone(), [n(3), n(4), n(5), n(6)])
        })
        .collect();
    let literal = |m: u64| rows.iter().find(|r| r.0 == m && r.1 == "literal").expect("a literal row").2;
    rows.iter()
        .flat_map(|(m, reading, row)| match (*m, reading.as_str()) {
            (4, "published") => vec![(4, "as-published", literal(4))],
            (m, "published") => vec![(m, "as-published", *row)],
            (m, _) => vec![(m, "literal", *row)],
        })
        .collect()
}

fn assert_six_piece_row(s: &Value, m: u64, reading: &str, [positions, wins, draws, illegal]: [u64; 4]) {
    let label = format!("{m} x {m} x 6, {reading}");
    assert_eq!((s["size"].as_u64(), s["pieces"].as_u64()), (Some(m), Some(6)), "{label}");
    assert_eq!(s["part2"], reading, "{label}");
    assert_eq!(s["positions"], positions, "{label}");
    assert_eq!(s["wins"], wins, "{label}: won for player 1");
    assert_eq!(s["losses"], wins, "{label}: won for player 2");
    assert_eq!(s["draws"], draws, "{label}");
    assert_eq!(s["illegal"], illegal, "{label}");
    assert_eq!(s["start"]["value"], "win", "{label}");
}

/// Six pieces (issue 55): 4 x 4 solved here through both plans, and the
/// committed summaries of the 5 x 5 runs, against the six-piece rows.
#[test]
fn six_piece_plans_and_summaries_reproduce_their_rows() {
    let rows = six_piece_rows();
    assert_eq!(rows.len(), 6);
    let mut summaries = 0;
    for (m, reading, row) in rows {
        if m == 4 {
            let dir = TempDir::new(&format!("cc2-m4p6-{reading}"));
            let s = summary_of(plan_command(format!("plans/cc2-m4p6-{reading}.toml"), &dir), &dir);
            assert_six_piece_row(&s, m, reading, row);
        }
        let path = repo().join(format!("docs/results/cc2-m{m}p6-{reading}-summary.json"));
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        assert_six_piece_row(&serde_json::from_str(&text).unwrap(), m, reading, row);
        summaries += 1;
    }
    assert_eq!(summaries, 4, "docs/results/cc2-m{{4,5}}p6-{{literal,as-published}}-summary.json are committed");
}

#[test]
fn two_workers_match_embedded() {
    let plan = "plans/cc2-m7p2.toml";
    let embedded = TempDir::new("cc2-embedded");
    let out = run(plan_command(plan, &embedded), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let dir = TempDir::new("cc2-cluster");
    run_on_two_workers(plan_command(plan, &dir), &dir);
    assert_eq!(sha(&dir), sha(&embedded));
}

/// Runs the coordinator `command` (writing into `dir`) with two workers on
/// loopback, one kernel thread each, until all three exit successfully.
fn run_on_two_workers(mut command: Command, dir: &TempDir) {
    command.args(["--listen", "127.0.0.1:0", "--expect-workers", "2"]);
    let mut coord = Proc::start("coordinator", command, dir.join("coord.log"));
    let addr = listening_address(&coord);
    let mut workers = [loopback_worker(dir, &addr, 1, "run"), loopback_worker(dir, &addr, 2, "run")];
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    for w in &mut workers {
        assert!(w.wait(LIMIT).success(), "{}", w.logs());
    }
}

#[test]
fn broken_two_player_plans_name_the_field() {
    let dir = TempDir::new("cc2-bad-plans");
    for (text, says) in [
        ("[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 7\n", "job.pieces"),
        ("[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 12\npieces = 1\n", "job.size"),
        ("[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 7\npieces = 1\norder = 2\n", "job.order"),
        ("[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 7\npieces = 1\nquestions = [\"solo(A)\"]\n", "solo(1)"),
        ("[job]\nname = \"t\"\ngame = \"cc3\"\norder = 1\npieces = 1\n", "job.pieces"),
        ("[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 7\npieces = 1\nquestions = [\"solo(2)\"]\n", "solo(1) only"),
        ("[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 7\npieces = 1\ncolour_symmetry = 1\n", "true or false"),
        ("[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 7\npieces = 2\nmirror_symmetry = true\n", "job.mirror_symmetry"),
        ("[job]\nname = \"t\"\ngame = \"cc3\"\norder = 1\nmirror_symmetry = true\n", "job.mirror_symmetry"),
        // Start corners that overlap (a wrong start value) or leave no rank
        // space (a division by zero): the board's limit is named.
        ("[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 3\npieces = 4\n", "holds at most 3 pieces"),
        // A plan that cannot produce its summary is refused before any work.
        ("[job]\nname = \"t\"\ngame = \"cc3\"\norder = 1\nquestions = [\"solo(B)\"]\n", "lacks solo(A)"),
        (
            "[job]\nname = \"t\"\ngame = \"cc3\"\norder = 1\nquestions = [\"solo(A)\", \"enable(A>B)\"]\n",
            "lacks enable(A>C), which the summary needs",
        ),
        (
            "[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 3\npieces = 1\ncolour_symmetry = false\nquestions = [\"solo(2)\"]\n",
            "lacks solo(1)",
        ),
        ("[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 3\npieces = 5\n", "holds at most 3 pieces"),
    ] {
        let path = dir.join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let mut c = Command::new(coordinator());
        c.arg("--plan").arg(&path).arg("--output").arg(dir.join("tb")).arg("--checkpoints").arg(dir.join("ck"));
        let out = run(c, LIMIT);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{text:?} should say {says}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        let mut c = Command::new(coordinator());
        c.arg("estimate").arg("--plan").arg(&path);
        let out = run(c, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "estimate of {text:?} should say {says}: {err}");
    }
}

/// The plan without the colour fold (both sides to move stored, twice the
/// positions) gives the same summary counts as the folded default.
#[test]
fn unfolded_space_gives_the_same_counts() {
    let dir = TempDir::new("cc2-unfolded");
    let folded = TempDir::new("cc2-folded");
    let plan = std::fs::read_to_string(repo().join("plans/cc2-m7p2.toml")).unwrap();
    let unfolded = plan.replace("colour_symmetry = true", "colour_symmetry = false");
    assert_ne!(unfolded, plan);
    std::fs::write(dir.join("plan.toml"), unfolded).unwrap();
    let a = summary_of(plan_command(dir.join("plan.toml"), &dir), &dir);
    let b = summary_of(plan_command("plans/cc2-m7p2.toml", &folded), &folded);
    assert_eq!((a["colour_symmetry"].as_bool(), b["colour_symmetry"].as_bool()), (Some(false), Some(true)));
    for key in SAME_COUNTS {
        assert_eq!(a[key], b[key], "{key}");
    }
}

/// The chaos plan's board (5 x 5, 3 pieces) folded by the mirror as well:
/// the same summary counts as without it, in about half the stored
/// positions, and two workers write the embedded run's bytes.
#[test]
fn mirror_folded_space_gives_the_same_counts_embedded_and_on_two_workers() {
    let plain = TempDir::new("cc2-plain");
    let mirrored = TempDir::new("cc2-mirrored");
    let plan = std::fs::read_to_string(repo().join("plans/chaos.toml")).unwrap();
    let with_mirror = plan.replace("colour_symmetry = true", "colour_symmetry = true\nmirror_symmetry = true");
    assert_ne!(with_mirror, plan);
    std::fs::write(mirrored.join("plan.toml"), &with_mirror).unwrap();
    std::fs::write(plain.join("plan.toml"), &plan).unwrap();
    let command = |d: &TempDir| plan_command(d.join("plan.toml"), d);
    let a = summary_of(command(&plain), &plain);
    let b = summary_of(command(&mirrored), &mirrored);
    assert_eq!((a.get("mirror_symmetry"), b["mirror_symmetry"].as_bool()), (None, Some(true)));
    for key in SAME_COUNTS {
        assert_eq!(a[key], b[key], "{key}");
    }
    let stored = |d: &TempDir| {
        retro_engine::tablebase::TablebaseReader::open(&d.join("tb").join("solo_1.tb")).unwrap().header().positions
    };
    let (all, folded) = (stored(&plain), stored(&mirrored));
    assert!(folded * 100 < all * 55, "{folded} of {all} positions stored");
    // `coordinator estimate` foresees what each run stored, and every position.
    for (d, summary, stored) in [(&plain, &a, all), (&mirrored, &b, folded)] {
        let mut c = Command::new(coordinator());
        c.args(["estimate", "--json", "--plan"]).arg(d.join("plan.toml"));
        let out = run(c, LIMIT);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let e: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(e["stored"].as_u64(), Some(stored), "{e}");
        assert_eq!(e["bytes_per_layer_solving"].as_u64(), Some(stored), "{e}");
        assert_eq!(e["positions"], summary["positions"], "{e}");
    }

    let dir = TempDir::new("cc2-mirrored-cluster");
    std::fs::write(dir.join("plan.toml"), &with_mirror).unwrap();
    run_on_two_workers(command(&dir), &dir);
    assert_eq!(sha(&dir), sha(&mirrored));
}
