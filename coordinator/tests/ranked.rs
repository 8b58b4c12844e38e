//! The ranked game (docs/RANKED.md) by the real binaries: plans/stage1-ranked.toml
//! reproduces the table of an independent solver (tests/reference/stage1-ranked.tsv,
//! written and checked by engine/tests/ranked_brute_force.rs), killed and
//! resumed it writes the same bytes, three workers write the embedded bytes,
//! and the first-winner plan is untouched by the objective key.

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);
const PLAN: &str = "plans/stage1-ranked.toml";

/// The ranked stage-1 run into `dir` (tablebases in dir/tb, checkpoints in dir/ck).
fn ranked_command(dir: &TempDir) -> Command {
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join(PLAN));
    c.arg("--output").arg(dir.join("tb")).arg("--checkpoints").arg(dir.join("ck"));
    c.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    c
}

/// The numbers of a JSON document by dotted path (array items by index).
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    let key = |k: &str| if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| flatten(&key(k), v, out)),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, v)| flatten(&key(&i.to_string()), v, out)),
        Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// The reference table: `key<TAB>value` lines, `#` comments.
fn reference_table() -> BTreeMap<String, String> {
    let path = repo().join("coordinator/tests/reference/stage1-ranked.tsv");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l.split_once('\t').expect("key<TAB>value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn summary_in(dir: &TempDir) -> Value {
    let text = std::fs::read_to_string(dir.join("tb").join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every number of the independent solver's table, as the run's summary
/// prints it; a count the summary does not print is absent there (a zero).
#[test]
fn stage1_ranked_reproduces_the_independent_solvers_table() {
    let dir = TempDir::new("ranked");
    let out = run(ranked_command(&dir), LIMIT);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = summary_in(&dir);
    let mut got = BTreeMap::new();
    flatten("", &summary, &mut got);
    let want = reference_table();
    assert!(want.len() > 60, "the reference table has {} rows", want.len());
    let want: BTreeMap<String, String> = want.into_iter().filter(|(k, _)| !k.starts_with("kingmaking.")).collect();
    for (k, v) in &want {
        assert_eq!(got.get(k), Some(v), "{k}");
    }
    // What the table leaves out is zero in the summary (the solver counts
    // only what occurs), so no count of the summary goes unchecked.
    for (k, v) in &got {
        let counted = k.starts_with("all.") || k.starts_with("reachable.");
        if counted && !want.contains_key(k) {
            assert_eq!(v, "0", "{k} is {v} in the summary and absent from the reference table");
        }
    }
    assert_eq!(summary["objective"], "ranked");
    assert_eq!(summary["bfs_from_start"]["complete"], true);
    let layers: Vec<&str> =
        summary["layers"].as_array().unwrap().iter().map(|l| l["question"].as_str().unwrap()).collect();
    assert_eq!(layers, ["top2(A)"]);
    // The tablebase header names the objective, so no reader takes the
    // file for a first-winner layer.
    let verify = Command::new(coordinator()).arg("verify").arg("--tablebase").arg(dir.join("tb")).output().unwrap();
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stderr));
    let file = dir.join("tb").join(summary["tablebases"][0]["file"].as_str().unwrap());
    let header = retro_engine::tablebase::TablebaseReader::open(&file).unwrap().header().clone();
    assert_eq!(header.params["objective"], "ranked", "{:?}", header.params);
}

/// Killed by a fault point in the middle of the layer, the run resumes from
/// its checkpoints and writes the uninterrupted run's bytes.
#[test]
fn a_killed_ranked_run_resumes_to_the_same_bytes() {
    let plain = TempDir::new("ranked-plain");
    assert!(run(ranked_command(&plain), LIMIT).status.success());
    let dir = TempDir::new("ranked-killed");
    let mut killed = ranked_command(&dir);
    killed.args(["--checkpoint-secs", "0"]).env("RETRO_FAULT", "after-apply:0:4");
    let out = run(killed, LIMIT);
    assert!(!out.status.success(), "the fault point stops the run");
    let resumed = run(ranked_command(&dir), LIMIT);
    let log = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{log}");
    assert!(log.contains("resum"), "the second run resumes: {log}");
    assert_eq!(checksums_of(&dir.join("tb"), 1), checksums_of(&plain.join("tb"), 1));
    assert_eq!(summary_in(&dir)["all"], summary_in(&plain)["all"]);
}

/// Three worker processes on loopback write the embedded run's bytes.
#[test]
fn three_workers_write_the_embedded_ranked_bytes() {
    let plain = TempDir::new("ranked-embedded");
    assert!(run(ranked_command(&plain), LIMIT).status.success());
    let dir = TempDir::new("ranked-cluster");
    let mut cmd = ranked_command(&dir);
    cmd.args(["--listen", "127.0.0.1:0", "--expect-workers", "3"]);
    let mut coord = Proc::start("coordinator", cmd, dir.join("coord.log"));
    let addr = listening_address(&coord);
    let mut workers: Vec<Proc> = (1..=3).map(|i| loopback_worker(&dir, &addr, i, "a")).collect();
    assert!(coord.wait(LIMIT).success(), "{}", coord.logs());
    for w in &mut workers {
        assert!(w.wait(LIMIT).success(), "{}", w.logs());
    }
    assert_eq!(checksums_of(&dir.join("tb"), 1), checksums_of(&plain.join("tb"), 1));
}

/// A plan names one objective, and a ranked plan one layer: the errors say
/// what to write instead.
#[test]
fn broken_ranked_plans_name_the_field() {
    let dir = TempDir::new("ranked-broken");
    let base = std::fs::read_to_string(repo().join(PLAN)).unwrap();
    for (from, to, expect) in [
        ("objective = \"ranked\"", "objective = \"second\"", "job.objective"),
        ("questions = [\"top2(A)\"]", "questions = [\"top2(A)\", \"solo(A)\"]", "top2(B), top2(C)"),
        ("objective = \"ranked\"", "objective = \"first-winner\"", "invalid question \"top2(A)\""),
    ] {
        assert!(base.contains(from), "{from}");
        let plan = dir.join("broken.toml");
        std::fs::write(&plan, base.replace(from, to)).unwrap();
        let out =
            Command::new(coordinator()).arg("--plan").arg(&plan).arg("--output").arg(dir.join("tb")).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(expect), "{to}: {err}");
    }
}

