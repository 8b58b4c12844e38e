//! The git commit these binaries were built from.
//!
//! A crate of its own, depended on only by the two binaries' crates, so that a
//! new commit rebuilds them and nothing below them (see `build.rs` for what
//! makes the value change).

/// The git commit of the checkout (12 hex digits, `-dirty` when a build input
/// differed from that commit, `unknown` outside git).
pub const BUILD_COMMIT: &str = env!("RETRO_BUILD_COMMIT");

/// The program version with its commit, as `--version` prints it.
pub const LONG_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("RETRO_BUILD_COMMIT"), ")");
