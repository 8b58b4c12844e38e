//! The m-class solver of Sylver coinage: memoised minimax over Apéry tuples.
//!
//! Every position of one game tree shares the reference number `m` (it stays
//! representable), so a position is the tuple `k[1..m]`, `k[i] = (w[i] - i) / m`
//! = how many values of class `i` are still nameable; naming `x = r + q m`
//! (`q < k[r]`) relaxes `k[j] = min(k[j], k[i] + q + carry)` along the cycles of
//! `i -> i + r mod m`, the Apéry relaxation in units of `m`. A [`ClassSolver`]
//! holds one memo for one `m` and is reused by every row `{m, n}` of that
//! class: the rows share most of their subtrees.
//!
//! The search never tries 1 (naming it loses at once), so a position whose
//! only nameable number is 1 has no move and is P. Moves are tried smallest
//! number first (measured: {17, 18} needs 0.52 million positions that way and
//! 6.7 million largest first), the killer of the depth before them. A child
//! that is an ender with `t > 1` is N by strategy stealing, so it can be taken
//! as N unsearched (ender pruning, [`ClassSolver::set_ender_pruning`], off by
//! default); the root itself is always searched, since its moves are wanted.

mod memo;
pub mod table;
#[cfg(test)]
mod tests;
pub mod theory;

use memo::Memo;
use retro_games::sylver::{Apery, gcd};
use thiserror::Error;

/// The largest reference number `m` the solver handles.
pub const MAX_M: usize = 64;
/// The most nameable numbers one class may hold (a tuple entry is a byte).
pub const MAX_K: u64 = u8::MAX as u64;
/// Key bits available: four 64-bit words less the value bit.
const MAX_KEY_BITS: u64 = 4 * 64 - 1;
/// The largest memo cap: 2^32 positions, whose table (2^33 slots of 8 to 32
/// bytes, at most 3/4 full) takes 64 to 256 GB, more than the machines this
/// runs on hold; the Sylver tables so far needed at most 145 million. A cap
/// only bounds the memo, which grows as the search needs it.
pub const MAX_CAP: u64 = 1 << 32;

/// Why a position could not be solved.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SolveError {
    /// gcd > 1: infinitely many numbers remain (see `theory`).
    #[error("the position is infinite (gcd {gcd} > 1); only finite positions can be solved exactly")]
    Infinite {
        /// The gcd of the named numbers.
        gcd: u64,
    },
    /// `m` outside `2..=MAX_M`.
    #[error(
        "reference number m = {m} is outside the solver's range 2..={MAX_M} (a finite position is solved \
         exactly only when its smallest named number is 2 to {MAX_M})"
    )]
    BadM {
        /// The reference number.
        m: u64,
    },
    /// The packed tuple would not fit the key.
    #[error(
        "m = {m} with up to {max_k} nameable numbers in one class needs {bits} key bits: the solver holds at most \
         {MAX_K} a class and {MAX_KEY_BITS} key bits in all"
    )]
    KeyTooWide {
        /// The reference number.
        m: u64,
        /// The largest `k[i]` the class must hold.
        max_k: u64,
        /// Bits the key would need.
        bits: u64,
    },
    /// The position does not belong to this solver's class.
    #[error("position has reference number {got} (or a class count above {max_k}); this solver is for m = {m}")]
    WrongClass {
        /// The solver's `m`.
        m: u64,
        /// The position's `m`.
        got: u64,
        /// The solver's largest `k[i]`.
        max_k: u64,
    },
    /// The memo reached the position cap before the answer was known.
    #[error("capped: the memo reached {positions} positions")]
    Capped {
        /// Memo entries when the search stopped.
        positions: u64,
    },
    /// The memo had to grow and the allocator refused the table.
    #[error(
        "out of memory: the memo of {positions} positions could not grow to {bytes} bytes; ask for a lower cap \
         (the answer stays open)"
    )]
    OutOfMemory {
        /// Memo entries when the search stopped.
        positions: u64,
        /// Bytes of the table that could not be allocated.
        bytes: u64,
    },
    /// A memo cap of 0 or above [`MAX_CAP`].
    #[error("memo cap {cap} is outside 1..={MAX_CAP} positions (a memo of {MAX_CAP} positions takes 64 to 256 GB)")]
    BadCap {
        /// The cap asked for.
        cap: u64,
    },
    /// A reply bound above [`theory::MAX_BOUND`].
    #[error(
        "reply bound {bound} is above {max}, the largest number a position may name",
        max = theory::MAX_BOUND
    )]
    BadBound {
        /// The bound asked for.
        bound: u64,
    },
}

