//! The subcommands of `coordinator`, one file each (as they move out of main.rs).

pub mod probe;
