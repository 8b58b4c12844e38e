//! Per-call cost of the pieces of a cc2 round on random positions of
//! 7 x 7 x 3 folded by colour and mirror (one thread): what a frontier
//! position costs the scan, a record the apply step, a position the move
//! count pass. `cargo run --release -p retro-games --example cc2_parts`
use retro_games::RetroGame;
use retro_games::cc2::{Cc2, Folding};
use retro_games::sample::XorShift;
use std::time::Instant;

fn main() {
    let g = Cc2::with_folding(7, 3, Folding { colour: true, mirror: true }).expect("7 x 7 x 3");
    let n = g.position_count();
    let mut rng = XorShift(0x5eed);
    // Sorted, as a round meets them: the scan walks ranks in order, the apply
    // step walks records region by region.
    let mut ranks: Vec<u64> = (0..4_000_000).map(|_| rng.next_u64() % n).collect();
    ranks.sort_unstable();
    let time = |what: &str, f: &mut dyn FnMut() -> u64| {
        let t = Instant::now();
        let sum = f();
        let s = t.elapsed().as_secs_f64();
        println!("{what:<34} {:>7.1} ns each (checksum {sum})", s * 1e9 / ranks.len() as f64);
    };
    time("classify (move count)", &mut || {
        ranks.iter().map(|&r| matches!(g.classify(r), retro_games::Classification::Illegal) as u64).sum()
    });
    // The move count pass walks every rank in order.
    let seq = 4_000_000u64;
    let first = n / 3;
    let t = Instant::now();
    let sum: u64 = (first..first + seq).map(|r| g.unrank(r).pieces[0]).fold(0, u64::wrapping_add);
    println!(
        "{:<34} {:>7.1} ns each (checksum {sum})",
        "unrank, in rank order",
        t.elapsed().as_secs_f64() * 1e9 / seq as f64
    );
    let t = Instant::now();
    let sum: u64 =
        (first..first + seq).map(|r| matches!(g.classify(r), retro_games::Classification::Illegal) as u64).sum();
    println!(
        "{:<34} {:>7.1} ns each (checksum {sum})",
        "classify, in rank order",
        t.elapsed().as_secs_f64() * 1e9 / seq as f64
    );
    let t = Instant::now();
    let mut sum = 0u64;
    g.classify_run(first, seq as usize, &mut |_, c| sum += matches!(c, retro_games::Classification::Illegal) as u64);
    println!(
        "{:<34} {:>7.1} ns each (checksum {sum})",
        "classify_run, in rank order",
        t.elapsed().as_secs_f64() * 1e9 / seq as f64
    );
    time("frontier_record_and_block", &mut || ranks.iter().map(|&r| g.frontier_record_and_block(r).0).sum());
    let mut records: Vec<u64> = ranks.iter().map(|&r| g.frontier_record(r)).collect();
    records.sort_unstable();
    time("record_block", &mut || records.iter().map(|&r| g.record_block(r).start).sum());
    let mut visits = 0u64;
    time("for_each_record_predecessor", &mut || {
        let mut s = 0u64;
        for &r in &records {
            g.for_each_record_predecessor(r, &mut |p| {
                s = s.wrapping_add(p);
                visits += 1;
            });
        }
        s
    });
    println!("predecessors per record: {:.2}", visits as f64 / records.len() as f64);
}
