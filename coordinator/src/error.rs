//! What can stop the coordinator's library functions: one enum, so that the
//! command line (the only place errors become text) can tell a broken plan
//! from damaged checkpoints, a busy directory or a failed job.

use crate::manifest::ManifestError;
use crate::plan::PlanError;
use retro_engine::durable::DurableError;
use retro_engine::levels::LevelError;
use retro_engine::tablebase::TablebaseError;
use retro_node::NodeError;
use retro_node::spec::SpecError;
use retro_probe::ProbeError;
use retro_results::ResultsError;

/// A failure of a plan, a job or a result.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    /// The plan is unreadable or invalid.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The checkpoints or their tablebases cannot be used.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A directory is locked by another process, or the machine is too small.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// The job names something this build cannot run.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// An analysis, witness, ledger or check failed.
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// A tablebase directory could not be probed.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// A tablebase file could not be written or read.
    #[error(transparent)]
    Tablebase(#[from] TablebaseError),
    /// A checked file could not be written or read.
    #[error(transparent)]
    Durable(#[from] DurableError),
    /// A kernel pass failed.
    #[error(transparent)]
    Kernel(#[from] retro_engine::kernel::KernelError),
    /// A star order the rules do not have.
    #[error(transparent)]
    Order(#[from] retro_games::cc3::BadOrder),
    /// A level file failed.
    #[error(transparent)]
    Levels(#[from] LevelError),
    /// A summary could not be written as JSON.
    #[error("cannot write JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The gRPC server could not run.
    #[error("the cluster service stopped: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// A directory or file could not be used.
    #[error("{0}")]
    Io(String),
    /// Workers, plans and checkpoints that do not fit together.
    #[error("{0}")]
    Mismatch(String),
    /// The job stopped on request (SIGTERM, SIGINT) at a safe point; run
    /// again, it resumes from there.
    #[error("{0}")]
    Stopped(String),
    /// The job cannot go on (a step failed too often, a worker sent what
    /// does not fit, a thread died).
    #[error("{0}")]
    Job(String),
}
