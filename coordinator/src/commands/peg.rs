//! `coordinator peg solve`: one single-vacancy peg solitaire problem.

use super::CliError;

use retro_coordinator::peg;

/// `coordinator peg ...`.
#[derive(clap::Subcommand, Debug)]
pub enum PegCommand {
    /// Decides whether the board with one hole empty can end with one peg on a
    /// given hole, and prints a solution as hole-name jumps.
    Solve {
        /// `english` (33 holes) or `european` (37 holes).
        #[arg(long, default_value = "english")]
        board: String,
        /// The vacant hole at the start (a1..g7).
        #[arg(long, default_value = "d4")]
        start: String,
        /// The hole of the last peg (default: the start's hole).
        #[arg(long)]
        finish: Option<String>,
        /// Positions the search may expand before it gives up.
        #[arg(long, default_value_t = peg::PROBLEM_BUDGET)]
        budget: u64,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `peg` subcommand.
pub fn run(command: PegCommand) -> Result<(), CliError> {
    match command {
        PegCommand::Solve { board, start, finish, budget, json } => {
            solve(&board, &start, finish.as_deref(), budget, json)
        }
    }
}

fn solve(board: &str, start: &str, finish: Option<&str>, budget: u64, json: bool) -> Result<(), CliError> {
    use retro_games::peg::{Board, BoardKind, class, parse_hole, search};
    let kind = BoardKind::parse(board).ok_or_else(|| format!("unknown board {board:?} (english or european)"))?;
    if budget == 0 {
        return Err(
            "--budget 0 searches nothing; give the number of positions the search may expand (at least 1)".into()
        );
    }
    let board = Board::new(kind);
    let hole = |name: &str, what: &str| {
        parse_hole(name)
            .filter(|&h| board.has_hole(h))
            .ok_or_else(|| format!("--{what} {name:?} is not a hole of the {} board (a1..g7)", kind.name()))
    };
    let s = hole(start, "start")?;
    let f = hole(finish.unwrap_or(start), "finish")?;
    let start_pegs = board.single_vacancy(s);
    let feasible = class::feasible(start_pegs, f);
    let began = std::time::Instant::now();
    let found = feasible.then(|| search::solve(&board, start_pegs, f, budget));
    let (status, solution, positions) = match &found {
        None => ("infeasible", None, 0),
        Some(r) => match &r.outcome {
            search::Outcome::Solved(jumps) => {
                search::replay(&board, start_pegs, jumps)?;
                ("solvable", Some(retro_results::peg::problems::jumps_text(jumps)), r.positions)
            }
            search::Outcome::Impossible => ("impossible", None, r.positions),
            search::Outcome::Undecided => ("undecided", None, r.positions),
        },
    };
    let (start, finish) = (retro_games::peg::hole_name(s), retro_games::peg::hole_name(f));
    if json {
        let v = serde_json::json!({"board": kind.name(), "start": start, "finish": finish,
            "class_feasible": feasible, "status": status, "solution": solution, "positions": positions,
            "seconds": began.elapsed().as_secs_f64()});
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{} board, {start} empty, last peg on {finish}: {status}", kind.name());
        match status {
            "infeasible" => println!("ruled out by the position class (no search needed)"),
            "undecided" => println!("gave up after {positions} positions; try a larger --budget"),
            _ => println!("{positions} positions searched in {:.2}s", began.elapsed().as_secs_f64()),
        }
        if let Some(jumps) = solution {
            println!("{jumps}");
        }
    }
    // An undecided problem is not an answer: scripts must not read it as one.
    if status == "undecided" {
        return Err(format!("undecided after {positions} positions; run again with a larger --budget").into());
    }
    Ok(())
}
