//! `coordinator serve`, the position explorer: its JSON API over plain HTTP
//! (answers checked against the prober and the rules, bad input answered with
//! 4xx and a JSON message), and the page itself in headless Chromium (skipped
//! with a message when no Chromium is installed), on stage 1 solved by a real
//! embedded run.

use crate::common::*;
use retro_games::cc3::{Cc3, Position, children};
use retro_probe::cc3::Prober;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Solves stage 1 into `dir`/tb and returns that directory.
fn solve_stage1(dir: &TempDir) -> PathBuf {
    let out = run(embedded_command(dir), Duration::from_secs(120));
    assert!(out.status.success(), "stage 1 run failed:\n{}", String::from_utf8_lossy(&out.stderr));
    dir.join("tb")
}

/// `coordinator serve` over `tb` on a free loopback port, and its address.
fn serve(tb: &Path, dir: &TempDir, name: &str) -> (Proc, String) {
    serve_with(tb, dir, name, &[])
}

/// [`serve`] with more arguments.
fn serve_with(tb: &Path, dir: &TempDir, name: &str, args: &[&str]) -> (Proc, String) {
    let mut c = Command::new(coordinator());
    c.args(["serve", "--listen", "127.0.0.1:0"]).args(args).arg("--tablebase").arg(tb);
    let p = Proc::start(name, c, dir.join(&format!("{name}.log")));
    let addr = listening_address(&p);
    (p, addr)
}

/// Sends `raw` on a fresh connection and reads the answer until the server
/// closes: the status, the head and the body.
fn exchange(addr: &str, raw: &[u8]) -> (u16, String, String) {
    read_answer(send(addr, raw))
}

/// A fresh connection to `addr` with `raw` sent on it.
fn send(addr: &str, raw: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(raw).unwrap();
    s
}

/// The answer on `s`, read until the server closes: status, head, body.
fn read_answer(s: TcpStream) -> (u16, String, String) {
    let (status, head, body) = read_raw(s);
    (status, head, String::from_utf8(body).unwrap())
}

/// [`read_answer`] with the body as bytes (a tablebase file is no UTF-8).
fn read_raw(mut s: TcpStream) -> (u16, String, Vec<u8>) {
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap();
    assert!(
        !head.to_ascii_lowercase().contains("transfer-encoding: chunked"),
        "the server sends lengths, this client reads no chunks"
    );
    (status, head, raw[split + 4..].to_vec())
}

/// One HTTP/1.1 request; the status and the body.
fn request(addr: &str, method: &str, path: &str) -> (u16, String) {
    let (status, _, body) = exchange(addr, request_text(addr, method, path).as_bytes());
    (status, body)
}

/// The text of one HTTP/1.1 request that asks the server to close after it.
fn request_text(addr: &str, method: &str, path: &str) -> String {
    format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
}

