//! Throughput of the analysis passes on order-2 positions, without tablebases
//! (layer values come from a hash of the rank, so only the computation and the
//! bitsets are measured, not the layers' memory traffic).
//!
//! `cargo run --release -p retro-coordinator --example analysis_bench -- [SAMPLES] [THREADS] [bfs|pull|count|search|whole]`
//! (`bfs`: only the breadth-first figures; `pull`: the bottom-up expansion;
//! `search [DEPTH]`: the search from the start alone (to DEPTH), each depth's step logged;
//! `count`: only the orbit count over SAMPLES ranks of A to move; `whole`:
//! the whole search from the start at order 2 both ways, with categories per
//! depth: counted at each depth, then by a depth map and one orbit pass;
//! about 10 GB and tens of minutes).

use retro_games::cc3::{Cc3, children};
use retro_games::sample::XorShift;
use retro_results::cc3::analysis::{
    Bfs, LayerReader, LayerValues, Tally, answers, category, count_by_depth, count_orbits, explore, search_depths,
};
use std::time::Instant;

/// Pseudo-random layer values: DRAW, WIN or LOSS by a hash of (layer, rank).
#[derive(Clone, Copy)]
struct Hashed;
impl LayerValues for Hashed {
    type Reader<'a> = Hashed;
    fn reader(&self) -> Hashed {
        Hashed
    }
}
impl LayerReader for Hashed {
    #[inline]
    fn value(&mut self, layer: usize, rank: u64) -> u8 {
        let mut x = rank.wrapping_add(layer as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^= x >> 29;
        ((x % 3) as u8) & 3
    }
}

fn rate(what: &str, items: u64, t: Instant) {
    let s = t.elapsed().as_secs_f64();
    println!("{what:<62} {items:>12} in {s:>7.3}s = {:>8.2} M/s", items as f64 / s / 1e6);
}

/// Bottom-up expansion into a slice of the B-to-move third, from random
/// frontiers of A-to-move positions of several densities.
fn pull(g: &Cc3, threads: usize) {
    let third = g.ranker.placements() as u64;
    let mut rng = XorShift(0x5851_f42d_4c95_7f2d);
    for density in [0.01, 0.05, 0.2] {
        let mut bfs = Bfs::new(g);
        let mut seeded = 0u64;
        let want = (third as f64 * density) as u64;
        while seeded < want {
            let batch: Vec<u64> = (0..(want - seeded).min(10_000_000)).map(|_| rng.next_u64() % third).collect();
            bfs.seed(0, &batch).expect("A to move");
            seeded += batch.len() as u64;
        }
        let chunks = 7000..7040;
        let positions = (chunks.end - chunks.start) as u64 * 4096 * 64;
        let t = Instant::now();
        let found = bfs.pull_chunks(chunks, threads);
        rate(&format!("pull, unvisited positions, frontier density {density} ({threads} threads)"), positions, t);
        println!("  found {found} ({:.1}%)", found as f64 * 100.0 / positions as f64);
    }
    println!("peak RSS {:.0} MB", retro_engine::process::peak_rss_bytes() as f64 / 1e6);
}

/// The analysis's search and counts over the whole order-2 space, both ways
/// (the layers' values hashed, so their decoding is not measured).
fn whole(g: &Cc3, threads: usize) {
    let t = Instant::now();
    let (map, news) = search_depths(g, threads, None).expect("no parking");
    let reached: u64 = news.iter().sum();
    rate(&format!("depth map: search from the start ({threads} threads), positions reached"), reached, t);
    let t = Instant::now();
    let by_map = count_by_depth(g, &Hashed, &map, threads);
    rate(&format!("depth map: one orbit pass ({threads} threads), positions counted"), by_map.all.positions, t);
    drop(map);
    println!("peak RSS so far {:.0} MB", retro_engine::process::peak_rss_bytes() as f64 / 1e6);
    let t = Instant::now();
    let all = count_orbits(g, &Hashed, 0..g.ranker.placements() as u64, threads);
    rate(&format!("per depth: count of the whole space ({threads} threads)"), all.positions, t);
    let t = Instant::now();
    let reach = explore(g, Some(&Hashed), None, threads, None).expect("no parking");
    rate(&format!("per depth: search with categories ({threads} threads), positions reached"), reached, t);
    let same = reach.depths.len() == by_map.by_depth.len()
        && reach.depths.iter().zip(&by_map.by_depth).all(|(d, t)| Some(t.category_map()) == d.categories)
        && reach.reachable == Some(by_map.reachable.to_scope())
        && all == by_map.all;
    println!("both ways give the same counts: {same}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let samples: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2);
    let g = Cc3::new(2).expect("order 2");
    let n = g.ranker.positions() as u64;
    let third = g.ranker.placements() as u64;
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let only_bfs = args.get(3).is_some_and(|a| a == "bfs");
    if args.get(3).is_some_and(|a| a == "count") {
        let base = 1_000_000_000;
        for th in [1, threads] {
            let t = Instant::now();
            let c = count_orbits(&g, &Hashed, base..base + samples, th);
            rate(&format!("count by orbits, positions counted ({th} threads)"), c.positions, t);
        }
        return;
    }
    if args.get(3).is_some_and(|a| a == "whole") {
        whole(&g, threads);
        return;
    }
    if args.get(3).is_some_and(|a| a == "pull") {
        pull(&g, threads);
        return;
    }
    if args.get(3).is_some_and(|a| a == "search") {
        // The search alone, each depth's step logged with its direction and
        // time; with a depth, only that far (a shallow search's steps are
        // all top-down).
        retro_node::init_logging(&retro_node::LogArgs::default());
        let t = Instant::now();
        let reached: u64 = match args.get(4).and_then(|d| d.parse().ok()) {
            Some(depth) => explore(&g, None::<&Hashed>, Some(depth), threads, None)
                .expect("no parking")
                .depths
                .iter()
                .map(|d| d.new)
                .sum(),
            None => search_depths(&g, threads, None).expect("no parking").1.iter().sum(),
        };
        rate(&format!("search from the start ({threads} threads), positions reached"), reached, t);
        return;
    }

    // Ranking children: a full rank per child against the shared context.
    let samples_before = if only_bfs { 1 } else { samples };
    let positions: Vec<_> = (0..samples_before).map(|_| g.unrank(rng.next_u64() % n)).collect();
    let kids: Vec<_> = positions.iter().map(|p| children(&g.star, p)).collect();
    let total: u64 = kids.iter().map(|k| k.len() as u64).sum();
    let t = Instant::now();
    let mut sink = 0u64;
    for k in &kids {
        for c in k {
            sink = sink.wrapping_add(g.rank(c));
        }
    }
    rate("children ranked with rank (1 thread)", total, t);
    let t = Instant::now();
    for (p, k) in positions.iter().zip(&kids) {
        let ctx = g.ranker.child_context(p);
        for c in k {
            sink = sink.wrapping_add(g.ranker.child_rank(&ctx, c.pieces[p.turn as usize]));
        }
    }
    rate("children ranked with child_rank (1 thread, context included)", total, t);
    drop((kids, positions));

    // The whole-space count: per position (the old way) against per orbit.
    let t = Instant::now();
    let mut tally = Tally::default();
    let base = rng.next_u64() % (third - 40 * samples);
    for r in base..base + samples_before {
        let pos = g.unrank(r);
        let a = answers(&g, &mut Hashed, &pos);
        tally.add(&a, category(&g, &pos, &a));
    }
    rate("count, position by position: unrank, 3 ranks (1 thread)", samples, t);
    for th in if only_bfs { vec![] } else { vec![1, threads] } {
        let t = Instant::now();
        let c = count_orbits(&g, &Hashed, base..base + 20 * samples, th);
        rate(&format!("count by orbits, positions counted ({th} threads)"), c.positions, t);
    }

    // Breadth-first expansion of random frontiers of A-to-move positions; the
    // first one faults the bitsets' pages in, the second is measured.
    let mut bfs = Bfs::new(&g);
    for (round, depth) in [(0, 0), (1, 3), (2, 6)] {
        let frontier: Vec<u64> = (0..samples).map(|_| rng.next_u64() % third).collect();
        bfs.seed(depth, &frontier).expect("A to move");
        let len = bfs.frontier_len();
        let t = Instant::now();
        let tally = bfs.step(if round == 2 { Some(&Hashed) } else { None }, true, threads).expect("no parking");
        let what = match round {
            0 => "BFS step, frontier positions (warm-up: page faults)",
            1 => "BFS step, frontier positions",
            _ => "BFS step with categories, frontier positions",
        };
        rate(&format!("{what} ({threads} threads)"), len, t);
        println!("  children new: {}, categories counted: {}", bfs.frontier_len(), tally.positions);
        // Clear the children's frontier without expanding it.
        bfs.step(None::<&Hashed>, false, threads).expect("no parking");
    }
    std::hint::black_box(sink);
    println!("peak RSS {:.0} MB", retro_engine::process::peak_rss_bytes() as f64 / 1e6);
}
