//! Stage 1 solved by a real embedded run, checked against the published numbers
//! (results/reference/cc3.tsv), plus estimate and explore.

use crate::common::*;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

fn summary_of(dir: &TempDir) -> Value {
    let out = run(embedded_command(dir), Duration::from_secs(120));
    assert!(out.status.success(), "stage 1 run failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.join("tb").join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn stage1_reproduces_the_published_numbers() {
    let dir = TempDir::new("stage1");
    let s = summary_of(&dir);
    let r = &s["scopes"]["reachable"];
    assert_eq!(s["positions"], reference_u64("stage1.lane_restricted_positions"));
    assert_eq!(r["positions"], reference_u64("stage1.reachable_from_start"));
    for (cat, key) in [
        ("terminal", "stage1.category.terminal"),
        ("solo_win", "stage1.category.solo_win"),
        ("kingmaker", "stage1.category.kingmaker"),
        ("spoiler_draw", "stage1.category.spoiler_draw"),
        ("other", "stage1.category.other"),
    ] {
        assert_eq!(r["categories"][cat], reference_u64(key), "category {cat}");
    }
    for p in ["A", "B", "C"] {
        assert_eq!(r["solo"][p]["win"], reference_u64("stage1.solo_per_player.win"), "solo({p}) win");
        assert_eq!(r["solo"][p]["loss"], reference_u64("stage1.solo_per_player.loss"), "solo({p}) loss");
        assert_eq!(r["solo"][p]["draw"], reference_u64("stage1.solo_per_player.draw"), "solo({p}) draw");
    }
    // The start is pure kingmaker: no solo win (and no draw), all six enables forced.
    assert!(reference()["stage1.start"].starts_with("pure kingmaker"));
    assert_eq!(s["start"]["category"], "kingmaker");
    for p in ["A", "B", "C"] {
        assert_eq!(s["start"]["solo"][p], "loss");
    }
    for e in ["A>B", "A>C", "B>A", "B>C", "C>A", "C>B"] {
        assert_eq!(s["start"]["enable"][e], true, "enable({e}) at the start");
    }
    // The solo layer's round count matches the article's.
    assert_eq!(s["layers"][0]["question"], "solo(A)");
    assert_eq!(s["layers"][0]["rounds"], reference_u64("stage1.solo_layer_last_round"));
    // Internal consistency: the depths add up to the reachable set, and the
    // whole space is the reachable set plus the rest.
    let by_depth: u64 = s["bfs_from_start"].as_array().unwrap().iter().map(|d| d["new"].as_u64().unwrap()).sum();
    assert_eq!(by_depth, r["positions"].as_u64().unwrap());
    assert_eq!(s["canonical_placements"].as_u64().unwrap() * 3, s["positions"].as_u64().unwrap());
    assert!(s["no_move_positions"].is_u64());
    assert_eq!(s["tablebases"].as_array().unwrap().len(), 3);
    // Re-running the finished job changes nothing.
    let before = checksums(&dir.join("tb"));
    let again = run(embedded_command(&dir), Duration::from_secs(120));
    assert!(again.status.success());
    assert_eq!(checksums(&dir.join("tb")), before);
}

/// The analysis has two ways to count by depth (a depth map and one orbit
/// pass where memory allows, else counting each depth as the search reaches
/// it): from the same tablebases they must give the same summary.
#[test]
fn both_ways_of_the_analysis_give_the_same_summary() {
    use retro_coordinator::{job, manifest::Manifest, plan::Plan};
    use retro_results::cc3::summary;
    let dir = TempDir::new("two-analyses");
    summary_of(&dir);
    let plan =
        Plan::from_toml_str(&std::fs::read_to_string(repo().join("plans/stage1.toml")).unwrap(), "stage1").unwrap();
    let spec = job::job_spec(&plan);
    let manifest =
        Manifest::load(&dir.join("ck").join("coordinator.json"), &spec.name, &spec.plan_hash, spec.rank_order)
            .unwrap()
            .expect("the finished job's manifest");
    let game = retro_games::cc3::Cc3::new(1).unwrap();
    let summary_with = |memory| {
        let s = summary::compute(&game, &dir.join("tb"), &manifest.solved(), 2, memory).unwrap();
        let mut v = serde_json::to_value(&s).unwrap();
        v.as_object_mut().unwrap().remove("analysis_seconds");
        v
    };
    let by_map = summary_with(Some(u64::MAX));
    let per_depth = summary_with(Some(0));
    assert_eq!(by_map, per_depth);
    assert_eq!(summary_with(None), per_depth, "memory unknown: the way that needs less");
    assert!(by_map["bfs_from_start"].as_array().unwrap().len() > 5);
}

#[test]
fn probe_shows_the_start_and_its_moves() {
    let dir = TempDir::new("probe");
    summary_of(&dir);
    let mut c = Command::new(coordinator());
    c.args(["probe", "--json", "--tablebase"]).arg(dir.join("tb"));
    let out = run(c, Duration::from_secs(30));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(p["position"]["category"], "kingmaker");
    assert_eq!(p["position"]["enable"]["B>C"], true);
    let moves = p["moves"].as_array().unwrap();
    assert!(!moves.is_empty());
    // A kingmaker's choice is visible: there is a position where the player to
    // move cannot win, one move hands the first opponent a forced win and
    // another move hands it to the second.
    let prober = retro_probe::cc3::Prober::open(&dir.join("tb")).unwrap();
    let game = retro_games::cc3::Cc3::new(1).unwrap();
    let names = ["A", "B", "C"];
    let found = (0..game.ranker.positions() as u64).any(|r| {
        let pos = game.unrank(r);
        let probe = prober.probe(&pos).unwrap();
        let me = names[pos.turn as usize];
        let (o1, o2) = (names[(pos.turn as usize + 1) % 3], names[(pos.turn as usize + 2) % 3]);
        let hands = |o: &str| probe.moves.iter().any(|m| m.child.solo[o] == "win");
        probe.position.category == "kingmaker" && probe.position.solo[me] == "loss" && hands(o1) && hands(o2)
    });
    assert!(found, "stage 1 has a kingmaker who can hand the win to either opponent");
    let position = p["position"]["position"].as_str().unwrap().to_string();
    let mut c = Command::new(coordinator());
    c.args(["probe", "--tablebase"]).arg(dir.join("tb")).args(["--position", &position]);
    let text = run(c, Duration::from_secs(30));
    assert!(String::from_utf8_lossy(&text.stdout).contains("category: kingmaker"));
    // A malformed position is a clear error.
    let mut c = Command::new(coordinator());
    c.args(["probe", "--tablebase"]).arg(dir.join("tb")).args(["--position", "z9/a1/b1 A"]);
    let bad = run(c, Duration::from_secs(30));
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no cell named"));
}

#[test]
fn estimate_gives_exact_counts_for_stages_2_and_3() {
    for (plan, pos, canon) in [
        ("plans/stage2.toml", "stage2.lane_restricted_positions", "stage2.canonical_placements_c3"),
        ("plans/stage3.toml", "stage3.lane_restricted_positions", "stage3.canonical_c3"),
    ] {
        let mut c = Command::new(coordinator());
        c.args(["estimate", "--json", "--plan"]).arg(repo().join(plan));
        let out = run(c, Duration::from_secs(30));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        // Stage 3 exceeds u64: compare the digits as text.
        let field = |name: &str| -> String {
            let at = text.find(&format!("\"{name}\": ")).unwrap() + name.len() + 4;
            text[at..].chars().take_while(|c| c.is_ascii_digit()).collect()
        };
        assert_eq!(field("positions"), reference()[pos], "{plan} positions");
        assert_eq!(field("canonical_placements"), reference()[canon], "{plan} canonical placements");
    }
}

/// `coordinator bench` measures every building block on a small slice and
/// refuses an order whose ranks do not fit a u64, naming it.
#[test]
fn bench_measures_the_kernel_and_refuses_stage_3() {
    let mut c = Command::new(coordinator());
    c.args(["bench", "--order", "1", "--samples", "2000", "--slice", "1600", "--threads", "1", "--json"]);
    let out = run(c, Duration::from_secs(60));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let figures = v["figures"].as_array().unwrap();
    assert!(figures.len() >= 5, "{v}");
    for f in figures {
        assert!(f["items"].as_u64().unwrap() > 0, "{f}");
    }
    assert!(v["peak_rss_bytes"].as_u64().unwrap() > 0, "{v}");
    let mut c = Command::new(coordinator());
    c.args(["bench", "--order", "3", "--samples", "10", "--slice", "10"]);
    let out = run(c, Duration::from_secs(30));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("order 3 does not fit u64 ranks"), "{err}");
}

