//! Binomial coefficients and colex subset ranking, shared by the rankers.

/// Largest universe the tables cover (the order-4 star has 121 cells).
pub const MAX_N: usize = 128;

/// `C(n, k)` for `n, k <= MAX_N`, in u128 (exact for everything the rankers ask).
pub struct Binomials {
    table: Vec<u128>,
    /// `subsets[n * (SMALL_K + 1) + k]`: every k-subset of n elements in colex
    /// order, for the small universes the order-1 and order-2 rankers use.
    subsets: Vec<Vec<u64>>,
}

/// Largest universe with a subset table.
const SMALL_N: usize = 25;
/// Largest subset size with a subset table.
const SMALL_K: usize = 4;

impl Default for Binomials {
    fn default() -> Self {
        Self::new()
    }
}

impl Binomials {
    /// Builds Pascal's triangle up to `MAX_N`, saturating where u128 overflows
    /// (only entries far beyond what any game uses).
    pub fn new() -> Self {
        let w = MAX_N + 1;
        let mut table = vec![0u128; w * w];
        for n in 0..=MAX_N {
            table[n * w] = 1;
            for k in 1..=n {
                let a = table[(n - 1) * w + k - 1];
                let b = if k < n { table[(n - 1) * w + k] } else { 0 };
                table[n * w + k] = a.saturating_add(b);
            }
        }
        let mut b = Binomials { table, subsets: Vec::new() };
        let mut subsets = Vec::with_capacity((SMALL_N + 1) * (SMALL_K + 1));
        for n in 0..=SMALL_N {
            for k in 0..=SMALL_K {
                let count = b.get64(n, k);
                subsets.push((0..count).map(|r| b.unrank_subset_slow(r, k, n)).collect());
            }
        }
        b.subsets = subsets;
        b
    }

    /// `C(n, k)`, zero when `k > n`.
    #[inline]
    pub fn get(&self, n: usize, k: usize) -> u128 {
        if k > n { 0 } else { self.table[n * (MAX_N + 1) + k] }
    }

    /// `C(n, k)` as u64; callers only use it where the ranker proved it fits.
    #[inline]
    pub fn get64(&self, n: usize, k: usize) -> u64 {
        self.get(n, k) as u64
    }

    /// Inverse of [`Colex::rank`]: the `k`-subset with colex rank `r`
    /// of a universe of `universe` elements (a table lookup for small universes).
    #[inline]
    pub fn unrank_subset(&self, r: u64, k: usize, universe: usize) -> u64 {
        if universe <= SMALL_N && k <= SMALL_K {
            return self.subsets[universe * (SMALL_K + 1) + k][r as usize];
        }
        self.unrank_subset_slow(r, k, universe)
    }

    fn unrank_subset_slow(&self, mut r: u64, k: usize, universe: usize) -> u64 {
        let mut bits = 0u64;
        let mut top = universe;
        for i in (1..=k).rev() {
            // Largest pos < top with C(pos, i) <= r.
            let mut pos = top - 1;
            while self.get64(pos, i) > r {
                pos -= 1;
            }
            r -= self.get64(pos, i);
            bits |= 1 << pos;
            top = pos;
        }
        bits
    }
}

/// Largest subset size [`Colex`] ranks (the order-4 star's corner of 10
/// pieces, and one more for a piece inserted into a placement).
pub const COLEX_K: usize = 12;

/// Colex ranks of small subsets of a 64-cell universe from a dense
/// `C(n, k)` table held inline (6 KB, `k < COLEX_K`, `n <= 64`): one load
/// per piece with no `k > n` branch and no pointer to follow, where
/// [`Binomials`] keeps a u128 table of 266 KB on the heap. The kernels rank
/// a placement for every predecessor they name, so this is their table.
pub struct Colex {
    /// `table[k][n]` = C(n, k).
    table: [[u64; 65]; COLEX_K],
}

impl Default for Colex {
    fn default() -> Self {
        Self::new()
    }
}

impl Colex {
    /// The table, from Pascal's triangle (every entry fits a u64: the
    /// largest, C(64, 11), is under 2^40).
    pub fn new() -> Colex {
        let mut table = [[0u64; 65]; COLEX_K];
        table[0] = [1; 65];
        for k in 1..COLEX_K {
            for n in 1..=64 {
                table[k][n] = table[k - 1][n - 1] + table[k][n - 1];
            }
        }
        Colex { table }
    }

    /// `C(n, k)` for `n <= 64`, `k < COLEX_K` (zero when `k > n`).
    #[inline]
    pub fn choose(&self, n: usize, k: usize) -> u64 {
        self.table[k][n]
    }

