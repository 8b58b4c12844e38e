//! `coordinator bench`: move generation, ranking, predecessors, the init pass
//! and a round, measured.

use super::CliError;

/// Runs the benchmark and prints its figures.
pub fn run(
    order: u32,
    samples: u64,
    slice: u64,
    records: Option<u64>,
    threads: Option<usize>,
    json: bool,
) -> Result<(), CliError> {
    let threads = retro_node::bounded_threads(threads.unwrap_or(0), "--threads");
    let r = retro_engine::bench::run(order, samples, slice, records, threads)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    println!("order {}, {} threads", r.order, r.threads);
    for f in &r.figures {
        if f.seconds > 0.0 {
            println!("{:<58} {:>14} in {:>8.3}s = {:>14.0}/s", f.what, f.items, f.seconds, f.per_second);
        } else {
            println!("{:<58} {:>14}   {:>8} {:>14.2}", f.what, f.items, "", f.per_second);
        }
    }
    println!("peak RSS {:.1} MB", r.peak_rss_bytes as f64 / 1e6);
    Ok(())
}
