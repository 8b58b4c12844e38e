//! Runs the breadth-first levels of a peg-solitaire start, with a checkpoint
//! after every level: `DIR/levels.json` names the job and `DIR/level-NNN/`
//! holds level NNN's shard streams and, once they are all written, its marker
//! (`retro_engine::levels::store`). A killed run reloads the complete levels
//! and recomputes from the first incomplete one. A level too big for the
//! memory bound is expanded on disk, through spill files.

use crate::CoordinatorError;
use retro_engine::durable::{read_checked_json, write_checked_json};
use retro_engine::levels::disk;
use retro_engine::levels::spill::SpillOptions;
use retro_engine::levels::store::{self, LevelMarker, StoredLevel};
use retro_engine::levels::{self, Level};
use retro_games::peg::{Folded, Pegs};
use retro_node::fault::Fault;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;

/// What a checkpoint directory belongs to; a mismatch refuses to resume.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelsIdentity {
    /// Board name.
    pub board: String,
    /// The start position (bitboard).
    pub start: u64,
    /// Shard count.
    pub shards: usize,
    /// The symmetries the levels are folded by (a [`retro_games::peg::symmetry::Group`]
    /// mask, the start's stabiliser). Directories written before the fold
    /// followed the start were folded by all eight, which is what a missing
    /// field reads as; for a start with fewer symmetries they are refused.
    #[serde(default = "all_symmetries")]
    pub symmetries: u8,
}

fn all_symmetries() -> u8 {
    retro_games::peg::symmetry::Group::ALL.mask()
}

/// How to run the levels.
#[derive(Clone, Debug)]
pub struct LevelOptions {
    /// Shards per level.
    pub shards: usize,
    /// Threads.
    pub threads: usize,
    /// Checkpoint directory; `None` keeps everything in memory only (and
    /// then a level too big for `memory_bytes` is refused).
    pub checkpoints: Option<PathBuf>,
    /// Bytes the expansion may hold: a level whose successors would not fit
    /// is expanded on disk, through spill files (`levels::spill`).
    pub memory_bytes: u64,
}

/// Bytes a level held in memory takes per key (key, weight, slack).
const HELD_BYTES_PER_KEY: u64 = 40;

impl LevelOptions {
    /// Whether a level of `keys` keys is expanded in memory ([`levels::expands_in_memory`]).
    fn expands_in_memory(&self, keys: u64) -> bool {
        levels::expands_in_memory(keys, self.memory_bytes)
    }

    /// Whether a level of `keys` keys is held in memory for the ledger, when
    /// `held` bytes of levels are held already: all held levels together stay
    /// within a quarter of the bound, and the rest are read from disk.
    fn holds(&self, keys: u64, held: &mut u64) -> bool {
        let bytes = keys.saturating_mul(HELD_BYTES_PER_KEY);
        let fits = held.saturating_add(bytes) <= self.memory_bytes / 4;
        if fits {
            *held += bytes;
        }
        fits
    }
}

/// The levels of a start, with how long each took.
#[derive(Debug)]
pub struct Levels {
    /// `levels[n]`: the canonical positions after n jumps, in memory or on disk.
    pub levels: Vec<StoredLevel>,
    /// Seconds spent computing each level (0 for levels loaded from checkpoints).
    pub seconds: Vec<f64>,
    /// Levels that were loaded from checkpoints instead of computed.
    pub resumed: usize,
    /// Most bytes the level files took on disk at once (the two levels of a
    /// step and the spill files between them), over the levels computed.
    pub peak_disk_bytes: u64,
}

