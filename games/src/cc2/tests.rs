//! Properties of the two-player rules: the board, rank/unrank, reversible moves,
//! colour symmetry.

use super::*;
use crate::binom::deposit_around;
use crate::sample::XorShift;
use std::collections::HashSet;

#[test]
fn board_numbering_and_areas() {
    let b = Board::new(7, 3).unwrap();
    assert_eq!(b.cells, 49);
    assert_eq!(b.coords[0], (0, 0));
    assert_eq!(&b.coords[1..3], &[(0, 1), (1, 0)]);
    assert_eq!(b.coords[48], (6, 6));
    // The tip has two neighbours, the middle of the board six.
    assert_eq!(b.steps[0].count_ones(), 2);
    assert_eq!(b.steps[24].count_ones(), 6);
    assert_eq!(b.start[0], 0b111);
    assert_eq!(b.goal[1], b.start[0]);
    assert_eq!(b.start[1], b.rotate(b.start[0]));
    assert_eq!(b.start[1].count_ones(), 3);
    assert_eq!(b.start[0] & b.start[1], 0);
    // Four pieces: the rhombus, which contains the middle cell of row 2.
    let b4 = Board::new(7, 4).unwrap();
    let middle = b4.coords.iter().position(|&c| c == (1, 1)).unwrap();
    assert_ne!(b4.start[0] & (1 << middle), 0);
    assert_eq!(b4.start[0].count_ones(), 4);
    assert_eq!(Board::new(9, 1).err(), Some(BadBoard { size: 9, pieces: 1 }));
    assert!(Board::new(7, 0).is_err());
    for c in 0..b.cells {
        assert_eq!(b.cell_by_name(&b.cell_name(c)), Some(c));
        assert_eq!(b.rotation[b.rotation[c] as usize] as usize, c);
    }
}

#[test]
fn position_counts_match_the_formula() {
    // 2 * C(m^2, p) * C(m^2 - p, p), RULES.md section 2.
    assert_eq!(Cc2::new(7, 1).unwrap().position_count(), 4_704);
    assert_eq!(Cc2::new(7, 2).unwrap().position_count(), 2_542_512);
    assert_eq!(Cc2::new(7, 3).unwrap().position_count(), 559_352_640);
}

#[test]
fn rank_unrank_is_a_bijection() {
    let g = Cc2::new(5, 2).unwrap();
    let mut seen = HashSet::new();
    for r in 0..g.position_count() {
        let p = g.unrank(r);
        assert_eq!(g.rank(&p), r);
        assert_eq!(p.pieces[0] & p.pieces[1], 0);
        assert_eq!((p.pieces[0].count_ones(), p.pieces[1].count_ones()), (2, 2));
        assert!(seen.insert(p));
    }
    let g = Cc2::new(8, 5).unwrap();
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    for _ in 0..100_000 {
        let r = rng.next_u64() % g.position_count();
        assert_eq!(g.rank(&g.unrank(r)), r);
    }
}

#[test]
fn one_piece_illegal_and_terminal_counts() {
    // Illegal: the player to move stands on its goal (48 placements of the
    // other piece, two sides): 96, as in the reference table.
    let g = Cc2::new(7, 1).unwrap();
    let mut illegal = 0;
    for r in 0..g.position_count() {
        if g.classify(r) == Classification::Illegal {
            illegal += 1;
        }
    }
    assert_eq!(illegal, 96);
}