    /// Colex rank of a placement among all placements of its size (at most
    /// `COLEX_K - 1` pieces).
    #[inline]
    pub fn rank(&self, mut bits: u64) -> u64 {
        let (mut r, mut i) = (0, 1);
        while bits != 0 {
            r += self.table[i][bits.trailing_zeros() as usize];
            i += 1;
            bits &= bits - 1;
        }
        r
    }

    /// Colex rank of a placement counted within `universe` (equal to
    /// `rank(pext(bits, universe))`, without the pext).
    #[inline]
    pub fn rank_within(&self, mut bits: u64, universe: u64) -> u64 {
        let (mut r, mut i) = (0, 1);
        while bits != 0 {
            r += self.table[i][(universe & ((bits & bits.wrapping_neg()) - 1)).count_ones() as usize];
            i += 1;
            bits &= bits - 1;
        }
        r
    }

    /// `slot[s]`: the colex rank within `universe` of `bits` with one more
    /// element inserted below all but `s` of them, less that element's own
    /// term. A predecessor generator moves one piece of a placement to each
    /// of its origins: the pieces that stay are ranked once, and an origin
    /// `u` then costs `slot[s] + C(at, s + 1)` (`s` pieces below `u`, `at`
    /// cells of the universe below it) instead of a rank over every piece.
    /// `N` bounds the placement: at most `N - 1` pieces (and `N <= COLEX_K`).
    #[inline]
    pub fn insertion_slots<const N: usize>(&self, bits: u64, universe: u64) -> [u64; N] {
        let mut places = [0usize; N];
        let mut m = 0;
        let mut rest = bits;
        while rest != 0 {
            places[m] = (universe & ((rest & rest.wrapping_neg()) - 1)).count_ones() as usize;
            m += 1;
            rest &= rest - 1;
        }
        let mut slot = [0u64; N];
        for (s, sum) in slot.iter_mut().enumerate().take(m + 1) {
            *sum = (0..m).map(|i| self.choose(places[i], i + 1 + usize::from(i >= s))).sum();
        }
        slot
    }
}

/// Spreads the low bits of `value` onto the cells outside `holes` (the j-th
/// set bit of `value` lands on the j-th cell not in `holes`; equal to
/// `pdep(value, !holes)`): a bit moves up by one for each hole at or below
/// where it lands. The rankers' holes are the other players' few pieces, so
/// this costs a few comparisons per bit, where walking the free cells one by
/// one ([`pdep`]) costs up to one step per cell.
#[inline]
pub fn deposit_around(mut value: u64, holes: u64) -> u64 {
    let mut out = 0;
    while value != 0 {
        let mut cell = value.trailing_zeros();
        let mut h = holes;
        while h != 0 && h.trailing_zeros() <= cell {
            cell += 1;
            h &= h - 1;
        }
        out |= 1 << cell;
        value &= value - 1;
    }
    out
}

/// [`deposit_around`] by the CPU's `pdep` where it is fast (BMI2, not AMD's
/// Zen 1 and 2: [`crate::jumps::fast_pext`], asked once, when the tables are
/// built). An unranking spreads the mover's centre pieces around the other
/// players' pieces once per frontier position and once per record; the loop
/// costs a branch per bit and per hole the predictor cannot learn.
#[derive(Clone, Copy, Debug)]
pub struct Deposit {
    hardware: bool,
}

impl Default for Deposit {
    fn default() -> Self {
        Self::new()
    }
}

impl Deposit {
    /// The fastest form this CPU has.
    pub fn new() -> Deposit {
        Deposit { hardware: crate::jumps::fast_pext() }
    }

    /// The portable form only (for tests that compare the two).
    pub fn portable() -> Deposit {
        Deposit { hardware: false }
    }

    /// Whether this one runs the CPU's `pdep`.
    pub fn is_hardware(&self) -> bool {
        self.hardware
    }

    /// `deposit_around(value, holes)`.
    #[inline]
    pub fn around(&self, value: u64, holes: u64) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.hardware {
            // SAFETY: `hardware` is set only where the CPU has BMI2.
            return unsafe { pdep_bmi2(value, !holes) };
        }
        deposit_around(value, holes)
    }
}

/// The CPU's `pdep` (a call: a portable build cannot inline it into its callers).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn pdep_bmi2(value: u64, mask: u64) -> u64 {
    std::arch::x86_64::_pdep_u64(value, mask)
}

/// The next subset of the same size in colex order (the next larger number
/// with as many set bits: Gosper's hack, with the division by the lowest bit
/// done as a shift).
#[inline]
pub fn next_colex(s: u64) -> u64 {
    let low = s & s.wrapping_neg();
    let ripple = s.wrapping_add(low);
    (((ripple ^ s) >> 2) >> low.trailing_zeros()) | ripple
}