/// GET `path` as JSON, expecting `want`.
fn get_json(addr: &str, path: &str, want: u16) -> Value {
    let (status, body) = request(addr, "GET", path);
    assert_eq!(status, want, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

/// Percent-encodes a query value.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b == b'-' { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// The position's answers as the prober reports them, as JSON.
fn reported(p: &Prober, pos: &Position) -> Value {
    serde_json::to_value(p.report(pos).unwrap()).unwrap()
}

/// Checks the depth lines of `pos` against its children's: the forcer picks a
/// child one ply closer, every other move leads to a child at most one closer
/// (the definition of plies to the end, one step at a time).
fn check_depths(addr: &str, g: &Cc3, pos: &Position, view: &Value) {
    for d in view["depth"].as_array().unwrap() {
        let q = d["question"].as_str().unwrap();
        let plies = d["plies"].as_u64().unwrap_or_else(|| panic!("stage 1 depths are all found: {d}"));
        let forcer: Vec<char> = d["forcer"].as_str().unwrap().chars().filter(|c| c.is_ascii_uppercase()).collect();
        let mover = ['A', 'B', 'C'][pos.turn as usize];
        let kids: Vec<Option<u64>> = view["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let child = m["child"]["position"].as_str().unwrap();
                if m["child"]["outcome"] != "ongoing" {
                    // Finished: 0 plies if it reached the objective.
                    let won = m["child"]["outcome"].as_str().unwrap().trim_start_matches("won by ").to_string();
                    let reached = match (q, d["value"].as_str().unwrap()) {
                        (_, "forced") => q.ends_with(&format!(">{won})")),
                        (_, "win") => q == format!("solo({won})"),
                        _ => q != format!("solo({won})"),
                    };
                    return reached.then_some(0);
                }
                let sub = get_json(addr, &format!("/api/position?pos={}", enc(child)), 200);
                sub["depth"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x["question"] == q && x["value"] == d["value"])
                    .map(|x| x["plies"].as_u64().unwrap())
            })
            .collect();
        let what = format!("{q} {} at {}", d["value"], g.format(pos));
        assert!(plies > 0, "{what}: an ongoing position is not at the end");
        if forcer.contains(&mover) {
            assert_eq!(kids.iter().flatten().min(), Some(&(plies - 1)), "{what}: the forcer's best child");
        } else {
            assert!(kids.iter().all(|k| k.is_some_and(|k| k < plies)), "{what}: every child stays forced and closer");
            assert!(kids.contains(&Some(plies - 1)), "{what}: the others' longest delay");
        }
    }
}

#[test]
fn api_answers_positions_moves_witnesses_and_bad_input() {
    let dir = TempDir::new("explorer-api");
    let tb = solve_stage1(&dir);
    let (_server, addr) = serve(&tb, &dir, "serve");
    let g = Cc3::new(1).unwrap();
    let prober = Prober::open(&tb).unwrap();

    let info = get_json(&addr, "/api/info", 200);
    assert_eq!(info["kind"], "cc3");
    assert_eq!(info["order"], 1);
    assert_eq!(info["start"], "e1/b4/b1 A");
    assert_eq!(info["cells"].as_array().unwrap().len(), 13);
    assert_eq!(info["witnesses"].as_array().unwrap().len(), 4);
    let goals: Vec<&Value> = info["cells"].as_array().unwrap().iter().filter(|c| c["zone"] == "goal").collect();
    assert_eq!(goals.len(), 3, "one goal cell per player at order 1");
    assert!(info["cells"].as_array().unwrap().iter().any(|c| c["name"] == "a1" && c["owner"] == "A"));

    // The start, with and without the parameter: the prober's answers, every
    // legal move once, each child's answers the prober's.
    let start = get_json(&addr, "/api/position", 200);
    assert_eq!(start, get_json(&addr, &format!("/api/position?pos={}", enc("e1/b4/b1 A")), 200));
    assert_eq!(start["position"], reported(&prober, &g.start()));
    assert_eq!(start["position"]["category"], "kingmaker");
    assert!(start["position"]["enable"].as_object().unwrap().values().all(|v| v == true));
    let kids = children(&g.star, &g.start());
    let moves = start["moves"].as_array().unwrap();
    assert_eq!(moves.len(), kids.len());
    for (m, kid) in moves.iter().zip(&kids) {
        assert_eq!(m["child"], reported(&prober, kid));
        assert_eq!(format!("{}-{}", m["from"].as_str().unwrap(), m["to"].as_str().unwrap()), m["move"]);
    }
    assert!(start["pieces"]["A"] == serde_json::json!(["e1"]));
    check_depths(&addr, &g, &g.start(), &start);

    // The kingmaker witness: its position lets the mover hand a forced win to
    // either opponent, and the API labels those moves so.
    let w = get_json(&addr, "/api/witness?kind=kingmaker", 200);
    assert!(w["none"].is_null(), "{w}");
    let text = w["position"]["position"].as_str().unwrap();
    let km = get_json(&addr, &format!("/api/position?pos={}", enc(text)), 200);
    let mover = km["position"]["to_move"].as_str().unwrap().to_string();
    let mut winners: Vec<String> = km["moves"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["forced_win"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()))
        .collect();
    winners.sort();
    winners.dedup();
    assert_eq!(winners.len(), 2, "{km}");
    assert!(!winners.contains(&mover));
    for s in w["line"].as_array().unwrap() {
        let t = s["position"]["position"].as_str().unwrap();
        let view = get_json(&addr, &format!("/api/position?pos={}", enc(t)), 200);
        check_depths(&addr, &g, &g.parse(t).unwrap(), &view);
    }
    let solo = get_json(&addr, "/api/witness?kind=solo-win", 200);
    let t = solo["position"]["position"].as_str().unwrap();
    let view = get_json(&addr, &format!("/api/position?pos={}", enc(t)), 200);
    assert!(view["depth"].as_array().unwrap().iter().any(|d| d["value"] == "win"), "{view}");
    check_depths(&addr, &g, &g.parse(t).unwrap(), &view);
    // Stage 1 has no spoiler draw: an answer saying so, not an error.
    let none = get_json(&addr, "/api/witness?kind=spoiler-draw", 200);
    assert!(none["none"].as_str().unwrap().contains("no position"), "{none}");

    // Bad input: 4xx with a JSON message, and the server goes on.
    let error = |path: &str, want: u16, says: &str| {
        let v = get_json(&addr, path, want);
        let msg = v["error"].as_str().unwrap_or_else(|| panic!("{path}: no error message in {v}"));
        assert!(msg.contains(says), "{path}: {msg:?} should say {says:?}");
    };
    error(&format!("/api/position?pos={}", enc("zz/b4/b1 A")), 400, "no cell named \"zz\"");
    error(&format!("/api/position?pos={}", enc("e1/b4 A")), 400, "expected");
    error(&format!("/api/position?pos={}", enc("e1/b4/b1 D")), 400, "not A, B or C");
    error(&format!("/api/position?pos={}", enc("e1/e1/b1 A")), 400, "used twice");
    error("/api/position?pos=%zz", 400, "escape");
    error("/api/position?position=x", 400, "unknown parameter");
    // Two full goals: a placement no game reaches, which the tablebases hold no value for.
    let mut two_goals = g.start();
    two_goals.pieces[0] = g.star.goal_mask[0];
    two_goals.pieces[1] = g.star.goal_mask[1];
    two_goals.pieces[2] = 1; // a centre cell
    error(&format!("/api/position?pos={}", enc(&g.format(&two_goals))), 404, "cannot arise");
    error("/api/witness?kind=everything", 400, "unknown witness kind");
    error("/api/witness", 400, "which witness");
    error("/api/nothing", 404, "no such page");
    error("/api/peg/position", 404, "no peg solitaire here");
    let (status, body) = request(&addr, "POST", "/api/info");
    assert_eq!(status, 405, "{body}");
    assert!(body.contains("GET only"));
    assert_eq!(get_json(&addr, "/api/info", 200)["kind"], "cc3", "still serving");

    // The page and its files are served, with no reference to another host.
    for (path, marker) in [("/", "<svg id=\"board\""), ("/app.js", "VIEWS"), ("/style.css", "#board")] {
        let (status, body) = request(&addr, "GET", path);
        assert_eq!(status, 200, "{path}");
        assert!(body.contains(marker), "{path}");
        assert!(!body.contains("http://") && !body.contains("https://") || path == "/app.js", "{path} links out");
    }
    let (_, js) = request(&addr, "GET", "/app.js");
    assert!(!js.contains("https://"), "no CDN");
    assert_eq!(js.matches("http://").count(), 1, "only the SVG namespace");

    // A directory without tablebases: served anyway, every answer a 404 saying why.
    let empty = TempDir::new("explorer-empty");
    let (_server2, addr2) = serve(&empty.0, &dir, "serve-empty");
    let v = get_json(&addr2, "/api/info", 404);
    assert!(v["error"].as_str().unwrap().contains("no tablebase"), "{v}");
    get_json(&addr2, "/api/position", 404);
    assert_eq!(request(&addr2, "GET", "/").0, 200, "the page itself shows the message");
}

// ---- the ranked game

/// Solves plans/stage1-ranked.toml into `dir`/ranked and serves it.
fn served_ranked(dir: &TempDir) -> (Proc, String, PathBuf) {
    let tb = solve_plan(dir, "plans/stage1-ranked.toml", "ranked");
    let (server, addr) = serve(&tb, dir, "serve-ranked");
    (server, addr, tb)
}

/// The ranked view: every position's top2 values are the ranked prober's,
/// after a first finish the race for second is shown (the mover's top2, its
/// opponent's the complement), and a move is marked as keeping the mover's
/// value exactly when its child has the same top2 for the mover; moves the
/// tablebase says keep a WIN exist and lead to WIN children.
#[test]
fn ranked_api_shows_top2_the_race_and_the_moves_that_keep_them() {
    let dir = TempDir::new("explorer-ranked");
    let (_server, addr, tb) = served_ranked(&dir);
    let prober = retro_probe::ranked::RankedProber::open(&tb).unwrap();
    let info = get_json(&addr, "/api/info", 200);
    assert_eq!((info["kind"].as_str(), info["objective"].as_str()), (Some("cc3"), Some("ranked")));
    assert_eq!(info["cells"].as_array().unwrap().len(), 13);
    let start = get_json(&addr, "/api/position", 200);
    assert_eq!(start["position"]["top2"], serde_json::json!({"A": "loss", "B": "loss", "C": "loss"}));
    // Walk the positions the API names, breadth first from the start, until
    // a race and a kept WIN have been seen.
    let (mut seen_race, mut seen_kept_win) = (false, false);
    let mut queue = std::collections::VecDeque::from([start["position"]["position"].as_str().unwrap().to_string()]);
    let mut visited = std::collections::HashSet::new();
    while let Some(text) = queue.pop_front() {
        if !visited.insert(text.clone()) || visited.len() > 400 {
            continue;
        }
        let view = get_json(&addr, &format!("/api/position?pos={}", enc(&text)), 200);
        let p = &view["position"];
        let pos = prober.parse(&text).unwrap();
        assert_eq!(p["top2"], serde_json::to_value(prober.report(&pos).unwrap()).unwrap()["top2"], "{text}");
        let mover = p["to_move"].as_str().unwrap();
        if let Some(race) = p.get("race") {
            seen_race = true;
            let other = race["racers"][1].as_str().unwrap();
            assert_eq!(race["racers"][0], mover);
            assert_eq!(race["value"], p["top2"][mover], "{text}");
            let complement = match p["top2"][mover].as_str().unwrap() {
                "win" => "loss",
                "loss" => "win",
                v => v,
            };
            assert_eq!(p["top2"][other], complement, "{text}: the race is zero-sum");
        }
        for m in view["moves"].as_array().unwrap() {
            let keeps = m["child"]["top2"][mover] == p["top2"][mover];
            assert_eq!(m["keeps"], keeps, "{text} {}", m["move"]);
            seen_kept_win |= keeps && p["top2"][mover] == "win";
            if m["child"]["outcome"] == "ongoing" {
                queue.push_back(m["child"]["position"].as_str().unwrap().to_string());
            }
        }
        // A top2 WIN for the mover has a move that keeps it.
        if p["top2"][mover] == "win" && p["outcome"] == "ongoing" {
            assert!(view["moves"].as_array().unwrap().iter().any(|m| m["keeps"] == true), "{text}");
        }
    }
    assert!(seen_race && seen_kept_win, "race {seen_race}, kept win {seen_kept_win}");
    // A finished player to move: no position of the ranked game.
    let g = Cc3::new(1).unwrap();
    let mut finished = g.start();
    finished.pieces[0] = g.star.goal_mask[0];
    let v = get_json(&addr, &format!("/api/position?pos={}", enc(&g.format(&finished))), 404);
    assert!(v["error"].as_str().unwrap().contains("cannot arise in the ranked game"), "{v}");
    let v = get_json(&addr, "/api/witness?kind=kingmaker", 404);
    assert!(v["error"].is_string(), "{v}");
}

// ---- the page in a browser

/// A Chromium binary: `$CHROMIUM`, else the first of the usual names on PATH.
/// The browser for a page test. Those tests are ignored (with the reason)
/// when the build found none, so a missing one here is a failure, never a
/// silent pass.
fn chromium_or_fail() -> PathBuf {
    chromium().expect("no chromium binary, though the build found one (CHROMIUM or PATH changed?)")
}

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Headless Chromium, isolated: its own profile, no network besides the page's.
fn browser(bin: &Path, profile: &Path) -> Command {
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        "--metrics-recording-only",
        "--mute-audio",
        "--hide-scrollbars",
        // Virtual time runs until the page has no more work (fetches included)
        // or the budget is spent, so the dump shows the rendered state.
        "--virtual-time-budget=20000",
    ]);
    c.arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// The page's DOM after it has rendered `url`.
