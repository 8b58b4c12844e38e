//! Throughput of the kernel's building blocks (what `coordinator bench`
//! prints) on random positions of a star order (move generation, ranking, predecessors, the init
//! pass, a reference round and a routed round on a slice of the space), and
//! the peak resident memory.

use crate::kernel::KernelError;
use crate::layout::Layout;
use crate::process::peak_rss_bytes;
use crate::{kernel, routed};
use retro_games::cc3::{Cc3, children, move_count};
use retro_games::sample::XorShift;
use retro_games::{Question, RetroGame};
use serde::Serialize;
use std::time::Instant;

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A star order the rules do not have.
    #[error(transparent)]
    Order(#[from] retro_games::cc3::BadOrder),
    /// A star order whose ranks do not fit a u64.
    #[error("order {0} does not fit u64 ranks")]
    TooLarge(u32),
    /// A kernel pass failed.
    #[error(transparent)]
    Kernel(#[from] KernelError),
}

/// One measured figure.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    /// What was measured.
    pub what: String,
    /// Items processed.
    pub items: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// Items per second.
    pub per_second: f64,
}

/// All figures of a run.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Star order.
    pub order: u32,
    /// Threads used by the kernel passes.
    pub threads: usize,
    /// The figures.
    pub figures: Vec<Figure>,
    /// Peak resident set size of this process, bytes (VmHWM).
    pub peak_rss_bytes: u64,
}

fn figure(what: &str, items: u64, started: Instant) -> Figure {
    let seconds = started.elapsed().as_secs_f64();
    Figure { what: what.into(), items, seconds, per_second: items as f64 / seconds.max(1e-9) }
}