#[test]
fn explore_stage2_depth_9() {
    let mut c = Command::new(coordinator());
    c.args(["explore", "--json", "--depth", "9", "--plan"]).arg(repo().join("plans/stage2.toml"));
    let out = run(c, Duration::from_secs(300));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["depths"][9]["depth"], 9);
    assert_eq!(v["depths"][9]["new"], reference_u64("stage2.bfs_from_start.depth9_new_positions"));
}

/// `coordinator explore --scratch DIR` parks the idle visited bitsets in
/// DIR and finds the same depths as the search held in memory; DIR is gone
/// afterwards.
#[test]
fn explore_with_a_scratch_directory_finds_the_same_depths() {
    let dir = TempDir::new("explore-scratch");
    let scratch = dir.join("parked");
    let explore = |scratch: Option<&std::path::Path>| {
        let mut c = Command::new(coordinator());
        c.args(["explore", "--json"]);
        if let Some(s) = scratch {
            c.arg("--scratch").arg(s);
        }
        let out = run(c, Duration::from_secs(60));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["depths"].clone()
    };
    let parked = explore(Some(&scratch));
    assert!(parked.as_array().is_some_and(|d| d.len() > 3), "{parked}");
    assert_eq!(parked, explore(None));
    assert!(!scratch.exists(), "the scratch directory is removed");
}

