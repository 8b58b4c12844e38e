//! Properties of the rules: rank/unrank bijection, reversible moves, rotation.

use super::*;
use crate::RetroGame;
use std::collections::HashSet;

use crate::sample::XorShift;

#[test]
fn position_counts_match_the_formula() {
    let expect: [u128; 4] =
        [1_662, 14_841_300_390, 1_300_023_027_202_861_390_968, 896_276_186_752_279_242_085_574_230_477_213_032];
    for (i, e) in expect.iter().enumerate() {
        let g = Cc3::new(i as u32 + 1).unwrap();
        assert_eq!(g.ranker.positions(), *e, "order {}", i + 1);
    }
    assert!(Cc3::new(2).unwrap().ranker.fits_u64());
    assert!(!Cc3::new(3).unwrap().ranker.fits_u64());
    assert_eq!(Cc3::new(5).err(), Some(BadOrder(5)));
}

#[test]
fn rank_unrank_exhaustive_order_1() {
    let g = Cc3::new(1).unwrap();
    let n = g.position_count();
    let mut seen = HashSet::new();
    for r in 0..n {
        let p = g.unrank(r);
        assert_eq!(g.rank(&p), r);
        for q in 0..3 {
            assert_eq!(p.pieces[q].count_ones(), 1);
            assert_eq!(p.pieces[q] & !g.star.lane_mask[q], 0);
        }
        assert_eq!(p.occupied().count_ones(), 3);
        assert!(seen.insert(p));
    }
    // Every lane-legal placement is hit: count them directly.
    let mut direct = 0u64;
    for a in 0..13 {
        for b in 0..13 {
            for c in 0..13 {
                let ok = a != b && b != c && a != c;
                let lanes = [(0, a), (1, b), (2, c)].iter().all(|&(p, x)| g.star.lane_mask[p] >> x & 1 == 1);
                if ok && lanes {
                    direct += 3;
                }
            }
        }
    }
    assert_eq!(direct, n);
}

#[test]
fn rank_unrank_random_order_2() {
    let g = Cc3::new(2).unwrap();
    let n = g.position_count();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200_000 {
        let r = rng.next_u64() % n;
        let p = g.unrank(r);
        assert_eq!(g.rank(&p), r);
        for q in 0..3 {
            assert_eq!(p.pieces[q].count_ones(), 3);
            assert_eq!(p.pieces[q] & !g.star.lane_mask[q], 0);
        }
        assert_eq!(p.occupied().count_ones(), 9);
    }
    assert_eq!(g.rank(&g.unrank(0)), 0);
    assert_eq!(g.rank(&g.unrank(n - 1)), n - 1);
}

/// Every edge parent -> child appears among the child's predecessors, as often
/// as it appears among the parent's children (once), and vice versa.
fn check_edges(g: &Cc3, r: u64) {
    let mut kids = Vec::new();
    g.for_each_child(r, &mut |c| kids.push(c));
    // The ranks by the mover's part alone are the children's whole ranks, in order.
    let whole: Vec<u64> = children(&g.star, &g.unrank(r)).iter().map(|c| g.rank(c)).collect();
    assert_eq!(kids, whole, "children of {r}");
    let distinct: HashSet<u64> = kids.iter().copied().collect();
    assert_eq!(distinct.len(), kids.len(), "children of {r} are distinct");
    match g.classify(r) {
        Classification::Open { children, .. } => assert_eq!(children as usize, kids.len()),
        _ => assert!(kids.is_empty()),
    }
    let mover = g.side_to_move(r);
    for &c in &kids {
        let mut preds = Vec::new();
        g.for_each_predecessor(c, &mut |p| preds.push(p));
        assert_eq!(preds.iter().filter(|&&p| p == r).count(), 1, "edge {r} -> {c} reversible");
        // The inverse move is a move of the same player.
        assert!(preds.iter().all(|&p| g.side_to_move(p) == mover));
    }
    let mut preds = Vec::new();
    g.for_each_predecessor(r, &mut |p| preds.push(p));
    for p in preds {
        if matches!(g.classify(p), Classification::Open { .. }) {
            let mut found = 0;
            g.for_each_child(p, &mut |c| found += (c == r) as usize);
            assert_eq!(found, 1, "predecessor {p} of {r} has it as a child");
        }
    }
}

#[test]
fn moves_are_reversible_order_1_exhaustive() {
    let g = Cc3::new(1).unwrap();
    for r in 0..g.position_count() {
        check_edges(&g, r);
    }
}

#[test]
fn moves_are_reversible_order_2_sampled() {
    let g = Cc3::new(2).unwrap();
    let mut rng = XorShift(12345);
    for _ in 0..3_000 {
        check_edges(&g, rng.next_u64() % g.position_count());
    }
}

#[test]
fn rotating_a_position_rotates_its_moves() {
    for order in [1, 2] {
        let g = Cc3::new(order).unwrap();
        let mut rng = XorShift(777);
        for _ in 0..2_000 {
            let p = g.unrank(rng.next_u64() % g.position_count());
            let rotated_children: HashSet<Position> =
                children(&g.star, &p).iter().map(|c| c.rotated(&g.star)).collect();
            let children_of_rotated: HashSet<Position> = children(&g.star, &p.rotated(&g.star)).into_iter().collect();
            assert_eq!(rotated_children, children_of_rotated);
            let r3 = p.rotated(&g.star).rotated(&g.star).rotated(&g.star);
            assert_eq!(r3, p);
        }
    }
}

