//! The retrograde engine: kernels and their storage.
//!
//! - [`layout`] cuts a rank space into shards, tablebase blocks and chunks.
//! - [`values`] is the one-byte state of a position while a layer is solved.
//! - [`kernel`] holds the init pass and the two halves of a round (generate
//!   predecessor updates from the frontier; apply updates to counters).
//! - [`routed`] is the round the workers run: one record per decided
//!   position, routed to the owner of its predecessor block and applied there
//!   region by region, in cache.
//! - [`batch`] encodes the update batches that cross shards (sorted,
//!   delta-coded, zstd) and the inbox files a receiver persists them in.
//! - [`shardfile`] maps shard state files and keeps the undo log that makes a
//!   round restartable; [`durable`] writes checked manifests atomically.
//! - [`tablebase`] writes and probes the compressed 2-bit result files.
//! - [`levels`] expands breadth-first levels of canonical keys with sequence
//!   weights (peg solitaire) and keeps each level's shards as checked files.
//! - [`rankset`] is one bit per position, for what a layer knows before it
//!   starts from the layers solved before it.
//! - [`memsolve`] solves a whole layer in memory: the reference the cluster
//!   path is tested against, and the benchmark harness.
//!
//! - [`bench`](mod@bench) measures the kernel's building blocks (`coordinator bench`);
//!   [`process`] reads this process's peak memory for the figures runs print.
//! - [`sylver`] solves Sylver coinage positions by memoised minimax, one memo
//!   per m-class.
//!
//! Nothing here knows about tokio or sockets.

pub mod batch;
pub mod bench;
pub mod durable;
mod huge_pages;
pub mod kernel;
pub mod layout;
pub mod levels;
pub mod memsolve;
mod prefetch;
pub mod process;
pub mod rankset;
pub mod routed;
pub mod shardfile;
pub mod sylver;
pub mod tablebase;
#[cfg(test)]
mod testutil;
pub mod values;