fn dump(bin: &Path, profile: &Path, url: &str) -> String {
    let mut c = browser(bin, profile);
    c.args(["--dump-dom", url]);
    let out = run(c, Duration::from_secs(120));
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(dom.contains("<body"), "no DOM for {url}: {}", String::from_utf8_lossy(&out.stderr));
    dom
}

/// Every start tag `<TAG ...>` of the DOM that contains `marker`, as text.
fn tags<'a>(dom: &'a str, tag: &str, marker: &str) -> Vec<&'a str> {
    let open = format!("<{tag} ");
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find(&open) {
        let t = &rest[i..];
        let end = t.find('>').unwrap_or(t.len());
        if t[..end].contains(marker) {
            out.push(&t[..end]);
        }
        rest = &t[end..];
    }
    out
}

/// The value of attribute `name` in a start tag.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    Some(&tag[i..i + tag[i..].find('"')?])
}

/// The body's `data-state` (ready, error or loading).
fn state(dom: &str) -> &str {
    tags(dom, "body", "data-state").first().and_then(|t| attr(t, "data-state")).unwrap_or("none")
}

/// The text of the element with id `id` (tags stripped).
fn text_of(dom: &str, id: &str) -> String {
    let Some(i) = dom.find(&format!("id=\"{id}\"")) else { return String::new() };
    let rest = &dom[i..];
    let start = rest.find('>').map(|j| j + 1).unwrap_or(0);
    let end = rest.find("</").unwrap_or(rest.len());
    rest[start..end.max(start)].to_string()
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "no chromium binary when this was built: install Debian's `chromium` package (or set CHROMIUM=/path) and build again"
)]
fn page_shows_the_start_a_kingmakers_choice_and_errors() {
    let bin = chromium_or_fail();
    let dir = TempDir::new("explorer-page");
    let tb = solve_stage1(&dir);
    let (_server, addr) = serve(&tb, &dir, "serve");
    let profile = dir.join("profile");
    let base = format!("http://{addr}");

    // The start: kingmaker, all six enables forced, A to move, one piece each.
    let dom = dump(&bin, &profile, &format!("{base}/"));
    assert_eq!(state(&dom), "ready", "{dom}");
    // The job's three files and their depth files, each a download link to /files/NAME.
    let files = tags(&dom, "li", "data-file=");
    assert_eq!(files.len(), 6, "{dom}");
    assert!(dom.contains("href=\"/files/solo_A.tb\""), "{dom}");
    assert!(dom.contains("href=\"/files/solo_A.depth\""), "{dom}");
    assert!(dom.contains("id=\"manifest-link\""), "{dom}");
    // Each layer's rounds as a bar chart: one bar per round, round 0 included.
    let stats = get_json(&addr, "/api/stats", 200);
    let layers = stats["layers"].as_array().unwrap();
    assert_eq!(tags(&dom, "svg", "data-layer=").len(), layers.len(), "{dom}");
    let bars: usize = layers.iter().map(|l| l["decided_per_round"].as_array().unwrap().len()).sum();
    assert_eq!(tags(&dom, "rect", "data-round=").len(), bars, "{dom}");
    // Each bar in two parts, the round's WIN and LOSS positions, as the summary counts them.
    let won: Vec<u64> = layers
        .iter()
        .flat_map(|l| l["won_per_round"].as_array().unwrap().iter().map(|w| w.as_u64().unwrap()))
        .collect();
    let decided: Vec<u64> = layers
        .iter()
        .flat_map(|l| l["decided_per_round"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()))
        .collect();
    let lost: Vec<u64> =
        tags(&dom, "rect", "data-lost=").iter().map(|t| attr(t, "data-lost").unwrap().parse().unwrap()).collect();
    let shown: Vec<u64> =
        tags(&dom, "rect", "data-won=").iter().map(|t| attr(t, "data-won").unwrap().parse().unwrap()).collect();
    assert_eq!(shown, won, "{dom}");
    assert_eq!(lost, decided.iter().zip(&won).map(|(d, w)| d - w).collect::<Vec<_>>(), "{dom}");
    assert!(won.iter().any(|&w| w > 0) && lost.iter().any(|&l| l > 0), "both values appear: {won:?} {lost:?}");
    let cat = tags(&dom, "div", "id=\"category\"");
    assert_eq!(cat.len(), 1, "{dom}");
    assert_eq!(attr(cat[0], "data-category"), Some("kingmaker"));
    let enables = tags(&dom, "li", "data-pair=");
    let pairs: Vec<(&str, &str)> =
        enables.iter().map(|t| (attr(t, "data-pair").unwrap(), attr(t, "data-value").unwrap())).collect();
    assert_eq!(
        pairs,
        [("A-B", "yes"), ("A-C", "yes"), ("B-A", "yes"), ("B-C", "yes"), ("C-A", "yes"), ("C-B", "yes")],
        "the six enable answers at the start"
    );
    assert_eq!(attr(tags(&dom, "div", "id=\"turn\"")[0], "data-turn"), Some("A"));
    assert_eq!(tags(&dom, "g", "data-piece=").len(), 3);
    assert_eq!(tags(&dom, "g", "data-cell=").len(), 13);
    assert_eq!(tags(&dom, "g", "data-zone=\"goal\"").len(), 3);
    let start_moves = tags(&dom, "li", "data-move=").len();
    assert!(start_moves > 0);

    // Play the kingmaker witness's line by move names in the URL: the mover's
    // moves include one labelled with a forced win for each opponent.
    let (_, body) = request(&addr, "GET", "/api/witness?kind=kingmaker");
    let w: Value = serde_json::from_str(&body).unwrap();
    let line: Vec<&str> = w["line"].as_array().unwrap()[1..].iter().map(|s| s["move"].as_str().unwrap()).collect();
    assert!(!line.is_empty(), "the witness is not the start");
    let dom = dump(&bin, &profile, &format!("{base}/?play={}", line.join(",")));
    assert_eq!(state(&dom), "ready", "{dom}");
    let mover = attr(tags(&dom, "div", "id=\"turn\"")[0], "data-turn").unwrap().to_string();
    assert_eq!(mover, w["player"].as_str().unwrap());
    let mut winners: Vec<&str> = tags(&dom, "li", "data-move=")
        .iter()
        .filter_map(|t| attr(t, "data-forced-win"))
        .filter(|w| !w.is_empty())
        .collect();
    winners.sort();
    winners.dedup();
    assert_eq!(winners.len(), 2, "two moves hand the win to different players: {winners:?}\n{dom}");
    assert!(winners.iter().all(|w| w.len() == 1 && *w != mover), "{winners:?}");

    // The witness button's URL lands on the same position with its two moves marked.
    let dom = dump(&bin, &profile, &format!("{base}/?witness=kingmaker"));
    assert_eq!(state(&dom), "ready", "{dom}");
    assert_eq!(attr(tags(&dom, "body", "data-state")[0], "data-position"), w["position"]["position"].as_str());
    assert_eq!(tags(&dom, "li", "class=\"move witness\"").len(), 2);

    // Bad input: a message on the page, the start still drawn.
    let dom = dump(&bin, &profile, &format!("{base}/?pos={}", "zz%2Fb4%2Fb1+A"));
    assert_eq!(state(&dom), "error", "{dom}");
    assert!(text_of(&dom, "error").contains("no cell named"), "{}", text_of(&dom, "error"));
    assert_eq!(tags(&dom, "g", "data-cell=").len(), 13);
    let dom = dump(&bin, &profile, &format!("{base}/?play=a1-a2"));
    assert_eq!(state(&dom), "error");
    assert!(text_of(&dom, "error").contains("move a1-a2 is not legal"), "{}", text_of(&dom, "error"));

    // A directory without tablebases: the page says so.
    let empty = TempDir::new("explorer-page-empty");
    let (_server2, addr2) = serve(&empty.0, &dir, "serve-empty");
    let dom = dump(&bin, &profile, &format!("http://{addr2}/"));
    assert_eq!(state(&dom), "error");
    assert!(text_of(&dom, "error").contains("no tablebase"), "{}", text_of(&dom, "error"));

    // A screenshot of the kingmaker witness (docs/explorer.png is one: set
    // RETRO_EXPLORER_SCREENSHOT=docs/explorer.png to refresh it).
    let png = dir.join("explorer.png");
    let mut c = browser(&bin, &profile);
    // 1200 x 720 CSS pixels drawn at 0.75: a 900 x 540 PNG that stays small.
    c.arg(format!("--screenshot={}", png.display()))
        .args(["--window-size=1200,720", "--force-device-scale-factor=0.75"]);
    c.arg(format!("{base}/?witness=kingmaker"));
    let out = run(c, Duration::from_secs(120));
    let bytes =
        std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert!(bytes.starts_with(b"\x89PNG"), "a PNG");
    if let Some(to) = std::env::var_os("RETRO_EXPLORER_SCREENSHOT") {
        std::fs::write(&to, &bytes).unwrap();
    }
}

