//! Runs the breadth-first levels of a peg-solitaire start, with a checkpoint
//! after every level: `DIR/levels.json` names the job and `DIR/level-NNN.bin`
//! holds every shard of level NNN, written atomically once the level is
//! complete. A killed run reloads the complete
//! levels and recomputes from the first incomplete one.

use crate::CoordinatorError;
use retro_common::fault::Fault;
use retro_engine::durable::{read_checked_json, write_checked_json};
use retro_engine::levels::{self, LevelShard};
use retro_games::peg::{Folded, Pegs};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use retro_engine::levels::{Level, weight};

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
    /// Checkpoint directory; `None` keeps everything in memory only.
    pub checkpoints: Option<PathBuf>,
}

/// The levels of a start, with how long each took.
#[derive(Debug)]
pub struct Levels {
    /// `levels[n]`: the canonical positions after n jumps.
    pub levels: Vec<Level>,
    /// Seconds spent computing each level (0 for levels loaded from checkpoints).
    pub seconds: Vec<f64>,
    /// Levels that were loaded from checkpoints instead of computed.
    pub resumed: usize,
}

fn level_path(root: &Path, n: usize) -> PathBuf {
    root.join(format!("level-{n:03}.bin"))
}

/// Computes every level reachable from `start`, resuming from checkpoints.
pub fn run(board: &Folded, start: Pegs, opts: &LevelOptions) -> Result<Levels, CoordinatorError> {
    let shards = opts.shards.max(1);
    let identity =
        LevelsIdentity { board: board.board.kind().name().into(), start, shards, symmetries: board.group.mask() };
    let mut out = Levels { levels: Vec::new(), seconds: Vec::new(), resumed: 0 };
    if let Some(root) = &opts.checkpoints {
        std::fs::create_dir_all(root).map_err(|e| CoordinatorError::Job(format!("{}: {e}", root.display())))?;
        let id_path = root.join("levels.json");
        match read_checked_json::<LevelsIdentity>(&id_path)? {
            Some(found) if found != identity => {
                return Err(CoordinatorError::Job(format!(
                    "{} belongs to another job ({} start {:#x}, {} shards, folded by {} symmetries); use another checkpoint directory or delete it",
                    root.display(),
                    found.board,
                    found.start,
                    found.shards,
                    found.symmetries.count_ones()
                )));
            }
            Some(_) => {}
            None => write_checked_json(&id_path, &identity)?,
        }
        while level_path(root, out.levels.len()).exists() {
            let n = out.levels.len();
            let path = level_path(root, n);
            let parts = levels::read_part(&path)?;
            let complete = parts.len() == shards && parts.iter().enumerate().all(|(k, (i, _))| *i as usize == k);
            if !complete {
                return Err(CoordinatorError::Job(format!(
                    "{} does not hold shards 0..{shards} in order; delete it to recompute",
                    path.display()
                )));
            }
            out.levels.push(parts.into_iter().map(|(_, s)| s).collect());
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
        out.levels.push(first);
        out.seconds.push(began.elapsed().as_secs_f64());
    }
    let mut scratch = levels::Scratch::default();
    loop {
        let n = out.levels.len();
        let began = Instant::now();
        let current = out.levels.last().expect("level 0 exists");
        let (next, _) = levels::next_level_reusing(board, current, opts.threads, &mut scratch)?;
        let size: usize = next.iter().map(LevelShard::len).sum();
        if size == 0 {
            break;
        }
        save(opts, n, &next, &fault)?;
        let seconds = began.elapsed().as_secs_f64();
        tracing::debug!("level {n}: {size} positions up to symmetry, {seconds:.3}s");
        out.levels.push(next);
        out.seconds.push(seconds);
    }
    Ok(out)
}

fn save(opts: &LevelOptions, n: usize, level: &Level, fault: &Option<Fault>) -> Result<(), CoordinatorError> {
    let Some(root) = &opts.checkpoints else { return Ok(()) };
    // A kill here leaves the level unwritten: the resumed run recomputes it.
    Fault::check(fault, "peg-mid-level", 0, n as u32);
    let parts: Vec<(u32, &LevelShard)> = level.iter().enumerate().map(|(k, s)| (k as u32, s)).collect();
    Ok(levels::write_part(&level_path(root, n), &parts)?)
}
