//! One breadth-first level step of a peg-solitaire start, made again from a
//! level that a level job already wrote (`<checkpoints>/levels/level-NNN`),
//! on disk within a memory bound: a harness for before/after timings of the
//! step (`levels::disk::expand_on_disk`) on a real, wide level without running
//! the job up to it. Prints the seconds, the passes, the keys and successors
//! of the new level and the peak RSS; the shard files it writes can be
//! compared byte for byte with the job's own next level.
//!
//! `cargo run --release -p retro-engine --example peg_level_step -- BOARD VACANCY LEVEL_DIR OUT_DIR [MEMORY_GB] [SHARDS]`
//! (for example `european d2 ck/levels/level-016 /tmp/level-017 6 64`).

use retro_engine::levels::disk::expand_on_disk;
use retro_engine::levels::spill::SpillOptions;
use retro_engine::process::peak_rss_bytes;
use retro_games::peg::{Board, BoardKind, Folded, parse_hole};
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        return Err("usage: peg_level_step BOARD VACANCY LEVEL_DIR OUT_DIR [MEMORY_GB] [SHARDS]".into());
    }
    let kind = BoardKind::parse(&args[0]).ok_or("unknown board")?;
    let board = Board::new(kind);
    let hole = parse_hole(&args[1]).filter(|&h| board.has_hole(h)).ok_or("not a hole of that board")?;
    let (source, out) = (PathBuf::from(&args[2]), PathBuf::from(&args[3]));
    let memory_gb: f64 = args.get(4).map_or(Ok(8.0), |a| a.parse())?;
    let shards: usize = args.get(5).map_or(Ok(64), |a| a.parse())?;
    let game = Folded::of_start(board.clone(), board.single_vacancy(hole));
    let sources: Vec<PathBuf> = (0..shards).map(|k| source.join(format!("shard-{k:04}.lvl"))).collect();
    if let Some(missing) = sources.iter().find(|p| !p.is_file()) {
        return Err(format!(
            "{} is missing: is {} a level directory of {shards} shards?",
            missing.display(),
            source.display()
        )
        .into());
    }
    std::fs::create_dir_all(&out)?;
    let dest = |k: usize| out.join(format!("shard-{k:04}.lvl"));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let opts = SpillOptions { memory_bytes: (memory_gb * 1e9) as u64, threads };
    let began = Instant::now();
    let step = expand_on_disk(&game, &sources, shards, &dest, &out.join("spill"), &opts, || {})?;
    println!(
        "{:.1} s, {} passes, {} keys, {} successors, peak RSS {:.2} GB",
        began.elapsed().as_secs_f64(),
        step.passes,
        step.merged.keys.iter().sum::<u64>(),
        step.successors,
        peak_rss_bytes() as f64 / 1e9
    );
    Ok(())
}