/// Solves the two-player 7 x 7 one-piece plan into `dir`/tb and serves it.
fn served_cc2(dir: &TempDir) -> (Proc, String) {
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join("plans/cc2-m7p1.toml"));
    c.arg("--output").arg(dir.join("tb")).arg("--checkpoints").arg(dir.join("ck"));
    c.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    let out = run(c, Duration::from_secs(300));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serve(&dir.join("tb"), dir, "serve-cc2")
}

#[test]
fn two_player_api_values_moves_and_depths() {
    let dir = TempDir::new("explorer-cc2");
    let (_server, addr) = served_cc2(&dir);

    let info = get_json(&addr, "/api/info", 200);
    assert_eq!(info["kind"], "cc2");
    assert_eq!((info["size"].as_u64(), info["pieces"].as_u64()), (Some(7), Some(1)));
    assert_eq!(info["cells"].as_array().unwrap().len(), 49);
    assert_eq!(info["start"], "a1/g7 1");
    let start = get_json(&addr, "/api/position", 200);
    assert_eq!(start["position"]["value"], "win", "a first-player win (docs/RESULTS.md)");
    assert_eq!(start["position"]["for_mover"], "win");

    // Negamax, one step at a time, along a line where player 1 keeps its win:
    // a won position has a child lost for its mover, a lost one only children
    // won for theirs; and where the depth is found, it follows the recurrence.
    fn flip(v: &str) -> &str {
        match v {
            "win" => "loss",
            "loss" => "win",
            other => other,
        }
    }
    let mut at = start;
    let mut finished = false;
    for _ in 0..200 {
        let me = at["position"]["for_mover"].as_str().unwrap().to_string();
        let moves = at["moves"].as_array().unwrap().clone();
        assert!(!moves.is_empty(), "{at}");
        let kids: Vec<String> = moves.iter().map(|m| flip(m["child"]["for_mover"].as_str().unwrap()).into()).collect();
        match me.as_str() {
            "win" => assert!(kids.iter().any(|k| k == "win"), "{at}"),
            "loss" => assert!(kids.iter().all(|k| k == "loss"), "{at}"),
            _ => assert!(kids.iter().all(|k| k != "win") && kids.iter().any(|k| k == "draw"), "{at}"),
        }
        // Player 1 plays its quickest win; player 2 its first move.
        let views: Vec<Value> = moves
            .iter()
            .map(|m| {
                get_json(&addr, &format!("/api/position?pos={}", enc(m["child"]["position"].as_str().unwrap())), 200)
            })
            .collect();
        // 4,608 positions: every depth search finishes.
        let p = at["plies"].as_u64().unwrap_or_else(|| panic!("no depth at {at}"));
        {
            let closer: Vec<Option<u64>> = views
                .iter()
                .map(|v| (v["position"]["value"] == at["position"]["value"]).then(|| v["plies"].as_u64()).flatten())
                .collect();
            if me == "win" {
                assert_eq!(closer.iter().flatten().min(), Some(&(p - 1)), "{at}");
            } else {
                assert!(closer.iter().all(|c| c.is_some_and(|c| c < p)) && closer.contains(&Some(p - 1)), "{at}");
            }
        }
        let next = if at["position"]["to_move"] == "1" {
            let best = views
                .iter()
                .filter(|v| v["position"]["value"] == "win")
                .min_by_key(|v| v["plies"].as_u64().unwrap_or(u64::MAX))
                .unwrap();
            best.clone()
        } else {
            views[0].clone()
        };
        if next["position"]["outcome"] != "ongoing" {
            assert_eq!(next["position"]["outcome"], "won by 1", "{next}");
            finished = true;
            break;
        }
        at = next;
    }

    assert!(finished, "player 1 wins along its quickest line");

    let v = get_json(&addr, "/api/witness?kind=kingmaker", 404);
    assert!(v["error"].as_str().unwrap().contains("three-player only"), "{v}");

    let v = get_json(&addr, &format!("/api/position?pos={}", enc("a1,a2/g6 1")), 400);
    assert!(v["error"].as_str().unwrap().contains("needs 1 pieces"), "{v}");
    // Player 1 to move with its goal already filled: no game gets there.
    let v = get_json(&addr, &format!("/api/position?pos={}", enc("g7/a1 1")), 404);
    assert!(v["error"].as_str().unwrap().contains("cannot arise"), "{v}");
}

/// The page picks the two-player view: the diamond, the value, the moves'.
#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "no chromium binary when this was built: install Debian's `chromium` package (or set CHROMIUM=/path) and build again"
)]
fn two_player_page_shows_the_diamond_and_the_values() {
    let bin = chromium_or_fail();
    let dir = TempDir::new("explorer-cc2-page");
    let (_server, addr) = served_cc2(&dir);
    let dom = dump(&bin, &dir.join("profile"), &format!("http://{addr}/"));
    assert_eq!(state(&dom), "ready", "{dom}");
    assert_eq!(tags(&dom, "g", "data-cell=").len(), 49);
    assert_eq!(attr(tags(&dom, "div", "id=\"category\"")[0], "data-for-mover"), Some("win"));
    let moves = tags(&dom, "li", "data-move=");
    assert_eq!(moves.len(), get_json(&addr, "/api/position", 200)["moves"].as_array().unwrap().len());
    assert!(moves.iter().all(|m| attr(m, "data-value").is_some()));
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "no chromium binary when this was built: install Debian's `chromium` package (or set CHROMIUM=/path) and build again"
)]
fn ranked_page_shows_top2_and_marks_the_moves_that_keep_it() {
    let bin = chromium_or_fail();
    let dir = TempDir::new("explorer-ranked-page");
    let (_server, addr, _tb) = served_ranked(&dir);
    let dom = dump(&bin, &dir.join("profile"), &format!("http://{addr}/"));
    assert_eq!(state(&dom), "ready", "{dom}");
    for x in ["A", "B", "C"] {
        assert_eq!(attr(tags(&dom, "tr", &format!("id=\"top2-{x}\""))[0], "data-value"), Some("loss"), "{x}");
    }
    let moves = tags(&dom, "li", "data-move=");
    let api = get_json(&addr, "/api/position", 200);
    assert_eq!(moves.len(), api["moves"].as_array().unwrap().len());
    let kept = api["moves"].as_array().unwrap().iter().filter(|m| m["keeps"] == true).count();
    assert_eq!(moves.iter().filter(|m| attr(m, "data-keeps") == Some("yes")).count(), kept);
}

// ---- peg solitaire

