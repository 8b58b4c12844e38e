//! `coordinator serve`: the explorer over a tablebase directory.

use super::CliError;

use super::{print_listen, runtime};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Serves `tablebase` on `listen` until Ctrl-C.
pub fn run(tablebase: PathBuf, listen: SocketAddr, search_seconds: u64) -> Result<(), CliError> {
    let deadline = Duration::from_secs(search_seconds);
    Ok(retro_explorer::run_on(&runtime()?, tablebase, listen, deadline, print_listen)?)
}
