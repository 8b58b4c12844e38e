use super::class::{class_of, class_of_hole, feasible};
use super::symmetry::{apply, canonical, images, orbit_size, stabiliser_size};
use super::*;

/// A small deterministic generator (xorshift) so the tests need no crate.
fn random_positions(board: &Board, count: usize) -> Vec<Pegs> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state & board.holes()
        })
        .collect()
}

#[test]
fn board_sizes_match_the_rules() {
    let english = Board::new(BoardKind::English);
    assert_eq!((english.hole_count(), english.jump_count()), (33, 76));
    let european = Board::new(BoardKind::European);
    assert_eq!((european.hole_count(), european.jump_count()), (37, 92));
    for name in ["b2", "f2", "b6", "f6"] {
        let hole = parse_hole(name).unwrap();
        assert!(european.has_hole(hole) && !english.has_hole(hole), "{name}");
    }
    assert!(english.has_hole(parse_hole("d1").unwrap()) && !english.has_hole(parse_hole("a1").unwrap()));
}

#[test]
fn hole_names_round_trip() {
    for hole in 0..64u8 {
        if hole % 8 < 7 && hole / 8 < 7 {
            assert_eq!(parse_hole(&hole_name(hole)), Some(hole));
        }
    }
    assert_eq!(parse_hole("d4"), Some(27));
    for bad in ["", "h1", "a8", "a0", "d44", "44", "zz", "z9", "a~"] {
        assert_eq!(parse_hole(bad), None, "{bad}");
    }
}

#[test]
fn symmetries_form_the_dihedral_group_and_keep_the_board() {
    for kind in [BoardKind::English, BoardKind::European] {
        let board = Board::new(kind);
        for s in 0..8 {
            assert_eq!(apply(s, board.holes()), board.holes(), "symmetry {s} moves the board");
        }
        // A position with no symmetry has 8 distinct images.
        let lopsided = (1 << parse_hole("d1").unwrap()) | (1 << parse_hole("e1").unwrap());
        let mut all = images(lopsided).to_vec();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 8);
        for x in random_positions(&board, 200) {
            let imgs = images(x);
            for s in 0..8 {
                assert_eq!(imgs[s], apply(s, x));
                assert_eq!(imgs[s].count_ones(), x.count_ones());
                // Closed under composition: every image's images are images of x.
                for t in 0..8 {
                    assert!(imgs.contains(&apply(t, imgs[s])));
                }
            }
            assert_eq!(canonical(imgs[5]), canonical(x));
            assert_eq!(orbit_size(x) * stabiliser_size(x), 8);
        }
    }
    let board = Board::new(BoardKind::English);
    assert_eq!(stabiliser_size(board.single_vacancy(27)), 8);
    assert_eq!(orbit_size(board.single_vacancy(parse_hole("d1").unwrap())), 4);
    assert_eq!(orbit_size(board.single_vacancy(parse_hole("c1").unwrap())), 8);
}

#[test]
fn canonical_children_agree_with_applying_the_jump() {
    for kind in [BoardKind::English, BoardKind::European] {
        let board = Board::new(kind);
        for x in random_positions(&board, 500) {
            let mut fast = Vec::new();
            board.for_each_canonical_child(x, |c| fast.push(c));
            let slow: Vec<Pegs> = board.jumps(x).iter().map(|j| canonical(x ^ j.mask())).collect();
            assert_eq!(fast, slow);
            assert_eq!(board.is_dead_end(x), slow.is_empty());
            for j in board.jumps(x) {
                assert!(x >> j.from & 1 == 1 && x >> j.over & 1 == 1 && x >> j.to & 1 == 0);
                assert!(board.has_hole(j.to));
            }
        }
    }
}

#[test]
fn jumps_keep_the_class_and_reverse_on_the_complement() {
    for kind in [BoardKind::English, BoardKind::European] {
        let board = Board::new(kind);
        for x in random_positions(&board, 300) {
            for j in board.jumps(x) {
                let y = x ^ j.mask();
                assert_eq!(class_of(y), class_of(x));
                // Duality: x -> y legal means complement(y) -> complement(x) legal.
                let back = board.jumps(board.complement(y));
                assert!(back.iter().any(|k| board.complement(y) ^ k.mask() == board.complement(x)));
            }
        }
    }
}