/// A problems summary of two class-feasible rows and one ruled out, built from
/// the writer's own types (a real table takes minutes to decide).
fn tiny_problems() -> Value {
    use retro_results::peg::problems::{BoardProblems, ProblemRow};
    use retro_results::peg::summary::ProblemsSummary;
    let row = |finish: &str, status: &'static str, solution: Option<&str>| ProblemRow {
        start: "d4".into(),
        finish: finish.into(),
        class_feasible: status != "infeasible",
        status,
        solution: solution.map(String::from),
        positions: 7,
        searched_as: format!("d4->{finish}"),
    };
    let board = BoardProblems {
        board: "english".into(),
        problems: 3,
        class_feasible: 2,
        solvable: 1,
        impossible: 0,
        undecided: 1,
        feasible_starts_up_to_symmetry: vec!["d4".into()],
        searches: 2,
        seconds: 0.5,
        rows: vec![row("d4", "solvable", Some("b4-d4")), row("d1", "undecided", None), row("a1", "infeasible", None)],
    };
    let s = ProblemsSummary {
        game: retro_games::GameKind::Peg,
        task: "problems",
        job: "peg-problems".into(),
        budget: 9,
        boards: vec![board],
    };
    serde_json::to_value(&s).unwrap()
}

/// The English peg ledger (about 15 s and 0.5 GB on disk), run once for the
/// tests that run at the same time and removed when the last one is done.
fn shared_peg_ledger() -> std::sync::Arc<TempDir> {
    static SHARED: std::sync::Mutex<std::sync::Weak<TempDir>> = std::sync::Mutex::new(std::sync::Weak::new());
    let mut slot = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = slot.upgrade() {
        return dir;
    }
    let dir = std::sync::Arc::new(TempDir::new("explorer-peg-ledger"));
    write_peg_tablebases(&dir);
    *slot = std::sync::Arc::downgrade(&dir);
    dir
}

/// Serves the shared English ledger (and a tiny problems summary) with the
/// server's files in `dir`. The guard keeps the peg tests one at a time: each
/// asks for whole-board searches under the server's request deadline, and two
/// at once on two cores could run past it.
fn served_peg(dir: &TempDir) -> (Proc, String, std::sync::Arc<TempDir>, std::sync::MutexGuard<'static, ()>) {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let ledger = shared_peg_ledger();
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The whole-board searches these tests check must finish: a slow or busy
    // machine gets a minute instead of the default 10 s.
    let (server, addr) = serve_with(&ledger.join("tb"), dir, "serve-peg", &["--search-seconds", "60"]);
    (server, addr, ledger, guard)
}

/// Runs the English peg ledger into `dir`/tb/peg-english and writes a tiny
/// problems summary beside it.
fn write_peg_tablebases(dir: &TempDir) {
    let tb = dir.join("tb");
    let mut c = Command::new(coordinator());
    c.arg("--plan").arg(repo().join("plans/peg-english.toml"));
    c.arg("--output").arg(tb.join("peg-english")).arg("--checkpoints").arg(dir.join("ck"));
    c.env_remove("RETRO_FAULT").env_remove("RETRO_TOKEN");
    let out = run(c, Duration::from_secs(600));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::create_dir_all(tb.join("peg-problems")).unwrap();
    std::fs::write(tb.join("peg-problems/summary.json"), tiny_problems().to_string()).unwrap();
}

#[test]
fn peg_api_ledger_problems_positions_and_bad_input() {
    let dir = TempDir::new("explorer-peg");
    let (_server, addr, ledger, _one_at_a_time) = served_peg(&dir);
    let tb = ledger.join("tb");

    let info = get_json(&addr, "/api/info", 200);
    assert_eq!(info["kind"], "peg");
    assert_eq!(info["board"], "english");
    assert_eq!(info["ledger"]["vacancy"], "d4");
    assert_eq!(info["problems"]["boards"], serde_json::json!(["english"]));
    let boards = info["boards"].as_array().unwrap();
    assert_eq!(boards.iter().map(|b| b["cells"].as_array().unwrap().len()).collect::<Vec<_>>(), [33, 37]);
    assert_eq!(info["start"], "ooo/ooo/ooooooo/ooo.ooo/ooooooo/ooo/ooo");

    // The ledger as the run wrote it: the OEIS-checked columns, counts past
    // 2^53 as exact strings.
    let l = get_json(&addr, "/api/peg/ledger", 200);
    let levels = l["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 32);
    assert_eq!((levels[0]["positions"].as_u64(), levels[31]["pegs"].as_u64()), (Some(1), Some(1)));
    assert_eq!(l["totals"]["positions"], 187_636_299u64);
    assert_eq!(l["totals"]["winnable"], 13_428_122u64);
    let d4 = l["solutions_by_hole"].as_array().unwrap().iter().find(|h| h["hole"] == "d4").unwrap();
    assert_eq!(d4["solutions"], "40861647040079968");
    assert!(levels.iter().all(|r| r["sequences"].is_string()));
    assert_eq!(l["oeis"].as_array().unwrap().len(), 6);
    assert!(l["oeis"].as_array().unwrap().iter().all(|c| c["mismatches"] == 0), "{}", l["oeis"]);

    // The problem table: the rows the class allows.
    let p = get_json(&addr, "/api/peg/problems", 200);
    let rows = p["boards"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.iter().map(|r| r["finish"].as_str().unwrap()).collect::<Vec<_>>(), ["d4", "d1"]);

    // The start: four jumps, five class-feasible holes, d4 solvable; follow
    // its solution jump by jump through the children the API names.
    let start = get_json(&addr, "/api/peg/position", 200);
    assert_eq!(start["position"], info["start"]);
    assert_eq!(start["jumps"].as_array().unwrap().len(), 4);
    assert_eq!(start["feasible_holes"], serde_json::json!(["d1", "a4", "d4", "g4", "d7"]));
    let finishes = start["finishes"].as_array().unwrap();
    let centre = finishes.iter().find(|f| f["hole"] == "d4").unwrap();
    assert_eq!(centre["status"], "solvable", "{centre}");
    let mut at = start["position"].as_str().unwrap().to_string();
    for jump in centre["solution"].as_str().unwrap().split(' ') {
        let view = get_json(&addr, &format!("/api/peg/position?pos={}&search=0", enc(&at)), 200);
        assert!(view["finishes"].is_null(), "search=0 searches nothing");
        let j = view["jumps"].as_array().unwrap().iter().find(|j| j["jump"] == jump);
        at = j.unwrap_or_else(|| panic!("{jump} is not among the jumps of {at}"))["child"].as_str().unwrap().into();
    }
    let end = get_json(&addr, &format!("/api/peg/position?board=english&pos={}", enc(&at)), 200);
    assert_eq!((end["pegs"].as_u64(), end["status"].as_str()), (Some(1), Some("one peg left")));
    let pegs: Vec<&str> = end["holes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["peg"] == true)
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(pegs, ["d4"]);

    // Two pegs side by side: each jump ends the game on its own hole, every
    // other hole of the class is searched out; a budget of 0 decides less.
    let two = ".../.../......./..oo.../......./.../...";
    let v = get_json(&addr, &format!("/api/peg/position?pos={}&budget=100", enc(two)), 200);
    for f in v["finishes"].as_array().unwrap() {
        let want = match f["hole"].as_str().unwrap() {
            "b4" | "e4" => "solvable",
            _ => "impossible",
        };
        assert_eq!(f["status"], want, "{f}");
    }
    let v = get_json(&addr, "/api/peg/position?budget=1", 200);
    assert!(v["finishes"].as_array().unwrap().iter().any(|f| f["status"] == "unknown"), "{v}");
    // The European board: 37 holes, its own start.
    let eu = get_json(&addr, "/api/peg/position?board=european&search=0", 200);
    assert_eq!((eu["holes"].as_array().unwrap().len(), eu["pegs"].as_u64()), (37, Some(36)));

    // Bad input: 400 with a message, and the server goes on.
    let error = |path: &str, want: u16, says: &str| {
        let v = get_json(&addr, path, want);
        let msg = v["error"].as_str().unwrap_or_else(|| panic!("{path}: no error message in {v}"));
        assert!(msg.contains(says), "{path}: {msg:?} should say {says:?}");
    };
    error("/api/peg/position?pos=zz", 400, "unexpected character 'z'");
    error(
        &format!("/api/peg/position?pos={}", enc("ooo/ooo/ooooooo/ooo.ooo/ooooooo/ooo/ooo/o")),
        400,
        "needs 33 marks",
    );
    error(&format!("/api/peg/position?pos={}", enc("ooo/ooo")), 400, "found 6");
    error("/api/peg/position?board=chinese", 400, "unknown peg board");
    error("/api/peg/position?budget=lots", 400, "not a number");
    error("/api/peg/position?budget=2000001", 400, "over the limit");
    error("/api/peg/position?search=maybe", 400, "say 1 or 0");
    error("/api/peg/position?finish=d4", 400, "unknown parameter");
    error("/api/peg/ledger?x=1", 400, "no parameters");
    error("/api/position", 404, "/api/peg/position");
    error("/api/witness?kind=kingmaker", 404, "three-player only");
    let (status, _) = request(&addr, "POST", "/api/peg/position");
    assert_eq!(status, 405);
    assert_eq!(get_json(&addr, "/api/info", 200)["kind"], "peg", "still serving");
    let (status, js) = request(&addr, "GET", "/peg.js");
    assert_eq!(status, 200);
    assert!(js.contains("pegView") && !js.contains("http"), "no link out");

    // The ledger's own directory: a ledger, no problem table.
    let (_server2, addr2) = serve(&tb.join("peg-english"), &dir, "serve-peg-ledger");
    assert!(get_json(&addr2, "/api/info", 200)["problems"].is_null());
    let v = get_json(&addr2, "/api/peg/problems", 404);
    assert!(v["error"].as_str().unwrap().contains("plans/peg-problems.toml"), "{v}");
}

/// The peg page: the board, the verdict, the chart and both tables; a bad
/// picture's message with the start still drawn.
#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "no chromium binary when this was built: install Debian's `chromium` package (or set CHROMIUM=/path) and build again"
)]
fn peg_page_shows_the_board_verdict_chart_and_tables() {
    let bin = chromium_or_fail();
    let dir = TempDir::new("explorer-peg-page");
    let (_server, addr, _ledger, _one_at_a_time) = served_peg(&dir);
    let profile = dir.join("profile");
    let dom = dump(&bin, &profile, &format!("http://{addr}/?play=b4-d4,c2-c4"));
    assert_eq!(state(&dom), "ready", "{dom}");
    assert_eq!(tags(&dom, "g", "data-cell=").len(), 33);
    assert_eq!(tags(&dom, "g", "data-peg=\"yes\"").len(), 30);
    let verdict = tags(&dom, "div", "id=\"verdict\"");
    assert_eq!(verdict.len(), 1, "{dom}");
    assert_eq!(attr(verdict[0], "data-finish"), Some("d4"));
    let api_view = get_json(&addr, "/api/peg/position?pos=ooo%2Fooo%2Fooooooo%2Fo.ooooo%2Foo.oooo%2F.oo%2Fooo", 200);
    let d4 = api_view["finishes"].as_array().unwrap().iter().find(|f| f["hole"] == "d4").unwrap().clone();
    assert_eq!(attr(verdict[0], "data-status"), d4["status"].as_str(), "{dom}");
    assert_eq!(tags(&dom, "li", "data-move=").len(), api_view["jumps"].as_array().unwrap().len());
    let series: Vec<(&str, &str)> = tags(&dom, "path", "data-series=")
        .iter()
        .map(|t| (attr(t, "data-series").unwrap(), attr(t, "data-points").unwrap()))
        .collect();
    assert_eq!(series, [("positions", "32"), ("up_to_symmetry", "32"), ("winnable", "32")]);
    assert_eq!(tags(&dom, "tr", "data-jumps=").len(), 32);
    assert_eq!(tags(&dom, "tr", "data-start=").len(), 2);
    let dom = dump(&bin, &profile, &format!("http://{addr}/?pos=zz"));
    assert_eq!(state(&dom), "error");
    assert!(text_of(&dom, "error").contains("unexpected character"), "{}", text_of(&dom, "error"));
    assert_eq!(tags(&dom, "g", "data-cell=").len(), 33);
    let dom = dump(&bin, &profile, &format!("http://{addr}/?play=a1-a3"));
    assert_eq!(state(&dom), "error");
    assert!(text_of(&dom, "error").contains("jump a1-a3 is not legal"), "{}", text_of(&dom, "error"));
}

