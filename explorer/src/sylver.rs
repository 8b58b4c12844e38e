//! The Sylver coinage view's data: any position typed as its named numbers,
//! with `t`, the nameable numbers (each marked winning or losing by one
//! capped [`ClassSolver`] run), ender and quiet-ender flags, what theory says
//! about an infinite one ([`known_p`]), and, for a two-number position, its row
//! of a Sylver table job's `summary.json` found in the served directory
//! (`DIR/summary.json` or `DIR/*/summary.json` with `"game": "sylver"`).
//!
//! Nothing here needs a tablebase, so the view works over any directory. The
//! work of one request is bounded: positions whose smallest number or `t` is
//! above [`MAX_REFERENCE`] / [`MAX_T`] are refused (422), a budget above
//! [`MAX_BUDGET`] is refused (400), and a solve answers `unknown` when it
//! reaches its position budget, its deadline, or its client goes away.
//!
//! The engine's solver has no stop hook, so a solve runs in chunks of
//! [`CHUNK`] memo positions through its position cap: after each chunk the
//! cap is raised by another chunk (the memo keeps every position decided so
//! far, so the next call picks up where the last stopped) unless the request
//! must stop ([`Stop`]). How many solves run at once is up to the caller
//! (the server's slots, [`super::limits`]).

use super::ApiError;
use super::limits::{Halt, Stop};
use axum::http::StatusCode;
use retro_engine::sylver::{ClassSolver, SolveError};
use retro_games::GameKind;
use retro_games::sylver::theory::{known_p, set_text};
use retro_games::sylver::{Apery, parse_numbers};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// Positions one request's solve may create before it answers `unknown`
/// (a second or so; at most 128 MiB of memo, 192 MiB while it grows).
pub const SOLVE_BUDGET: u64 = 2_000_000;

/// The largest `budget` a request may ask for: the default. A larger solve
/// is `coordinator sylver --position`'s job.
pub const MAX_BUDGET: u64 = SOLVE_BUDGET;

/// Memo positions a solve adds between two looks at its [`Stop`] (0.03 to
/// 0.15 s of search; the restarts cost nothing measurable: the memo keeps
/// what each chunk decided).
pub const CHUNK: u64 = 1 << 15;

/// The largest smallest-named-number the explorer takes (the Apéry set has
/// that many entries, and the minimal generators cost its square).
pub const MAX_REFERENCE: u64 = 1024;

/// The largest Frobenius number whose nameable numbers are listed.
pub const MAX_T: i64 = 20_000;

/// A nameable number and what naming it does.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Chip {
    /// The number.
    pub n: u64,
    /// `winning` (naming it leaves a P-position), `losing`, or `unknown`
    /// (the solve ran out of budget or cannot handle the position).
    pub status: &'static str,
}

/// A Sylver table job's row for a two-number position.
#[derive(Clone, Debug, Serialize)]
pub struct TableRow {
    /// The job that wrote it.
    pub job: String,
    /// The row as the summary holds it (`m`, `n`, `t`, `winning`, `positions`, `seconds`, `status`, ...).
    pub row: Value,
}

