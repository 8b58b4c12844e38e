//! A tiny deterministic generator for sampling positions (property tests and
//! benchmarks), so that a failure or a figure can be reproduced exactly.

/// xorshift64: fast, deterministic, good enough for picking sample ranks.
#[derive(Clone, Debug)]
pub struct XorShift(pub u64);

impl XorShift {
    /// The next value (the seed must not be zero).
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