/// Winning moves of the reference file's `winning` lines (games/reference/sylver.tsv).
fn sylver_reference_winning(position: &str) -> Vec<u64> {
    let text = std::fs::read_to_string(repo().join("games/reference/sylver.tsv")).unwrap();
    let line = text
        .lines()
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|f| f.len() >= 3 && f[0] == "winning" && f[1] == position)
        .unwrap_or_else(|| panic!("no winning line for {position}"));
    line[2].split_whitespace().map(|x| x.parse().unwrap()).collect()
}

/// Serves `dir`/tb holding the committed m10-11 Sylver table summary.
fn served_sylver_table(dir: &TempDir) -> (Proc, String) {
    let tb = dir.join("tb");
    std::fs::create_dir_all(tb.join("sylver-table")).unwrap();
    std::fs::copy(repo().join("docs/results/sylver-table-m10-11-summary.json"), tb.join("sylver-table/summary.json"))
        .unwrap();
    serve(&tb, dir, "serve-sylver-table")
}

#[test]
fn sylver_api_positions_tables_and_bad_input() {
    // A directory without any tablebase: the Sylver view still answers, and
    // the Chinese checkers routes keep their 404.
    let dir = TempDir::new("explorer-sylver");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (server, addr) = serve(&empty, &dir, "serve-sylver-empty");
    get_json(&addr, "/api/info", 404);
    for (query, want) in [("numbers=5+14", "5 14"), ("numbers=14%2C5", "5 14"), ("numbers=4+5", "4 5")] {
        let v = get_json(&addr, &format!("/api/sylver/position?{query}"), 200);
        let winning: Vec<u64> = serde_json::from_value(v["winning"].clone()).unwrap();
        assert_eq!(winning, sylver_reference_winning(want), "{query}");
        assert_eq!(v["value"], "N");
        assert!(v["table"].is_null(), "no summary here");
        let chips = v["nameable"].as_array().unwrap();
        let won: Vec<u64> =
            chips.iter().filter(|c| c["status"] == "winning").map(|c| c["n"].as_u64().unwrap()).collect();
        assert_eq!(won, winning);
    }
    let v = get_json(&addr, "/api/sylver/position?numbers=5+14", 200);
    assert_eq!((v["t"].as_i64(), v["genus"].as_u64()), (Some(51), Some(26)));
    assert_eq!(v["position"], "{5, 14}");
    let p = get_json(&addr, "/api/sylver/position?numbers=11", 200);
    assert_eq!((p["finite"].as_bool(), p["value"].as_str()), (Some(false), Some("P")));
    let capped = get_json(&addr, "/api/sylver/position?numbers=17+18&budget=100", 200);
    assert_eq!(capped["value"], "unknown");
    for (query, want, says) in [
        ("", 400, "empty position"),
        ("numbers=", 400, "empty position"),
        ("numbers=0", 400, "0 cannot be named"),
        ("numbers=-4+5", 400, "negative"),
        ("numbers=5+abc", 400, "not a number"),
        ("numbers=5+99999999", 400, "too large"),
        ("numbers=5+14&budget=x", 400, "budget"),
        ("numbers=5+14&budget=999999999", 400, "budget"),
        ("numbers=5&colour=red", 400, "unknown parameter"),
        ("numbers=3000+3001", 422, "smallest"),
    ] {
        let e = get_json(&addr, &format!("/api/sylver/position?{query}"), want);
        assert!(e["error"].as_str().unwrap().contains(says), "{query}: {e}");
    }
    let (status, _) = request(&addr, "POST", "/api/sylver/position?numbers=5+14");
    assert_eq!(status, 405);
    drop(server);

    // A directory holding a Sylver table summary one level down: kind sylver,
    // and a two-number position carries its row.
    let (_server, addr) = served_sylver_table(&dir);
    let info = get_json(&addr, "/api/info", 200);
    assert_eq!(info["kind"], "sylver");
    assert_eq!(info["tables"][0], "sylver-table-m10-11");
    get_json(&addr, "/api/position", 404);
    let v = get_json(&addr, "/api/sylver/position?numbers=11+10", 200);
    assert_eq!(v["table"]["job"], "sylver-table-m10-11");
    assert_eq!(v["table"]["row"]["winning"], v["winning"]);
    assert_eq!(v["winning"], serde_json::json!(sylver_reference_winning("10 11")));
    let (status, body) = request(&addr, "GET", "/?game=sylver");
    assert_eq!(status, 200);
    assert!(body.contains("sylver.js"), "the page loads the Sylver view");
}