#[test]
fn class_test_of_the_central_games() {
    let english = Board::new(BoardKind::English);
    let centre = parse_hole("d4").unwrap();
    let finishes: Vec<String> = (0..64u8)
        .filter(|&h| english.has_hole(h) && feasible(english.single_vacancy(centre), h))
        .map(hole_name)
        .collect();
    assert_eq!(finishes.join(" "), "d1 a4 d4 g4 d7");
    let european = Board::new(BoardKind::European);
    assert!((0..64u8).all(|h| !european.has_hole(h) || !feasible(european.single_vacancy(centre), h)));
    assert_ne!(class_of_hole(centre), class_of_hole(parse_hole("c4").unwrap()));
}

#[test]
fn pictures_round_trip_and_bad_ones_are_refused() {
    for kind in [BoardKind::English, BoardKind::European] {
        let board = Board::new(kind);
        for x in random_positions(&board, 50) {
            assert_eq!(board.parse_picture(&board.picture(x)).unwrap(), x);
            assert_eq!(board.parse_picture(&board.picture_line(x)).unwrap(), x);
        }
    }
    let english = Board::new(BoardKind::English);
    let start = english.single_vacancy(27);
    assert_eq!(english.picture(start), "  ooo\n  ooo\nooooooo\nooo.ooo\nooooooo\n  ooo\n  ooo\n");
    assert!(matches!(english.parse_picture("ooo"), Err(NotationError::WrongLength { found: 3, .. })));
    assert_eq!(english.parse_picture("ooo#"), Err(NotationError::BadCharacter('#')));
}

#[test]
fn the_central_game_is_solved_and_replays() {
    use super::search::{Outcome, replay, solve};
    let board = Board::new(BoardKind::English);
    let centre = parse_hole("d4").unwrap();
    let start = board.single_vacancy(centre);
    let found = solve(&board, start, centre, 10_000_000);
    let Outcome::Solved(jumps) = found.outcome else { panic!("no solution: {found:?}") };
    assert_eq!(jumps.len(), 31);
    assert_eq!(replay(&board, start, &jumps).unwrap(), 1 << centre);
    // A class-infeasible finish can never be reached: the search says so.
    let small = Board::new(BoardKind::English);
    let c4 = parse_hole("c4").unwrap();
    let few = (1 << parse_hole("c3").unwrap()) | (1 << parse_hole("d3").unwrap()) | (1 << c4);
    assert_eq!(solve(&small, few, c4, 1000).outcome, Outcome::Impossible);
}

#[test]
fn a_start_folds_by_exactly_the_symmetries_that_fix_it() {
    use super::symmetry::Group;
    let european = Board::new(BoardKind::European);
    let sizes: Vec<u32> = ["c1", "d2", "d3", "d4"]
        .iter()
        .map(|h| Group::stabiliser(european.single_vacancy(parse_hole(h).unwrap())).len())
        .collect();
    // c1 lies on no axis or diagonal; d2 and d3 on the vertical axis; d4 on all.
    assert_eq!(sizes, [1, 2, 2, 8]);
    for mask in 0..=255u8 {
        let group = Group::from_mask(mask);
        if let Some(g) = group {
            assert!([1, 2, 4, 8].contains(&g.len()), "mask {mask:#x}");
        }
    }
    assert_eq!(Group::from_mask(0xff), Some(Group::ALL));
    assert_eq!(Group::from_mask(0b10), None, "no identity");
    assert_eq!(Group::from_mask(0b0111), None, "not closed");
    for x in random_positions(&european, 300) {
        let g = Group::stabiliser(x);
        assert_eq!(Group::from_mask(g.mask()), Some(g));
        assert_eq!(g.len() * orbit_size(x), 8);
        for group in [Group::ALL, Group::TRIVIAL, Group::stabiliser(european.single_vacancy(parse_hole("d2").unwrap()))]
        {
            assert_eq!(
                group.orbit_size(x) * (0..8).filter(|&s| group.contains(s) && apply(s, x) == x).count() as u32,
                group.len()
            );
            let mut children = Vec::new();
            european.for_each_child_in(group, x, |c| children.push(c));
            let slow: Vec<Pegs> = european.jumps(x).iter().map(|j| group.canonical(x ^ j.mask())).collect();
            assert_eq!(children, slow);
            // The representative is an image of x under the group, and the same for every image.
            assert!((0..8).any(|s| group.contains(s) && apply(s, x) == group.canonical(x)));
            for s in (0..8).filter(|&s| group.contains(s)) {
                assert_eq!(group.canonical(apply(s, x)), group.canonical(x));
            }
        }
        assert_eq!(Group::ALL.canonical(x), canonical(x));
        assert_eq!(Group::TRIVIAL.canonical(x), x);
    }
}