/// What `/api/sylver/position` answers.
#[derive(Clone, Debug, Serialize)]
pub struct SylverView {
    /// The numbers as named, ascending, repeats dropped.
    pub numbers: Vec<u64>,
    /// The minimal generators of the position.
    pub generators: Vec<u64>,
    /// The generators as text (`{5, 14}`).
    pub position: String,
    /// gcd of the named numbers (the position is finite iff it is 1).
    pub gcd: u64,
    /// True when finitely many numbers remain nameable.
    pub finite: bool,
    /// The Frobenius number, the largest nameable number (finite positions;
    /// -1 once 1 is named).
    pub t: Option<i64>,
    /// How many numbers remain nameable (finite positions).
    pub genus: Option<u64>,
    /// Every nameable number with its status (finite positions).
    pub nameable: Option<Vec<Chip>>,
    /// Sicherman's ender.
    pub ender: bool,
    /// A quiet ender.
    pub quiet_ender: bool,
    /// `P` (the player to move loses), `N`, `unknown` (over budget, out of
    /// time, or beyond the solver), `open` (infinite and not a known
    /// P-position) or `over` (1 has been named).
    pub value: &'static str,
    /// Every winning move (finite positions solved; empty for P), else null.
    pub winning: Option<Vec<u64>>,
    /// Why the value is what it is.
    pub reason: String,
    /// Memo positions the solve created.
    pub positions: Option<u64>,
    /// The position budget of the solve.
    pub budget: u64,
    /// Why the solve stopped before its answer or its budget: `deadline` (the
    /// explorer's time limit per request; `gone`, the client left, is never
    /// read by anyone), else null.
    pub stopped: Option<&'static str>,
    /// The matching row of a Sylver table in the served directory.
    pub table: Option<TableRow>,
    /// The Sylver table jobs found in the served directory.
    pub tables: Vec<String>,
}

/// The head of a `summary.json`.
#[derive(Deserialize)]
struct Head {
    game: Option<String>,
    job: Option<String>,
    #[serde(default)]
    rows: Vec<Value>,
}

/// The Sylver table summaries in `dir` (and one level down): job name and rows.
pub fn tables(dir: &Path) -> Vec<(String, Vec<Value>)> {
    super::peg::candidates(dir)
        .into_iter()
        .filter_map(|path| {
            let bytes = super::peg::read_summary(&path)?;
            let head: Head = serde_json::from_slice(&bytes).ok()?;
            (head.game.as_deref().and_then(|g| g.parse::<GameKind>().ok()) == Some(GameKind::Sylver)).then(|| {
                let job = head.job.unwrap_or_else(|| path.display().to_string());
                (job, head.rows)
            })
        })
        .collect()
}

/// True when `dir` holds a Sylver table summary.
pub fn has_tables(dir: &Path) -> bool {
    !tables(dir).is_empty()
}

/// `/api/info` for a directory of Sylver tables.
pub fn info(dir: &Path) -> Value {
    let jobs: Vec<String> = tables(dir).into_iter().map(|(job, _)| job).collect();
    serde_json::json!({ "kind": GameKind::Sylver, "title": "Sylver coinage", "tables": jobs })
}

fn unprocessable(message: String) -> ApiError {
    ApiError { status: StatusCode::UNPROCESSABLE_ENTITY, message }
}