/// The Sylver page: {5, 14} and its 26 chips, 18 the only green one; then 18
/// named by URL (a P-position: no chip green); then a bad position.
#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "no chromium binary when this was built: install Debian's `chromium` package (or set CHROMIUM=/path) and build again"
)]
fn sylver_page_shows_the_chips_and_the_row() {
    let bin = chromium_or_fail();
    let dir = TempDir::new("explorer-sylver-page");
    let (_server, addr) = served_sylver_table(&dir);
    let profile = dir.join("profile");
    let dom = dump(&bin, &profile, &format!("http://{addr}/?game=sylver&numbers=14+5"));
    assert_eq!(state(&dom), "ready", "{dom}");
    let chips = tags(&dom, "button", "data-status=");
    assert_eq!(chips.len(), 26, "{dom}");
    let green: Vec<&str> =
        chips.iter().filter(|c| attr(c, "data-status") == Some("winning")).filter_map(|c| attr(c, "data-n")).collect();
    assert_eq!(green, ["18"]);
    assert_eq!(
        attr(tags(&dom, "table", "id=\"sylver-row\"").first().copied().unwrap_or(""), "data-m"),
        None,
        "no row for {{5, 14}} in m10-11"
    );
    let dom = dump(&bin, &profile, &format!("http://{addr}/?game=sylver&numbers=10+11"));
    assert_eq!(attr(tags(&dom, "table", "id=\"sylver-row\"")[0], "data-n"), Some("11"));
    let dom = dump(&bin, &profile, &format!("http://{addr}/?game=sylver&numbers=5+14&play=18"));
    assert_eq!(state(&dom), "ready", "{dom}");
    assert_eq!(attr(tags(&dom, "span", "id=\"sylver-value\"")[0], "data-value"), Some("P"));
    assert!(tags(&dom, "button", "data-status=\"winning\"").is_empty());
    let dom = dump(&bin, &profile, &format!("http://{addr}/?game=sylver&numbers=0"));
    assert_eq!(state(&dom), "error");
    assert!(text_of(&dom, "error").contains("0 cannot be named"), "{dom}");
}

// ---- limits: every error in JSON, searches bounded, nothing blocked

/// `GET path` on a fresh connection, left open and unread (a client waiting).
fn send_only(addr: &str, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    s
}

/// `GET path` as JSON, expecting `want`, and how long it took.
fn timed_json(addr: &str, path: &str, want: u16) -> (Value, Duration) {
    let t = Instant::now();
    let v = get_json(addr, path, want);
    (v, t.elapsed())
}

/// Asks for `path` (a cheap Sylver position) until it is answered 200 rather
/// than 503 (every slot taken), for at most `limit`; how long that took.
fn until_served(addr: &str, path: &str, limit: Duration) -> Duration {
    let t = Instant::now();
    loop {
        let (status, body) = request(addr, "GET", path);
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status} not JSON ({e}): {body}"));
        if status == 200 {
            return t.elapsed();
        }
        assert_eq!(status, 503, "{body}");
        assert!(v["error"].as_str().unwrap().contains("busy"), "{v}");
        assert!(t.elapsed() < limit, "{path} still turned away after {:?}: {v}", t.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An explorer served in this process with `limits` (a runtime on its own
/// thread), on a free loopback port; it shuts down when dropped.
struct InProcess {
    addr: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl InProcess {
    fn start(dir: &Path, limits: retro_explorer::limits::Limits) -> InProcess {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (shutdown, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let dir = dir.to_path_buf();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap().to_string()).unwrap();
                let stop = async {
                    let _ = shutdown_rx.await;
                };
                retro_explorer::serve_with_limits(dir, limits, listener, stop).await.unwrap();
            });
        });
        InProcess { addr: addr_rx.recv_timeout(Duration::from_secs(30)).unwrap(), shutdown: Some(shutdown) }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
    }
}

/// The Sylver position whose solve the tests hold slots with: `{33, 34}` at
/// the largest budget runs to its cap (2,000,000 positions, seconds).
const EXPENSIVE: &str = "/api/sylver/position?numbers=33+34&budget=2000000";

/// A Sylver position solved in a few milliseconds.
const CHEAP: &str = "/api/sylver/position?numbers=5+14";

#[test]
fn every_error_is_json_even_those_hyper_answers_itself() {
    let dir = TempDir::new("explorer-errors");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (_server, addr) = serve(&empty, &dir, "serve-errors");
    let long_target = format!("/api/info?{}", "a".repeat(70_000));
    let many_headers: String = (0..150).map(|i| format!("X-Header-{i}: {i}\r\n")).collect();
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "unknown route",
            b"GET /api/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec(),
            404,
            "no such page",
        ),
        (
            "POST",
            b"POST /api/info HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
            405,
            "GET only",
        ),
        ("a 70,000-byte target", format!("GET {long_target} HTTP/1.1\r\nHost: x\r\n\r\n").into(), 414, "too long"),
        (
            "150 headers",
            format!("GET /api/info HTTP/1.1\r\nHost: x\r\n{many_headers}\r\n").into(),
            431,
            "headers too large",
        ),
        ("a broken header", b"GET /api/info HTTP/1.1\r\nHost x\r\n\r\n".to_vec(), 400, "malformed"),
        (
            "a 5,000-byte query",
            format!(
                "GET /api/sylver/position?numbers={} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                "5".repeat(5000)
            )
            .into(),
            400,
            "longer than 4096",
        ),
        (
            "budget over the limit",
            b"GET /api/sylver/position?numbers=33+34&budget=10000000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                .to_vec(),
            400,
            "1 to 2000000",
        ),
    ];
    for (what, raw, want, says) in cases {
        let (status, head, body) = exchange(&addr, &raw);
        assert_eq!(status, want, "{what}: {head}\n{body}");
        assert!(head.to_ascii_lowercase().contains("content-type: application/json"), "{what}: {head}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {body:?}"));
        let msg = v["error"].as_str().unwrap_or_else(|| panic!("{what}: no error in {v}"));
        assert!(msg.contains(says), "{what}: {msg:?} should say {says:?}");
    }
    // A success is left as it is, and the server goes on.
    let v = get_json(&addr, CHEAP, 200);
    assert_eq!(v["winning"], serde_json::json!([18]));
}