/// `coordinator kingmaking` beside the first-winner stage-1 job gives the
/// independent solver's counts (the `kingmaking.` rows of the table), and
/// refuses a ranked directory where the first-winner one belongs.
#[test]
fn kingmaking_reproduces_the_independent_solvers_counts() {
    let dir = TempDir::new("ranked-kingmaking");
    let ranked = solve_plan(&dir, PLAN, "ranked");
    let first_winner = solve_plan(&dir, "plans/stage1.toml", "first");
    let out = Command::new(coordinator())
        .arg("kingmaking")
        .arg("--first-winner")
        .arg(&first_winner)
        .arg("--ranked")
        .arg(&ranked)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut got = BTreeMap::new();
    flatten("kingmaking", &result, &mut got);
    let want: BTreeMap<String, String> =
        reference_table().into_iter().filter(|(k, _)| k.starts_with("kingmaking.")).collect();
    assert!(want.len() > 10, "{} kingmaking rows", want.len());
    for (k, v) in &got {
        if k == "kingmaking.order" {
            continue;
        }
        assert_eq!(v, want.get(k).map_or("0", String::as_str), "{k}");
    }
    for k in want.keys() {
        assert!(got.contains_key(k), "{k} is not in the command's output");
    }
    // A sample of ranks estimates the same counts: every estimate's 95 %
    // interval, widened twofold, holds the exact count.
    let sampled = Command::new(coordinator())
        .arg("kingmaking")
        .arg("--first-winner")
        .arg(&first_winner)
        .arg("--ranked")
        .arg(&ranked)
        .args(["--sample", "20000", "--json"])
        .output()
        .unwrap();
    assert!(sampled.status.success(), "{}", String::from_utf8_lossy(&sampled.stderr));
    let sampled: Value = serde_json::from_slice(&sampled.stdout).unwrap();
    assert!(sampled.get("reachable").is_none(), "a sample has no reachable scope");
    // Beside the sample, the spoiler-draw positions counted exactly.
    let mut exact = BTreeMap::new();
    flatten("kingmaking.all", &sampled["spoilers_exact"], &mut exact);
    assert!(exact.len() > 5, "{exact:?}");
    for (k, v) in &exact {
        assert_eq!(v, want.get(k).map_or("0", String::as_str), "{k} (exact beside the sample)");
    }
    let (drawn, of) = (sampled["sample"]["drawn"].as_f64().unwrap(), sampled["sample"]["of"].as_f64().unwrap());
    let mut in_sample = BTreeMap::new();
    flatten("kingmaking.all", &sampled["all"], &mut in_sample);
    for (k, v) in &in_sample {
        let exact: f64 = want.get(k).map_or(0.0, |v| v.parse().unwrap());
        let p = v.parse::<f64>().unwrap() / drawn;
        let half = 1.96 * (p * (1.0 - p) / drawn).sqrt() * of;
        assert!((p * of - exact).abs() <= 2.0 * half + 1e-9, "{k}: estimate {} ± {half} against {exact}", p * of);
    }
    let swapped = Command::new(coordinator())
        .args(["kingmaking", "--first-winner"])
        .arg(&ranked)
        .arg("--ranked")
        .arg(&first_winner)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&swapped.stderr);
    assert!(!swapped.status.success() && err.contains("no such tablebase"), "{err}");
}

