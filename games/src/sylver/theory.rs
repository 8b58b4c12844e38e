//! What is known about infinite positions (gcd > 1), where search cannot be
//! exhaustive: Hutchings's theorem and the published P-positions.
//!
//! - Hutchings: every coprime pair `{m, n}` other than `{2, 3}` is an ender,
//!   hence `{p}` for a prime `p >= 5` is a P-position (whatever the opponent
//!   answers is coprime to `p` and leaves an ender with `t > 1`).
//! - Sicherman's list of P-positions with `g > 1` ([`KNOWN_P_TEXT`], copied
//!   with its source line), plus the Blok family `{8, 12, 8n+2, 8n+6}`.

use std::sync::OnceLock;

use super::{Apery, gcd};

/// Sicherman's P-positions with g > 1, one per line: `g  generators`.
pub const KNOWN_P_TEXT: &str = include_str!("ppos.txt");

/// Why a position is known to be a P-position (the player to move loses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KnownP {
    /// `{p}` with `p >= 5` prime (Hutchings's theorem).
    Hutchings(u64),
    /// On Sicherman's list (the minimal generators as listed).
    Listed(Vec<u64>),
    /// `{8, 12, 8n+2, 8n+6}` (Blok's family on Sicherman's page).
    Blok(u64),
    /// Finite with only 1 nameable: the player to move must name 1.
    OnlyOne,
}

impl std::fmt::Display for KnownP {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KnownP::Hutchings(p) => write!(f, "{{{p}}} is P: {p} is a prime >= 5 (Hutchings)"),
            KnownP::Listed(g) => write!(f, "{} is on Sicherman's list of P-positions", set_text(g)),
            KnownP::Blok(n) => write!(f, "{{8, 12, {}, {}}} is P (Blok's family, n = {n})", 8 * n + 2, 8 * n + 6),
            KnownP::OnlyOne => write!(f, "only 1 is nameable: the player to move must name it"),
        }
    }
}

/// `{a, b, c}` for a list of numbers.
pub fn set_text(numbers: &[u64]) -> String {
    let items: Vec<String> = numbers.iter().map(u64::to_string).collect();
    format!("{{{}}}", items.join(", "))
}

/// True for a prime.
pub fn is_prime(n: u64) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| !n.is_multiple_of(d))
}

/// The listed positions (minimal generators, ascending), parsed once.
pub fn known_p_list() -> &'static [Vec<u64>] {
    static LIST: OnceLock<Vec<Vec<u64>>> = OnceLock::new();
    LIST.get_or_init(|| {
        KNOWN_P_TEXT
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| {
                let (_, gens) = l.split_once(' ')?;
                let mut g: Vec<u64> = gens.split(',').map(|x| x.trim().parse().ok()).collect::<Option<_>>()?;
                g.sort_unstable();
                Some(g)
            })
            .collect()
    })
}

/// Why `a` is a known P-position, if it is one of those this module knows:
/// finite with only 1 left, `{p}` (Hutchings), listed, or Blok's family.
pub fn known_p(a: &Apery) -> Option<KnownP> {
    if a.frobenius() == Some(1) {
        return Some(KnownP::OnlyOne);
    }
    let gens = a.minimal_generators();
    if let [p] = gens[..]
        && p >= 5
        && is_prime(p)
    {
        return Some(KnownP::Hutchings(p));
    }
    if a.gcd() > 1 && known_p_list().contains(&gens) {
        return Some(KnownP::Listed(gens));
    }
    let others: Vec<u64> = gens.iter().copied().filter(|&g| g != 8 && g != 12).collect();
    if gens.len() == 4
        && let [x, y] = others[..]
        && x >= 10
        && x % 8 == 2
        && y == x + 4
    {
        return Some(KnownP::Blok((x - 2) / 8));
    }
    None
}

/// True when every coprime reply to `{n}` leaves a coprime pair, an ender with
/// `t > 1` by Hutchings's theorem (so no coprime reply can win), i.e. always
/// except for the replies that make `{2, 3}`.
pub fn coprime_reply_is_ender(n: u64, x: u64) -> bool {
    gcd(n, x) == 1 && !matches!((n.min(x), n.max(x)), (2, 3) | (1, _))
}