/// `coordinator check` puts every published stage-1 number next to the run's
/// value and passes; a summary with one count changed fails, naming the key.
#[test]
fn check_compares_every_published_number() {
    let dir = TempDir::new("stage1-check");
    let mut s = summary_of(&dir);
    let check = |path: &std::path::Path| {
        let mut c = Command::new(coordinator());
        c.arg("check").arg("--summary").arg(path);
        run(c, Duration::from_secs(30))
    };
    let out = check(&dir.join("tb").join("summary.json"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let published = reference().keys().filter(|k| k.starts_with("stage1.")).count();
    assert_eq!(text.lines().filter(|l| l.starts_with("| `stage1.")).count(), published, "{text}");
    assert!(text.contains("12 published numbers compared: 12 match, 0 mismatch, 0 missing"), "{text}");

    s["scopes"]["reachable"]["categories"]["kingmaker"] = 241.into();
    let tampered = dir.join("tampered.json");
    std::fs::write(&tampered, serde_json::to_string(&s).unwrap()).unwrap();
    let out = check(&tampered);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| `stage1.category.kingmaker` | 240 | 241 | **MISMATCH**"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not reproduce every published number"));
}

/// The committed stage-2 summary (docs/results/, from the real run; see
/// docs/results/stage2-notes.md) reproduces every published stage-2 number,
/// and its own totals agree with each other: the categories cover the whole
/// space and the breadth-first depths add up to the reachable count.
#[test]
fn committed_stage2_summary_reproduces_every_published_number() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/results/stage2-summary.json");
    let mut c = Command::new(coordinator());
    c.arg("check").arg("--summary").arg(&path);
    let out = run(c, Duration::from_secs(30));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let published = reference().keys().filter(|k| k.starts_with("stage2.")).count();
    assert_eq!(text.lines().filter(|l| l.starts_with("| `stage2.")).count(), published, "{text}");
    assert!(text.contains(", 0 mismatch, 0 missing"), "{text}");
    // The same verdicts as JSON.
    let mut c = Command::new(coordinator());
    c.arg("check").arg("--summary").arg(&path).arg("--json");
    let out = run(c, Duration::from_secs(30));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["all_match"], true);
    let lines = report["lines"].as_array().unwrap();
    assert_eq!(lines.iter().filter(|l| l["key"].as_str().unwrap().starts_with("stage2.")).count(), published);
    assert!(lines.iter().all(|l| l["verdict"] == "match" || l["verdict"] == "not_computed"), "{report}");

    let s: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let sum = |v: &Value| v.as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum(&s["scopes"]["all"]["categories"]), s["positions"].as_u64().unwrap());
    let reachable = s["scopes"]["reachable"]["positions"].as_u64().unwrap();
    assert_eq!(sum(&s["scopes"]["reachable"]["categories"]), reachable);
    let depths = s["bfs_from_start"].as_array().unwrap();
    assert_eq!(depths.iter().map(|d| d["new"].as_u64().unwrap()).sum::<u64>(), reachable);
    for d in depths {
        assert_eq!(sum(&d["categories"]), d["new"].as_u64().unwrap(), "{d}");
    }
}