/// The committed stage-2 summary (docs/results/, from the real run) adds up:
/// its legal and illegal ranks are the stage's 14,841,300,390, live and
/// finished positions make the legal ones, the race covers the positions
/// after a finish, and the run's consistency check saw a million positions;
/// the search from the start ran to its end and agrees with the first-winner
/// summary's reachable positions.
#[test]
fn committed_stage2_ranked_summary_adds_up() {
    let text = std::fs::read_to_string(repo().join("docs/results/stage2-ranked-summary.json")).unwrap();
    let s: Value = serde_json::from_str(&text).unwrap();
    let n = |v: &Value| v.as_u64().unwrap();
    let a = &s["all"];
    assert_eq!(n(&a["positions"]) + n(&s["illegal"]), n(&s["positions"]));
    assert_eq!(n(&s["positions"]), retro_games::cc3::Cc3::new(2).unwrap().ranker.positions() as u64);
    assert_eq!(n(&a["terminal"]) + n(&a["live_before_a_finish"]) + n(&a["live_after_a_finish"]), n(&a["positions"]));
    let race = &a["race"]["all"];
    assert_eq!(n(&race["win"]) + n(&race["loss"]) + n(&race["draw"]), n(&a["live_after_a_finish"]));
    assert!(n(&s["consistency"]["positions"]) > 900_000, "{}", s["consistency"]);
    assert_eq!(s["objective"], "ranked");
    // The search from the start ran to its end: its depths count the
    // reachable scope, and before a finish the ranked game is the stage
    // game, so its reachable live positions before a finish are the
    // first-winner summary's reachable positions that are not terminal (two
    // runs, two analyses).
    let bfs = &s["bfs_from_start"];
    assert_eq!(bfs["complete"], true);
    let r = &s["reachable"];
    let by_depth: u64 = bfs["depths"].as_array().unwrap().iter().map(|d| n(&d["new"])).sum();
    assert_eq!(by_depth, n(&r["positions"]));
    assert_eq!(n(&r["terminal"]) + n(&r["live_before_a_finish"]) + n(&r["live_after_a_finish"]), n(&r["positions"]));
    let after: u64 = bfs["depths"].as_array().unwrap().iter().map(|d| n(&d["after_a_finish"])).sum();
    assert_eq!(after, n(&r["live_after_a_finish"]));
    let stage = std::fs::read_to_string(repo().join("docs/results/stage2-summary.json")).unwrap();
    let stage: Value = serde_json::from_str(&stage).unwrap();
    let reach = &stage["scopes"]["reachable"];
    assert_eq!(n(&r["live_before_a_finish"]), n(&reach["positions"]) - n(&reach["categories"]["terminal"]));
    for p in ["A", "B", "C"] {
        let w = &r["top2"][p];
        assert!(n(&w["win"]) + n(&w["loss"]) + n(&w["draw"]) <= n(&r["positions"]) - n(&r["terminal"]), "{p}");
    }
}