#[test]
fn searches_stop_at_their_deadline_and_when_the_client_leaves() {
    use retro_explorer::limits::Limits;
    let dir = TempDir::new("explorer-stop");
    let one_slot = |deadline| Limits { slots: 1, queue_wait: Duration::from_millis(100), deadline };
    let slow = InProcess::start(&dir.0, one_slot(Duration::from_secs(120)));

    // For scale: a solve of a quarter of the expensive one's budget, run to
    // its cap (the expensive one takes four times as long or more).
    let (v, quarter) = timed_json(&slow.addr, "/api/sylver/position?numbers=33+34&budget=500000", 200);
    assert_eq!((v["value"].as_str(), v["positions"].as_u64()), (Some("unknown"), Some(500_000)), "{v}");
    assert!(v["stopped"].is_null(), "{v}");

    // While the expensive solve (four times that budget) runs, another
    // Sylver request finds the only slot taken: 503, in JSON, with Retry-After.
    let waiting = send_only(&slow.addr, EXPENSIVE);
    std::thread::sleep(Duration::from_millis(200));
    let (status, head, body) =
        exchange(&slow.addr, format!("GET {CHEAP} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
    assert_eq!(status, 503, "{body}");
    assert!(head.to_ascii_lowercase().contains("retry-after: 1"), "{head}");
    let e: Value = serde_json::from_str(&body).unwrap();
    assert!(e["error"].as_str().unwrap().contains("busy: 1 Sylver coinage searches"), "{e}");

    // The client hangs up: the search stops at its next chunk and frees the
    // slot long before the solve would have ended.
    drop(waiting);
    let freed = until_served(&slow.addr, CHEAP, 4 * quarter);
    eprintln!("a quarter of the solve {quarter:?}; slot freed {freed:?} after the client left");
    assert!(freed < quarter / 2, "the slot came free {freed:?} after the client left (a quarter solve: {quarter:?})");

    // A deadline shorter than the solve: answered in about that time,
    // unknown, saying why.
    let quick = InProcess::start(&dir.0, one_slot(Duration::from_millis(100)));
    let (v, took) = timed_json(&quick.addr, EXPENSIVE, 200);
    assert_eq!((v["value"].as_str(), v["stopped"].as_str()), (Some("unknown"), Some("deadline")), "{v}");
    assert!(v["reason"].as_str().unwrap().contains("after 0.1 s, the explorer's time limit"), "{v}");
    assert!(v["positions"].as_u64().unwrap() < 500_000, "{v}");
    assert!(took < quarter / 2, "a 0.1 s deadline answered after {took:?} (a quarter solve: {quarter:?})");
    // A position the deadline leaves time for is solved as ever.
    assert_eq!(get_json(&quick.addr, CHEAP, 200)["winning"], serde_json::json!([18]));
}

#[test]
fn a_flood_of_abandoned_sylver_searches_blocks_nothing() {
    let dir = TempDir::new("explorer-flood");
    let tb = solve_stage1(&dir);
    let (_server, addr) = serve(&tb, &dir, "serve-flood");
    let (_, info_idle) = timed_json(&addr, "/api/info", 200);

    // 600 expensive Sylver requests in flight: the clients wait, unread.
    let t = Instant::now();
    let flood: Vec<TcpStream> = (0..600).map(|_| send_only(&addr, EXPENSIVE)).collect();
    eprintln!("600 requests sent in {:?}", t.elapsed());
    std::thread::sleep(Duration::from_millis(300));
    let mut worst = Duration::ZERO;
    for path in ["/api/info", "/api/position", "/api/info", "/api/witness?kind=solo-win", "/api/info"] {
        let (v, took) = timed_json(&addr, path, 200);
        assert!(v.is_object(), "{path}: {v}");
        assert!(took < Duration::from_secs(1), "{path} took {took:?} under the flood");
        worst = worst.max(took);
    }

    // The clients hang up: their searches stop, and a cheap Sylver request
    // is served within a bounded time (it is turned away with a JSON 503
    // while the slots are still taken).
    drop(flood);
    let freed = until_served(&addr, CHEAP, Duration::from_secs(5));

    // A flood whose clients wait for their answers: turned away with 503
    // (JSON) after a second's wait for a slot, not queued; /api/info still
    // answers within a second. (A smaller budget: the few that get a slot
    // are answered sooner.)
    let t = Instant::now();
    let smaller = "/api/sylver/position?numbers=33+34&budget=250000";
    let flood: Vec<TcpStream> = (0..200).map(|_| send_only(&addr, smaller)).collect();
    let (_, info_during) = timed_json(&addr, "/api/info", 200);
    assert!(info_during < Duration::from_secs(1), "/api/info took {info_during:?} under the second flood");
    let mut answers = std::collections::BTreeMap::<u16, usize>::new();
    for s in flood {
        let (status, _, body) = read_answer(s);
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status} not JSON ({e}): {body}"));
        match status {
            200 => assert_eq!(v["value"], "unknown", "{v}"),
            503 => assert!(v["error"].as_str().unwrap().contains("busy"), "{v}"),
            _ => panic!("{status}: {v}"),
        }
        *answers.entry(status).or_default() += 1;
    }
    let all_answered = t.elapsed();
    eprintln!(
        "/api/info idle {info_idle:?}, worst route under 600 in flight {worst:?}; cheap Sylver served {freed:?} \
         after they left; 200 waiting clients answered {answers:?} in {all_answered:?}"
    );
    assert!(answers.get(&503).is_some_and(|&n| n > 150), "most are turned away: {answers:?}");
    assert!(all_answered < Duration::from_secs(20), "{all_answered:?}");
}

/// GET `path` and the raw answer: status, head, body as bytes.
fn get_bytes(addr: &str, path: &str) -> (u16, String, Vec<u8>) {
    read_raw(send(addr, request_text(addr, "GET", path).as_bytes()))
}

/// The tablebase files download with the manifest the job recorded: every
/// file summary.json lists is in `/api/files` with its size and sha256, and
/// `/files/NAME` gives exactly the bytes on disk, with that length and the
/// sha256 as its ETag; names the summary does not list (job.json, a path
/// out of the directory) are 404s with a JSON message.
#[test]
fn tablebase_files_download_with_their_manifest() {
    let dir = TempDir::new("explorer-files");
    let tb = solve_stage1(&dir);
    let (_p, addr) = serve(&tb, &dir, "serve");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(tb.join("summary.json")).unwrap()).unwrap();
    // The tablebases, then the layers' depth files.
    let recorded: Vec<&Value> = ["tablebases", "depth_files"]
        .iter()
        .flat_map(|list| summary[*list].as_array().unwrap_or_else(|| panic!("summary.json has {list}")))
        .collect();
    let listed = get_json(&addr, "/api/files", 200);
    let files = listed["files"].as_array().unwrap();
    assert_eq!(files.len(), recorded.len(), "{listed}");
    assert_eq!(files.len(), 6, "stage 1 writes three layers, each with its depth file: {listed}");
    for (f, r) in files.iter().zip(recorded) {
        assert_eq!((&f["file"], &f["bytes"], &f["sha256"]), (&r["file"], &r["bytes"], &r["sha256"]));
        let name = f["file"].as_str().unwrap();
        let (status, head, body) = get_bytes(&addr, f["url"].as_str().unwrap());
        assert_eq!(status, 200, "{head}");
        let on_disk = std::fs::read(tb.join(name)).unwrap();
        assert_eq!(body, on_disk, "{name}: the bytes on disk");
        assert_eq!(body.len() as u64, f["bytes"].as_u64().unwrap());
        let head = head.to_ascii_lowercase();
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        assert!(head.contains(&format!("etag: \"{}\"", f["sha256"].as_str().unwrap())), "{head}");
        let sha = retro_engine::tablebase::sha256_file(&tb.join(name)).unwrap();
        assert_eq!(f["sha256"].as_str().unwrap(), sha, "{name}: the recorded digest is the file's");
    }
    // The statistics: each layer as recorded, its rounds deciding no more
    // than the positions there are, and the counts by value.
    let stats = get_json(&addr, "/api/stats", 200);
    let layers = stats["layers"].as_array().unwrap();
    assert_eq!(layers.len(), summary["layers"].as_array().unwrap().len());
    for (l, r) in layers.iter().zip(summary["layers"].as_array().unwrap()) {
        assert_eq!(
            (&l["question"], &l["rounds"], &l["decided_per_round"]),
            (&r["question"], &r["rounds"], &r["decided_per_round"])
        );
        let decided: u64 = l["decided_per_round"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).sum();
        assert!(decided > 0 && decided <= summary["positions"].as_u64().unwrap(), "{l}");
    }
    assert_eq!(stats["scopes"], summary["scopes"]);
    let (status, _, body) = get_bytes(&addr, listed["manifest_url"].as_str().unwrap());
    assert_eq!(status, 200);
    assert_eq!(body, std::fs::read(tb.join("summary.json")).unwrap());
    for bad in ["/files/job.json", "/files/..%2Fsummary.json", "/files/LOCK", "/files/nothing.tb"] {
        let v = get_json(&addr, bad, 404);
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{bad}: {v}");
    }
    // A directory without a summary has nothing to download, and says so.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (_q, addr2) = serve(&empty, &dir, "serve-empty");
    for path in ["/api/files", "/api/stats"] {
        let v = get_json(&addr2, path, 404);
        assert!(v["error"].as_str().unwrap().contains("summary.json"), "{path}: {v}");
    }
}
