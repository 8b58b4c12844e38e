//! The one error type of the `coordinator` binary: every subcommand returns
//! it, `try_main` passes it up, and `main` is the only place it becomes text
//! and an exit status.

use retro_coordinator::CoordinatorError;
use retro_coordinator::job::EXIT_STOPPED;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A job, plan, checkpoint or result failed (the library's own error).
    #[error(transparent)]
    Coordinator(#[from] CoordinatorError),
    /// A plan could not be read.
    #[error(transparent)]
    Plan(#[from] retro_coordinator::plan::PlanError),
    /// A tablebase directory could not be probed.
    #[error(transparent)]
    Probe(#[from] retro_probe::ProbeError),
    /// An analysis, witness, ledger or check failed.
    #[error(transparent)]
    Results(#[from] retro_results::ResultsError),
    /// An input file was too large or unreadable, or a directory is busy.
    #[error(transparent)]
    Node(#[from] retro_node::NodeError),
    /// A tablebase file failed.
    #[error(transparent)]
    Tablebase(#[from] retro_engine::tablebase::TablebaseError),
    /// A star order the rules do not have.
    #[error(transparent)]
    Order(#[from] retro_games::cc3::BadOrder),
    /// A kernel benchmark could not run.
    #[error(transparent)]
    Bench(#[from] retro_engine::bench::BenchError),
    /// A Sylver coinage question is out of range or could not be solved.
    #[error(transparent)]
    Sylver(#[from] retro_engine::sylver::SolveError),
    /// A peg solution does not replay.
    #[error(transparent)]
    Peg(#[from] retro_games::peg::search::IllegalJump),
    /// The tablebase explorer could not serve.
    #[error(transparent)]
    Explorer(#[from] retro_explorer::ExplorerError),
    /// A socket could not be opened.
    #[error("{what}: {source}")]
    Socket {
        /// The socket and what was asked of it.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// A summary could not be written as JSON.
    #[error("cannot write JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// What the command itself found wrong: a bad combination of options,
    /// an unreadable input it names, a check that did not hold.
    #[error("{0}")]
    Refused(String),
}

impl From<String> for CliError {
    fn from(message: String) -> CliError {
        CliError::Refused(message)
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> CliError {
        CliError::Refused(message.to_string())
    }
}

impl CliError {
    /// The process's exit status: [`EXIT_STOPPED`] for a run stopped at a
    /// checkpoint by a signal (run it again to resume), 1 for a failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Coordinator(CoordinatorError::Stopped(_)) => EXIT_STOPPED,
            _ => 1,
        }
    }
}
