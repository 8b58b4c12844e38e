//! What can go wrong in the parts coordinator and worker share.

use std::path::PathBuf;

/// A failure of a shared part: the directory lock, the resource check, a job spec.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Another live process holds the directory's lock.
    #[error(
        "{} is in use by another process{}; stop it first (two processes on one state directory would overwrite \
         each other's checkpoints)",
        dir.display(),
        holder.as_ref().map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Locked {
        /// The directory.
        dir: PathBuf,
        /// The pid the lock file names, if any.
        holder: Option<String>,
    },
    /// A file operation failed.
    #[error("cannot {doing} {}: {source}", path.display())]
    Io {
        /// What was being done ("create", "open", "lock").
        doing: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The machine lacks the memory or disk a job needs.
    #[error(
        "{what}: this machine has not enough {short}. Use a larger machine, more workers, or another directory; or \
         run with --ignore-resources to try anyway (the state is memory-mapped: a job larger than memory pages to \
         disk and runs many times slower)"
    )]
    Resources {
        /// The work.
        what: String,
        /// What is short, with the figures.
        short: String,
    },
    /// A job spec this build cannot run.
    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
}
