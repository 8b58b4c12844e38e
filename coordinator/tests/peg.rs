//! Peg solitaire through the binary: the English central ledger against the
//! OEIS and the article (tests/reference/peg.tsv); the same bytes from a
//! killed-and-resumed run, from a run within a small memory bound, on two
//! workers (with the status page watched while they join) and on three with
//! the coordinator killed and restarted; the class counts of the
//! single-vacancy problems, and `coordinator peg solve`.

use crate::common;
use crate::common::{Proc, TempDir, coordinator, listening_address, repo, run, worker};
use retro_games::peg::search::replay;
use retro_games::peg::{Board, BoardKind, hole_name, parse_hole};
use retro_results::peg::problems::{class_feasible, searches_needed};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(600);

/// `key -> values` of tests/reference/peg.tsv (ledger rows keyed by their jump count).
fn reference() -> BTreeMap<String, Vec<String>> {
    let path = repo().join("coordinator/tests/reference/peg.tsv");
    let mut out = BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let fields: Vec<String> = line.split('\t').map(str::to_owned).collect();
        let key =
            if fields[0] == "english.central.ledger_row" { format!("row{}", fields[1]) } else { fields[0].clone() };
        out.insert(key, fields[1..].to_vec());
    }
    out
}

fn number(r: &BTreeMap<String, Vec<String>>, key: &str) -> u128 {
    r[key][0].parse().unwrap_or_else(|_| panic!("{key} is not a number"))
}

fn ledger_command(dir: &TempDir) -> Command {
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join("plans/peg-english.toml"));
    c.arg("--output").arg(dir.join("out")).arg("--checkpoints").arg(dir.join("ck"));
    c.env_remove("RETRO_FAULT");
    c
}

/// [`ledger_command`] within a memory bound of `memory_mb` MB.
fn ledger_command_within(dir: &TempDir, memory_mb: u32) -> Command {
    let mut c = ledger_command(dir);
    c.env("RETRO_CLUSTER__MEMORY_MB", memory_mb.to_string());
    c
}

fn summary(dir: &TempDir) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("out/summary.json")).unwrap()).unwrap()
}

/// The summary without what depends on the run (timings, resumed levels).
fn results_only(mut v: Value) -> Value {
    for key in [
        "seconds_levels",
        "seconds_ledger",
        "levels_resumed",
        "threads",
        "memory_bytes",
        "levels_on_disk",
        "peak_disk_bytes",
        "peak_rss_bytes",
    ] {
        v.as_object_mut().unwrap().remove(key);
    }
    v
}

/// sha256 of every file under ck/levels (`level-NNN/shard-KKKK.lvl`, the
/// markers and levels.json).
fn level_files(dir: &TempDir) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.join("ck/levels")];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                todo.push(e.path());
                continue;
            }
            let name = e.path().strip_prefix(dir.join("ck/levels")).unwrap().to_string_lossy().to_string();
            files.insert(name, retro_engine::tablebase::sha256_file(&e.path()).unwrap());
        }
    }
    let markers = files.keys().filter(|n| n.ends_with("/level.json")).count();
    assert_eq!((files.len(), markers), (1 + 32 * 65, 32), "levels.json and 32 levels of 64 shards and a marker");
    files
}

/// Three level workers (one thread each) joining the coordinator at `addr`,
/// with their data directories and logs under `dir`.
fn three_level_workers(dir: &TempDir, addr: &str) -> Vec<Proc> {
    (0..3)
        .map(|i| {
            let mut w = Command::new(worker());
            w.args(["--connect", addr, "--threads", "1"]).arg("--data").arg(dir.join(&format!("w{i}")));
            w.env_remove("RETRO_FAULT");
            Proc::start(&format!("worker{i}"), w, dir.join(&format!("w{i}.log")))
        })
        .collect()
}

fn big(v: &Value) -> u128 {
    v.as_str().expect("u128 counts are decimal strings").parse().unwrap()
}

/// The embedded run every other run of the English ledger is compared with:
/// its summary and the digests of its level files. Run once per test binary,
/// by whichever test asks first (the others wait), so that the tests below,
/// each a different way to the same bytes, run side by side.
struct Embedded {
    summary: Value,
    levels: BTreeMap<String, String>,
}

