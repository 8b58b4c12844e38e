//! Two-player Chinese checkers solved in memory with the workers' kernel,
//! against Sturtevant's published table and against colour symmetry.

use retro_engine::layout::Layout;
use retro_engine::memsolve::{Solved, solve};
use retro_engine::tablebase::{VALUE_DRAW, VALUE_ILLEGAL, VALUE_LOSS, VALUE_WIN};
use retro_engine::values::tablebase_value;
use retro_games::cc2::{Cc2, Folding};
use retro_games::{Question, RetroGame};

/// Rows `m p positions wins draws illegal` of the reference table.
fn reference() -> Vec<[u64; 6]> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../coordinator/tests/reference/cc2.tsv");
    let text = std::fs::read_to_string(path).expect("reference table");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let v: Vec<u64> = l.split('\t').map(|x| x.trim().parse().expect("number")).collect();
            v.try_into().expect("six columns")
        })
        .collect()
}

#[test]
fn reproduces_sturtevants_rows() {
    let rows = reference();
    assert!(rows.len() >= 2);
    for [m, p, positions, wins, draws, illegal] in rows {
        let g = Cc2::new(m as u32, p as u32).unwrap();
        assert_eq!(g.position_count(), positions);
        let layout = Layout::new(positions, 3, 64, 4096);
        let solved = solve(&g, Question::solo(0), &layout, 2).unwrap();
        let mut count = [0u64; 256];
        for &b in &solved.bytes {
            count[tablebase_value(b) as usize] += 1;
        }
        assert_eq!(count[VALUE_WIN as usize], wins, "{m}x{m} {p}: wins for player 1");
        assert_eq!(count[VALUE_LOSS as usize], wins, "{m}x{m} {p}: wins for player 2 (colour symmetry)");
        assert_eq!(count[VALUE_DRAW as usize], draws, "{m}x{m} {p}: draws");
        assert_eq!(count[VALUE_ILLEGAL as usize], illegal, "{m}x{m} {p}: illegal");
        // Every solved size is a first-player win from the start.
        let start = g.rank(&g.start()) as usize;
        assert_eq!(tablebase_value(solved.bytes[start]), VALUE_WIN, "{m}x{m} {p}: start");
    }
}

/// solo(2) solved on its own equals solo(1) read at the colour-swapped position,
/// value for value: two independent paths through the kernel.
#[test]
fn colour_symmetry_of_the_solution() {
    let g = Cc2::new(5, 2).unwrap();
    let layout = Layout::new(g.position_count(), 4, 64, 4096);
    let one = solve(&g, Question::solo(0), &layout, 2).unwrap();
    let two = solve(&g, Question::solo(1), &layout, 1).unwrap();
    let mut decided = 0;
    for r in 0..g.position_count() {
        let m = g.rank(&g.unrank(r).mirrored(&g.board)) as usize;
        let (a, b) = (tablebase_value(one.bytes[r as usize]), tablebase_value(two.bytes[m]));
        assert_eq!(a, b, "rank {r}");
        decided += u64::from(a == VALUE_WIN || a == VALUE_LOSS);
    }
    assert!(decided > g.position_count() / 2);
}

/// Solves `folded` and checks that every position of `full` (solved as
/// `solved`) reads the same value through its rank there, WIN and LOSS
/// swapped where the fold reads it through its colour image.
fn assert_agrees(full: &Cc2, solved: &Solved, folded: &Cc2, label: &str) {
    let b = solve(folded, Question::solo(0), &Layout::new(folded.position_count(), 2, 64, 4096), 2).unwrap();
    for r in 0..full.position_count() {
        let (f, negated) = folded.rank_of(&full.unrank(r));
        let v = match (negated, tablebase_value(b.bytes[f as usize])) {
            (true, VALUE_WIN) => VALUE_LOSS,
            (true, VALUE_LOSS) => VALUE_WIN,
            (_, v) => v,
        };
        assert_eq!(tablebase_value(solved.bytes[r as usize]), v, "{label}: rank {r}");
    }
}

fn solve_full(full: &Cc2) -> Solved {
    solve(full, Question::solo(0), &Layout::new(full.position_count(), 3, 64, 4096), 2).unwrap()
}

/// The space folded by colour symmetry (player 1 to move only, every edge
/// negating) solves to the same values as the full space, position for
/// position, with the other half read through the colour image.
#[test]
fn folded_space_agrees_with_the_full_space() {
    for (m, p) in [(7, 1), (5, 2), (7, 2)] {
        let full = Cc2::new(m, p).unwrap();
        assert_agrees(&full, &solve_full(&full), &Cc2::folded(m, p).unwrap(), &format!("{m}x{m} {p}"));
    }
}

/// Folded by the mirror (with and without colour symmetry), every position of
/// the full space reads the same value through its rank: the counts of the
/// stored positions' own moves reach zero exactly when they should.
#[test]
fn mirror_folded_space_agrees_with_the_full_space() {
    for (m, p) in [(7, 1), (4, 3), (4, 4)] {
        let full = Cc2::new(m, p).unwrap();
        let solved = solve_full(&full);
        for colour in [false, true] {
            let folded = Cc2::with_folding(m, p, Folding { colour, mirror: true }).unwrap();
            let unfolded = full.position_count() / if colour { 2 } else { 1 };
            assert!(folded.position_count() * 100 < unfolded * 60, "{m}x{m} {p}: the mirror halves the space");
            assert_agrees(&full, &solved, &folded, &format!("{m}x{m} {p}, colour {colour}"));
        }
    }
}

/// Counts WIN for player 1, WIN for player 2, DRAW and ILLEGAL of a solved
/// unfolded space.
fn table_row(solved: &Solved) -> [u64; 4] {
    let mut count = [0u64; 4];
    for &b in &solved.bytes {
        count[tablebase_value(b) as usize] += 1;
    }
    [count[VALUE_WIN as usize], count[VALUE_LOSS as usize], count[VALUE_DRAW as usize], count[VALUE_ILLEGAL as usize]]
}

/// Six pieces on 4 x 4 under both readings of the part-2 rule: the public
/// solver's row (jh85/smallgames: 1,436,159 wins, 85,622 draws, 405,420
/// illegal of 3,363,360), which is also what Sturtevant's own solver gives on
/// this board (the exemption of the as-published reading leaves nothing here:
/// six pieces cannot avoid both areas of 4 x 4). The paper's 4 x 4 wins and
/// draws (1,205,441 / 547,058) are not what either solver computes.
#[test]
fn six_pieces_on_four_by_four_under_both_readings() {
    use retro_games::cc2::Part2;
    for part2 in [Part2::Literal, Part2::AsPublished] {
        let g = Cc2::with_rules(4, 6, Folding::default(), part2).unwrap();
        assert_eq!(g.position_count(), 3_363_360);
        let solved = solve(&g, Question::solo(0), &Layout::new(g.position_count(), 4, 1 << 12, 1 << 16), 2).unwrap();
        assert_eq!(table_row(&solved), [1_436_159, 1_436_159, 85_622, 405_420], "{part2:?}");
    }
}