/// Checks a memo cap: `1..=`[`MAX_CAP`] positions.
pub fn check_cap(cap: u64) -> Result<u64, SolveError> {
    if (1..=MAX_CAP).contains(&cap) { Ok(cap) } else { Err(SolveError::BadCap { cap }) }
}

/// Checks, from the named numbers alone (before an Apéry set of `m` entries
/// is built), that they make a finite position this solver takes: gcd 1 and
/// smallest number `m` in `2..=`[`MAX_M`]. Returns `m`. A position that passes
/// may still hold too many nameable numbers in one class
/// ([`SolveError::KeyTooWide`], which [`ClassSolver::for_position`] finds at
/// the cost of `m` steps).
pub fn check_numbers(numbers: &[u64]) -> Result<u64, SolveError> {
    let g = numbers.iter().fold(0, |g, &x| gcd(g, x));
    let m = numbers.iter().copied().min().unwrap_or(0);
    if g > 1 {
        return Err(SolveError::Infinite { gcd: g });
    }
    if !(2..=MAX_M as u64).contains(&m) {
        return Err(SolveError::BadM { m });
    }
    Ok(m)
}

/// Children built, hashed and prefetched together.
const BATCH: usize = 8;

/// An Apéry tuple in units of `m`: `k[0] = 0`, `k[i]` for `i < m`.
type Tuple = [u8; MAX_M];

/// Search state of one key width.
struct Core<const W: usize> {
    m: usize,
    bits: u32,
    memo: Memo<W>,
    cap: usize,
    prune: bool,
    /// For each residue `r`: (number of cycles of `i -> i + r`, their length).
    cycles: Vec<(usize, usize)>,
    /// Per search depth, the last move that refuted a position: `(r, q)`.
    killers: Vec<(usize, u8)>,
}

impl<const W: usize> Core<W> {
    fn new(m: usize, bits: u32) -> Self {
        let cycles = (0..m).map(|r| (gcd(r as u64, m as u64) as usize, m / gcd(r as u64, m as u64) as usize)).collect();
        Core { m, bits, memo: Memo::new(), cap: usize::MAX, prune: false, cycles, killers: Vec::new() }
    }

    #[inline]
    fn pack(&self, k: &Tuple) -> [u64; W] {
        let mut key = [0u64; W];
        let bits = self.bits as usize;
        let mut pos = 0;
        for &v in &k[1..self.m] {
            let (word, off) = (pos / 64, pos % 64);
            key[word] |= u64::from(v) << off;
            if off + bits > 64 {
                key[word + 1] |= u64::from(v) >> (64 - off);
            }
            pos += bits;
        }
        key
    }

    /// The tuple after naming `r + q m`.
    #[inline]
    fn apply(&self, k: &Tuple, r: usize, q: u8) -> Tuple {
        let m = self.m;
        let mut c = *k;
        let (count, len) = self.cycles[r];
        for start in 0..count {
            // The cycle through class 0 starts at its global minimum (w[0] = 0),
            // so one lap settles it; the others need two.
            let laps = if start == 0 { 1 } else { 2 };
            let mut i = start;
            for _ in 0..laps * len {
                let (j, carry) = if i + r >= m { (i + r - m, 1) } else { (i + r, 0) };
                let cand = u16::from(c[i]) + u16::from(q) + carry;
                if cand < u16::from(c[j]) {
                    c[j] = cand as u8;
                }
                i = j;
            }
        }
        c
    }

    #[inline]
    fn representable(&self, k: &Tuple, y: usize) -> bool {
        usize::from(k[y % self.m]) <= y / self.m
    }

    /// The Frobenius number of a tuple (-1 when nothing is nameable).
    fn frobenius(&self, k: &Tuple) -> i64 {
        let m = self.m;
        let wmax = (0..m).map(|i| i + m * usize::from(k[i])).max().unwrap_or(0);
        wmax as i64 - m as i64
    }