/// The position named by `text` (numbers in any order, spaces or commas),
/// solved within `budget` positions until `stop` says stop; `dir` is searched
/// for Sylver tables. Malformed input or a budget outside 1 to [`MAX_BUDGET`]
/// is a 400 with the limit or the parser's message; a position too large to
/// explore is a 422.
pub fn position(dir: &Path, text: &str, budget: u64, stop: &Stop) -> Result<SylverView, ApiError> {
    if !(1..=MAX_BUDGET).contains(&budget) {
        return Err(ApiError::bad_request(format!(
            "budget {budget}: the explorer takes 1 to {MAX_BUDGET} positions (coordinator sylver --position takes more)"
        )));
    }
    let mut numbers = parse_numbers(text).map_err(|e| ApiError::bad_request(e.to_string()))?;
    numbers.sort_unstable();
    numbers.dedup();
    let m = numbers[0];
    if m > MAX_REFERENCE {
        return Err(unprocessable(format!(
            "the smallest named number is {m}: the explorer takes positions whose smallest number is at most \
             {MAX_REFERENCE} (coordinator sylver --position takes more)"
        )));
    }
    let a = Apery::from_numbers(&numbers).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let generators = a.minimal_generators();
    let t = a.frobenius();
    if let Some(t) = t
        && t > MAX_T
    {
        return Err(unprocessable(format!(
            "{} has t = {t}: the explorer lists positions with t up to {MAX_T}",
            set_text(&generators)
        )));
    }
    let all = tables(dir);
    let table = match generators[..] {
        [m, n] if a.is_finite() => all.iter().find_map(|(job, rows)| {
            rows.iter()
                .find(|r| r["m"].as_u64() == Some(m) && r["n"].as_u64() == Some(n))
                .map(|row| TableRow { job: job.clone(), row: row.clone() })
        }),
        _ => None,
    };
    let mut view = SylverView {
        position: set_text(&generators),
        numbers,
        generators,
        gcd: a.gcd(),
        finite: a.is_finite(),
        t,
        genus: a.genus(),
        nameable: None,
        ender: a.is_ender(),
        quiet_ender: a.is_quiet_ender(),
        value: "unknown",
        winning: None,
        reason: String::new(),
        positions: None,
        budget,
        stopped: None,
        table,
        tables: all.into_iter().map(|(job, _)| job).collect(),
    };
    let Some(t) = t else {
        let (value, reason) = match known_p(&a) {
            Some(why) => ("P", why.to_string()),
            None => (
                "open",
                format!(
                    "gcd {}: infinitely many numbers remain nameable, and this is not a known P-position \
                     (Hutchings's primes, Sicherman's list, Blok's family); the explorer does not search \
                     infinite positions (try coordinator sylver --position)",
                    view.gcd
                ),
            ),
        };
        view.value = value;
        view.reason = reason;
        if value == "P" {
            view.winning = Some(Vec::new());
        }
        return Ok(view);
    };
    let nameable = a.nameable().unwrap_or_default();
    if t < 1 {
        view.value = "over";
        view.reason = "1 has been named: the game is over, and whoever named it lost".into();
        view.nameable = Some(Vec::new());
        return Ok(view);
    }
    let (solved, positions) = solve(&a, budget, stop);
    view.positions = positions;
    match solved {
        Ok(winning) => {
            view.value = if winning.is_empty() { "P" } else { "N" };
            view.reason = if winning.is_empty() {
                "solved exactly: every move leaves an N-position (naming 1 loses)".into()
            } else {
                "solved exactly: each winning move leaves a P-position".into()
            };
            view.nameable = Some(
                nameable
                    .iter()
                    .map(|&n| Chip { n, status: if winning.contains(&n) { "winning" } else { "losing" } })
                    .collect(),
            );
            view.winning = Some(winning);
        }
        Err(e) => {
            view.reason = match e {
                Stopped::Halted(halt) => {
                    view.stopped = Some(match halt {
                        Halt::Deadline => "deadline",
                        Halt::Gone => "gone",
                    });
                    format!(
                        "{} with {} positions in the memo: use coordinator sylver --position",
                        stop.describe(halt),
                        positions.unwrap_or(0)
                    )
                }
                Stopped::Solver(e @ SolveError::Capped { .. }) if budget < MAX_BUDGET => {
                    format!("{e}: ask for more with budget=N (at most {MAX_BUDGET}), or use coordinator sylver")
                }
                Stopped::Solver(e @ SolveError::Capped { .. }) => {
                    format!("{e}, the explorer's most: use coordinator sylver --position")
                }
                Stopped::Solver(e) => e.to_string(),
            };
            // Naming 1 loses whatever the rest of the tree says.
            let status = |n: u64| if n == 1 { "losing" } else { "unknown" };
            view.nameable = Some(nameable.iter().map(|&n| Chip { n, status: status(n) }).collect());
        }
    }
    Ok(view)
}

/// Why a solve gave no answer.
enum Stopped {
    /// The solver's own error (capped at the budget, beyond the solver).
    Solver(SolveError),
    /// The request had to stop.
    Halted(Halt),
}

