//! The coordinator's integration tests in one binary: each module below was
//! a test binary of its own, and each of those linked the whole coordinator
//! and compiled the helpers again. Every test still runs the real binaries
//! (`coordinator`, `worker`) as a user would. One module:
//! `cargo test -p retro-coordinator --test integration cluster::`.

mod common;

mod chaos;
mod cluster;
mod deploy;
mod docs;
mod errors;
mod explorer;
mod format;
mod local_cluster;
mod peg;
mod probe;
mod ranked;
mod reliability;
mod slurm;
mod stage1;
mod sylver;
mod sylver_cluster;
mod tls;
mod twoplayer;
mod witness;
