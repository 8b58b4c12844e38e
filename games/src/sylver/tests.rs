use super::theory::{KnownP, is_prime, known_p, known_p_list};
use super::*;

/// The reference lines (kind, position, value, note), copied from the shared
/// reference with its source line.
const REFERENCE: &str = super::PUBLISHED;

fn lines(kind: &str) -> Vec<Vec<&'static str>> {
    REFERENCE
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f[0] == kind)
        .collect()
}

fn nums(text: &str) -> Vec<u64> {
    parse_numbers(text).unwrap()
}

#[test]
fn parse_accepts_any_order_and_separators() {
    assert_eq!(parse_numbers("14 5").unwrap(), vec![14, 5]);
    assert_eq!(parse_numbers("{5, 14}").unwrap(), vec![5, 14]);
    assert_eq!(parse_numbers(" 5,14 ,\t+7 ").unwrap(), vec![5, 14, 7]);
    assert_eq!(Apery::parse("14 5").unwrap(), Apery::parse("5 14").unwrap());
}

#[test]
fn parse_errors_are_typed() {
    assert_eq!(parse_numbers(""), Err(SylverError::Empty));
    assert_eq!(parse_numbers(" , {} "), Err(SylverError::Empty));
    assert_eq!(parse_numbers("5 0"), Err(SylverError::Zero));
    assert_eq!(parse_numbers("-0"), Err(SylverError::Zero));
    assert_eq!(parse_numbers("5 -3"), Err(SylverError::Negative("-3".into())));
    assert_eq!(parse_numbers("5 x"), Err(SylverError::NotANumber("x".into())));
    assert_eq!(parse_numbers("5 1.5"), Err(SylverError::NotANumber("1.5".into())));
    assert_eq!(parse_numbers("--4"), Err(SylverError::NotANumber("--4".into())));
    let big = (MAX_NUMBER + 1).to_string();
    assert_eq!(parse_numbers(&big), Err(SylverError::TooLarge { value: big.clone(), max: MAX_NUMBER }));
    let huge = "9".repeat(40);
    assert!(matches!(parse_numbers(&huge), Err(SylverError::TooLarge { .. })));
    assert_eq!(Apery::from_numbers(&[]), Err(SylverError::Empty));
    assert_eq!(Apery::from_numbers(&[3, 0]), Err(SylverError::Zero));
    // The messages say what is wrong and what is expected.
    assert!(SylverError::Negative("-3".into()).to_string().contains("positive"));
}

#[test]
fn apery_examples() {
    for f in lines("apery") {
        let a = Apery::parse(f[1]).unwrap();
        let w: Vec<u64> = f[2].split_whitespace().map(|x| x.parse().unwrap()).collect();
        assert_eq!(a.w(), w.as_slice(), "{f:?}");
    }
}

#[test]
fn frobenius_and_genus_examples() {
    for f in lines("frobenius") {
        let a = Apery::parse(f[1]).unwrap();
        assert_eq!(a.frobenius(), Some(f[2].parse().unwrap()), "{f:?}");
        let genus: u64 = f[3].split_whitespace().next().unwrap().parse().unwrap();
        assert_eq!(a.genus(), Some(genus));
        assert_eq!(a.nameable().unwrap().len() as u64, genus);
        let [x, y] = nums(f[1])[..] else { panic!("pair expected") };
        assert_eq!(sylvester(x, y), Some(f[2].parse().unwrap()));
    }
}

#[test]
fn enders_quiet_and_unquiet() {
    for (kind, quiet) in [("ender_unquiet", false), ("ender_quiet", true)] {
        for f in lines(kind) {
            let a = Apery::parse(f[1]).unwrap();
            let t: i64 = f[2].trim_start_matches("t = ").parse().unwrap();
            assert_eq!(a.frobenius(), Some(t));
            assert!(a.is_ender(), "{f:?}");
            assert_eq!(a.is_quiet_ender(), quiet, "{f:?}");
        }
    }
    // Hutchings: every coprime pair is an ender ({2, 3} has t = 1).
    for m in 2..20u64 {
        for n in m + 1..30 {
            if gcd(m, n) == 1 {
                assert!(Apery::from_numbers(&[m, n]).unwrap().is_ender(), "{{{m}, {n}}}");
            }
        }
    }
    // Not every position is: in {5, 6, 7} (t = 9), 8 does not kill 9.
    let a = Apery::parse("5 6 7").unwrap();
    assert_eq!(a.frobenius(), Some(9));
    assert!(a.is_nameable(8) && !a.kills(8, 9) && !a.is_ender());
}

#[test]
fn enclosure_example() {
    for f in lines("enclosure") {
        let a = Apery::parse(f[1]).unwrap();
        let mut e = nums(f[1]);
        e.extend(a.enclosure_additions());
        e.sort_unstable();
        assert_eq!(e, nums(f[2]));
        assert!(a.enclosure().is_ender());
        assert_eq!(a.enclosure().frobenius(), a.frobenius());
    }
}

#[test]
fn minimal_generators_drop_sums() {
    assert_eq!(Apery::parse("5 14 10 19 28").unwrap().minimal_generators(), vec![5, 14]);
    assert_eq!(Apery::parse("12 8 24 4").unwrap().minimal_generators(), vec![4]);
    assert_eq!(Apery::parse("7 11 13 15").unwrap().minimal_generators(), vec![7, 11, 13, 15]);
    // The reference number itself can stop being minimal.
    assert_eq!(Apery::parse("10").unwrap().named(5).minimal_generators(), vec![5]);
    assert_eq!(Apery::in_class(12, &[5, 7]).unwrap().minimal_generators(), vec![5, 7]);
}