fn embedded() -> &'static Embedded {
    static EMBEDDED: OnceLock<Embedded> = OnceLock::new();
    EMBEDDED.get_or_init(|| {
        let dir = TempDir::new("peg-english");
        let out = run(ledger_command(&dir), LIMIT);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        Embedded { summary: summary(&dir), levels: level_files(&dir) }
    })
}

/// The same ledger and, byte for byte, the same level files as the embedded run.
fn assert_same_as_embedded(dir: &TempDir) {
    let e = embedded();
    assert_eq!(results_only(summary(dir)), results_only(e.summary.clone()));
    assert_eq!(level_files(dir), e.levels);
}

#[test]
fn english_ledger_matches_the_oeis_and_the_article() {
    let s = &embedded().summary;
    let levels = s["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 32, "0..=31 jumps");

    // Term by term against the sequence files themselves, not the program's own verdict.
    let columns = [
        ("A335656", "positions"),
        ("A112737", "up_to_symmetry"),
        ("A350561", "sequences"),
        ("A350998", "dead_ends"),
        ("A351286", "winnable"),
        ("A112738", "winnable_up_to_symmetry"),
    ];
    for (id, column) in columns {
        let text = std::fs::read_to_string(repo().join(format!("results/reference/oeis/{id}.txt"))).unwrap();
        let mut terms = 0;
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            let mut parts = line.split_whitespace();
            let n: usize = parts.next().unwrap().parse().unwrap();
            let want: u128 = parts.next().unwrap().parse().unwrap();
            let got = levels.get(n).map_or(0, |l| match &l[column] {
                Value::String(_) => big(&l[column]),
                v => u128::from(v.as_u64().unwrap()),
            });
            assert_eq!(got, want, "{id} ({column}) term {n}");
            terms += 1;
        }
        assert!(terms >= 23, "{id} has {terms} terms");
    }
    assert!(s["oeis"].as_array().unwrap().iter().all(|c| c["mismatches"].as_array().unwrap().is_empty()));

    // The article's totals and rows.
    let r = reference();
    let t = &s["totals"];
    assert_eq!(u128::from(t["positions"].as_u64().unwrap()), number(&r, "english.central.positions_total"));
    assert_eq!(
        u128::from(t["up_to_symmetry"].as_u64().unwrap()),
        number(&r, "english.central.positions_up_to_symmetry_total")
    );
    assert_eq!(u128::from(t["dead_ends"].as_u64().unwrap()), number(&r, "english.central.dead_ends_total"));
    assert_eq!(u128::from(t["winnable"].as_u64().unwrap()), number(&r, "english.central.winnable_total"));
    assert_eq!(
        u128::from(t["winnable_up_to_symmetry"].as_u64().unwrap()),
        number(&r, "english.central.winnable_up_to_symmetry_total")
    );
    let by_hole: BTreeMap<String, u128> = s["solutions_by_hole"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["hole"].as_str().unwrap().to_owned(), big(&h["solutions"])))
        .collect();
    assert_eq!(by_hole["d4"], number(&r, "english.central.solutions"));
    assert_eq!(by_hole["d1"], number(&r, "english.central.solutions_ending_d1"));
    let holes: Vec<&str> = by_hole.keys().map(String::as_str).collect();
    let mut published: Vec<&str> = r["english.central.finishing_holes"][0].split(' ').collect();
    published.sort_unstable();
    assert_eq!(holes, published, "solutions end exactly on the class-feasible holes");
    assert_eq!(s["finishing_holes"].as_array().unwrap().len(), 5);
    for (key, row) in r.iter().filter(|(k, _)| k.starts_with("row")) {
        let jumps: usize = key[3..].parse().unwrap();
        let l = &levels[jumps];
        let got = [
            l["pegs"].as_u64().unwrap().into(),
            l["positions"].as_u64().unwrap().into(),
            l["up_to_symmetry"].as_u64().unwrap().into(),
            big(&l["sequences"]),
            l["dead_ends"].as_u64().unwrap().into(),
            l["winnable"].as_u64().unwrap().into(),
        ];
        let want: Vec<u128> = row[1..7].iter().map(|x| x.parse().unwrap()).collect();
        assert_eq!(got.to_vec(), want, "ledger row after {jumps} jumps");
    }
    // The earliest dead ends: 4 positions after 6 jumps.
    let first = levels.iter().position(|l| l["dead_ends"].as_u64().unwrap() > 0).unwrap();
    assert_eq!((first, levels[first]["dead_ends"].as_u64()), (6, Some(4)));
    let widest = levels.iter().max_by_key(|l| l["positions"].as_u64().unwrap()).unwrap();
    assert_eq!(
        format!("{} jumps, {} positions", widest["jumps"], widest["positions"]),
        r["english.central.widest_level"][0]
    );
}

