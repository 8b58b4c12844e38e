//! The solver against the published numbers (the reference file copied from the
//! shared reference, with its source line) and against a naive implementation
//! that keeps the set of nameable numbers and no Apéry set.

use super::*;
use retro_games::sylver::theory::known_p;
use retro_games::sylver::{Apery, parse_numbers};
use std::collections::{BTreeSet, HashMap};

const REFERENCE: &str = retro_games::sylver::PUBLISHED;

fn lines(kind: &str) -> Vec<Vec<&'static str>> {
    REFERENCE
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f[0] == kind)
        .collect()
}

fn pos(text: &str) -> Apery {
    Apery::parse(text).unwrap()
}

#[test]
fn winning_moves_of_the_published_positions() {
    let all = lines("winning");
    assert_eq!(all.len(), 14);
    for f in all {
        let a = pos(f[1]);
        let want = parse_numbers(f[2]).unwrap();
        let got = analyse(&a, u64::MAX).unwrap().winning;
        assert_eq!(got, want, "winning moves of {{{}}}", f[1]);
    }
    // {5, 14}: t = 51 is a losing move (the note of that line).
    let a = pos("5 14");
    assert!(ClassSolver::for_position(&a).unwrap().value(&a.named(51)).unwrap());
}

#[test]
fn positions_reachable_from_12_17() {
    let f = &lines("reachable_positions")[0];
    let a = pos(f[1]);
    let solver = ClassSolver::for_position(&a).unwrap();
    assert_eq!(solver.count_reachable(&a).unwrap(), f[2].parse::<u64>().unwrap());
}

#[test]
fn wikipedia_game() {
    let f = &lines("wikipedia_game")[0];
    let moves = parse_numbers(f[1]).unwrap();
    let mut named: Vec<u64> = Vec::new();
    for (ply, &x) in moves.iter().enumerate() {
        if let Some(&first) = named.first() {
            let before = Apery::from_numbers(&named).unwrap();
            assert!(before.is_nameable(x), "{x} is not nameable after {named:?}");
            assert!(first > 0);
        }
        named.push(x);
        if ply % 2 == 0 {
            // Every move of A leaves a P-position.
            let a = Apery::from_numbers(&named).unwrap();
            let p = if a.is_finite() {
                !ClassSolver::for_position(&a).unwrap().value(&a).unwrap()
            } else {
                known_p(&a).is_some()
            };
            assert!(p, "A's move {x} leaves {named:?}, not a P-position");
        }
    }
    // B must name 1.
    let end = Apery::from_numbers(&named).unwrap();
    assert_eq!(end.nameable(), Some(vec![1]));
}

/// Whether naming `t` wins from `{m, n}`: `{m, n, t}` is a P-position.
fn t_wins(m: u64, n: u64, solver: &mut ClassSolver) -> bool {
    let a = Apery::from_numbers(&[m, n]).unwrap();
    let t = a.frobenius().unwrap() as u64;
    !solver.value(&a.named(t)).unwrap()
}

/// The article's search for m <= 6 with its bounds (the full 528 pairs are
/// `plans/sylver-twins.toml`): exactly the published pairs with m <= 6.
#[test]
fn t_wins_pairs_small_m() {
    let published: BTreeSet<(u64, u64)> = lines("t_wins_pairs")[0][1]
        .split(',')
        .map(|p| {
            let v = parse_numbers(p).unwrap();
            (v[0], v[1])
        })
        .collect();
    assert_eq!(published.len(), 7);
    let mut found = BTreeSet::new();
    for (m, n_max) in [(2u64, 200u64), (3, 200), (4, 160), (5, 100), (6, 82)] {
        let mut solver = ClassSolver::new(m, n_max).unwrap();
        for n in m + 1..=n_max {
            if gcd(m, n) == 1 && (m, n) != (2, 3) && t_wins(m, n, &mut solver) {
                found.insert((m, n));
            }
        }
    }
    let want: BTreeSet<_> = published.into_iter().filter(|&(m, _)| m <= 6).collect();
    assert_eq!(found, want);
}

/// The naive game: the set of nameable numbers.
fn naive_move(set: &[u64], x: u64) -> Vec<u64> {
    let gap = |z: u64| set.binary_search(&z).is_ok();
    set.iter().copied().filter(|&y| (1..=y / x).all(|c| gap(y - c * x))).collect()
}

fn naive_value(set: &[u64], memo: &mut HashMap<Vec<u64>, bool>) -> bool {
    if let Some(&v) = memo.get(set) {
        return v;
    }
    let v = set.iter().filter(|&&x| x != 1).any(|&x| !naive_value(&naive_move(set, x), memo));
    memo.insert(set.to_vec(), v);
    v
}

