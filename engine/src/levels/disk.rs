//! One step of a level on disk to the next: in passes over groups of
//! destination shards when each destination fits the bound
//! ([`super::passes`]), else through spill files ([`super::spill`]). The one
//! entry point of the level job and of the ledger's duals.

use super::passes::{count_successors, expand_in_passes};
use super::spill::{Merged, SpillOptions, merge_runs, spill_level};
use super::store::remove_dir_if_present;
use super::{LevelError, LevelGame};
use std::path::{Path, PathBuf};

/// What a step did.
#[derive(Debug)]
pub struct DiskStep {
    /// Keys and bytes of each destination shard written.
    pub merged: Merged,
    /// Source keys read.
    pub sources: u64,
    /// Source keys with no child.
    pub childless: u64,
    /// Successors (moves) from the source level.
    pub successors: u64,
    /// Passes over the source after the counting one (0 when it spilled).
    pub passes: usize,
    /// Entries written to spill runs (0 when it took passes).
    pub spilled_entries: u64,
    /// Bytes of spill runs at their peak (0 when it took passes).
    pub runs_bytes: u64,
}

/// Expands the level in `sources` (one stream per shard) into `dest(k)` for
/// each of the `shards` destination shards, within `opts`'s bound. Spill runs,
/// if any, go under `scratch`, which is emptied first (runs of a killed step)
/// and removed after. `check` runs once in the middle of the step: between the
/// first two passes, or between the spill and the merge (a fault point).
pub fn expand_on_disk(
    game: &impl LevelGame,
    sources: &[PathBuf],
    shards: usize,
    dest: &(dyn Fn(usize) -> PathBuf + Sync),
    scratch: &Path,
    opts: &SpillOptions,
    mut check: impl FnMut(),
) -> Result<DiskStep, LevelError> {
    remove_dir_if_present(scratch)?;
    let counts = count_successors(game, sources, shards, opts.threads)?;
    let mut step = DiskStep {
        merged: Merged::default(),
        sources: counts.sources,
        childless: counts.childless,
        successors: counts.per_shard.iter().sum(),
        passes: 0,
        spilled_entries: 0,
        runs_bytes: 0,
    };
    match counts.groups(opts) {
        Some(groups) => {
            step.passes = groups.len();
            step.merged = expand_in_passes(game, sources, &counts, &groups, dest, opts.threads, |pass| {
                if pass == 1 {
                    check();
                }
            })?;
        }
        None => {
            let runs = spill_level(game, sources, shards, scratch, opts)?;
            check();
            step.merged = merge_runs(&runs, dest, opts.threads)?;
            step.spilled_entries = runs.entries;
            step.runs_bytes = runs.bytes;
            remove_dir_if_present(scratch)?;
        }
    }
    Ok(step)
}