#[test]
fn a_ledger_killed_mid_level_resumes_to_the_same_level_files() {
    // Killed while writing level 20, then resumed.
    let killed = TempDir::new("peg-english-killed");
    let mut c = ledger_command(&killed);
    c.env("RETRO_FAULT", "peg-mid-level:0:20");
    let out = run(c, LIMIT);
    assert!(!out.status.success(), "the fault point must kill the run");
    assert!(!killed.join("ck/levels/level-020/level.json").exists());
    let out = run(ledger_command(&killed), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(summary(&killed)["levels_resumed"], 20);
    assert_same_as_embedded(&killed);
}

#[test]
fn within_a_small_memory_bound_levels_are_expanded_on_disk_to_the_same_bytes() {
    // Within a 100 MB bound, the levels past about 200 K keys are expanded on
    // disk (in passes over groups of destination shards) and the ledger reads
    // them (and makes their duals) from disk. Killed between two passes of
    // level 16 (three passes: its 3.3 M positions do not fit in one) and run
    // again, too.
    let small = TempDir::new("peg-english-on-disk");
    let on_disk = |fault: Option<&str>| {
        let mut c = ledger_command_within(&small, 100);
        if let Some(f) = fault {
            c.env("RETRO_FAULT", f);
        }
        c
    };
    let out = run(on_disk(Some("peg-mid-merge:0:16")), LIMIT);
    assert!(!out.status.success(), "the fault point must kill the run");
    assert!(small.join("ck/levels/level-016").exists() && !small.join("ck/levels/level-016/level.json").exists());
    let out = run(on_disk(None), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let spilled = summary(&small);
    assert_eq!(spilled["memory_bytes"], 100_000_000);
    assert!(spilled["levels_on_disk"].as_u64().unwrap() >= 10, "{}", spilled["levels_on_disk"]);
    assert!(spilled["peak_disk_bytes"].as_u64().unwrap() > 0);
    assert_same_as_embedded(&small);
}

#[test]
fn the_levels_and_the_ledger_stay_within_the_memory_bound() {
    // Within 300 MB, the first levels of the English board are made in
    // memory and the 19 wider ones on disk. The in-memory levels' successor
    // buffers were once kept through the disk levels, beside the passes'
    // tables: 363 MB at its peak. The peak RSS the summary records is the
    // process's own.
    let bounded = TempDir::new("peg-english-bounded");
    let out = run(ledger_command_within(&bounded, 300), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = summary(&bounded);
    assert!(s["levels_on_disk"].as_u64().unwrap() >= 10, "{}", s["levels_on_disk"]);
    let peak = s["peak_rss_bytes"].as_u64().unwrap();
    assert!(peak <= 300_000_000, "peak RSS {peak} bytes, over the 300 MB bound");
    assert_same_as_embedded(&bounded);
}

#[test]
fn two_level_workers_behind_the_status_page_give_the_same_level_files() {
    // Two worker processes, the coordinator relaying their successors, with
    // the status page on: the job waits for both, shows who joined with the
    // shards each owns, refuses a worker of another plan, and ends with the
    // same ledger and the same level files as the embedded run.
    let cluster = TempDir::new("peg-english-cluster");
    let status = format!("127.0.0.1:{}", common::free_port());
    let mut c = ledger_command(&cluster);
    c.args(["--listen", "127.0.0.1:0", "--expect-workers", "2", "--status", &status]);
    let mut coord = Proc::start("coordinator", c, cluster.join("coordinator.log"));
    let addr = listening_address(&coord);
    let mut workers = status_page_while_two_workers_join(&cluster, &status, &addr, &coord);
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    for w in &mut workers {
        assert!(w.wait(Duration::from_secs(60)).success(), "{}", w.logs());
    }
    assert_same_as_embedded(&cluster);
    // Run embedded, the same plan has no status page, and says so.
    let alone = TempDir::new("peg-status-embedded");
    let mut c = ledger_command(&alone);
    c.args(["--status", &status]);
    let out = run(c, LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("has no status page"), "{err}");
}

#[test]
fn three_level_workers_outlive_a_killed_coordinator() {
    // Three workers within a 250 MB bound (the plan's, passed on at the
    // join), so the wide levels are expanded on disk by each worker and
    // travel in pieces relayed through files; the coordinator killed while
    // the workers deliver the successors of level 12 (their parcels die with
    // it) and started again on the same address: the workers keep running,
    // come back to it, and the job ends with the same ledger and level files.
    let restarted = TempDir::new("peg-english-coordinator-killed");
    let listen = format!("127.0.0.1:{}", common::free_port());
    let cluster_command = |fault: Option<&str>| {
        let mut c = ledger_command(&restarted);
        c.env("RETRO_CLUSTER__MEMORY_MB", "250");
        c.args(["--listen", &listen, "--expect-workers", "3"]);
        if let Some(f) = fault {
            c.env("RETRO_FAULT", f);
        }
        c
    };
    let mut coord = Proc::start("coordinator", cluster_command(Some("peg-mid-expand:0:12")), restarted.join("c1.log"));
    let workers = three_level_workers(&restarted, &listening_address(&coord));
    let status = coord.wait(LIMIT);
    assert!(!status.success(), "the fault point must kill the coordinator:\n{}", coord.logs());
    assert!(restarted.join("ck/levels-cluster.json").exists());
    let mut coord = Proc::start("coordinator again", cluster_command(None), restarted.join("c2.log"));
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    assert!(coord.logs().contains("resuming after level 12"), "{}", coord.logs());
    for mut w in workers {
        assert!(w.wait(Duration::from_secs(60)).success(), "{}", w.logs());
        assert!(w.logs().contains("expanded on disk"), "{}", w.logs());
    }
    assert!(
        !restarted.join("ck/relay").exists() || std::fs::read_dir(restarted.join("ck/relay")).unwrap().count() == 0
    );
    assert_same_as_embedded(&restarted);

    // Killed once more after the job ended: a third start finds every level
    // written and only computes the ledger again, with no worker.
    std::fs::remove_file(restarted.join("out/summary.json")).unwrap();
    let out = run(cluster_command(None), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("every level (0-"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(results_only(summary(&restarted)), results_only(embedded().summary.clone()));
}

/// `--status` on a level job while its two workers join (the two-worker test
/// runs it; a job of its own would cost another whole cluster run): the job
/// waits for its workers, shows who joined with the shards it owns, and
/// refuses a worker started for another plan. Returns the two workers.
fn status_page_while_two_workers_join(dir: &TempDir, status: &str, addr: &str, coord: &Proc) -> Vec<Proc> {
    common::wait_for_port(status, coord);
    let v = common::get_json(status, "/status");
    assert_eq!((v["kind"].as_str(), v["phase"].as_str()), (Some("levels"), Some("joining")), "{v:#}");
    assert_eq!(v["expected_workers"], 2);
    let start = |i: usize| {
        let mut w = Command::new(worker());
        w.args(["--connect", addr, "--threads", "1"]).arg("--data").arg(dir.join(&format!("w{i}")));
        w.env_remove("RETRO_FAULT");
        Proc::start(&format!("worker{i}"), w, dir.join(&format!("w{i}.log")))
    };
    // The join is the same for every kind of job: a worker started for
    // another plan is refused, and takes no place.
    let mut stranger = Command::new(worker());
    stranger.args(["--connect", addr, "--plan-hash", "0123456789abcdef"]).arg("--data").arg(dir.join("stranger"));
    let out = run(stranger, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("started for plan 0123456789abcdef"), "{err}");
    assert_eq!(common::get_json(status, "/status")["workers"].as_array().map(Vec::len), Some(0));
    let first = start(0);
    let v = common::status_until(status, coord, |v| v["workers"].as_array().is_some_and(|w| w.len() == 1));
    assert_eq!(v["phase"], "joining", "one of two workers: the job waits");
    let shards: Vec<u64> = v["workers"][0]["shards"].as_array().unwrap().iter().map(|s| s.as_u64().unwrap()).collect();
    assert!(!shards.is_empty() && shards.iter().all(|s| s % 2 == 0), "worker 0 of 2 owns the even shards: {shards:?}");
    assert_eq!(v["workers"][0]["lost"], false);
    let job = v["job"].as_str().unwrap().to_string();
    let metrics = common::get_text(status, "/metrics");
    assert!(metrics.contains(&format!("\nretro_workers{{retro_job=\"{job}\",state=\"active\"}} 1\n")), "{metrics}");
    vec![first, start(1)]
}

#[test]
fn a_damaged_level_file_is_refused_with_its_name() {
    let dir = TempDir::new("peg-damaged");
    let mut c = ledger_command(&dir);
    c.env("RETRO_FAULT", "peg-mid-level:0:6");
    assert!(!run(c, LIMIT).status.success());
    let path = dir.join("ck/levels/level-003/shard-0000.lvl");
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let out = run(ledger_command(&dir), LIMIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("level-003/shard-0000.lvl") && err.contains("damaged"), "{err}");
}

#[test]
fn class_test_counts_the_published_problems() {
    let english = Board::new(BoardKind::English);
    assert_eq!(class_feasible(&english).len(), 125);
    let european = Board::new(BoardKind::European);
    let feasible = class_feasible(&european);
    assert_eq!(feasible.len(), 64);
    let centre = parse_hole("d4").unwrap();
    assert!(feasible.iter().all(|&(s, _)| s != centre), "the European central game is ruled out by the class");
    let starts: std::collections::BTreeSet<String> =
        searches_needed(&european).iter().map(|&(s, _)| hole_name(s)).collect();
    let starts: Vec<String> = starts.into_iter().collect();
    assert_eq!(starts, ["c1", "d2", "d3"], "feasible starts up to symmetry");
}

#[test]
fn peg_solve_prints_a_solution_that_replays() {
    let out = run(
        {
            let mut c = Command::new(coordinator());
            c.args(["peg", "solve", "--board", "english", "--start", "d4", "--json"]);
            c
        },
        LIMIT,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "solvable");
    let board = Board::new(BoardKind::English);
    let start = board.single_vacancy(parse_hole("d4").unwrap());
    let jumps: Vec<_> = v["solution"]
        .as_str()
        .unwrap()
        .split(' ')
        .map(|j| {
            let (from, to) = j.split_once('-').unwrap();
            let (from, to) = (parse_hole(from).unwrap(), parse_hole(to).unwrap());
            retro_games::peg::Jump { from, over: (from + to) / 2, to }
        })
        .collect();
    assert_eq!(replay(&board, start, &jumps).unwrap(), 1 << parse_hole("d4").unwrap());

    let mut c = Command::new(coordinator());
    c.args(["estimate", "--plan"]).arg(repo().join("plans/peg-english.toml"));
    let out = run(c, LIMIT);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("peg solitaire plan"));

    let solve = |args: &[&str]| {
        let mut c = Command::new(coordinator());
        c.args(["peg", "solve"]).args(args);
        run(c, LIMIT)
    };
    let out = solve(&["--board", "european", "--start", "d4"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("infeasible"));
    for (args, needle) in [
        (&["--start", "a1"][..], "not a hole of the english board"),
        (&["--board", "triangle"][..], "unknown board"),
        (&["--start", "d4", "--finish", "zz"][..], "not a hole"),
    ] {
        let out = solve(args);
        assert!(!out.status.success(), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(needle), "{args:?}");
    }
}

#[test]
fn committed_european_ledgers_agree_with_a_plain_search() {
    // The committed European ledgers (runs of an hour or more) against a
    // plain breadth-first search over whole boards for their first levels: a
    // map from board to jump sequences per level, no folding, no shards, no
    // files. And their own sums: totals, solutions by finishing hole, and the
    // start's symmetries (the mirror that fixes d2 and d3 maps a5 to g5).
    let board = Board::new(BoardKind::European);
    let mut seen = 0;
    let mut ends = BTreeMap::<(u8, u8), u128>::new();
    let mut c1_compared = false;
    for entry in std::fs::read_dir(repo().join("docs/results")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("peg-european-") && name.ends_with("-summary.json")) {
            continue;
        }
        seen += 1;
        let s: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let number =
            |v: &Value| -> u128 { v.as_str().map_or_else(|| u128::from(v.as_u64().unwrap()), |t| t.parse().unwrap()) };
        let start = board.single_vacancy(parse_hole(s["vacancy"].as_str().unwrap()).unwrap());
        let folded = retro_games::peg::Folded::of_start(board.clone(), start);
        let levels = s["levels"].as_array().unwrap();
        let mut level: BTreeMap<u64, u128> = BTreeMap::from([(start, 1)]);
        for (jumps, row) in levels.iter().enumerate().take(9) {
            let classes: std::collections::BTreeSet<u64> = level.keys().map(|&p| folded.canonical(p)).collect();
            let got = (
                level.len() as u128,
                classes.len() as u128,
                level.values().sum::<u128>(),
                level.keys().filter(|&&p| board.is_dead_end(p)).count() as u128,
            );
            let want = (
                number(&row["positions"]),
                number(&row["up_to_symmetry"]),
                number(&row["sequences"]),
                number(&row["dead_ends"]),
            );
            assert_eq!(got, want, "{name}: after {jumps} jumps");
            let mut next = BTreeMap::new();
            for (&pegs, &ways) in &level {
                for jump in board.jumps(pegs) {
                    *next.entry(pegs ^ jump.mask()).or_insert(0) += ways;
                }
            }
            level = next;
        }
        let sum = |field: &str| levels.iter().map(|row| number(&row[field])).sum::<u128>();
        let totals = &s["totals"];
        for field in ["positions", "up_to_symmetry", "dead_ends", "winnable"] {
            assert_eq!(sum(field), number(&totals[field]), "{name}: total {field}");
        }
        let last = levels.last().unwrap();
        assert_eq!(last["pegs"], 1, "{name}: the last level holds one peg");
        let solutions = number(&totals["solutions"]);
        assert_eq!(number(&last["sequences"]), solutions, "{name}: solutions are the sequences to one peg");
        let by_hole: BTreeMap<&str, u128> = s["solutions_by_hole"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["hole"].as_str().unwrap(), number(&h["solutions"])))
            .collect();
        assert_eq!(by_hole.values().sum::<u128>(), solutions, "{name}: solutions by hole");
        let vacancy = s["vacancy"].as_str().unwrap().to_string();
        for (hole, &count) in &by_hole {
            ends.insert(board_orbit_of_pair(&vacancy, hole), count);
        }
        // c1 has the one published enumeration: states (board and the hole
        // the last jump landed in) per level, all 36 levels.
        if vacancy == "c1" {
            let published: Vec<u128> =
                std::fs::read_to_string(repo().join("results/reference/peg-european-c1-meyrignac.tsv"))
                    .unwrap()
                    .lines()
                    .filter(|l| !l.starts_with('#'))
                    .map(|l| l.split('\t').nth(1).unwrap().parse().unwrap())
                    .collect();
            let computed: Vec<u128> = levels.iter().map(|row| number(&row["landing_states"])).collect();
            assert_eq!(computed, published, "{name}: states per level against Meyrignac's enumeration");
            c1_compared = true;
        }
        // Finishing holes in one orbit of the start's symmetries end as many solutions.
        let one_peg = |hole: &str| folded.canonical(1 << parse_hole(hole).unwrap());
        for (a, wa) in &by_hole {
            for (b, wb) in &by_hole {
                if one_peg(a) == one_peg(b) {
                    assert_eq!(wa, wb, "{name}: solutions ending on {a} and {b}, one orbit");
                }
            }
        }
    }
    assert!(seen >= 3, "docs/results holds the c1, d2 and d3 summaries");
    assert!(c1_compared, "the c1 summary was compared with the published enumeration");
    // A game played backwards is the same game on the complement board (a
    // jump's three holes flip either way), so the solutions from a vacant to
    // one peg on b are as many as from b vacant to one peg on a; and a
    // symmetry of the board maps both holes at once. Keyed by the pair's orbit,
    // two runs check each other where both are committed: d2 and d3 each
    // way, c1 and d2 (d2 ends on a3, in c1's orbit).
    let mut pairs = 0;
    for (&(from, to), count) in &ends {
        let back = board_orbit_of_pair(&hole_name(to), &hole_name(from));
        if let Some(back_count) = ends.get(&back) {
            assert_eq!(count, back_count, "solutions {} to {} and back", hole_name(from), hole_name(to));
            pairs += 1;
        }
    }
    assert!(pairs >= 4, "d2 and d3, c1 and d2 were compared each way ({pairs} pairs)");
}

/// The least image of the hole pair (a, b) under the board's eight
/// symmetries, both holes mapped by the same one.
fn board_orbit_of_pair(a: &str, b: &str) -> (u8, u8) {
    let (a, b) = (parse_hole(a).unwrap(), parse_hole(b).unwrap());
    (0..8)
        .map(|s| {
            let image = |h: u8| retro_games::peg::symmetry::apply(s, 1 << h).trailing_zeros() as u8;
            (image(a), image(b))
        })
        .min()
        .unwrap()
}