    /// Ender with `t > 1`: every nameable `x != t` kills `t`. Tried from the
    /// top, where a non-ender usually fails at once (`x > t/2` kills `t` only
    /// if `t - x` is representable).
    fn is_ender_t_gt_1(&self, k: &Tuple) -> bool {
        let t = self.frobenius(k);
        if t <= 1 {
            return false;
        }
        let t = t as usize;
        (1..t).rev().all(|x| self.representable(k, x) || (1..=t / x).any(|c| self.representable(k, t - c * x)))
    }

    /// Every move as `(r, q)`, largest number first, 1 excluded.
    fn moves(&self, k: &Tuple, out: &mut Vec<(usize, u8)>) {
        out.clear();
        let m = self.m;
        let top = k[1..m].iter().copied().max().unwrap_or(0);
        for q in (0..top).rev() {
            for r in (1..m).rev() {
                if q < k[r] && !(r == 1 && q == 0) {
                    out.push((r, q));
                }
            }
        }
    }

    /// True when the player to move wins (N).
    fn value(&mut self, k: &Tuple) -> Result<bool, SolveError> {
        let key = self.pack(k);
        let h = memo::hash(&key);
        match self.memo.get_hashed(&key, h) {
            Some(v) => Ok(v),
            None => self.search(k, &key, h, 0),
        }
    }

    /// Searches a position not in the memo and stores its value.
    ///
    /// Moves go in batches of [`BATCH`]: the children of a batch are built,
    /// hashed and their memo slots prefetched before the first is probed.
    /// The move that refuted a sibling (the killer of this depth) is tried
    /// first: the same number often wins in positions one move apart.
    fn search(&mut self, k: &Tuple, key: &[u64; W], h: u64, depth: usize) -> Result<bool, SolveError> {
        if self.killers.len() <= depth {
            self.killers.resize(depth + 1, (0, 0));
        }
        let (kr, kq) = self.killers[depth];
        let m = self.m;
        let mut moves = [(0usize, 0u8); BATCH];
        let mut n = 0;
        let mut win = false;
        if kr != 0 && kq < k[kr] && (kr, kq) != (1, 0) {
            moves[0] = (kr, kq);
            n = 1;
        }
        let top = k[1..m].iter().copied().max().unwrap_or(0);
        let mut q = 0u8;
        let mut r = 0;
        loop {
            // Fill the batch with the next moves, smallest number first.
            while n < BATCH {
                r += 1;
                if r == m {
                    q += 1;
                    r = 1;
                }
                if q >= top {
                    break;
                }
                if q < k[r] && (r, q) != (1, 0) && (r, q) != (kr, kq) {
                    moves[n] = (r, q);
                    n += 1;
                }
            }
            if n == 0 {
                break;
            }
            if self.batch(k, &moves[..n], depth)? {
                win = true;
                break;
            }
            n = 0;
        }
        if self.memo.len() >= self.cap {
            return Err(SolveError::Capped { positions: self.memo.len() as u64 });
        }
        self.memo.insert_hashed(key, h, win).map_err(|e| self.out_of_memory(e))?;
        Ok(win)
    }

    fn out_of_memory(&self, e: memo::MemoFull) -> SolveError {
        SolveError::OutOfMemory { positions: self.memo.len() as u64, bytes: e.bytes }
    }

