//! Division by a divisor fixed at run time, by multiplication.
//!
//! Unranking divides every rank by the size of a block, several times per
//! decided position in every round; a 64-bit `div` costs tens of cycles where
//! two multiplications cost a few. With `m = floor(2^128 / d) + 1` (or exactly
//! `2^128 / d` for a power of two), `floor(n * m / 2^128) = floor(n / d)` for
//! every `n < 2^64`: the error term `n * e / 2^128` (`0 <= e <= 1`) is below
//! `2^-64`, less than the `1/d` between `n/d`'s fractional part and the next
//! integer.

/// A divisor with its precomputed reciprocal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastDiv {
    d: u64,
    /// High and low 64 bits of the 128-bit reciprocal (unused for `d == 1`).
    m_hi: u64,
    m_lo: u64,
}

impl FastDiv {
    /// The reciprocal of `d` (which must not be zero).
    pub fn new(d: u64) -> FastDiv {
        assert!(d != 0, "division by zero");
        let m = if d == 1 { 0 } else { u128::MAX / d as u128 + 1 };
        FastDiv { d, m_hi: (m >> 64) as u64, m_lo: m as u64 }
    }

    /// The divisor.
    #[inline]
    pub fn divisor(&self) -> u64 {
        self.d
    }

    /// `n / d`.
    #[inline]
    pub fn div(&self, n: u64) -> u64 {
        if self.d == 1 {
            return n;
        }
        // floor(n * m / 2^128) with m = m_hi * 2^64 + m_lo, without a 192-bit product.
        let low = (n as u128 * self.m_lo as u128) >> 64;
        ((n as u128 * self.m_hi as u128 + low) >> 64) as u64
    }

    /// `(n / d, n % d)`.
    #[inline]
    pub fn div_rem(&self, n: u64) -> (u64, u64) {
        let q = self.div(n);
        (q, n - q * self.d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::XorShift;

    #[test]
    fn equals_hardware_division() {
        let mut rng = XorShift(0x00d1_71de);
        let mut divisors: Vec<u64> = vec![1, 2, 3, 7, 15_180, 18_424, 1 << 20, (1 << 20) + 1, u64::MAX, u64::MAX - 1];
        divisors.extend((0..200).map(|i| rng.next_u64() >> (i % 64)).filter(|&d| d != 0));
        for d in divisors {
            let f = FastDiv::new(d);
            let mut ns = vec![0, 1, d - 1, d, d.wrapping_add(1), u64::MAX, u64::MAX - 1, d.wrapping_mul(3)];
            ns.extend((0..2_000).map(|i| rng.next_u64() >> (i % 64)));
            for n in ns {
                assert_eq!(f.div_rem(n), (n / d, n % d), "{n} / {d}");
            }
        }
    }
}