/// Every position reachable from several small starts: the same value, with
/// ender pruning and without, and the same nameable numbers.
#[test]
fn agrees_with_naive_implementation() {
    let mut checked = 0;
    for start in
        ["5 7", "4 9", "6 7", "5 8", "7 9", "3 11", "6 11", "8 9", "7 11", "5 13", "9 10", "8 11", "7 12", "10 11"]
    {
        let root = pos(start);
        let mut memo = HashMap::new();
        let mut pruned = ClassSolver::for_position(&root).unwrap();
        pruned.set_ender_pruning(true);
        let mut plain = ClassSolver::for_position(&root).unwrap();
        // Depth-first over naive sets, carrying one list of named numbers to each.
        let mut seen: HashMap<Vec<u64>, Vec<u64>> = HashMap::new();
        let mut stack = vec![(root.nameable().unwrap(), parse_numbers(start).unwrap())];
        while let Some((set, named)) = stack.pop() {
            if seen.contains_key(&set) {
                continue;
            }
            for &x in set.iter().filter(|&&x| x != 1) {
                let mut next = named.clone();
                next.push(x);
                stack.push((naive_move(&set, x), next));
            }
            seen.insert(set, named);
        }
        for (set, named) in &seen {
            let a = Apery::from_numbers(named).unwrap();
            assert_eq!(a.nameable().as_ref(), Some(set), "{named:?}");
            let v = naive_value(set, &mut memo);
            assert_eq!(pruned.value(&a).unwrap(), v, "{named:?}");
            assert_eq!(plain.value(&a).unwrap(), v, "{named:?}");
            let winning: Vec<u64> =
                set.iter().copied().filter(|&x| x != 1 && !naive_value(&naive_move(set, x), &mut memo)).collect();
            assert_eq!(pruned.winning_moves(&a).unwrap(), winning, "{named:?}");
            checked += 1;
        }
        assert_eq!(pruned.count_reachable(&root).unwrap(), seen.len() as u64, "{start}");
    }
    assert!(checked > 3000, "{checked}");
}

/// Sicherman's claims over every position reachable from {9, 11} and {10, 13}:
/// an ender is quiet iff t is odd iff n <-> t - n is antisymmetric; E(S) is an
/// ender with the same t; an ender with t > 1 is N.
#[test]
fn ender_theory_on_reachable_positions() {
    let mut enders = 0;
    for start in ["9 11", "10 13"] {
        let root = pos(start);
        let mut solver = ClassSolver::for_position(&root).unwrap();
        let mut seen: HashMap<Vec<u64>, ()> = HashMap::new();
        let mut stack = vec![root.clone()];
        while let Some(a) = stack.pop() {
            let set = a.nameable().unwrap();
            if seen.insert(set.clone(), ()).is_some() {
                continue;
            }
            for &x in set.iter().filter(|&&x| x != 1) {
                stack.push(a.named(x));
            }
            let t = a.frobenius().unwrap();
            let e = a.enclosure();
            assert!(t < 1 || e.is_ender(), "E(S) of {set:?}");
            assert_eq!(e.frobenius(), Some(t));
            if a.is_ender() {
                enders += 1;
                let tt = t as u64;
                let antisymmetric = (1..tt).all(|n| a.is_nameable(n) != a.is_nameable(tt - n));
                assert_eq!(a.is_quiet_ender(), antisymmetric, "{set:?}");
                assert_eq!(a.is_quiet_ender(), t % 2 == 1, "{set:?}");
                if t > 1 {
                    assert!(solver.value(&a).unwrap(), "ender {set:?} with t > 1 must be N");
                }
            }
        }
    }
    assert!(enders > 100, "{enders}");
}

#[test]
fn bad_inputs_are_errors() {
    assert!(matches!(ClassSolver::for_position(&pos("4 6")), Err(SolveError::Infinite { gcd: 2 })));
    assert!(matches!(ClassSolver::new(1, 5), Err(SolveError::BadM { m: 1 })));
    assert!(matches!(ClassSolver::new(65, 5), Err(SolveError::BadM { m: 65 })));
    assert!(matches!(ClassSolver::new(60, 255), Err(SolveError::KeyTooWide { .. })));
    let mut s = ClassSolver::new(5, 20).unwrap();
    assert!(matches!(s.value(&pos("7 9")), Err(SolveError::WrongClass { .. })));
    // A position where 5 is representable is re-expressed in the class.
    assert_eq!(
        s.value(&pos("4 5 9")).unwrap(),
        ClassSolver::for_position(&pos("4 5 9")).unwrap().value(&pos("4 5 9")).unwrap()
    );
    let mut small = ClassSolver::new(5, 3).unwrap();
    assert!(matches!(small.value(&pos("5 14")), Err(SolveError::WrongClass { .. })));
    s.set_cap(100);
    assert!(matches!(s.winning_moves(&pos("5 14")), Err(SolveError::Capped { .. })));
}