/// Every child lists its parent among its predecessors exactly as often as the
/// parent moves to it, and every predecessor is a position that moves to it.
#[test]
fn predecessors_invert_moves() {
    for (m, p, folded) in [(5, 2, false), (6, 3, false), (7, 2, false), (5, 2, true), (7, 3, true)] {
        let g = if folded { Cc2::folded(m, p).unwrap() } else { Cc2::new(m, p).unwrap() };
        assert_eq!(g.edges_negate(), folded);
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15 ^ m as u64);
        let n = g.position_count();
        for _ in 0..3_000 {
            let r = rng.next_u64() % n;
            let Classification::Open { children: count, .. } = g.classify(r) else { continue };
            let mut kids = Vec::new();
            g.for_each_child(r, &mut |c| kids.push(c));
            assert_eq!(kids.len() as u32, count);
            let distinct: HashSet<u64> = kids.iter().copied().collect();
            assert_eq!(distinct.len(), kids.len(), "children are distinct positions");
            for &c in &kids {
                assert_ne!(g.classify(c), Classification::Illegal, "no move leads to an illegal position");
                let mut preds = Vec::new();
                g.for_each_predecessor(c, &mut |q| preds.push(q));
                assert_eq!(preds.iter().filter(|&&q| q == r).count(), 1, "{} in preds of {}", r, c);
                for &q in &preds {
                    if matches!(g.classify(q), Classification::Open { .. }) {
                        let mut found = 0;
                        g.for_each_child(q, &mut |x| found += usize::from(x == c));
                        assert_eq!(found, 1);
                    }
                }
            }
        }
    }
}

#[test]
fn colour_symmetry_maps_rules_onto_rules() {
    let g = Cc2::new(7, 3).unwrap();
    let mut rng = XorShift(77);
    for _ in 0..20_000 {
        let r = rng.next_u64() % g.position_count();
        let pos = g.unrank(r);
        let m = pos.mirrored(&g.board);
        assert_eq!(m.mirrored(&g.board), pos);
        let swap = |o: Outcome| match o {
            Outcome::Won(w) => Outcome::Won(1 - w),
            x => x,
        };
        assert_eq!(m.outcome(&g.board), swap(pos.outcome(&g.board)));
        let kids: HashSet<Position> = children(&g.board, &pos).iter().map(|c| c.mirrored(&g.board)).collect();
        let mirrored_kids: HashSet<Position> = children(&g.board, &m).into_iter().collect();
        assert_eq!(kids, mirrored_kids);
    }
    assert_eq!(g.start().mirrored(&g.board).pieces, [g.board.start[0], g.board.start[1]]);
}

#[test]
fn notation_round_trips() {
    let g = Cc2::new(7, 3).unwrap();
    assert_eq!(g.format(&g.start()), "a1,a2,b1/f7,g6,g7 1");
    let mut rng = XorShift(5);
    for _ in 0..1_000 {
        let pos = g.unrank(rng.next_u64() % g.position_count());
        assert_eq!(g.parse(&g.format(&pos)), Ok(pos));
    }
    assert!(g.parse("a1,a2/f7,g6,g7 1").unwrap_err().to_string().contains("needs 3 pieces"));
    assert!(g.parse("a1,a2,a1/f7,g6,g7 1").unwrap_err().to_string().contains("twice"));
    assert!(g.parse("a1,a2,b1/f7,g6,g7 3").is_err());
    assert!(g.parse("a1,a2,z9/f7,g6,g7 1").is_err());
}

#[test]
fn questions_parse() {
    assert_eq!(Cc2::parse_question("solo(1)"), Some(Question::solo(0)));
    assert_eq!(Cc2::parse_question("solo(2)"), Some(Question::solo(1)));
    assert_eq!(Cc2::parse_question("solo(A)"), None);
    assert_eq!(Cc2::question("solo(2)", false), Some(Question::solo(1)));
    assert_eq!(Cc2::question("solo(2)", true), None);
    assert_eq!(Cc2::question("solo(1)", true), Some(Question::solo(0)));
}