    /// True when one of `moves` leaves a P-position (and makes it the killer).
    #[inline]
    fn batch(&mut self, k: &Tuple, moves: &[(usize, u8)], depth: usize) -> Result<bool, SolveError> {
        let mut children = [[0u8; MAX_M]; BATCH];
        let mut keys = [[0u64; W]; BATCH];
        let mut hashes = [0u64; BATCH];
        for (i, &(r, q)) in moves.iter().enumerate() {
            children[i] = self.apply(k, r, q);
            keys[i] = self.pack(&children[i]);
            hashes[i] = memo::hash(&keys[i]);
            self.memo.prefetch(hashes[i]);
        }
        // Known children first: a known P child settles the position without
        // searching any unknown sibling.
        let mut unknown = [false; BATCH];
        for i in 0..moves.len() {
            match self.memo.get_hashed(&keys[i], hashes[i]) {
                Some(false) => {
                    self.killers[depth] = moves[i];
                    return Ok(true);
                }
                Some(true) => {}
                None => unknown[i] = true,
            }
        }
        for i in 0..moves.len() {
            if !unknown[i] || (self.prune && self.is_ender_t_gt_1(&children[i])) {
                continue;
            }
            // An earlier sibling's search may have stored this child already.
            let v = match self.memo.get_hashed(&keys[i], hashes[i]) {
                Some(v) => v,
                None => self.search(&children[i], &keys[i], hashes[i], depth + 1)?,
            };
            if !v {
                self.killers[depth] = moves[i];
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A child's value, without searching it when it is an ender with `t > 1`.
    fn child_value(&mut self, child: &Tuple, depth: usize) -> Result<bool, SolveError> {
        let key = self.pack(child);
        let h = memo::hash(&key);
        if let Some(v) = self.memo.get_hashed(&key, h) {
            return Ok(v);
        }
        if self.prune && self.is_ender_t_gt_1(child) {
            return Ok(true);
        }
        self.search(child, &key, h, depth)
    }

    fn winning_moves(&mut self, k: &Tuple) -> Result<Vec<u64>, SolveError> {
        let mut moves = Vec::new();
        self.moves(k, &mut moves);
        let mut winning = Vec::new();
        for (r, q) in moves {
            let child = self.apply(k, r, q);
            if !self.child_value(&child, 1)? {
                winning.push((r + usize::from(q) * self.m) as u64);
            }
        }
        let key = self.pack(k);
        if self.memo.get(&key).is_none() && self.memo.len() < self.cap {
            self.memo.insert(&key, !winning.is_empty()).map_err(|e| self.out_of_memory(e))?;
        }
        winning.sort_unstable();
        Ok(winning)
    }

    /// Positions reachable from `k` (itself included) without naming 1,
    /// stopping at the cap.
    fn count_reachable(&self, k: &Tuple) -> Result<u64, SolveError> {
        let mut seen = Memo::<W>::new();
        let full = |seen: &Memo<W>, e: memo::MemoFull| SolveError::OutOfMemory {
            positions: seen.len() as u64,
            bytes: e.bytes,
        };
        let mut stack = vec![*k];
        seen.insert(&self.pack(k), false).map_err(|e| full(&seen, e))?;
        let mut moves = Vec::new();
        while let Some(p) = stack.pop() {
            self.moves(&p, &mut moves);
            for &(r, q) in &moves {
                let child = self.apply(&p, r, q);
                let key = self.pack(&child);
                if seen.get(&key).is_none() {
                    if seen.len() >= self.cap {
                        return Err(SolveError::Capped { positions: seen.len() as u64 });
                    }
                    seen.insert(&key, false).map_err(|e| full(&seen, e))?;
                    stack.push(child);
                }
            }
        }
        Ok(seen.len() as u64)
    }
}

enum Cores {
    W1(Core<1>),
    W2(Core<2>),
    W3(Core<3>),
    W4(Core<4>),
}

macro_rules! with_core {
    ($cores:expr, $c:ident => $body:expr) => {
        match $cores {
            Cores::W1($c) => $body,
            Cores::W2($c) => $body,
            Cores::W3($c) => $body,
            Cores::W4($c) => $body,
        }
    };
}

/// The memoised solver of one m-class.
pub struct ClassSolver {
    m: u64,
    max_k: u64,
    core: Cores,
}

impl ClassSolver {
    /// A solver for reference number `m` whose positions have at most `max_k`
    /// nameable numbers in any one class (for `{m, n}` and everything below
    /// it, `n - 1` suffices).
    pub fn new(m: u64, max_k: u64) -> Result<ClassSolver, SolveError> {
        if !(2..=MAX_M as u64).contains(&m) {
            return Err(SolveError::BadM { m });
        }
        let bits = (64 - max_k.max(1).leading_zeros()) as u64;
        let key_bits = (m - 1) * bits;
        if max_k > MAX_K || key_bits > MAX_KEY_BITS {
            return Err(SolveError::KeyTooWide { m, max_k, bits: key_bits });
        }
        let (mu, b) = (m as usize, bits as u32);
        let core = match key_bits / 64 + 1 {
            1 => Cores::W1(Core::new(mu, b)),
            2 => Cores::W2(Core::new(mu, b)),
            3 => Cores::W3(Core::new(mu, b)),
            _ => Cores::W4(Core::new(mu, b)),
        };
        Ok(ClassSolver { m, max_k, core })
    }

    /// A solver sized for `a` and the positions below it.
    pub fn for_position(a: &Apery) -> Result<ClassSolver, SolveError> {
        check_finite(a)?;
        let m = a.m();
        let max_k = a.w().iter().enumerate().map(|(i, &w)| (w - i as u64) / m).max().unwrap_or(0);
        ClassSolver::new(m, max_k)
    }

    /// The reference number.
    pub fn m(&self) -> u64 {
        self.m
    }

    /// Stops a search (with [`SolveError::Capped`]) once the memo holds `cap` positions.
    pub fn set_cap(&mut self, cap: u64) {
        let cap = usize::try_from(cap).unwrap_or(usize::MAX);
        with_core!(&mut self.core, c => c.cap = cap);
    }

    /// Turns ender pruning on or off (the default). On, a child that is an
    /// ender with `t > 1` is taken as N without a search; measured, it saves
    /// under 1% of the positions and costs more time than it saves (the
    /// ender test runs on every new child), so it is off unless asked for.
    pub fn set_ender_pruning(&mut self, on: bool) {
        with_core!(&mut self.core, c => c.prune = on);
    }

    /// Positions in the memo.
    pub fn positions(&self) -> u64 {
        with_core!(&self.core, c => c.memo.len() as u64)
    }

    /// Bytes the memo table holds.
    pub fn memo_bytes(&self) -> u64 {
        with_core!(&self.core, c => c.memo.bytes() as u64)
    }

    /// Forgets every position (frees the memo).
    pub fn clear(&mut self) {
        with_core!(&mut self.core, c => c.memo.clear());
    }

    fn tuple(&self, a: &Apery) -> Result<Tuple, SolveError> {
        check_finite(a)?;
        let wrong = || SolveError::WrongClass { m: self.m, got: a.m(), max_k: self.max_k };
        if a.m() != self.m {
            // Any position where m is representable belongs to the class:
            // re-express it with reference number m.
            if !a.is_representable(self.m) {
                return Err(wrong());
            }
            let rebased = Apery::in_class(self.m, &a.minimal_generators()).map_err(|_| wrong())?;
            return self.tuple(&rebased);
        }
        let mut k = [0u8; MAX_M];
        for (i, &w) in a.w().iter().enumerate() {
            let ki = (w - i as u64) / self.m;
            if ki > self.max_k {
                return Err(wrong());
            }
            k[i] = ki as u8;
        }
        Ok(k)
    }

    /// True when the player to move at `a` wins (an N-position).
    pub fn value(&mut self, a: &Apery) -> Result<bool, SolveError> {
        let k = self.tuple(a)?;
        with_core!(&mut self.core, c => c.value(&k))
    }

    /// Every winning move at `a`, ascending (empty for a P-position).
    pub fn winning_moves(&mut self, a: &Apery) -> Result<Vec<u64>, SolveError> {
        let k = self.tuple(a)?;
        with_core!(&mut self.core, c => c.winning_moves(&k))
    }

    /// Positions reachable from `a` (itself included) by naming numbers other
    /// than 1; uses its own set, not the memo, and stops at the cap.
    pub fn count_reachable(&self, a: &Apery) -> Result<u64, SolveError> {
        let k = self.tuple(a)?;
        with_core!(&self.core, c => c.count_reachable(&k))
    }
}

fn check_finite(a: &Apery) -> Result<(), SolveError> {
    if a.is_finite() { Ok(()) } else { Err(SolveError::Infinite { gcd: a.gcd() }) }
}

/// Everything `coordinator sylver --position` prints about a finite position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// The Frobenius number (-1 when nothing is nameable).
    pub t: i64,
    /// The nameable numbers, ascending.
    pub nameable: Vec<u64>,
    /// Sicherman's ender.
    pub ender: bool,
    /// A quiet ender.
    pub quiet_ender: bool,
    /// Every winning move (empty: the player to move loses).
    pub winning: Vec<u64>,
    /// Memo entries the search created.
    pub positions: u64,
}

/// Solves one finite position with a fresh solver capped at `cap` positions.
pub fn analyse(a: &Apery, cap: u64) -> Result<Analysis, SolveError> {
    let mut solver = ClassSolver::for_position(a)?;
    solver.set_cap(cap);
    let winning = solver.winning_moves(a)?;
    Ok(Analysis {
        t: a.frobenius().unwrap_or(-1),
        nameable: a.nameable().unwrap_or_default(),
        ender: a.is_ender(),
        quiet_ender: a.is_quiet_ender(),
        winning,
        positions: solver.positions(),
    })
}
