//! The coordinator: reads a plan, drives the workers through the layers and
//! rounds, merges their shards into tablebase files and summarises them.
//!
//! - [`plan`]: the TOML plan and its validation.
//! - [`scheduler`]: the state machine every join, pull and upload of a retrograde job goes through.
//! - [`manifest`]: the coordinator's durable state.
//! - [`service`] / [`inproc`]: the gRPC services (one join for every kind of job) and
//!   the in-process link of the scheduler.
//! - [`merge`]: uploaded blocks to tablebase files.
//! - [`offload`]: blocking work (locks across disk writes, file I/O) off the runtime's threads.
//! - [`job`]: running a plan, embedded or as a cluster.
//! - [`workdirs`]: the output and checkpoint directories a run may use, and whose they are.
//! - [`status`]: `/healthz`, `/status` and `/metrics` over HTTP, for every kind of job.
//! - [`progress`]: the per-round progress line and the time left.
//! - [`peg`]: peg solitaire jobs: breadth-first levels, embedded ([`peg::levels`])
//!   or across workers ([`peg::cluster`]), and the problem table.
//! - [`sylver_job`] / [`sylver_cluster`]: the Sylver coinage table job
//!   (`[job] game = "sylver"`), its rows solved by m-class on threads or workers.
//!
//! What the results mean (analysis, summaries, witnesses, the published-number
//! check, estimates, ledgers, Sylver positions) is computed in retro-results,
//! a position is probed with retro-probe, and the explorer is retro-explorer.

mod error;
pub mod inproc;
pub mod job;
pub mod manifest;
pub mod merge;
pub mod offload;
pub mod peg;
pub mod plan;
pub mod progress;
pub mod scheduler;
pub mod service;
pub mod status;
pub mod sylver_cluster;
pub mod sylver_job;
pub mod workdirs;

pub use error::CoordinatorError;