/// Packs the bits of `value` selected by `mask` into the low bits (software pext).
#[inline]
pub fn pext(value: u64, mut mask: u64) -> u64 {
    let mut out = 0u64;
    let mut i = 0;
    while mask != 0 {
        let low = mask & mask.wrapping_neg();
        if value & low != 0 {
            out |= 1 << i;
        }
        i += 1;
        mask &= mask - 1;
    }
    out
}

/// Spreads the low bits of `value` onto the set bits of `mask` (software pdep).
/// It walks the mask only up to the cell of `value`'s highest bit: the
/// rankers spread a few pieces over a universe of up to 64 free cells, so
/// stopping after the last piece saves most of the walk.
#[inline]
pub fn pdep(mut value: u64, mut mask: u64) -> u64 {
    let mut out = 0u64;
    let mut next = 0u32;
    while value != 0 && mask != 0 {
        let i = value.trailing_zeros();
        // Skip the mask bits that spread value bits next..i (all zero).
        for _ in next..i {
            mask &= mask.wrapping_sub(1);
        }
        out |= mask & mask.wrapping_neg();
        mask &= mask.wrapping_sub(1);
        next = i + 1;
        value &= value - 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pascal_values() {
        let b = Binomials::new();
        assert_eq!(b.get(5, 2), 10);
        assert_eq!(b.get(37, 3), 7770);
        assert_eq!(b.get(2, 3), 0);
        assert_eq!(b.get(121, 60), 191_645_966_716_130_525_165_099_506_263_706_416u128);
    }

    #[test]
    fn subset_rank_is_a_bijection() {
        let b = Binomials::new();
        let colex = Colex::new();
        for k in 0..=4usize {
            let n = 9usize;
            let count = b.get64(n, k);
            let mut seen = vec![false; count as usize];
            for bits in 0u64..(1 << n) {
                if bits.count_ones() as usize != k {
                    continue;
                }
                let r = colex.rank(bits);
                assert!(r < count);
                assert!(!seen[r as usize]);
                seen[r as usize] = true;
                assert_eq!(b.unrank_subset(r, k, n), bits);
                assert_eq!(b.unrank_subset_slow(r, k, n), bits);
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn rank_within_equals_rank_of_pext() {
        let colex = Colex::new();
        let universe = 0b1101_1011_0110_1101u64;
        for bits in 0u64..(1 << 16) {
            let bits = bits & universe;
            assert_eq!(colex.rank_within(bits, universe), colex.rank(pext(bits, universe)));
        }
    }

    /// The dense table is Pascal's triangle as `Binomials` holds it.
    #[test]
    fn colex_table_equals_the_binomials() {
        let (b, colex) = (Binomials::new(), Colex::new());
        for k in 0..COLEX_K {
            for n in 0..=64 {
                assert_eq!(colex.choose(n, k) as u128, b.get(n, k), "C({n}, {k})");
            }
        }
    }

    /// pdep against its definition: bit i of `value` lands on the i-th set bit
    /// of `mask`, bits beyond the mask's count are dropped.
    #[test]
    fn pdep_spreads_bit_i_onto_the_ith_mask_bit() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let mask = next() & next();
            let value = next() >> (next() % 64);
            let bits: Vec<u32> = (0..64).filter(|b| mask >> b & 1 == 1).collect();
            let expect =
                bits.iter().enumerate().filter(|(i, _)| value >> i & 1 == 1).fold(0u64, |o, (_, b)| o | 1 << b);
            assert_eq!(pdep(value, mask), expect, "pdep({value:#x}, {mask:#x})");
        }
        assert_eq!(pdep(u64::MAX, u64::MAX), u64::MAX);
        assert_eq!(pdep(1 << 63, u64::MAX), 1 << 63);
        assert_eq!(pdep(0b101, 0), 0);
    }

    /// Both forms of [`Deposit`] spread as the software `pdep` onto the
    /// complement of the holes does (the hardware one only where the CPU has it).
    #[test]
    fn both_deposits_equal_pdep_onto_the_complement() {
        let mut rng = crate::sample::XorShift(0x2545_f491_4f6c_dd1d);
        let mut next = || rng.next_u64();
        let forms = [Some(Deposit::portable()), Some(Deposit::new()).filter(Deposit::is_hardware)];
        for _ in 0..20_000 {
            // A few holes, as the rankers have (the other players' pieces).
            let holes = next() & next() & next();
            let value = next() & next() & ((1u64 << (!holes).count_ones().min(63)) - 1);
            for form in forms.iter().flatten() {
                assert_eq!(form.around(value, holes), pdep(value, !holes), "{value:#x} around {holes:#x}");
            }
        }
    }

    #[test]
    fn pext_pdep_roundtrip() {
        let mask = 0b1011_0110u64;
        for v in 0..16u64 {
            assert_eq!(pext(pdep(v, mask), mask), v);
        }
        assert_eq!(pext(0b1010_0100, mask), 0b1_1010);
    }
}