/// The committed stage-2 kingmaking summary (docs/results/, `coordinator
/// kingmaking --sample 1000000 --json` over the real stage-2 tablebases) adds
/// up and agrees with the published category table by two routes: its exact
/// count of the spoiler-draw positions (one pass over every orbit) is the
/// published 2,869,152, and the sample's share of kingmaker positions puts the
/// published 11,988,362,862 inside four standard errors. The sample's spoiler
/// counts (a rank-by-rank walk of the drawn ranks) agree with the exact pass's
/// shares within four standard errors too: two routes through the same values.
#[test]
fn committed_stage2_kingmaking_agrees_with_the_published_table() {
    let text = std::fs::read_to_string(repo().join("docs/results/stage2-kingmaking-summary.json")).unwrap();
    let s: Value = serde_json::from_str(&text).unwrap();
    let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"));
    let (drawn, of) = (n(&s["sample"]["drawn"]), n(&s["sample"]["of"]));
    assert_eq!(of, retro_games::cc3::Cc3::new(2).unwrap().ranker.positions() as u64);
    let exact = &s["spoilers_exact"];
    assert_eq!(n(&exact["spoiler_draw_positions"]), reference_u64("stage2.category.spoiler_draw"));
    // The estimate of a share p from `drawn` ranks, within four standard errors.
    let within = |hits: u64, trials: u64, p: f64, what: &str| {
        let sd = (p * (1.0 - p) / trials as f64).sqrt();
        let got = hits as f64 / trials as f64;
        assert!((got - p).abs() <= 4.0 * sd + 1e-12, "{what}: {hits} of {trials}, want a share near {p}");
    };
    let all = &s["all"];
    let published = reference_u64("stage2.category.kingmaker") as f64 / of as f64;
    within(n(&all["kingmaker_positions"]), drawn, published, "kingmaker positions");
    let spoilers = n(&exact["spoiler_draw_positions"]) as f64 / of as f64;
    within(n(&all["spoiler_draw_positions"]), drawn, spoilers, "spoiler-draw positions");
    let (ex, sam) = (&exact["spoiler"], &all["spoiler"]);
    let share = |a: &str, b: f64| n(&ex[a]) as f64 / b;
    within(
        n(&sam["positions"]),
        n(&all["spoiler_draw_positions"]),
        share("positions", n(&exact["spoiler_draw_positions"]) as f64),
        "spoiler to move",
    );
    within(
        n(&sam["keeps_draw"]),
        n(&sam["positions"]),
        share("keeps_draw", n(&ex["positions"]) as f64),
        "keeps the draw",
    );
    // Each block's parts add up to its whole.
    for spoiler in [ex, sam] {
        let p = n(&spoiler["positions"]);
        assert_eq!(n(&spoiler["top2_win"]) + n(&spoiler["top2_draw"]) + n(&spoiler["top2_loss"]), p);
        assert_eq!(n(&spoiler["keeps_draw"]) + n(&spoiler["loses_draw"]), p);
        assert!(n(&spoiler["loses_draw_top2_win"]) <= n(&spoiler["loses_draw"]));
    }
    let k = &all["kingmaker"];
    assert_eq!(n(&k["positions"]) + n(&k["mover_enables_one"]), n(&all["kingmaker_positions"]));
    assert_eq!(n(&k["top2_win"]) + n(&k["top2_draw"]) + n(&k["top2_loss"]), n(&k["positions"]));
    assert_eq!(
        n(&k["keeps_top2_and_both"]) + n(&k["keeps_top2_and_one"]) + n(&k["keeps_top2_and_neither"]),
        n(&k["top2_win"])
    );
    assert_eq!(n(&k["ranked_two_winners"]) + n(&k["ranked_decided"]) + n(&k["ranked_no_winner"]), n(&k["positions"]));
}
