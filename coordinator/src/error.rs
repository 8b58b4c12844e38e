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
use std::path::PathBuf;

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
    /// The job's state machine failed (a step failed too often, a worker
    /// sent what does not fit); the reason is the one the status page and
    /// the workers were given.
    #[error("{0}")]
    Failed(String),
    /// A file or directory could not be used.
    #[error("{}: {source}", path.display())]
    File {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A thread the job runs work on could not start or died.
    #[error("{what}: {detail}")]
    Thread {
        /// The work ("the merge of layer 2", "the analysis").
        what: String,
        /// What happened to it.
        detail: String,
    },
    /// The embedded worker stopped with an error.
    #[error("embedded worker failed: {0}")]
    EmbeddedWorker(#[source] retro_worker::run::WorkerError),
    /// A worker's data directory could not be read or written.
    #[error(transparent)]
    WorkerData(#[from] retro_worker::run::WorkerError),
    /// A worker's store failed.
    #[error(transparent)]
    Store(#[from] retro_worker::store::StoreError),
    /// A staged upload is not what its worker wrote.
    #[error("{}: staged upload is damaged", path.display())]
    DamagedUpload {
        /// The staged file.
        path: PathBuf,
    },
    /// Two workers (or two attempts) uploaded the same block.
    #[error("block {block} was uploaded twice ({})", path.display())]
    BlockTwice {
        /// The block.
        block: u64,
        /// The staged file that holds it the second time.
        path: PathBuf,
    },
    /// A block of the tablebase was never uploaded.
    #[error("block {block} of {total} was never uploaded")]
    BlockMissing {
        /// The first missing block.
        block: usize,
        /// The blocks the tablebase has.
        total: u64,
    },
    /// The checkpoints hold more workers than the command expects.
    #[error("{}: the job started with {started} workers; run it with --expect-workers {started}", path.display())]
    WorkerCount {
        /// The manifest.
        path: PathBuf,
        /// The workers it names.
        started: usize,
    },
    /// The checkpoint directory holds another job's state.
    #[error("{} belongs to {other}; use another checkpoint directory or delete it", dir.display())]
    ForeignCheckpoints {
        /// The checkpoint directory.
        dir: PathBuf,
        /// The job it belongs to, as far as it says.
        other: String,
    },
    /// A plan of one kind was given to a command of another.
    #[error("plan {plan} is not a {kind} plan")]
    WrongPlan {
        /// The plan's job name.
        plan: String,
        /// The kind of plan the command needs.
        kind: &'static str,
    },
    /// A peg plan's vacancy is not a hole of its board.
    #[error("{hole:?} is not a hole of the {board} board")]
    NoSuchHole {
        /// The hole's name as the plan spells it.
        hole: String,
        /// The board.
        board: &'static str,
    },
    /// A level the job needs is not on disk, or has no marker.
    #[error("level {level} {why}")]
    LevelNotOnDisk {
        /// The level.
        level: usize,
        /// "is not on disk", "was written without its marker".
        why: &'static str,
    },
    /// A level does not fit memory and there is nowhere to spill it.
    #[error(
        "level {level} does not fit the memory bound ({memory_bytes} bytes) and there is no checkpoint directory \
         to spill to"
    )]
    NoSpill {
        /// The level.
        level: usize,
        /// The memory bound.
        memory_bytes: u64,
    },
    /// A worker's Sylver row does not answer what the job asks.
    #[error("row {{{m}, {n}}} {why}")]
    BadRow {
        /// The row's m.
        m: u64,
        /// The row's n.
        n: u64,
        /// What is wrong with it.
        why: String,
    },
    /// The fault hook stopped the job after a number of rows (tests only).
    #[error("stopped after {0} rows (fault hook)")]
    FaultStop(usize),
}