#[test]
fn folded_space_is_player_one_to_move() {
    let full = Cc2::new(6, 2).unwrap();
    let g = Cc2::folded(6, 2).unwrap();
    assert_eq!(2 * g.position_count(), full.position_count());
    let mut rng = XorShift(99);
    for _ in 0..10_000 {
        let pos = full.unrank(rng.next_u64() % full.position_count());
        let (r, negated) = g.rank_of(&pos);
        assert!(r < g.position_count());
        assert_eq!(negated, pos.turn == 1);
        let stored = g.unrank(r);
        assert_eq!(stored.turn, 0);
        assert_eq!(if negated { stored.mirrored(&g.board) } else { stored }, pos);
    }
}

/// Predecessor blocks hold every predecessor and tile the rank space (the
/// routed round applies different blocks on different threads without locks).
#[test]
fn predecessor_blocks_tile_the_space() {
    for (m, p, folded) in [(5, 2, false), (6, 3, false), (7, 3, true), (7, 4, true)] {
        let g = if folded { Cc2::folded(m, p).unwrap() } else { Cc2::new(m, p).unwrap() };
        crate::sample::check_predecessor_blocks(&g, 0x51ab_1e00 ^ m as u64, 20_000);
    }
}

/// The fast rotation (bit reversal) is the rotation table's, on every size.
#[test]
fn rotation_by_bit_reversal_matches_the_table() {
    let mut rng = XorShift(0x0bad_5eed);
    for m in MIN_SIZE..=MAX_SIZE {
        let b = Board::new(m, 1).unwrap();
        for _ in 0..1_000 {
            let bits = rng.next_u64() & b.full;
            let mut want = 0u64;
            for c in 0..b.cells {
                if bits >> c & 1 == 1 {
                    want |= 1 << b.rotation[c];
                }
            }
            assert_eq!(b.rotate(bits), want, "{m} x {m}, {bits:#x}");
        }
    }
}

/// Depositing around the holes equals depositing onto the complement, bit by bit.
#[test]
fn deposit_around_holes_equals_deposit_onto_the_complement() {
    let mut rng = XorShift(0x0de9_0517);
    for _ in 0..20_000 {
        let n = 10 + (rng.next_u64() % 54) as u32;
        let full = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        let holes = rng.next_u64() & rng.next_u64() & rng.next_u64() & full;
        let free = full & !holes;
        let value = rng.next_u64() & rng.next_u64() & ((1u64 << free.count_ones()) - 1);
        // Reference: the j-th set bit of value goes to the j-th set bit of free.
        let mut want = 0u64;
        let mut rest = free;
        for j in 0..free.count_ones() {
            let cell = rest & rest.wrapping_neg();
            rest &= rest - 1;
            if value >> j & 1 == 1 {
                want |= cell;
            }
        }
        assert_eq!(deposit_around(value, holes), want, "value {value:#x}, holes {holes:#x}");
    }
}

#[test]
fn move_count_equals_the_moves_enumerated() {
    // Every position of the small boards, where the opponent's goal is often
    // one cell short of full: the moves for_each_move lists and their count
    // must be the destinations whose move leaves the opponent short of its
    // win condition, tested here one by one against the rule itself.
    let mut left_out = 0;
    let mut rng = XorShift(0x5eed);
    for (size, pieces, sampled) in
        [(3, 1, false), (4, 2, false), (4, 3, false), (5, 2, false), (5, 4, true), (7, 3, true)]
    {
        let g = Cc2::new(size, pieces).unwrap();
        let n = g.position_count();
        let ranks: Vec<u64> =
            if sampled { (0..200_000).map(|_| rng.next_u64() % n).collect() } else { (0..n).collect() };
        for rank in ranks {
            let pos = g.unrank(rank);
            if pos.outcome(&g.board) != Outcome::Ongoing {
                continue;
            }
            let t = pos.turn as usize;
            let occupied = pos.pieces[0] | pos.pieces[1];
            let mut legal = Vec::new();
            let mut own = pos.pieces[t];
            while own != 0 {
                let from = own.trailing_zeros() as usize;
                own &= own - 1;
                let mut dests = g.board.destinations(from, occupied & !(1u64 << from));
                while dests != 0 {
                    let to = dests.trailing_zeros() as usize;
                    dests &= dests - 1;
                    let mut after = pos.pieces;
                    after[t] ^= (1u64 << from) | (1u64 << to);
                    if g.board.has_won(&after, 1 - t) {
                        left_out += 1;
                    } else {
                        legal.push((from, to));
                    }
                }
            }
            let mut listed = Vec::new();
            for_each_move(&g.board, &pos, &mut |from, to| listed.push((from, to)));
            assert_eq!(listed, legal, "{size}x{size}x{pieces} rank {rank}");
            assert_eq!(move_count(&g.board, &pos) as usize, legal.len(), "{size}x{size}x{pieces} rank {rank}");
        }
    }
    assert!(left_out > 1000, "the boards must exercise moves that fill the opponent's goal ({left_out})");
}