/// `--version` of both programs and summary.json name the commit the binaries
/// were built from, as git itself gives it for this checkout.
#[test]
fn version_and_summary_name_the_commit() {
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let mut commits = Vec::new();
    for bin in [coordinator(), worker()] {
        let out = std::process::Command::new(&bin).arg("--version").output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let commit =
            text.split("(commit ").nth(1).and_then(|s| s.strip_suffix(')')).unwrap_or_else(|| panic!("{text}"));
        assert!(commit == head || commit == format!("{head}-dirty"), "{text}: git says {head}");
        assert!(text.contains(env!("CARGO_PKG_VERSION")), "{text}");
        commits.push(commit.to_string());
    }
    let dir = TempDir::new("stage1-version");
    let s = summary_of(&dir);
    assert_eq!(s["program_commit"], commits[0].as_str());
}

/// `--seed-solo` solves solo(A) after the enable layers, from the LOSS
/// positions they prove: the same tablebases in fewer rounds, and the
/// summary says so (the check then leaves the article's round count out
/// instead of comparing a seeded count with it).
#[test]
fn a_seeded_solo_layer_gives_the_same_tablebases() {
    let plain = TempDir::new("stage1-plain");
    let full = summary_of(&plain);
    let seeded_dir = TempDir::new("stage1-seeded");
    let mut cmd = embedded_command(&seeded_dir);
    cmd.arg("--seed-solo");
    let out = run(cmd, Duration::from_secs(120));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "seeded run failed:\n{log}");
    assert!(log.contains("positions known LOSS from enable(A>B) and enable(A>C)"), "{log}");
    // The same values; the same plies but for the seeded layer's LOSS
    // positions, whose round is not their plies (docs/FORMAT.md).
    let (seeded_sums, plain_sums) = (checksums(&seeded_dir.join("tb")), checksums(&plain.join("tb")));
    for (file, sum) in &plain_sums {
        if file != "solo_A.depth" {
            assert_eq!(&seeded_sums[file], sum, "{file}");
        }
    }
    let depths = |dir: &TempDir| {
        use retro_engine::tablebase::DepthReader;
        let mut r = DepthReader::open(&dir.join("tb").join("solo_A.depth")).unwrap();
        let n = r.header().positions;
        (0..n).map(|i| r.probe(i).unwrap()).collect::<Vec<u8>>()
    };
    let values = retro_engine::tablebase::TablebaseReader::open(&plain.join("tb").join("solo_A.tb"))
        .unwrap()
        .read_all()
        .unwrap();
    let (seeded_plies, plain_plies) = (depths(&seeded_dir), depths(&plain));
    let mut unknown = 0;
    for (i, (s, p)) in seeded_plies.iter().zip(&plain_plies).enumerate() {
        let value = retro_engine::tablebase::unpack_value(&values, i as u64);
        if value == 2 && *s == retro_engine::values::DEPTH_UNKNOWN {
            unknown += 1; // a LOSS of the seeded layer: plies not kept
        } else {
            assert_eq!(s, p, "rank {i} (value {value}): the seeded layer's plies");
        }
    }
    assert!(unknown > 0, "the seeded layer keeps no LOSS plies");
    let text = std::fs::read_to_string(seeded_dir.join("tb").join("summary.json")).unwrap();
    let seeded: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(seeded["scopes"], full["scopes"]);
    let (s, f) = (&seeded["layers"][0], &full["layers"][0]);
    assert_eq!((s["question"].as_str(), s["seeded"].as_bool()), (Some("solo(A)"), Some(true)));
    assert_eq!(f.get("seeded"), None, "a plain run's layers are not marked");
    // Round 0 holds the known positions; the rounds after it decide the rest.
    let decided =
        |l: &Value| l["decided_per_round"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).sum::<u64>();
    assert_eq!(decided(s), decided(f));
    assert!(s["rounds"].as_u64() < f["rounds"].as_u64(), "{} against {}", s["rounds"], f["rounds"]);
    let check = Command::new(coordinator())
        .arg("check")
        .arg("--summary")
        .arg(seeded_dir.join("tb").join("summary.json"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(report.contains("1 missing") && report.contains("0 mismatch"), "{report}");
}