/// The first-move table of the seed article, with a reason for each entry.
#[test]
fn opening_table() {
    use theory::{Limits, Opening, opening};
    let limits = Limits { bound: 60, cap: 1_000_000 };
    let f = lines("opening");
    let losing = parse_numbers(f[0][1]).unwrap();
    for n in losing {
        assert!(matches!(opening(n, limits), Opening::Loses(_)), "{n}: {:?}", opening(n, limits));
    }
    for p in [5, 7, 11, 13, 37] {
        assert!(matches!(opening(p, limits), Opening::Wins(_)), "{p}");
    }
    for n in parse_numbers(f[2][1]).unwrap() {
        assert!(matches!(opening(n, limits), Opening::Open(_)), "{n}: {:?}", opening(n, limits));
    }
    // Multiples of a prime >= 5 lose to that prime.
    let replies = theory::winning_replies(&pos("10"), limits);
    assert!(replies.winning.iter().any(|r| r.x == 5 && r.reason.contains("Hutchings")), "{replies:?}");
}

/// {4, 6} is P: every odd reply leaves a finite N-position (x = 5..61).
#[test]
fn four_six_odd_replies_are_n() {
    for x in (5..=61).step_by(2) {
        let a = pos("4 6").named(x);
        assert!(ClassSolver::for_position(&a).unwrap().value(&a).unwrap(), "{{4, 6, {x}}}");
    }
}

/// Every figure a caller passes is checked before anything is sized by it,
/// and the errors name the limit.
#[test]
fn limits_are_checked_first_and_named() {
    // From the numbers alone, before an Apéry set of m entries exists.
    let e = check_numbers(&[1_048_575, 1_048_576]).unwrap_err();
    assert_eq!(e, SolveError::BadM { m: 1_048_575 });
    assert!(e.to_string().contains("2..=64"), "{e}");
    assert_eq!(check_numbers(&[14, 5]), Ok(5));
    assert_eq!(check_numbers(&[64, 65]), Ok(64));
    assert_eq!(check_numbers(&[65, 66]), Err(SolveError::BadM { m: 65 }));
    assert_eq!(check_numbers(&[1, 5]), Err(SolveError::BadM { m: 1 }));
    assert_eq!(check_numbers(&[4, 6]), Err(SolveError::Infinite { gcd: 2 }));
    assert_eq!(check_numbers(&[]), Err(SolveError::BadM { m: 0 }));
    // Too many nameable numbers in one class for a byte of the tuple.
    let e = ClassSolver::for_position(&pos("3 1000")).err().unwrap();
    assert!(matches!(e, SolveError::KeyTooWide { m: 3, max_k: 666, .. }), "{e}");
    assert!(e.to_string().contains("at most 255 a class"), "{e}");
    assert!(ClassSolver::new(3, MAX_K).is_ok() && ClassSolver::new(3, MAX_K + 1).is_err());
    // The cap and the reply bound.
    assert_eq!(check_cap(1), Ok(1));
    assert_eq!(check_cap(MAX_CAP), Ok(MAX_CAP));
    for cap in [0, MAX_CAP + 1, u64::MAX] {
        let e = check_cap(cap).unwrap_err();
        assert_eq!(e, SolveError::BadCap { cap });
        assert!(e.to_string().contains("4294967296"), "{e}");
    }
    use theory::{Limits, MAX_BOUND};
    assert!(Limits { bound: MAX_BOUND, cap: 10 }.check().is_ok());
    let e = Limits { bound: MAX_BOUND + 1, cap: 10 }.check().unwrap_err();
    assert_eq!(e, SolveError::BadBound { bound: MAX_BOUND + 1 });
    assert!(e.to_string().contains("1048576"), "{e}");
    assert_eq!(Limits { bound: 5, cap: 0 }.check().unwrap_err(), SolveError::BadCap { cap: 0 });
    // A library caller that skips the check gets no list sized by the bound:
    // the replies stop at MAX_BOUND (2^19 odd replies to {2}, each skipped).
    match theory::verdict(&pos("2"), Limits { bound: u64::MAX, cap: 1000 }) {
        theory::Verdict::N(moves, _) => assert_eq!(moves, vec![3]),
        v => panic!("{v:?}"),
    }
}

#[test]
fn counting_reachable_positions_stops_at_the_cap() {
    let a = pos("12 17");
    let mut solver = ClassSolver::for_position(&a).unwrap();
    solver.set_cap(1000);
    assert_eq!(solver.count_reachable(&a), Err(SolveError::Capped { positions: 1000 }));
}
