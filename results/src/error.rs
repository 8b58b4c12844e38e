//! What can go wrong while results are computed from solved files.

use retro_engine::tablebase::TablebaseError;
use retro_probe::ProbeError;

/// A failure of the analysis, a witness search, a ledger or a check.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// A tablebase could not be opened or read.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// A tablebase block could not be read.
    #[error(transparent)]
    Tablebase(#[from] TablebaseError),
    /// The solved files contradict themselves or the rules (a damaged file,
    /// or a bug): what was expected and not found.
    #[error("inconsistent results: {0}")]
    Inconsistent(String),
    /// A count outgrew its integer type.
    #[error("{0}")]
    Overflow(String),
    /// The input is not what the computation reads (another game, another
    /// stage, a position that does not fit).
    #[error("{0}")]
    Unsupported(String),
    /// A level file or a search on the way failed.
    #[error("{0}")]
    Levels(String),
    /// A scratch file of the analysis (a parked bitset) could not be written
    /// or read back.
    #[error("analysis scratch file {}: {what}: {source}", .path.display())]
    Scratch {
        /// The file.
        path: std::path::PathBuf,
        /// What was being done.
        what: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
}
