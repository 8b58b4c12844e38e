//! `coordinator probe --witness`: every witness is checked against the rules
//! (legal moves from the start) and against the tablebases read independently
//! through the library's prober, on stage 1 solved by a real embedded run.

use crate::common::*;
use retro_engine::tablebase::{TablebaseHeader, TablebaseWriter, VALUE_DRAW, VALUE_ILLEGAL, VALUE_LOSS, VALUE_WIN};
use retro_games::cc3::{Cc3, Outcome, Position, children};
use retro_probe::Value as ProbeValue;
use retro_probe::cc3::Prober;
use retro_results::cc3::analysis::{Category, category};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Solves stage 1 into `dir` and returns its summary.json.
fn solve_stage1(dir: &TempDir) -> Value {
    let out = run(embedded_command(dir), Duration::from_secs(120));
    assert!(out.status.success(), "stage 1 run failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(dir.join("tb").join("summary.json")).unwrap()).unwrap()
}

/// `coordinator probe --witness KIND --json` on the tablebases in `tb`.
fn witness(tb: &Path, kind: &str) -> Value {
    let mut c = Command::new(coordinator());
    c.args(["probe", "--json", "--witness", kind, "--tablebase"]).arg(tb);
    let out = run(c, Duration::from_secs(60));
    assert!(out.status.success(), "witness {kind}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The move from `from` to `to` if `to` is a child of `from` (`from-to` or `pass`).
fn legal_move(g: &Cc3, from: &Position, to: &Position) -> Option<String> {
    if !children(&g.star, from).contains(to) {
        return None;
    }
    let p = from.turn as usize;
    let moved = from.pieces[p] ^ to.pieces[p];
    if moved == 0 {
        return Some("pass".into());
    }
    let name = |b: u128| g.star.names[b.trailing_zeros() as usize].clone();
    Some(format!("{}-{}", name(from.pieces[p] & moved), name(to.pieces[p] & moved)))
}

/// Checks that `steps` is a line of legal moves starting at `first`, each step
/// naming its move, and returns the positions (`first` included).
fn check_line(g: &Cc3, first: &Position, steps: &[Value]) -> Vec<Position> {
    let mut line = vec![*first];
    for s in steps {
        let pos = g.parse(s["position"]["position"].as_str().unwrap()).unwrap();
        let prev = line[line.len() - 1];
        let mv = legal_move(g, &prev, &pos)
            .unwrap_or_else(|| panic!("{} is not a child of {}", g.format(&pos), g.format(&prev)));
        assert_eq!(s["move"], mv.as_str(), "move from {}", g.format(&prev));
        line.push(pos);
    }
    line
}

/// The line of a witness: it starts at the start, with no move, and is legal.
fn check_witness_line(g: &Cc3, w: &Value) -> Vec<Position> {
    let steps = w["line"].as_array().unwrap();
    assert!(steps[0]["move"].is_null());
    assert_eq!(g.parse(steps[0]["position"]["position"].as_str().unwrap()).unwrap(), g.start());
    let line = check_line(g, &g.start(), &steps[1..]);
    assert_eq!(w["depth"].as_u64().unwrap() as usize, line.len() - 1);
    assert_eq!(w["position"]["position"], steps[steps.len() - 1]["position"]["position"]);
    line
}

/// The positions first reached at each depth from the start (plain search).
fn depths(g: &Cc3) -> Vec<Vec<Position>> {
    let mut seen = HashSet::from([g.start()]);
    let mut out = vec![vec![g.start()]];
    loop {
        let next: Vec<Position> =
            out[out.len() - 1].iter().flat_map(|p| children(&g.star, p)).filter(|c| seen.insert(*c)).collect();
        if next.is_empty() {
            return out;
        }
        out.push(next);
    }
}

/// The kingmaker property of `pos` (see `WitnessKind::Kingmaker`): the two
/// children handing the win to the next player and to the one after.
fn kingmaker_moves(p: &Prober, pos: &Position) -> Option<(Position, Position)> {
    let g = Cc3::new(1).unwrap();
    let a = p.answers(pos).unwrap();
    if category(&g, pos, &a) != Category::Kingmaker || a.solo[pos.turn as usize] == ProbeValue::Win {
        return None;
    }
    let m = pos.turn as usize;
    let kids = children(&g.star, pos);
    let hands = |p: &Prober, y: usize| kids.iter().copied().find(|c| p.answers(c).unwrap().solo[y] == ProbeValue::Win);
    Some((hands(p, (m + 1) % 3)?, hands(p, (m + 2) % 3)?))
}

#[test]
fn stage1_witnesses_are_legal_lines_to_the_right_positions() {
    let dir = TempDir::new("witness");
    let summary = solve_stage1(&dir);
    let tb = dir.join("tb");
    let g = Cc3::new(1).unwrap();
    let prober = Prober::open(&tb).unwrap();
    let levels = depths(&g);

    // solo-win: a shortest line, as long as the first depth explore counts a
    // solo-win position at, ending where the named player has a forced win.
    let w = witness(&tb, "solo-win");
    assert!(w["none"].is_null());
    let line = check_witness_line(&g, &w);
    let first_depth = summary["bfs_from_start"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["categories"]["solo_win"].as_u64().unwrap() > 0)
        .expect("stage 1 has solo wins")["depth"]
        .as_u64()
        .unwrap();
    assert_eq!(line.len() as u64 - 1, first_depth);
    let end = line[line.len() - 1];
    let a = prober.answers(&end).unwrap();
    assert_eq!(category(&g, &end, &a), Category::SoloWin);
    let x = ["A", "B", "C"].iter().position(|p| w["player"] == *p).unwrap();
    assert_eq!(a.solo[x], ProbeValue::Win);
    assert_eq!(w["position"]["solo"][["A", "B", "C"][x]], "win");
    for pos in &line[..line.len() - 1] {
        let a = prober.answers(pos).unwrap();
        assert_ne!(category(&g, pos, &a), Category::SoloWin, "an earlier solo win on the line");
    }

    // kingmaker: the player to move cannot win, one move hands the next player
    // a forced win and another the player after; nothing shallower qualifies.
    let w = witness(&tb, "kingmaker");
    assert!(w["none"].is_null());
    let line = check_witness_line(&g, &w);
    let end = line[line.len() - 1];
    let m = end.turn as usize;
    let a = prober.answers(&end).unwrap();
    assert_eq!(category(&g, &end, &a), Category::Kingmaker);
    assert_ne!(a.solo[m], ProbeValue::Win);
    assert!(a.enable[m][(m + 1) % 3] && a.enable[m][(m + 2) % 3], "handing the win implies enable");
    let moves = w["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 2);
    let kids: Vec<Position> = moves
        .iter()
        .map(|mv| {
            let child = g.parse(mv["child"]["position"].as_str().unwrap()).unwrap();
            assert_eq!(legal_move(&g, &end, &child).as_deref(), mv["move"].as_str(), "a legal move");
            child
        })
        .collect();
    assert_eq!(prober.answers(&kids[0]).unwrap().solo[(m + 1) % 3], ProbeValue::Win);
    assert_eq!(prober.answers(&kids[1]).unwrap().solo[(m + 2) % 3], ProbeValue::Win);
    let depth = line.len() - 1;
    assert!(kingmaker_moves(&prober, &end).is_some());
    for (d, level) in levels.iter().enumerate().take(depth) {
        for pos in level {
            assert!(kingmaker_moves(&prober, pos).is_none(), "{} at depth {d} qualifies", g.format(pos));
        }
    }

    // Stage 1 has no solo draw at all: both draw witnesses say so, and succeed.
    assert_eq!(reference_u64("stage1.category.spoiler_draw"), 0);
    for kind in ["spoiler-draw", "draw-cycle"] {
        let w = witness(&tb, kind);
        assert!(w["none"].as_str().unwrap().starts_with("no position reachable from the start"), "{kind}: {w}");
        assert!(w["line"].as_array().unwrap().is_empty() && w["position"].is_null());
        assert_eq!(w["searched"], reference_u64("stage1.reachable_from_start"));
        let mut c = Command::new(coordinator());
        c.args(["probe", "--witness", kind, "--tablebase"]).arg(&tb);
        let out = run(c, Duration::from_secs(60));
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("none: "));
    }

    // A depth limit is honoured: no solo win within first_depth - 1 plies.
    let mut c = Command::new(coordinator());
    c.args(["probe", "--json", "--witness", "solo-win", "--max-depth"])
        .arg((first_depth - 1).to_string())
        .arg("--tablebase")
        .arg(&tb);
    let out = run(c, Duration::from_secs(60));
    assert!(out.status.success());
    let w: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(w["none"].as_str().unwrap().contains(&format!("within {} plies", first_depth - 1)));
}

#[test]
fn witness_input_errors_are_clear() {
    let dir = TempDir::new("witness-errors");
    let mut c = Command::new(coordinator());
    c.args(["probe", "--witness", "kingmaker", "--tablebase"]).arg(dir.join("nothing"));
    let out = run(c, Duration::from_secs(30));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing: no such directory"));
    let mut c = Command::new(coordinator());
    c.args(["probe", "--witness", "stalemate", "--tablebase"]).arg(dir.join("nothing"));
    let out = run(c, Duration::from_secs(30));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("possible values"));
    let mut c = Command::new(coordinator());
    c.args(["probe", "--witness", "solo-win", "--position", "e1/b4/b1 A", "--tablebase"]).arg(dir.join("nothing"));
    let out = run(c, Duration::from_secs(30));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}

/// Writes order-1 tablebases where solo(A) is DRAW at every position still in
/// play (WIN or LOSS where the game is over) and no enable is forced. They
/// are not a solution of the game: they exist to drive the draw-cycle search
/// down the path stage 1's real tablebases (no draws at all) cannot reach.
fn write_all_draw_tablebases(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let g = Cc3::new(1).unwrap();
    let n = g.ranker.positions() as u64;
    let solo: Vec<u8> = (0..n)
        .map(|r| match g.unrank(r).outcome(&g.star) {
            Outcome::Ongoing => VALUE_DRAW,
            Outcome::Won(0) => VALUE_WIN,
            Outcome::Won(_) => VALUE_LOSS,
            Outcome::Illegal => VALUE_ILLEGAL,
        })
        .collect();
    let none: Vec<u8> = solo.iter().map(|&v| if v == VALUE_ILLEGAL { v } else { VALUE_LOSS }).collect();
    for (layer, file, values) in [
        ("solo(A)", "solo_A.tb", &solo),
        ("enable(A>B)", "enable_A_B.tb", &none),
        ("enable(A>C)", "enable_A_C.tb", &none),
    ] {
        let header = TablebaseHeader::new(
            "cc3",
            serde_json::json!({ "order": 1, "rank_order": retro_games::cc3::RANK_ORDER }),
            layer,
            n,
            n,
            "synthetic",
        );
        let mut w = TablebaseWriter::create(&dir.join(file), header).unwrap();
        w.push_values(values).unwrap();
        w.finish().unwrap();
    }
}

#[test]
fn draw_cycle_returns_to_its_position_through_draws() {
    let dir = TempDir::new("witness-draw");
    let tb = dir.join("tb");
    write_all_draw_tablebases(&tb);
    let g = Cc3::new(1).unwrap();
    let prober = Prober::open(&tb).unwrap();
    // Every solo is DRAW at the start: it is its own spoiler-draw witness.
    let w = witness(&tb, "spoiler-draw");
    assert_eq!(w["depth"], 0);
    assert_eq!(w["position"]["category"], "spoiler_draw");
    let w = witness(&tb, "draw-cycle");
    assert!(w["none"].is_null(), "{w}");
    let line = check_witness_line(&g, &w);
    let at = line[line.len() - 1];
    let x = ["A", "B", "C"].iter().position(|p| w["player"] == *p).unwrap();
    let cycle = check_line(&g, &at, w["cycle"].as_array().unwrap());
    assert!(cycle.len() > 1, "a cycle has moves");
    assert_eq!(cycle[cycle.len() - 1], at, "the cycle returns to its position");
    for pos in &cycle {
        let a = prober.answers(pos).unwrap();
        assert_eq!(a.solo[x], ProbeValue::Draw, "{} on the cycle", g.format(pos));
        assert_eq!(category(&g, pos, &a), Category::SpoilerDraw);
    }
    // The shortest cycle through the start: each player steps out and back.
    assert_eq!(cycle.len() - 1, 6);
}
