//! The subcommands of `coordinator`, one file each: main.rs parses the
//! command line and calls them.

pub mod bench;
pub mod board;
pub mod check;
mod error;
pub mod estimate;
pub mod explore;
pub mod kingmaking;
pub mod ledger;
pub mod peg;
pub mod probe;
pub mod run;
pub mod serve;
pub mod sylver;
pub mod verify;

pub use error::CliError;

use retro_coordinator::plan::{AnyPlan, DEFAULT_PLAN, Plan};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

/// A multi-threaded tokio runtime for the commands that serve or run a job.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(CliError::Runtime)
}

/// The plan at `path`, or the built-in stage-1 plan.
pub fn load_plan(path: &Option<PathBuf>) -> Result<Plan, CliError> {
    match path {
        Some(p) => Ok(Plan::load(p)?),
        None => Ok(Plan::from_toml_str(DEFAULT_PLAN, "built-in stage-1 plan")?),
    }
}

/// The plan at `path` of any game (its `[job] game` read once), or the
/// built-in stage-1 plan.
pub fn load_any_plan(path: &Option<PathBuf>) -> Result<AnyPlan, CliError> {
    match path {
        Some(p) => Ok(AnyPlan::load(p)?),
        None => load_plan(path).map(AnyPlan::Plan),
    }
}

/// Refuses peg plans in the commands that only know Chinese checkers.
pub fn not_peg(plan: Plan) -> Result<Plan, CliError> {
    if plan.job.kind() == retro_games::GameKind::Peg {
        return Err(format!(
            "plan {} is a peg solitaire plan: run it (`coordinator --plan ...`) for its ledger, or use `coordinator peg solve`",
            plan.job.name
        ).into());
    }
    Ok(plan)
}

/// Says where the job listens, on stderr: stdout carries only results (a
/// `--json` summary must parse as it comes).
pub fn print_listen(addr: SocketAddr) {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "listening on {addr}");
    let _ = err.flush();
}