/// Runs the benchmarks: `samples` random positions for the per-position
/// figures, a contiguous slice of `slice` positions for the init pass and a round.
pub fn run(
    order: u32,
    samples: u64,
    slice: u64,
    records: Option<u64>,
    threads: usize,
) -> Result<BenchReport, BenchError> {
    let g = Cc3::new(order)?;
    if !g.ranker.fits_u64() {
        return Err(BenchError::TooLarge(order));
    }
    let n = g.position_count();
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let ranks: Vec<u64> = (0..samples).map(|_| rng.next_u64() % n).collect();
    let mut figures = Vec::new();

    let t = Instant::now();
    let mut sink = 0u64;
    for &r in &ranks {
        sink = sink.wrapping_add(g.unrank(r).pieces[0] as u64);
    }
    figures.push(figure("unrank", samples, t));
    let positions: Vec<_> = ranks.iter().map(|&r| g.unrank(r)).collect();
    let t = Instant::now();
    for p in &positions {
        sink = sink.wrapping_add(g.rank(p));
    }
    figures.push(figure("rank", samples, t));
    let t = Instant::now();
    let mut moves = 0u64;
    for p in &positions {
        moves += move_count(&g.star, &p.pieces, p.turn as usize) as u64;
    }
    figures.push(figure("move generation (positions)", samples, t));
    figures.push(Figure {
        what: "moves per position (mean)".into(),
        items: moves,
        seconds: 0.0,
        per_second: moves as f64 / samples as f64,
    });
    let t = Instant::now();
    let mut preds = 0u64;
    for &r in &ranks {
        g.for_each_predecessor(r, &mut |p| {
            preds += 1;
            sink = sink.wrapping_add(p);
        });
    }
    figures.push(figure("predecessors generated (unrank + moves + rank each)", preds, t));

    // The init pass and one round on a contiguous slice, as one shard.
    // The slice is one shard of a layout cut into shards of about `slice` positions.
    let layout = Layout::new(n, (n / slice.clamp(1, n)).max(1) as u32, 4096, 1 << 20);
    let middle = layout.range(layout.shards / 2);
    let (start, slice) = (middle.start, middle.end - middle.start);
    let q = Question::solo(0);
    let codes = crate::values::Codes::of(&g, false);
    let mut bytes = vec![0u8; slice as usize];
    let t = Instant::now();
    kernel::count_moves(&g, start, &mut bytes, threads)?;
    figures.push(figure("init: move counts, once per job (positions)", slice, t));
    let counts = bytes.clone();
    let t = Instant::now();
    let init = kernel::init_from_counts(q, codes, &counts, &mut bytes, threads);
    figures.push(figure("init: a layer from the counts (positions)", slice, t));
    drop(counts);
    // The routed round below starts from the same round-0 state.
    let init_state = bytes.clone();
    // The scan every routed round starts with, over a state whose frontier is
    // sparse (round 0's terminal positions), as in most rounds of a layer.
    let t = Instant::now();
    let scanned = routed::scan_frontier(&g, &layout, codes, 1, start, &bytes, threads);
    figures.push(figure("routed round: scan, sparse frontier (positions scanned)", slice, t));
    std::hint::black_box(scanned.frontier);
    let t = Instant::now();
    let generated = kernel::generate(&g, &layout, codes, 1, start, &bytes, threads);
    let updates: u64 = generated.buckets.iter().map(|(_, b)| b.len() as u64).sum();
    figures.push(figure("round: generate (updates from the terminal frontier)", updates, t));
    figures.push(Figure {
        what: format!("round: frontier in the slice ({} terminal)", init.terminal),
        items: generated.frontier,
        seconds: 0.0,
        per_second: 0.0,
    });
    // Apply: the updates land all over the space; remapped into the slice they
    // measure the counter/CAS work on random cells of a shard-sized buffer.
    let mut own: Vec<u64> = generated
        .buckets
        .iter()
        .flat_map(|(_, b)| b.iter().map(|&k| (start + (k >> 1) % slice) << 1 | (k & 1)))
        .collect();
    own.sort_unstable();
    let t = Instant::now();
    kernel::apply(&g, q, &layout, codes, 1, start, &mut bytes, &generated.frontier_chunks, &[&own], threads)?;
    figures.push(figure("round: apply (updates, remapped into the slice)", own.len() as u64, t));
    drop(own);

    // The routed round the workers run: records of decided positions whose
    // predecessor blocks meet the slice, grouped by region and applied. Such
    // records are the children of the slice's own positions (a child's block
    // holds every predecessor, so also this parent): every child of
    // `samples` parents spread over the slice, or `records` random children
    // of random slice positions.
    let t = Instant::now();
    let mut records = match records {
        None => all_children_records(&g, start, slice, samples),
        Some(n) => sparse_records(&g, start, slice, n),
    };
    // In a real round the records arrive in the order their children were
    // scanned, not sorted: shuffled, so that the records of one block do not
    // follow each other and find its cache lines warm.
    let mut rng = retro_games::sample::XorShift(0x5eed_0dd5);
    for i in (1..records.len()).rev() {
        records.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    figures.push(figure("routed round: records made (children of slice positions)", records.len() as u64, t));
    let shard = layout.shard_of(start);
    let t = Instant::now();
    let grouped = routed::route(&g, &layout, shard, &[&records], threads)?;
    figures.push(figure("routed round: route (records)", records.len() as u64, t));
    let mut preds = 0u64;
    for &k in &records {
        g.for_each_record_predecessor(k >> 1, &mut |p| preds += u64::from(p >= start && p < start + slice));
    }
    let mut bytes = init_state;
    let t = Instant::now();
    routed::apply_routed(&g, q, codes, 1, &mut bytes, &grouped, threads)?;
    figures.push(figure("routed round: apply (records)", records.len() as u64, t));
    figures.push(Figure {
        what: "routed round: apply (predecessors in the slice, same run)".into(),
        items: preds,
        seconds: figures.last().map_or(0.0, |f| f.seconds),
        per_second: preds as f64 / figures.last().map_or(1.0, |f| f.seconds.max(1e-9)),
    });
    std::hint::black_box(sink);
    Ok(BenchReport { order, threads, figures, peak_rss_bytes: peak_rss_bytes() })
}

/// Records of all children of `samples` parents spread evenly over the slice
/// `start..start + slice`, deduplicated: each parent's children share its
/// block, so the records come about a dozen to a block.
fn all_children_records(g: &Cc3, start: u64, slice: u64, samples: u64) -> Vec<u64> {
    let step = (slice / samples.max(1)).max(1);
    let mut records: Vec<u64> = Vec::new();
    let mut r = start;
    while r < start + slice {
        let pos = g.unrank(r);
        for c in children(&g.star, &pos) {
            records.push(g.frontier_record(g.rank(&c)) << 1);
        }
        r += step;
    }
    records.sort_unstable();
    records.dedup();
    records
}

/// `n` records, each of one random child of a random position of the slice
/// (positions without a child are skipped): spread over the blocks as a real
/// round's decided positions are, `n / blocks` to a block on average, so the
/// density of a large round's flush can be chosen (`coordinator bench
/// --records`).
fn sparse_records(g: &Cc3, start: u64, slice: u64, n: u64) -> Vec<u64> {
    let mut rng = XorShift(0x0dd5_5eed_1234_5678);
    let mut records = Vec::with_capacity(n as usize);
    while (records.len() as u64) < n {
        let pos = g.unrank(start + rng.next_u64() % slice);
        let kids = children(&g.star, &pos);
        if kids.is_empty() {
            continue;
        }
        let c = &kids[(rng.next_u64() % kids.len() as u64) as usize];
        records.push(g.frontier_record(g.rank(c)) << 1);
    }
    records
}