/// Every winning move of finite `a`, with at most `budget` memo positions,
/// stopping between chunks when `stop` says so; and the positions the solve
/// created.
fn solve(a: &Apery, budget: u64, stop: &Stop) -> (Result<Vec<u64>, Stopped>, Option<u64>) {
    let mut solver = match ClassSolver::for_position(a) {
        Ok(s) => s,
        Err(e) => return (Err(Stopped::Solver(e)), None),
    };
    loop {
        if let Some(halt) = stop.check() {
            return (Err(Stopped::Halted(halt)), Some(solver.positions()));
        }
        let cap = solver.positions().saturating_add(CHUNK).min(budget);
        solver.set_cap(cap);
        match solver.winning_moves(a) {
            // A chunk's cap, not the budget: go on from what the memo holds.
            Err(SolveError::Capped { .. }) if cap < budget => continue,
            result => return (result.map_err(Stopped::Solver), Some(solver.positions())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("sylver-serve-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn winning_of(text: &str) -> Vec<u64> {
        position(&tmp("w"), text, SOLVE_BUDGET, &Stop::never()).unwrap().winning.unwrap()
    }

    #[test]
    fn winning_moves_match_the_reference() {
        // games/reference/sylver.tsv
        assert_eq!(winning_of("5 14"), [18]);
        assert_eq!(winning_of("14,5"), [18]);
        assert_eq!(winning_of("4 5"), [11]);
        assert_eq!(winning_of("{7, 9}"), [19, 24]);
        assert_eq!(winning_of("5 14 16 18"), [17]);
        let v = position(&tmp("v"), "5 14", SOLVE_BUDGET, &Stop::never()).unwrap();
        assert_eq!((v.t, v.genus, v.value), (Some(51), Some(26), "N"));
        let chips = v.nameable.unwrap();
        assert_eq!(chips.len(), 26);
        assert_eq!(chips.iter().filter(|c| c.status == "winning").map(|c| c.n).collect::<Vec<_>>(), [18]);
        assert!(chips.iter().all(|c| c.status == "winning" || c.status == "losing"));
    }

    #[test]
    fn enders_p_positions_and_the_end() {
        let d = tmp("e");
        let quiet = position(&d, "7 8 10 13", SOLVE_BUDGET, &Stop::never()).unwrap();
        assert!(quiet.ender && quiet.quiet_ender);
        let loud = position(&d, "4 5 7", SOLVE_BUDGET, &Stop::never()).unwrap();
        assert!(loud.ender && !loud.quiet_ender);
        let p = position(&d, "2 3", SOLVE_BUDGET, &Stop::never()).unwrap();
        assert_eq!((p.value, p.t), ("P", Some(1)));
        assert_eq!(p.nameable.unwrap(), [Chip { n: 1, status: "losing" }]);
        let over = position(&d, "1 5", SOLVE_BUDGET, &Stop::never()).unwrap();
        assert_eq!(over.value, "over");
    }

    #[test]
    fn infinite_positions_say_what_theory_knows() {
        let d = tmp("i");
        let p = position(&d, "7", SOLVE_BUDGET, &Stop::never()).unwrap();
        assert_eq!((p.finite, p.value, p.t, p.gcd), (false, "P", None, 7));
        assert!(p.reason.contains("Hutchings"), "{}", p.reason);
        let open = position(&d, "10 15", SOLVE_BUDGET, &Stop::never()).unwrap();
        assert_eq!((open.value, open.gcd), ("open", 5));
        let listed = position(&d, "9 6", SOLVE_BUDGET, &Stop::never()).unwrap();
        assert!(listed.value == "P" && listed.reason.contains("Sicherman"), "{}", listed.reason);
        assert!(open.nameable.is_none() && open.winning.is_none());
    }

    #[test]
    fn budgets_and_bad_input() {
        let d = tmp("b");
        let capped = position(&d, "17 18", 1000, &Stop::never()).unwrap();
        assert_eq!(capped.value, "unknown");
        assert!(capped.winning.is_none());
        assert!(capped.nameable.unwrap().iter().any(|c| c.status == "unknown"));
        for bad in ["", "  ,", "0", "-3", "5 x", "5 2000000", "99999999999999999999999"] {
            let e = position(&d, bad, SOLVE_BUDGET, &Stop::never()).unwrap_err();
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{bad:?}: {}", e.message);
        }
        assert!(
            position(&d, "5 x", SOLVE_BUDGET, &Stop::never()).unwrap_err().message.contains("\"x\" is not a number")
        );
        for large in ["2000 2001", "61 1000"] {
            let e = position(&d, large, SOLVE_BUDGET, &Stop::never()).unwrap_err();
            assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY, "{large}: {}", e.message);
        }
        // Beyond the solver (m > 64): answered, but unknown.
        let wide = position(&d, "100 101", SOLVE_BUDGET, &Stop::never()).unwrap();
        assert_eq!(wide.value, "unknown");
        assert_eq!(position(&d, "5 14", 0, &Stop::never()).unwrap_err().status, StatusCode::BAD_REQUEST);
        assert_eq!(position(&d, "5 14", MAX_BUDGET + 1, &Stop::never()).unwrap_err().status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn chunked_solves_agree_with_one_solve_and_stop_when_told() {
        let d = tmp("c");
        // {17, 18} needs about 0.5 M positions: several chunks.
        let a = Apery::from_numbers(&[17, 18]).unwrap();
        let whole = retro_engine::sylver::analyse(&a, SOLVE_BUDGET).unwrap();
        assert!(whole.positions > 4 * CHUNK, "{} positions: not several chunks", whole.positions);
        let v = position(&d, "17 18", SOLVE_BUDGET, &Stop::never()).unwrap();
        assert_eq!(v.winning.as_deref(), Some(&whole.winning[..]));
        assert_eq!((v.value, v.stopped), (if whole.winning.is_empty() { "P" } else { "N" }, None));
        // A budget between chunks is still the cap.
        let capped = position(&d, "17 18", CHUNK + 1000, &Stop::never()).unwrap();
        assert_eq!((capped.value, capped.positions), ("unknown", Some(CHUNK + 1000)));
        // A deadline already passed: stopped before the first chunk.
        let (late, _guard) = Stop::new(std::time::Duration::ZERO);
        let v = position(&d, "17 18", SOLVE_BUDGET, &late).unwrap();
        assert_eq!((v.value, v.stopped, v.positions), ("unknown", Some("deadline"), Some(0)));
        assert!(v.reason.contains("time limit"), "{}", v.reason);
        assert!(v.winning.is_none());
        // The client gone: the same, for the flag.
        let (gone, guard) = Stop::new(std::time::Duration::from_secs(60));
        drop(guard);
        assert_eq!(position(&d, "17 18", SOLVE_BUDGET, &gone).unwrap().stopped, Some("gone"));
        // Positions without a solve are answered whatever the stop says.
        assert_eq!(position(&d, "7", SOLVE_BUDGET, &late).unwrap().value, "P");
    }

    #[test]
    fn table_rows_come_from_sylver_summaries() {
        let d = tmp("t");
        assert!(!has_tables(&d));
        std::fs::create_dir_all(d.join("job")).unwrap();
        std::fs::write(d.join("summary.json"), br#"{"game": "peg", "task": "ledger"}"#).unwrap();
        std::fs::write(
            d.join("job/summary.json"),
            br#"{"job": "sylver-small", "game": "sylver", "rows": [
                {"m": 5, "n": 14, "t": 51, "winning": [18], "positions": 99, "seconds": 0.1, "status": "solved"}]}"#,
        )
        .unwrap();
        assert!(has_tables(&d));
        assert_eq!(info(&d)["tables"][0], "sylver-small");
        let v = position(&d, "14 5 19", SOLVE_BUDGET, &Stop::never()).unwrap();
        let row = v.table.unwrap();
        assert_eq!(row.job, "sylver-small");
        assert_eq!(row.row["winning"][0], 18);
        assert_eq!(v.tables, ["sylver-small"]);
        assert!(position(&d, "4 5", SOLVE_BUDGET, &Stop::never()).unwrap().table.is_none());
    }
}