#[test]
fn jump_chains_respect_closed_cells_and_chain() {
    // Order 2: a lone A piece can chain two jumps through the centre.
    let g = Cc3::new(2).unwrap();
    let start = g.start();
    let mut n = 0;
    for_each_move(&g.star, &start.pieces, 0, &mut |_, _| n += 1);
    assert!(n > 0);
    // No move ever lands outside the mover's lanes.
    let mut rng = XorShift(99);
    for _ in 0..2_000 {
        let p = g.unrank(rng.next_u64() % g.position_count());
        for q in 0..3 {
            for_each_move(&g.star, &p.pieces, q, &mut |_, to| {
                assert!(g.star.lane_mask[q] >> to & 1 == 1);
                assert!(p.occupied() >> to & 1 == 0);
            });
        }
    }
}

#[test]
fn notation_roundtrip_and_errors() {
    for order in [1, 2] {
        let g = Cc3::new(order).unwrap();
        let mut rng = XorShift(5);
        for _ in 0..500 {
            let p = g.unrank(rng.next_u64() % g.position_count());
            assert_eq!(g.parse(&g.format(&p)).unwrap(), p);
        }
    }
    let g = Cc3::new(1).unwrap();
    assert!(matches!(g.parse("nonsense"), Err(NotationError::Shape { .. })));
    assert!(matches!(g.parse("z9/a1/b1 A"), Err(NotationError::UnknownCell { .. })));
    let start = g.format(&g.start());
    let twice = start.replace(" A", " Q");
    assert!(matches!(g.parse(&twice), Err(NotationError::Invalid { .. })));
    let picture = g.board_picture(None);
    for name in &g.star.names {
        assert!(picture.contains(name.as_str()), "picture names {name}");
    }
}

#[test]
fn question_names_parse() {
    use crate::Question;
    assert_eq!(parse_question("solo(A)"), Some(Question { max_side: 1, target: 0, three_valued: true }));
    assert_eq!(parse_question("enable(A>C)"), Some(Question { max_side: 5, target: 2, three_valued: false }));
    assert_eq!(parse_question("enable(B>B)"), None);
    assert_eq!(parse_question("solo(D)"), None);
    assert_eq!(parse_question("solo(A"), None);
}

#[test]
fn rotation_has_no_fixed_position_so_orbits_are_exactly_a_third() {
    // The coordinator reports canonical placements as positions / 3; that is
    // right only if every rotation orbit has exactly three positions.
    let g = Cc3::new(1).unwrap();
    let n = g.position_count();
    let mut canonical = 0;
    for r in 0..n {
        let p = g.unrank(r);
        let r1 = g.rank(&p.rotated(&g.star));
        let r2 = g.rank(&p.rotated(&g.star).rotated(&g.star));
        assert!(r1 != r && r2 != r && r1 != r2, "rank {r} has a short orbit");
        if r < r1 && r < r2 {
            canonical += 1;
        }
    }
    assert_eq!(canonical * 3, n);
}

#[test]
fn predecessors_lie_in_one_small_block() {
    let g = Cc3::new(2).unwrap();
    let mut rng = XorShift(4242);
    let mut widest = 0;
    for _ in 0..5_000 {
        let r = rng.next_u64() % g.position_count();
        let mut preds = Vec::new();
        g.for_each_predecessor(r, &mut |p| preds.push(p));
        if let (Some(lo), Some(hi)) = (preds.iter().min(), preds.iter().max()) {
            widest = widest.max(hi - lo);
        }
    }
    assert!(widest < 2_300, "predecessors span {widest} ranks");
}

/// Predecessor blocks hold every predecessor and tile the rank space (the
/// routed round applies different blocks on different threads without locks).
#[test]
fn predecessor_blocks_tile_the_space() {
    for order in 1..=2 {
        crate::sample::check_predecessor_blocks(&Cc3::new(order).unwrap(), 0x0071_11e5 + order as u64, 20_000);
    }
}

/// The move count pass's block-by-block classification is the rank-by-rank one.
#[test]
fn classify_runs_equal_classify() {
    let g = Cc3::new(1).unwrap();
    g.classify_run(0, g.position_count() as usize, &mut |i, class| assert_eq!(class, g.classify(i as u64)));
    crate::sample::check_classify_runs(&Cc3::new(2).unwrap(), 0xc1a5_51f3, 200);
}

/// The scan's records, with the block kept from one rank to the next, are
/// the records computed rank by rank.
#[test]
fn frontier_records_equal_record_by_record() {
    crate::sample::check_frontier_records(&Cc3::new(1).unwrap(), 0x5ca7_0001, 20);
    crate::sample::check_frontier_records(&Cc3::new(2).unwrap(), 0x5ca7_0002, 100);
}

/// A sorted run of records, each block decoded once, gives every record's
/// predecessors as decoding each record on its own does.
#[test]
fn records_predecessors_equal_record_by_record() {
    crate::sample::check_records_predecessors(&Cc3::new(1).unwrap(), 0x5ca7_0011, 10);
    crate::sample::check_records_predecessors(&Cc3::new(2).unwrap(), 0x5ca7_0012, 30);
}

#[test]
fn block_decoder_equals_unranking() {
    // Ascending ranks, mostly a few apart (many in one block, as a scan finds
    // them), now and then far apart (a new block), and some repeated.
    let g = Cc3::new(2).unwrap();
    let mut rng = XorShift(0x0dec_0de5);
    let mut decoder = BlockDecoder::default();
    let mut rank = 0u64;
    for _ in 0..200_000 {
        rank += match rng.next_u64() % 10 {
            0 => rng.next_u64() % 10_000_000,
            1 => 0,
            _ => rng.next_u64() % 64,
        };
        if rank >= g.position_count() {
            break;
        }
        let (pos, block) = decoder.decode(&g.ranker, rank);
        assert_eq!((pos, *block), g.ranker.unrank_in_block(rank), "rank {rank}");
    }
    assert!(rank > 1_000_000_000, "the walk covers many blocks");
}
