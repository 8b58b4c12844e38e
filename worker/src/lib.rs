//! The worker: joins the coordinator's job, pulls tasks, runs the kernel on
//! its memory-mapped shards, exchanges update batches with its peers and
//! checkpoints after every round.
//!
//! - `spec`, `lock`, `fault`, `resources` (from retro-node): the job as the
//!   coordinator describes it, the directory lock, fault points, resource checks.
//! - [`store`]: the on-disk state of one layer (shard files, manifest, undo
//!   logs, inboxes) and its crash recovery.
//! - [`steps`]: the tasks (init, generate, apply, export) as blocking functions.
//! - [`link`]: how a worker talks to the coordinator (gRPC, or in-process in
//!   embedded mode) and to its peers.
//! - [`peer`]: the Peer service that receives update batches.
//! - [`join`]: the one join every kind of job starts with.
//! - [`run`]: the pull loop of a retrograde job; [`levels`] and [`tasks`]:
//!   the loops of level jobs (peg solitaire) and task jobs (Sylver tables).

pub mod join;
pub mod levels;
pub mod link;
pub mod metrics;
pub mod peer;
pub mod run;
pub mod steps;
pub mod store;
pub mod tasks;

// What the coordinator shares with the worker lives in retro-node; the
// worker's modules name it through these paths.
pub(crate) use retro_node::{
    HEARTBEAT_INTERVAL, KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT, MAX_BACKOFF, fault, lock, resources, spec,
};

/// Most update keys in one peer message (keeps messages under the size limit).
pub const MAX_KEYS_PER_MESSAGE: usize = 1 << 22;
