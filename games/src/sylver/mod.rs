//! Sylver coinage (Conway; RULES.md section 4): two players alternately name
//! positive integers that are not sums of numbers named before (repetition
//! allowed); whoever names 1 loses.
//!
//! A position is the numerical semigroup the named numbers generate, held as
//! its [`Apery`] set with respect to a fixed named number `m`: `w[i]` is the
//! least representable number congruent to `i` mod `m` (`u64::MAX` while no
//! representable number is, which happens exactly while the gcd of the named
//! numbers is greater than 1). Everything else follows from `w`: `x` is nameable
//! iff `x < w[x mod m]`, the Frobenius number is `t = max(w) - m`, the genus
//! (number of nameable values) is `sum (w[i] - i) / m`. Because `m` stays
//! representable for the rest of the game, one `m` serves a whole game tree.
//!
//! Also here: [`parse_numbers`] (a position as typed by a user, with a typed
//! [`SylverError`]), enders and quiet enders (Sicherman, "Theory and Practice of
//! Sylver Coinage", Integers 2, 2002), the enclosure `E(S)`, Sylvester's and
//! Roberts's formulas, and in [`theory`] what is known about infinite positions.

/// The published Sylver coinage results this project reproduces (Sicherman's
/// table of winning moves and examples; the source lines are inside), for
/// the comparison column of a table run and for the tests.
pub const PUBLISHED: &str = include_str!("../../reference/sylver.tsv");

#[cfg(test)]
mod tests;
pub mod theory;

use thiserror::Error;

/// Marks an Apéry class with no representable number yet (gcd > 1).
pub const INF: u64 = u64::MAX;

/// The largest number a position may name: bounds the Apéry array (`m`
/// entries) and keeps every sum the relaxation forms far from overflow.
pub const MAX_NUMBER: u64 = 1 << 20;

/// Why a typed position was rejected.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SylverError {
    /// No number at all.
    #[error("empty position: name at least one positive integer, e.g. \"5 14\"")]
    Empty,
    /// A token that is not an integer.
    #[error("{0:?} is not a number: a position is a list of positive integers, e.g. \"5 14\"")]
    NotANumber(String),
    /// A negative integer.
    #[error("{0} is negative: only positive integers can be named")]
    Negative(String),
    /// Zero.
    #[error("0 cannot be named: only positive integers can")]
    Zero,
    /// An integer above [`MAX_NUMBER`].
    #[error("{value} is too large: numbers up to {max} can be named here")]
    TooLarge {
        /// The number as typed.
        value: String,
        /// The largest number accepted.
        max: u64,
    },
}

/// Reads a position: positive integers in any order, separated by spaces or
/// commas, optionally in braces (`"5 14"`, `"{14, 5}"`).
pub fn parse_numbers(text: &str) -> Result<Vec<u64>, SylverError> {
    let mut out = Vec::new();
    let separator = |c: char| c.is_whitespace() || matches!(c, ',' | '{' | '}');
    for token in text.split(separator).filter(|t| !t.is_empty()) {
        let digits = token.strip_prefix('+').unwrap_or(token);
        if let Some(rest) = digits.strip_prefix('-') {
            if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
                if rest.bytes().all(|b| b == b'0') {
                    return Err(SylverError::Zero);
                }
                return Err(SylverError::Negative(token.to_owned()));
            }
            return Err(SylverError::NotANumber(token.to_owned()));
        }
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SylverError::NotANumber(token.to_owned()));
        }
        let too_large = || SylverError::TooLarge { value: token.to_owned(), max: MAX_NUMBER };
        let value: u64 = digits.parse().map_err(|_| too_large())?;
        if value == 0 {
            return Err(SylverError::Zero);
        }
        if value > MAX_NUMBER {
            return Err(too_large());
        }
        out.push(value);
    }
    if out.is_empty() {
        return Err(SylverError::Empty);
    }
    Ok(out)
}

/// Greatest common divisor.
pub fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Sylvester's formula: the Frobenius number of two coprime numbers,
/// `ab - a - b` (`None` when they are not coprime or one of them is 1).
pub fn sylvester(a: u64, b: u64) -> Option<u64> {
    (a >= 2 && b >= 2 && gcd(a, b) == 1).then(|| a * b - a - b)
}

/// Roberts's formula (1956): the Frobenius number of the arithmetic sequence
/// `a, a + d, ..., a + s d` with `gcd(a, d) = 1`, `a >= 2`, `1 <= s < a`:
/// `(floor((a - 2) / s) + 1) a + (d - 1)(a - 1) - 1`.
pub fn roberts(a: u64, d: u64, s: u64) -> Option<u64> {
    (a >= 2 && d >= 1 && s >= 1 && s < a && gcd(a, d) == 1).then(|| ((a - 2) / s + 1) * a + (d - 1) * (a - 1) - 1)
}

