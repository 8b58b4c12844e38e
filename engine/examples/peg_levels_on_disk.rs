//! Breadth-first levels of a peg-solitaire start on disk, within a memory
//! bound: a measurement harness for the spill path (`levels::spill`) at full
//! size, before the level job runs on it. Prints, per level, the keys (up to
//! the start's symmetries), the seconds, what was spilled and the level's size
//! on disk, and the peak RSS so far. Keeps only the last two levels on disk.
//!
//! `cargo run --release -p retro-engine --example peg_levels_on_disk -- BOARD VACANCY DIR [MEMORY_GB] [LEVELS]`
//! (for example `european c1 /work/levels 8 36`).

use retro_engine::levels::spill::{SpillOptions, merge_runs, spill_level};
use retro_engine::levels::start_level;
use retro_engine::levels::store::write_shard;
use retro_engine::process::peak_rss_bytes;
use retro_games::peg::{Board, BoardKind, Folded, parse_hole};
use std::path::{Path, PathBuf};
use std::time::Instant;

const SHARDS: usize = 64;

fn shard_path(dir: &Path, level: usize, k: usize) -> PathBuf {
    dir.join(format!("level-{level:03}")).join(format!("shard-{k:04}.lvl"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        return Err("usage: peg_levels_on_disk BOARD VACANCY DIR [MEMORY_GB] [LEVELS]".into());
    }
    let kind = BoardKind::parse(&args[0]).ok_or("unknown board")?;
    let board = Board::new(kind);
    let hole = parse_hole(&args[1]).filter(|&h| board.has_hole(h)).ok_or("not a hole of that board")?;
    let dir = PathBuf::from(&args[2]);
    let memory_gb: f64 = args.get(3).map_or(Ok(8.0), |a| a.parse())?;
    let last: usize = args.get(4).map_or(Ok(usize::MAX), |a| a.parse())?;
    let start = board.single_vacancy(hole);
    let game = Folded::of_start(board.clone(), start);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let opts = SpillOptions { memory_bytes: (memory_gb * 1e9) as u64, threads };
    println!(
        "{} {}: folded by {} symmetries; {SHARDS} shards, {threads} threads, successor buffers {:.2} GB",
        args[0],
        args[1],
        game.group.len(),
        opts.buffer_bytes() as f64 / 1e9
    );
    println!("level\tkeys\tspill_s\tmerge_s\tspilled_entries\tspilled_bytes\tlevel_bytes\tpeak_rss_mb");
    std::fs::create_dir_all(dir.join("level-000"))?;
    let first = start_level(game.canonical(start), SHARDS);
    for (k, shard) in first.iter().enumerate() {
        write_shard(&shard_path(&dir, 0, k), shard)?;
    }
    let began = Instant::now();
    for n in 0..last {
        let t = Instant::now();
        let sources: Vec<PathBuf> = (0..SHARDS).map(|k| shard_path(&dir, n, k)).collect();
        std::fs::create_dir_all(dir.join(format!("level-{:03}", n + 1)))?;
        let dest = |k: usize| shard_path(&dir, n + 1, k);
        let scratch = dir.join("scratch");
        let runs = spill_level(&game, &sources, SHARDS, &scratch, &opts)?;
        let spill_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let merged = merge_runs(&runs, &dest, threads)?;
        std::fs::remove_dir_all(&scratch)?;
        let keys: u64 = merged.keys.iter().sum();
        println!(
            "{}\t{keys}\t{spill_s:.1}\t{:.1}\t{}\t{}\t{}\t{}",
            n + 1,
            t.elapsed().as_secs_f64(),
            runs.entries,
            runs.bytes,
            merged.bytes.iter().sum::<u64>(),
            peak_rss_bytes() / 1_000_000
        );
        if n >= 1 {
            std::fs::remove_dir_all(dir.join(format!("level-{:03}", n - 1)))?;
        }
        if keys == 0 {
            break;
        }
    }
    println!("total {:.1}s", began.elapsed().as_secs_f64());
    Ok(())
}
