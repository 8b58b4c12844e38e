//! The routed round (one record per decided position, applied by predecessor
//! block) against the reference round (one update per predecessor, applied
//! with compare-and-swap): two independent paths that must agree on every
//! position after every round, whatever the shards, chunks and threads.

use retro_engine::kernel::{self, Decided, KernelError};
use retro_engine::layout::Layout;
use retro_engine::memsolve;
use retro_engine::routed;
use retro_engine::values::Codes;
use retro_games::cc2::Cc2;
use retro_games::cc3::Cc3;
use retro_games::{Question, RetroGame};

/// Solves a layer with the routed round, shard by shard (records for other
/// shards cross over as they would between workers), and returns the settled
/// bytes, the depth bytes and the decided counts of each round.
fn solve_routed<G: RetroGame>(
    game: &G,
    q: Question,
    layout: &Layout,
    threads: usize,
) -> (Vec<u8>, Vec<u8>, Vec<Decided>) {
    let codes = Codes::of(game, false);
    let mut bytes = vec![0u8; layout.positions as usize];
    kernel::init_shard(game, q, 0, &mut bytes, threads).unwrap();
    let mut rounds = Vec::new();
    for round in 1.. {
        let mut inbox: Vec<Vec<Vec<u64>>> = vec![Vec::new(); layout.shards as usize];
        let mut frontier_chunks = Vec::new();
        for s in 0..layout.shards {
            let r = layout.range(s);
            let g = routed::scan_frontier(
                game,
                layout,
                codes,
                round,
                r.start,
                &bytes[r.start as usize..r.end as usize],
                threads,
            );
            for (d, keys) in g.buckets {
                inbox[d as usize].push(keys);
            }
            frontier_chunks.push(g.frontier_chunks);
        }
        let mut decided = Decided::default();
        for s in 0..layout.shards {
            let r = layout.range(s);
            let lists: Vec<&[u64]> = inbox[s as usize].iter().map(|v| v.as_slice()).collect();
            let routed = routed::route(game, layout, s, &lists, threads).unwrap();
            let shard = &mut bytes[r.start as usize..r.end as usize];
            let before = shard.to_vec();
            decided.add(&routed::apply_routed(game, q, codes, round, shard, &routed, threads).unwrap());
            // Only the chunks listed as touched may change (the undo log saves exactly those).
            for (i, (a, b)) in before.iter().zip(shard.iter()).enumerate() {
                if a != b {
                    let chunk = i as u64 / layout.chunk_len;
                    assert!(
                        routed.touched.binary_search(&chunk).is_ok(),
                        "chunk {chunk} of shard {s} changed untouched"
                    );
                }
            }
            kernel::settle_frontier(layout, codes, round, shard, &frontier_chunks[s as usize], threads);
        }
        if decided.total() == 0 {
            break;
        }
        rounds.push(decided);
    }
    let depth = kernel::depths(codes, &bytes);
    kernel::settle_all(codes, &mut bytes);
    (bytes, depth, rounds)
}

fn assert_agrees<G: RetroGame>(game: &G, q: Question, name: &str) {
    let n = game.position_count();
    let reference = memsolve::solve(game, q, &Layout::new(n, 1, 1 << 20, 1 << 20), 2).unwrap();
    assert!(reference.rounds.len() > 2, "{name}: too easy to compare");
    // Shards smaller than a block region, shards that cut blocks, one shard; 1-3 threads.
    for (shards, block, chunk, threads) in [(1, 1 << 20, 1 << 12, 2), (7, 64, 100, 3), (3, 4096, 1 << 10, 1)] {
        let (bytes, depth, rounds) = solve_routed(game, q, &Layout::new(n, shards, block, chunk), threads);
        assert_eq!(rounds, reference.rounds, "{name}: decided per round, {shards} shards, {threads} threads");
        assert!(bytes == reference.bytes, "{name}: values differ, {shards} shards, {threads} threads");
        assert!(depth == reference.depth, "{name}: depths differ, {shards} shards, {threads} threads");
    }
}

#[test]
fn routed_rounds_equal_the_reference_on_three_player_stage_1() {
    let g = Cc3::new(1).unwrap();
    assert_agrees(&g, Question::solo(0), "cc3 order 1 solo(A)");
    assert_agrees(&g, Question::enable(1, 2), "cc3 order 1 enable(B>C)");
}

#[test]
fn routed_rounds_equal_the_reference_on_two_player_boards() {
    assert_agrees(&Cc2::new(5, 2).unwrap(), Cc2::question("solo(1)", false).unwrap(), "cc2 5x5x2");
    let folded = Cc2::folded(6, 2).unwrap();
    assert_agrees(&folded, Cc2::question("solo(1)", true).unwrap(), "cc2 6x6x2 folded");
}

/// A record sent to a shard its block does not reach is refused before
/// anything is written.
#[test]
fn misrouted_records_are_refused() {
    let g = Cc2::folded(6, 2).unwrap();
    let layout = Layout::new(g.position_count(), 4, 64, 256);
    let child = (0..g.position_count())
        .find(|&r| {
            let b = g.predecessor_block(r);
            layout.shard_of(b.start) == 3 && layout.shard_of(b.end - 1) == 3
        })
        .unwrap();
    let record = g.frontier_record(child);
    let err = routed::route(&g, &layout, 0, &[&[record << 1][..]], 2).err().expect("refused");
    assert!(matches!(err, KernelError::ForeignUpdate { rank, .. } if rank == record), "{err}");
}
