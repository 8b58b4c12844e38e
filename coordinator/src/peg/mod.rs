//! Peg solitaire jobs, run: the breadth-first levels of a single-vacancy
//! start, embedded ([`levels`]) or across workers ([`cluster`]), then their
//! ledger; and the table of single-vacancy problems. What the levels mean (the
//! ledger, the OEIS check, the problem table, the summaries) is computed in
//! `retro_results::peg`.

pub mod cluster;
pub mod levels;
pub mod progress;

use crate::CoordinatorError;
use crate::plan::{GamePlan, PegPlan, Plan};
use retro_engine::durable::write_atomic;
use retro_engine::levels::store::StoredLevel;
use retro_games::GameKind;
use retro_games::peg::class::feasible;
use retro_games::peg::{Board, BoardKind, Folded, hole_name, parse_hole};
use retro_results::peg::summary::{LedgerSummary, ProblemsSummary, Totals};
use retro_results::peg::{ledger, oeis, problems};
use std::path::Path;
use std::time::Instant;

/// The board, the vacant hole's name and the single-vacancy start a ledger
/// plan names.
pub fn plan_start(plan: &Plan) -> Result<(Board, &str, retro_games::peg::Pegs), CoordinatorError> {
    let GamePlan::Peg(PegPlan::Ledger { board, vacancy: vacancy_name, .. }) = &plan.job.game else {
        return Err(CoordinatorError::WrongPlan { plan: plan.job.name.clone(), kind: "peg ledger" });
    };
    let board = Board::new(*board);
    let vacancy = parse_hole(vacancy_name)
        .filter(|&h| board.has_hole(h))
        .ok_or_else(|| CoordinatorError::NoSuchHole { hole: vacancy_name.clone(), board: board.kind().name() })?;
    let start = board.single_vacancy(vacancy);
    Ok((board, vacancy_name, start))
}

/// Runs a peg ledger plan embedded: levels (checkpointed in `checkpoints`),
/// ledger, OEIS check; writes `summary.json` into `output`.
pub fn run_ledger(plan: &Plan, output: &Path, checkpoints: &Path) -> Result<LedgerSummary, CoordinatorError> {
    let (board, vacancy_name, start) = plan_start(plan)?;
    let threads = plan.threads();
    let opts = levels::LevelOptions {
        shards: plan.shards.count as usize,
        threads,
        checkpoints: Some(checkpoints.join("levels")),
        memory_bytes: plan.memory_bytes(),
    };
    let began = Instant::now();
    let folded = Folded::of_start(board.clone(), start);
    let computed = levels::run(&folded, start, &opts)?;
    let seconds_levels = began.elapsed().as_secs_f64();
    let began = Instant::now();
    let ledger_opts = ledger::LedgerOptions {
        threads,
        scratch: checkpoints.join("ledger"),
        memory_bytes: opts.memory_bytes,
        landing_holes: matches!(plan.job.game, GamePlan::Peg(PegPlan::Ledger { landing_holes: Some(true), .. })),
    };
    let ledger = ledger::ledger(&folded, start, &computed.levels, &ledger_opts)?;
    let seconds_ledger = began.elapsed().as_secs_f64();
    let central = board.kind() == BoardKind::English && vacancy_name == "d4";
    let totals = Totals::of(&ledger);
    let finishing_holes =
        (0..64u8).filter(|&h| board.has_hole(h) && feasible(start, h)).map(hole_name).collect::<Vec<_>>();
    let summary = LedgerSummary {
        game: GameKind::Peg,
        job: plan.job.name.clone(),
        oeis: if central { oeis::check(&ledger) } else { Vec::new() },
        ledger,
        finishing_holes,
        totals,
        shards: opts.shards,
        threads,
        levels_resumed: computed.resumed,
        seconds_levels,
        seconds_ledger,
        memory_bytes: opts.memory_bytes,
        levels_on_disk: computed.levels.iter().filter(|l| matches!(l, StoredLevel::Disk { .. })).count(),
        peak_disk_bytes: computed.peak_disk_bytes,
        peak_rss_bytes: retro_engine::process::peak_rss_bytes(),
    };
    std::fs::create_dir_all(output).map_err(|source| CoordinatorError::File { path: output.to_path_buf(), source })?;
    let json = serde_json::to_vec_pretty(&summary)?;
    write_atomic(&output.join("summary.json"), &json)?;
    Ok(summary)
}

/// Positions one problem search may expand (about 2.5 GB of memo at most).
pub const PROBLEM_BUDGET: u64 = 100_000_000;

/// Runs a peg problems plan embedded; writes `summary.json` and `problems.md` into `output`.
pub fn run_problems(plan: &Plan, output: &Path) -> Result<ProblemsSummary, CoordinatorError> {
    let mut boards = Vec::new();
    let board = match &plan.job.game {
        GamePlan::Peg(PegPlan::Problems { board }) => *board,
        _ => return Err(CoordinatorError::WrongPlan { plan: plan.job.name.clone(), kind: "peg problems" }),
    };
    for kind in problems::plan_boards(board) {
        boards.push(problems::decide_all(&Board::new(kind), PROBLEM_BUDGET, plan.threads())?);
    }
    let summary = ProblemsSummary {
        game: GameKind::Peg,
        task: "problems",
        job: plan.job.name.clone(),
        budget: PROBLEM_BUDGET,
        boards,
    };
    std::fs::create_dir_all(output).map_err(|source| CoordinatorError::File { path: output.to_path_buf(), source })?;
    let json = serde_json::to_vec_pretty(&summary)?;
    write_atomic(&output.join("summary.json"), &json)?;
    let tables: String = summary.boards.iter().map(|b| b.markdown() + "\n").collect();
    write_atomic(&output.join("problems.md"), tables.as_bytes())?;
    Ok(summary)
}