/// The Apéry set of a position with respect to its smallest named number `m`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Apery {
    m: u64,
    w: Vec<u64>,
}

impl Apery {
    /// The position where only `m` has been named (`m >= 1`).
    pub fn single(m: u64) -> Result<Apery, SylverError> {
        if m == 0 {
            return Err(SylverError::Zero);
        }
        if m > MAX_NUMBER {
            return Err(SylverError::TooLarge { value: m.to_string(), max: MAX_NUMBER });
        }
        let mut w = vec![INF; m as usize];
        w[0] = 0;
        Ok(Apery { m, w })
    }

    /// The position after naming `numbers` (any order; `m` is the smallest).
    pub fn from_numbers(numbers: &[u64]) -> Result<Apery, SylverError> {
        let &m = numbers.iter().min().ok_or(SylverError::Empty)?;
        let mut a = Apery::single(m)?;
        for &g in numbers {
            if g > MAX_NUMBER {
                return Err(SylverError::TooLarge { value: g.to_string(), max: MAX_NUMBER });
            }
            a.name(g);
        }
        Ok(a)
    }

    /// The position after naming `m` and `numbers`, held with reference
    /// number `m` (which need not be the smallest).
    pub fn in_class(m: u64, numbers: &[u64]) -> Result<Apery, SylverError> {
        let mut a = Apery::single(m)?;
        for &g in numbers {
            if g == 0 {
                return Err(SylverError::Zero);
            }
            if g > MAX_NUMBER {
                return Err(SylverError::TooLarge { value: g.to_string(), max: MAX_NUMBER });
            }
            a.name(g);
        }
        Ok(a)
    }

    /// Parses a typed position ([`parse_numbers`]) into its Apéry set.
    pub fn parse(text: &str) -> Result<Apery, SylverError> {
        Apery::from_numbers(&parse_numbers(text)?)
    }

    /// The reference number `m`.
    pub fn m(&self) -> u64 {
        self.m
    }

    /// `w[i]` for `i = 0..m` ([`INF`] for a class with no representable number).
    pub fn w(&self) -> &[u64] {
        &self.w
    }

    /// Adds `g` to the named numbers (whether or not it was nameable; naming a
    /// representable number changes nothing). Each cycle of `i -> i + g mod m`
    /// is relaxed twice round: after one lap every class has seen the cycle's
    /// least finite entry, after the second that entry has reached everyone,
    /// and a third lap would only add multiples of `lcm(g, m)`, which never help.
    pub fn name(&mut self, g: u64) {
        let m = self.m;
        let r = g % m;
        // Nothing to do for a representable number (m steps saved).
        if r == 0 || g == 0 || self.is_representable(g) {
            return;
        }
        let cycles = gcd(r, m);
        let len = m / cycles;
        for start in 0..cycles {
            let mut i = start;
            for _ in 0..2 * len {
                let j = if i + r >= m { i + r - m } else { i + r };
                let wi = self.w[i as usize];
                if wi != INF && wi + g < self.w[j as usize] {
                    self.w[j as usize] = wi + g;
                }
                i = j;
            }
        }
    }

    /// The position after naming `g`.
    pub fn named(&self, g: u64) -> Apery {
        let mut a = self.clone();
        a.name(g);
        a
    }

    /// True when `x` is positive and not a sum of named numbers.
    pub fn is_nameable(&self, x: u64) -> bool {
        x > 0 && x < self.w[(x % self.m) as usize]
    }

    /// True when `x` is a sum of named numbers (0 is, the empty sum).
    pub fn is_representable(&self, x: u64) -> bool {
        x >= self.w[(x % self.m) as usize]
    }

    /// The gcd of the named numbers: 1 exactly when the position is finite.
    pub fn gcd(&self) -> u64 {
        self.w.iter().filter(|&&w| w != INF).fold(self.m, |g, &w| gcd(g, w))
    }

    /// True when finitely many numbers remain nameable (gcd 1).
    pub fn is_finite(&self) -> bool {
        self.w.iter().all(|&w| w != INF)
    }

    /// The Frobenius number `t` (the largest nameable number): `None` when the
    /// position is infinite, `Some(-1)` when nothing is nameable (1 was named).
    pub fn frobenius(&self) -> Option<i64> {
        self.is_finite().then(|| *self.w.iter().max().unwrap_or(&0) as i64 - self.m as i64)
    }

