//! The probe library (`retro-probe`) and `coordinator probe` over it: the
//! library and the command line give the same answers, the library answers
//! the same from many threads at once, `--batch` answers JSON lines, two-player
//! directories are probed too, and the test vectors of docs/FORMAT.md hold.

use crate::common::*;
use retro_probe::Tablebases;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

fn probe_cli(tb: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(coordinator());
    c.arg("probe").arg("--tablebase").arg(tb).args(args);
    run(c, LIMIT)
}

#[test]
fn library_and_command_line_agree_and_threads_see_the_same_answers() {
    let dir = TempDir::new("probe-lib");
    let tb = solve_plan(&dir, "plans/stage1.toml", "tb");
    let Tablebases::ThreePlayer(p) = retro_probe::open(&tb).unwrap() else { panic!("stage 1 is three-player") };
    let start = p.game.start();
    let lib = serde_json::to_value(p.probe(&start).unwrap()).unwrap();
    let out = probe_cli(&tb, &["--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(lib, cli);
    assert_eq!(cli["position"]["category"], "kingmaker", "the published start category");

    // Every rank's answers, once on this thread and once split over four
    // threads sharing one prober (`&self`): the same, rank for rank.
    let positions = p.game.ranker.positions() as u64;
    let one: Vec<_> = (0..positions).map(|r| p.answers(&p.game.unrank(r)).unwrap()).collect();
    let shared = &p;
    let many: Vec<_> = std::thread::scope(|s| {
        let parts: Vec<_> = (0..4u64)
            .map(|t| {
                s.spawn(move || {
                    (t * positions / 4..(t + 1) * positions / 4)
                        .map(|r| shared.answers(&shared.game.unrank(r)).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(one, many);
    // By rank: the position of a rank has that rank; past the end is an error.
    assert_eq!(p.game.rank(&p.position_of(positions - 1).unwrap()), positions - 1);
    assert!(p.position_of(positions).unwrap_err().to_string().contains("past the last position"));
}

#[test]
fn batch_answers_each_line_as_json_and_names_the_bad_ones() {
    let dir = TempDir::new("probe-batch");
    let tb = solve_plan(&dir, "plans/stage1.toml", "tb");
    let start = {
        let Tablebases::ThreePlayer(p) = retro_probe::open(&tb).unwrap() else { panic!() };
        p.game.format(&p.game.start())
    };
    let mut c = Command::new(coordinator());
    c.arg("probe").arg("--tablebase").arg(&tb).arg("--batch");
    let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    write!(child.stdin.take().unwrap(), "# comment\n{start}\n\nnot a position\n{start}\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("1 of 3 positions"), "{err}");
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3, "one JSON line per position, comments and blanks skipped");
    assert_eq!(lines[0]["position"]["position"], start.as_str());
    assert_eq!(lines[0], lines[2]);
    assert_eq!(lines[1]["input"], "not a position");
    assert!(lines[1]["error"].as_str().is_some_and(|e| !e.is_empty()), "{}", lines[1]);
    assert_eq!(lines[0], serde_json::from_slice::<serde_json::Value>(&probe_cli(&tb, &["--json"]).stdout).unwrap());
}

#[test]
fn two_player_directories_are_probed_too() {
    let dir = TempDir::new("probe-cc2");
    let tb = solve_plan(&dir, "plans/cc2-m7p1.toml", "tb");
    let Tablebases::TwoPlayer(p) = retro_probe::open(&tb).unwrap() else { panic!("cc2 is two-player") };
    let start = p.game.start();
    let moves = p.moves(&start).unwrap();
    assert!(!moves.is_empty());
    // Negamax over the children: the mover wins iff some child is a loss for
    // the player then to move, loses iff every child is a win for them.
    let me = p.report(&start).unwrap();
    let kids: Vec<&str> = moves.iter().map(|m| m.child.for_mover.as_str()).collect();
    let want = if kids.contains(&"loss") {
        "win"
    } else if kids.iter().all(|k| *k == "win") {
        "loss"
    } else {
        "draw"
    };
    assert_eq!(me.for_mover, want, "{kids:?}");
    let out = probe_cli(&tb, &["--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cli["position"]["value"], me.value.as_str());
    assert_eq!(cli["moves"].as_array().unwrap().len(), moves.len());
    let out = probe_cli(&tb, &["--witness", "kingmaker"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("three-player"));
}
