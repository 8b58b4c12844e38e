//! Per-call cost of the pieces of a stage-2 round (three-player Chinese
//! checkers, star order 2) on random positions (one thread): what a position
//! costs the move count pass, a frontier position the scan, a record the
//! apply step. `cargo run --release -p retro-games --example cc3_parts`
use retro_games::cc3::{Cc3, destinations};
use retro_games::sample::XorShift;
use retro_games::{Classification, RetroGame};
use std::time::Instant;

fn report(what: &str, count: usize, seconds: f64, checksum: u64) {
    println!("{what:<34} {:>7.1} ns each (checksum {checksum})", seconds * 1e9 / count as f64);
}

fn main() {
    let g = Cc3::new(2).expect("order 2");
    let n = g.position_count();
    let mut rng = XorShift(0x5eed);
    // Sorted, as a round meets them: the scan walks ranks in order, the apply
    // step walks records region by region.
    let mut ranks: Vec<u64> = (0..2_000_000).map(|_| rng.next_u64() % n).collect();
    ranks.sort_unstable();
    let is_illegal = |c: Classification| matches!(c, Classification::Illegal) as u64;
    // The move count pass walks every rank in order.
    let first = n / 3 + 12_345_678;
    let seq = 4_000_000u64;
    let t = Instant::now();
    let sum: u64 = (first..first + seq).map(|r| is_illegal(g.classify(r))).sum();
    report("classify, in rank order", seq as usize, t.elapsed().as_secs_f64(), sum);
    let t = Instant::now();
    let mut sum = 0u64;
    g.classify_run(first, seq as usize, &mut |_, c| sum += is_illegal(c));
    report("classify_run, in rank order", seq as usize, t.elapsed().as_secs_f64(), sum);
    let t = Instant::now();
    let sum: u64 = ranks.iter().map(|&r| g.frontier_record_and_block(r).0).fold(0, u64::wrapping_add);
    report("frontier_record_and_block", ranks.len(), t.elapsed().as_secs_f64(), sum);
    // A heavy round's frontier: about one position in ten, in rank order.
    let dense: Vec<u64> = (first..first + 20_000_000).step_by(10).collect();
    let t = Instant::now();
    let sum: u64 = dense.iter().map(|&r| g.frontier_record_and_block(r).0).fold(0, u64::wrapping_add);
    report("  the same, every tenth rank", dense.len(), t.elapsed().as_secs_f64(), sum);
    let t = Instant::now();
    let mut sum = 0u64;
    g.frontier_records(&dense, &mut |_, record, _| sum = sum.wrapping_add(record));
    report("frontier_records, every tenth rank", dense.len(), t.elapsed().as_secs_f64(), sum);
    let mut records: Vec<u64> = ranks.iter().map(|&r| g.frontier_record(r)).collect();
    records.sort_unstable();
    let t = Instant::now();
    let sum: u64 = records.iter().map(|&r| g.record_block(r).start).fold(0, u64::wrapping_add);
    report("record_block", records.len(), t.elapsed().as_secs_f64(), sum);
    let t = Instant::now();
    let sum: u64 = records.iter().map(|&r| g.ranker.unrank_in_block(r).1.base).fold(0, u64::wrapping_add);
    report("unrank_in_block (a record's part)", records.len(), t.elapsed().as_secs_f64(), sum);
    let positions: Vec<_> = records.iter().map(|&r| g.unrank(r)).collect();
    let t = Instant::now();
    let mut sum = 0u64;
    for pos in &positions {
        let occupied = pos.occupied();
        let mut own = pos.pieces[pos.turn as usize];
        while own != 0 {
            let v = own.trailing_zeros() as usize;
            own &= own - 1;
            sum = sum.wrapping_add(destinations(&g.star, pos.turn as usize, occupied, v) as u64);
        }
    }
    report("destinations of the 3 pieces", records.len(), t.elapsed().as_secs_f64(), sum);
    let (mut visits, mut sum) = (0u64, 0u64);
    let t = Instant::now();
    for &r in &records {
        g.for_each_record_predecessor(r, &mut |p| {
            sum = sum.wrapping_add(p);
            visits += 1;
        });
    }
    report("for_each_record_predecessor", records.len(), t.elapsed().as_secs_f64(), sum);
    println!("predecessors per record: {:.2}", visits as f64 / records.len() as f64);
}