/// Computes every level reachable from `start`, resuming from checkpoints:
/// `ROOT/levels.json` names the job, `ROOT/level-NNN/` holds level NNN's shard
/// streams and, once complete, its marker (`levels::store`).
pub fn run(board: &Folded, start: Pegs, opts: &LevelOptions) -> Result<Levels, CoordinatorError> {
    let shards = opts.shards.max(1);
    let identity =
        LevelsIdentity { board: board.board.kind().name().into(), start, shards, symmetries: board.group.mask() };
    let mut out = Levels { levels: Vec::new(), seconds: Vec::new(), resumed: 0, peak_disk_bytes: 0 };
    // Bytes of the levels held in memory (see `LevelOptions::holds`).
    let mut held = 0u64;
    if let Some(root) = &opts.checkpoints {
        std::fs::create_dir_all(root).map_err(|source| CoordinatorError::File { path: root.clone(), source })?;
        let id_path = root.join("levels.json");
        match read_checked_json::<LevelsIdentity>(&id_path)? {
            Some(found) if found != identity => {
                let other = format!(
                    "another job ({} start {:#x}, {} shards, folded by {} symmetries)",
                    found.board,
                    found.start,
                    found.shards,
                    found.symmetries.count_ones()
                );
                return Err(CoordinatorError::ForeignCheckpoints { dir: root.clone(), other });
            }
            Some(_) => {}
            None => write_checked_json(&id_path, &identity)?,
        }
        while let Some(marker) = store::read_marker(root, out.levels.len(), shards)? {
            let n = out.levels.len();
            let level = if opts.holds(marker.total_keys(), &mut held) {
                StoredLevel::Memory(store::read_level(root, n, &marker, opts.threads)?)
            } else {
                StoredLevel::Disk { root: root.clone(), n, marker }
            };
            out.levels.push(level);
            out.seconds.push(0.0);
        }
        out.resumed = out.levels.len();
        if out.resumed > 0 {
            tracing::info!("resuming after level {} from {}", out.resumed - 1, root.display());
        }
    }
    let fault = Fault::from_env();
    if out.levels.is_empty() {
        let began = Instant::now();
        let first = levels::start_level(board.canonical(start), shards);
        save(opts, 0, &first, &fault)?;
        out.levels.push(StoredLevel::Memory(first));
        out.seconds.push(began.elapsed().as_secs_f64());
    }
    let mut scratch = levels::Scratch::default();
    loop {
        let n = out.levels.len();
        let began = Instant::now();
        let current = out.levels.last().expect("level 0 exists");
        let next = match current {
            StoredLevel::Memory(level) if opts.expands_in_memory(current.keys()) => {
                let (next, _) = levels::next_level_reusing(board, level, opts.threads, &mut scratch)?;
                if next.iter().all(|s| s.is_empty()) {
                    break;
                }
                save(opts, n, &next, &fault)?;
                let keys = next.iter().map(|s| s.len() as u64).sum();
                // Without a checkpoint directory there is no disk to leave it on.
                if opts.holds(keys, &mut held) || opts.checkpoints.is_none() {
                    StoredLevel::Memory(next)
                } else {
                    disk_level(opts, n)?
                }
            }
            _ => {
                // The in-memory levels' successor buffers are done with (the
                // next levels are wider still): give their memory back, or it
                // stays resident beside the passes' tables, past the bound.
                scratch = levels::Scratch::default();
                let (level, disk) = expand_on_disk(board, opts, n, &fault)?;
                out.peak_disk_bytes = out.peak_disk_bytes.max(disk);
                if level.keys() == 0 {
                    let root = opts.checkpoints.as_ref().expect("a level on disk has a root");
                    let dir = store::level_dir(root, n);
                    std::fs::remove_dir_all(&dir)
                        .map_err(|source| CoordinatorError::File { path: dir.clone(), source })?;
                    break;
                }
                level
            }
        };
        let seconds = began.elapsed().as_secs_f64();
        let on_disk = matches!(next, StoredLevel::Disk { .. });
        out.levels.push(next);
        out.seconds.push(seconds);
        let keys: Vec<u64> = out.levels.iter().map(StoredLevel::keys).collect();
        let last = super::progress::last_level(start.count_ones());
        tracing::info!("{}", super::progress::level_line(&keys, &out.seconds, last, on_disk));
    }
    Ok(out)
}

/// Level `n` as written by [`save`], to be read from disk when needed.
fn disk_level(opts: &LevelOptions, n: usize) -> Result<StoredLevel, CoordinatorError> {
    let root = opts.checkpoints.as_ref().expect("save wrote the level, so there is a root");
    let marker = store::read_marker(root, n, opts.shards.max(1))?
        .ok_or(CoordinatorError::LevelNotOnDisk { level: n, why: "was written without its marker" })?;
    Ok(StoredLevel::Disk { root: root.clone(), n, marker })
}

/// Expands level `n - 1` (on disk) into level `n`: in passes over groups of
/// destination shards that fit the bound (`levels::passes`), or, when one
/// destination alone does not fit, through spill files under `ROOT/spill`.
/// Returns the level and the bytes the step held on disk at its peak.
fn expand_on_disk(
    board: &Folded,
    opts: &LevelOptions,
    n: usize,
    fault: &Option<Fault>,
) -> Result<(StoredLevel, u64), CoordinatorError> {
    let Some(root) = &opts.checkpoints else {
        return Err(CoordinatorError::NoSpill { level: n - 1, memory_bytes: opts.memory_bytes });
    };
    let shards = opts.shards.max(1);
    let source = store::read_marker(root, n - 1, shards)?
        .ok_or(CoordinatorError::LevelNotOnDisk { level: n - 1, why: "is not on disk" })?;
    store::begin_level(root, n)?;
    let bound = SpillOptions { memory_bytes: opts.memory_bytes, threads: opts.threads };
    let sources = store::shard_files(root, n - 1, shards);
    let dest = |k: usize| store::shard_file(root, n, k);
    // A kill in the middle of a level on disk leaves it without its marker:
    // the resumed run empties it (and any runs) and makes it again.
    let step = disk::expand_on_disk(board, &sources, shards, &dest, &root.join("spill"), &bound, || {
        Fault::check(fault, "peg-mid-merge", 0, n as u32)
    })?;
    if step.passes > 0 {
        tracing::info!(
            "level {n}: {} source keys, {} successors, added up in {} pass{}",
            step.sources,
            step.successors,
            step.passes,
            if step.passes == 1 { "" } else { "es" }
        );
    } else {
        tracing::info!(
            "level {n}: {} source keys, {} successors, spilled as {} entries ({:.2} GB of runs)",
            step.sources,
            step.successors,
            step.spilled_entries,
            step.runs_bytes as f64 / 1e9
        );
    }
    let (merged, runs_bytes) = (step.merged, step.runs_bytes);
    let marker = LevelMarker { keys: merged.keys, bytes: merged.bytes };
    store::finish_level(root, n, &marker)?;
    // At the end of a spill the disk held the source and every run; at the
    // end of the step the source and the new level.
    let disk = source.total_bytes() + runs_bytes.max(marker.total_bytes());
    Ok((StoredLevel::Disk { root: root.clone(), n, marker }, disk))
}

fn save(opts: &LevelOptions, n: usize, level: &Level, fault: &Option<Fault>) -> Result<(), CoordinatorError> {
    let Some(root) = &opts.checkpoints else { return Ok(()) };
    // A kill here leaves the level unwritten: the resumed run recomputes it.
    Fault::check(fault, "peg-mid-level", 0, n as u32);
    store::write_level(root, n, level)?;
    Ok(())
}
