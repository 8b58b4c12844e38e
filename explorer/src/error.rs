//! What can stop the explorer from opening a directory or serving it. A
//! request's own failures are [`crate::ApiError`]s (an HTTP status and a
//! message); these are the explorer's, before or around the requests.

use retro_probe::ProbeError;
use std::net::SocketAddr;
use std::path::PathBuf;

/// A failure to open a directory or to serve it.
#[derive(Debug, thiserror::Error)]
pub enum ExplorerError {
    /// The tablebases are there but cannot be read.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// Nothing here the explorer can show; the text says what it looks for.
    #[error("{0}")]
    NothingToShow(String),
    /// A peg summary that says it is one but cannot be read as one.
    #[error("{}: not a peg summary this explorer reads: {why}", .path.display())]
    BadSummary {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The address cannot be listened on.
    #[error("listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why not.
        source: std::io::Error,
    },
}
