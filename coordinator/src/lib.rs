//! The coordinator: reads a plan, drives the workers through the layers and
//! rounds, merges their shards into tablebase files and summarises them.
//!
//! - [`plan`]: the TOML plan and its validation.
//! - [`scheduler`]: the state machine every join, pull and upload of a retrograde job goes through.
//! - [`manifest`]: the coordinator's durable state.
//! - [`service`] / [`inproc`]: the gRPC services (one join for every kind of job) and
//!   the in-process link of the scheduler.
//! - [`merge`]: uploaded blocks to tablebase files.
//! - [`job`]: running a plan, embedded or as a cluster.
//! - [`analysis`] / [`summary`]: the 12 answers, categories, reachability, summary.json.
//! - [`status`]: `/healthz`, `/status` and `/metrics` over HTTP, for every kind of job.
//! - [`peg`]: peg solitaire: the breadth-first ledger and the single-vacancy problems.
//! - [`twoplayer`]: summary.json of a two-player (`cc2`) job.
//! - [`probe`]: answers for one position from the tablebase files.
//! - [`witness`]: positions that show each category, with the line that reaches them.
//! - [`estimate`]: exact sizes for any order.
//!
//! The position explorer (`coordinator serve`) is its own crate, retro-explorer.
//! - [`bench`]: throughput of the kernel's building blocks.
//! - [`sylver`] / [`sylver_job`]: Sylver coinage positions, and the table job
//!   (`[job] game = "sylver"`) that solves rows `{m, n}` by m-class.

pub mod bench;
mod error;
pub mod estimate;
pub mod inproc;
pub mod job;
pub mod manifest;
pub mod merge;
pub mod peg;
pub mod plan;
pub mod probe;
pub mod progress;
pub mod scheduler;
pub mod service;
pub mod status;
pub mod summary;
pub mod sylver;
pub mod sylver_cluster;
pub mod sylver_job;
pub mod twoplayer;

pub use error::CoordinatorError;

// Game results live in retro-results; these names keep the coordinator's
// modules (summary, the explorer, the commands) reading as before.
pub use retro_results::cc3::{analysis, check, witness};