/// The minimal generators by the pairwise definition: `w[i]` unless it is
/// `w[j] + w[i - j]` for a class `j` other than 0 and `i` (the quadratic
/// computation [`Apery::minimal_generators`] replaced).
fn minimal_generators_pairwise(a: &Apery) -> Vec<u64> {
    let (m, w) = (a.m() as usize, a.w());
    let m_is_sum = w[1..].iter().any(|&wj| wj < a.m() && a.is_representable(a.m() - wj));
    let mut out = if m_is_sum { Vec::new() } else { vec![a.m()] };
    for i in 1..m {
        let decomposable = (1..m).any(|j| {
            let k = (i + m - j) % m;
            j != i && w[j] != INF && w[k] != INF && w[j] + w[k] == w[i]
        });
        if w[i] != INF && !decomposable {
            out.push(w[i]);
        }
    }
    out.sort_unstable();
    out
}

#[test]
fn minimal_generators_match_the_pairwise_definition() {
    // Every position named by up to three numbers below 24, finite or not,
    // and random larger ones with a reference number that is not the smallest.
    let mut checked = 0;
    for a in 1..24u64 {
        for b in a..24 {
            for c in b..24 {
                let p = Apery::from_numbers(&[a, b, c]).unwrap();
                assert_eq!(p.minimal_generators(), minimal_generators_pairwise(&p), "{{{a}, {b}, {c}}}");
                checked += 1;
            }
        }
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for _ in 0..2000 {
        let m = 2 + next(60);
        let numbers: Vec<u64> = (0..1 + next(5)).map(|_| 1 + next(200)).collect();
        let p = Apery::in_class(m, &numbers).unwrap();
        assert_eq!(p.minimal_generators(), minimal_generators_pairwise(&p), "m = {m}, {numbers:?}");
        checked += 1;
    }
    assert!(checked > 4000, "{checked}");
    // Half a million finite classes: the pairwise test would take 2.7e11 steps.
    let big = Apery::parse("1048574 1048576").unwrap();
    assert_eq!(big.minimal_generators(), vec![1_048_574, 1_048_576]);
    assert_eq!(big.gcd(), 2);
}

#[test]
fn nameable_iter_walks_without_a_list() {
    let a = Apery::parse("4 6").unwrap();
    assert_eq!(a.nameable_iter(12).collect::<Vec<_>>(), a.nameable_up_to(12));
    // An iterator over 2^60 candidates costs nothing until it is walked.
    assert_eq!(a.nameable_iter(1 << 60).nth(3), Some(5));
}

#[test]
fn infinite_positions() {
    let a = Apery::parse("4 6").unwrap();
    assert!(!a.is_finite());
    assert_eq!(a.gcd(), 2);
    assert_eq!(a.frobenius(), None);
    assert!(a.is_nameable(8 + 2 + 2 * 1000 + 1));
    assert!(!a.is_nameable(10));
    assert_eq!(a.nameable_up_to(12), vec![1, 2, 3, 5, 7, 9, 11]);
}

/// Roberts's formula against the Apéry computation, and the ender kinds the
/// seed article reports for arithmetic sequences `a, a+1, ..., a+s`.
#[test]
fn roberts_formula_matches_apery() {
    for a in 2..=15u64 {
        for d in 1..=6u64 {
            if gcd(a, d) != 1 {
                continue;
            }
            for s in 1..a {
                let seq: Vec<u64> = (0..=s).map(|k| a + k * d).collect();
                let ap = Apery::from_numbers(&seq).unwrap();
                assert_eq!(ap.frobenius(), roberts(a, d, s).map(|t| t as i64), "a={a} d={d} s={s}");
            }
        }
    }
    assert_eq!(sylvester(6, 9), None);
}

#[test]
fn known_p_positions() {
    assert_eq!(known_p_list().len(), 263);
    assert_eq!(known_p(&Apery::parse("6 4").unwrap()), Some(KnownP::Listed(vec![4, 6])));
    assert_eq!(known_p(&Apery::parse("8 12 24").unwrap()), Some(KnownP::Listed(vec![8, 12])));
    assert_eq!(known_p(&Apery::parse("7").unwrap()), Some(KnownP::Hutchings(7)));
    assert_eq!(known_p(&Apery::parse("8 12 18 22").unwrap()), Some(KnownP::Blok(2)));
    assert_eq!(known_p(&Apery::parse("2 3").unwrap()), Some(KnownP::OnlyOne));
    assert_eq!(known_p(&Apery::parse("4").unwrap()), None);
    assert_eq!(known_p(&Apery::parse("9").unwrap()), None);
    assert!(is_prime(5) && is_prime(97) && !is_prime(1) && !is_prime(91));
}

/// The seed article's classification of the arithmetic sequences `a, a+d, ..., a+sd`
/// that are enders: `s = 1` quiet; `a = 3, s = 2` unquiet; `a > 3` quiet iff
/// `s | a - 2`. (Not every such sequence is an ender: {5, 6, 7} is not.)
#[test]
fn roberts_sequences_are_enders_of_the_stated_kind() {
    let mut bad = Vec::new();
    let mut enders = 0;
    for a in 3..=15u64 {
        for d in 1..=4u64 {
            if gcd(a, d) != 1 {
                continue;
            }
            for s in 1..a {
                let seq: Vec<u64> = (0..=s).map(|k| a + k * d).collect();
                let ap = Apery::from_numbers(&seq).unwrap();
                if ap.frobenius().unwrap_or(0) < 1 || !ap.is_ender() {
                    continue;
                }
                enders += 1;
                let quiet = if s == 1 {
                    true
                } else if a == 3 {
                    false
                } else {
                    (a - 2) % s == 0
                };
                if ap.is_quiet_ender() != quiet {
                    bad.push((a, d, s, ap.is_quiet_ender()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:?}");
    assert!(enders > 50, "{enders}");
}