/// The folds a test runs over: none, colour, mirror, both.
fn foldings() -> [Folding; 4] {
    [(false, false), (true, false), (false, true), (true, true)].map(|(colour, mirror)| Folding { colour, mirror })
}

#[test]
fn the_mirror_keeps_steps_jumps_and_the_areas_of_one_three_four_and_six_pieces() {
    for m in MIN_SIZE..=MAX_SIZE {
        for p in 1..=MAX_PIECES {
            let Ok(b) = Board::new(m, p) else { continue };
            for c in 0..b.cells {
                let image = b.mirror[c] as usize;
                assert_eq!(b.mirror[image] as usize, c, "an involution");
                assert_eq!(b.reflect(b.steps[c]), b.steps[image], "{m} x {m}: steps of {c}");
                let mut jumps: Vec<(u8, u8)> =
                    b.jumps[c].iter().map(|&(o, l)| (b.mirror[o as usize], b.mirror[l as usize])).collect();
                let mut want = b.jumps[image].clone();
                jumps.sort_unstable();
                want.sort_unstable();
                assert_eq!(jumps, want, "{m} x {m}: jumps of {c}");
                assert_eq!(b.rotation[image], b.mirror[b.rotation[c] as usize], "the mirror and the rotation commute");
            }
            assert_eq!(b.has_mirror_symmetry(), [1, 3, 4, 6].contains(&p), "{m} x {m}, {p} pieces");
        }
    }
    assert_eq!(
        Cc2::with_folding(7, 2, Folding { colour: true, mirror: true }).err(),
        Some(Cc2Error::NoMirror { size: 7, pieces: 2 })
    );
}

/// Folded by the mirror, every rank is a position whose rank it is, a
/// position and its mirror image share a rank unless the waiting placement is
/// symmetric, and the multiplicities add up to the unfolded space.
#[test]
fn mirror_fold_ranks_classes_of_positions() {
    for folding in foldings().into_iter().filter(|f| f.mirror) {
        for (m, p) in [(4, 3), (5, 1), (4, 4)] {
            let g = Cc2::with_folding(m, p, folding).unwrap();
            let full = Cc2::new(m, p).unwrap();
            let sides = if folding.colour { 1 } else { 2 };
            let mut weight = 0;
            for r in 0..g.position_count() {
                let pos = g.unrank(r);
                assert_eq!(g.rank(&pos), r, "{m}x{p} {folding:?}: rank {r}");
                weight += g.multiplicity(r);
            }
            assert_eq!(weight, sides * full.per_turn(), "{m}x{p} {folding:?}");
            assert_eq!(g.positions_per_side(), full.per_turn());
            assert!(2 * g.per_turn() > full.per_turn() && g.per_turn() < full.per_turn());
            for r in 0..full.position_count() {
                let pos = full.unrank(r);
                let image = pos.reflected(&g.board);
                let (a, na) = g.rank_of(&pos);
                let (b, nb) = g.rank_of(&image);
                assert_eq!(na, nb);
                let t = pos.turn as usize;
                let symmetric = g.board.reflect(pos.pieces[1 - t]) == pos.pieces[1 - t];
                assert_eq!(a == b, !symmetric || image == pos, "{m}x{p} {folding:?}: {}", g.format(&pos));
                assert_eq!(g.multiplicity(a), if symmetric { 1 } else { 2 });
            }
        }
    }
}