    /// The genus: how many numbers remain nameable (`None` when infinitely many).
    pub fn genus(&self) -> Option<u64> {
        self.is_finite().then(|| self.w.iter().enumerate().map(|(i, &w)| (w - i as u64) / self.m).sum())
    }

    /// Every nameable number, ascending (`None` when infinitely many). The
    /// list has [`Apery::genus`] entries, which grows like the product of the
    /// named numbers (`{1048575, 1048576}` has 5.5e11): check the genus (or
    /// `t`) first where the numbers come from a user.
    pub fn nameable(&self) -> Option<Vec<u64>> {
        let t = self.frobenius()?;
        Some(self.nameable_up_to(t.max(0) as u64))
    }

    /// The nameable numbers up to `bound`, ascending (a list of up to `bound`
    /// entries; [`Apery::nameable_iter`] walks them without one).
    pub fn nameable_up_to(&self, bound: u64) -> Vec<u64> {
        self.nameable_iter(bound).collect()
    }

    /// The nameable numbers up to `bound`, ascending, one at a time.
    pub fn nameable_iter(&self, bound: u64) -> impl Iterator<Item = u64> + '_ {
        (1..=bound).filter(|&x| self.is_nameable(x))
    }

    /// The minimal generators of the semigroup, ascending: `m` unless a
    /// smaller named number divides into it (`m - w[j]` representable), and
    /// every finite `w[i]` (`i > 0`) that is not a sum of smaller nonzero
    /// representable numbers.
    ///
    /// The finite `w[i]` are taken in ascending order, and `w[i]` is a sum
    /// exactly when `w[i] - g` is representable for a generator `g < w[i]`
    /// other than `m` found before it (write `w[i]` as a sum of minimal
    /// generators: they are not all `m`, as `i > 0`, and every minimal
    /// generator but `m` is an Apéry element). That costs the number of
    /// finite classes times the number of generators, not the square of `m`
    /// (`{1048574, 1048576}` has half a million finite classes).
    pub fn minimal_generators(&self) -> Vec<u64> {
        let m_is_sum = self.w[1..].iter().any(|&wj| wj < self.m && self.is_representable(self.m - wj));
        let mut finite: Vec<u64> = self.w[1..].iter().copied().filter(|&w| w != INF).collect();
        finite.sort_unstable();
        let mut out: Vec<u64> = Vec::new();
        for wi in finite {
            if !out.iter().any(|&g| self.is_representable(wi - g)) {
                out.push(wi);
            }
        }
        if !m_is_sum {
            out.push(self.m);
            out.sort_unstable();
        }
        out
    }

    /// True when naming `x` makes `y` unnameable (`y - c x` representable for
    /// some `c >= 1`).
    pub fn kills(&self, x: u64, y: u64) -> bool {
        x > 0 && (1..=y / x).any(|c| self.is_representable(y - c * x))
    }

    /// True when `x` kills `y` using `x` once: `y - x` is representable.
    pub fn kills_quietly(&self, x: u64, y: u64) -> bool {
        y >= x && self.is_representable(y - x)
    }

    /// Sicherman's ender: a finite position with `t >= 1` where every nameable
    /// number other than `t` kills `t`. With `t > 1` the player to move wins
    /// (strategy stealing), without a known winning move.
    pub fn is_ender(&self) -> bool {
        match self.frobenius() {
            Some(t) if t >= 1 => {
                let t = t as u64;
                (1..t).all(|x| !self.is_nameable(x) || self.kills(x, t))
            }
            _ => false,
        }
    }

    /// A quiet ender: every nameable `n < t` kills `t` using `n` once (Sicherman
    /// shows this holds iff the ender's `t` is odd).
    pub fn is_quiet_ender(&self) -> bool {
        match self.frobenius() {
            Some(t) if t >= 1 => {
                let t = t as u64;
                (1..t).all(|x| !self.is_nameable(x) || self.kills_quietly(x, t))
            }
            _ => false,
        }
    }

    /// The numbers the enclosure `E(S)` adds to a finite position: every `n`
    /// with `t/2 < n < t` such that `n` and `t - n` are both nameable. `E(S)`,
    /// the position with all of them named, is an ender with the same `t`.
    pub fn enclosure_additions(&self) -> Vec<u64> {
        let Some(t) = self.frobenius().filter(|&t| t >= 1) else { return Vec::new() };
        let t = t as u64;
        (t / 2 + 1..t).filter(|&n| self.is_nameable(n) && self.is_nameable(t - n)).collect()
    }

    /// The enclosure `E(S)` as a position.
    pub fn enclosure(&self) -> Apery {
        let mut e = self.clone();
        for n in self.enclosure_additions() {
            e.name(n);
        }
        e
    }
}