/// Each open position is named among the predecessors of the ranks its
/// children stand for exactly once per move: the counters of the kernel reach
/// zero when every child is decided. Folded by the mirror, a move's count may
/// come from the record of the child's mirror image (stored apart, with the
/// same value), so children are compared by class.
#[test]
fn every_move_is_counted_once_in_every_folding() {
    for folding in foldings() {
        for (m, p) in [(5, 3), (7, 3), (6, 4), (7, 1)] {
            let g = Cc2::with_folding(m, p, folding).unwrap();
            let class = |c: u64| -> u64 {
                if !folding.mirror {
                    return c;
                }
                let pos = g.unrank(c);
                let image = pos.reflected(&g.board);
                c.min(g.rank(&image))
            };
            let mut rng = XorShift(0x7e57_0f00 ^ (m * 10 + p) as u64);
            let n = g.position_count();
            for _ in 0..2_000 {
                let r = rng.next_u64() % n;
                let Classification::Open { children: count, .. } = g.classify(r) else { continue };
                let mut kids = Vec::new();
                g.for_each_child(r, &mut |c| kids.push(c));
                assert_eq!(kids.len() as u32, count);
                // A move's count comes from the record of its child or of the
                // child's mirror image.
                let mut candidates: Vec<u64> =
                    kids.iter().flat_map(|&c| [c, g.rank(&g.unrank(c).reflected(&g.board))]).collect();
                candidates.sort_unstable();
                candidates.dedup();
                let mut named = Vec::new();
                for &c in &candidates {
                    g.for_each_predecessor(c, &mut |q| {
                        if q == r {
                            named.push(class(c));
                        }
                    });
                }
                let mut want: Vec<u64> = kids.iter().map(|&c| class(c)).collect();
                named.sort_unstable();
                want.sort_unstable();
                assert_eq!(named, want, "{m}x{p} {folding:?}: rank {r} ({})", g.format(&g.unrank(r)));
            }
        }
    }
}

#[test]
fn mirror_folded_blocks_tile_the_space() {
    for (m, p) in [(5, 3), (7, 3), (7, 4)] {
        for folding in foldings().into_iter().filter(|f| f.mirror) {
            let g = Cc2::with_folding(m, p, folding).unwrap();
            crate::sample::check_predecessor_blocks(&g, 0x3141_5926 ^ m as u64, 20_000);
        }
    }
}

/// The move count pass's block-by-block classification is the rank-by-rank one.
#[test]
fn classify_runs_equal_classify() {
    for (m, p) in [(5, 2), (6, 3), (7, 3)] {
        for folding in foldings().into_iter().filter(|f| !f.mirror || Board::new(m, p).unwrap().has_mirror_symmetry()) {
            let g = Cc2::with_folding(m, p, folding).unwrap();
            crate::sample::check_classify_runs(&g, 0xc1a5_51f1 ^ m as u64, 200);
        }
    }
}

/// The records' predecessors in one pass are the record-by-record ones, in
/// every folding, and the player to move named once a record is every
/// predecessor's (the sorted apply relies on it).
#[test]
fn records_predecessors_equal_one_record_at_a_time() {
    for (m, p) in [(5, 2), (7, 3)] {
        for folding in foldings().into_iter().filter(|f| !f.mirror || Board::new(m, p).unwrap().has_mirror_symmetry()) {
            let g = Cc2::with_folding(m, p, folding).unwrap();
            crate::sample::check_records_predecessors(&g, 0x7ec0_5d00 ^ m as u64, 5);
        }
    }
}
