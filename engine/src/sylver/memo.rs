//! The memo of one m-class: packed Apéry tuples in an open-addressing table.
//!
//! A key is the tuple `k[1..m]` (`k[i] = (w[i] - i) / m`, the number of
//! nameable values in class `i`) packed `bits` bits a slot into `W` words; the
//! top bit of the last word (never used by a key, see `ClassSolver::new`)
//! holds the value (1 = N, the player to move wins). An all-zero word array is
//! an empty slot: a real key has `k[1] >= 1` (1 stays nameable until it is
//! named, and naming 1 is never searched). Linear probing, power-of-two
//! capacity, grown at 3/4 load: no per-entry allocation, `8 W` bytes a slot.
//! Growing asks for the doubled table with `try_reserve_exact`, so a table the
//! allocator refuses is an error ([`MemoFull`]) for the search to report, not
//! an abort.

/// The value bit in the last word of a stored key.
pub(crate) const VALUE_BIT: u64 = 1 << 63;

/// The memo could not grow: the allocator refused a table of `bytes` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemoFull {
    /// Bytes of the table that could not be allocated.
    pub(crate) bytes: u64,
}

/// An open-addressing set of packed keys with one value bit each.
pub(crate) struct Memo<const W: usize> {
    slots: Vec<[u64; W]>,
    len: usize,
}

/// 64x64 -> 128-bit multiply, folded: the mixing step of wyhash.
#[inline]
fn mum(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// The hash of a key (value bit clear).
#[inline]
pub(crate) fn hash<const W: usize>(key: &[u64; W]) -> u64 {
    let mut h = 0x243f_6a88_85a3_08d3u64;
    for &word in key {
        h = mum(h ^ word, 0x9e37_79b9_7f4a_7c15);
    }
    mum(h, 0xe703_7ed1_a0b4_28db)
}

impl<const W: usize> Memo<W> {
    /// An empty memo with room for a few thousand entries.
    pub(crate) fn new() -> Self {
        Memo { slots: vec![[0; W]; 1 << 12], len: 0 }
    }

    /// Entries stored.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes held by the table.
    pub(crate) fn bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<[u64; W]>()
    }

    /// Drops every entry and returns the memory.
    pub(crate) fn clear(&mut self) {
        *self = Memo::new();
    }

    /// The value stored for `key` (which must not have the value bit set).
    #[inline]
    pub(crate) fn get(&self, key: &[u64; W]) -> Option<bool> {
        self.get_hashed(key, hash(key))
    }

    /// Asks the CPU to start loading the slot of hash `h`: the search probes
    /// several children in a row, and a probe is a cache miss once the table
    /// outgrows the cache, so overlapping the misses is most of the speed.
    #[inline]
    pub(crate) fn prefetch(&self, h: u64) {
        crate::prefetch::prefetch(&self.slots[h as usize & (self.slots.len() - 1)]);
    }

    /// [`Memo::get`] with the key's hash already known.
    #[inline]
    pub(crate) fn get_hashed(&self, key: &[u64; W], h: u64) -> Option<bool> {
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            let slot = &self.slots[i];
            // A key is never all zero, so a match is never an empty slot.
            if slot[W - 1] & !VALUE_BIT == key[W - 1] && slot[..W - 1] == key[..W - 1] {
                return Some(slot[W - 1] & VALUE_BIT != 0);
            }
            if slot.iter().all(|&x| x == 0) {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Stores `key` with `value`; the key must not be present yet. Fails,
    /// storing nothing, when the table must grow and cannot.
    #[inline]
    pub(crate) fn insert(&mut self, key: &[u64; W], value: bool) -> Result<(), MemoFull> {
        self.insert_hashed(key, hash(key), value)
    }

    /// [`Memo::insert`] with the key's hash already known.
    #[inline]
    pub(crate) fn insert_hashed(&mut self, key: &[u64; W], h: u64, value: bool) -> Result<(), MemoFull> {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow()?;
        }
        let mut stored = *key;
        if value {
            stored[W - 1] |= VALUE_BIT;
        }
        self.place(stored, h);
        self.len += 1;
        Ok(())
    }

    fn place(&mut self, stored: [u64; W], h: u64) {
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        while self.slots[i].iter().any(|&x| x != 0) {
            i = (i + 1) & mask;
        }
        self.slots[i] = stored;
    }

    /// Doubles the table; on failure the memo is left as it was.
    fn grow(&mut self) -> Result<(), MemoFull> {
        self.grow_to(self.slots.len().saturating_mul(2))
    }

    /// Moves every entry to a table of `len` slots (a power of two above the
    /// entries), or fails, changing nothing, when it cannot be allocated.
    fn grow_to(&mut self, len: usize) -> Result<(), MemoFull> {
        let bytes = (len as u64).saturating_mul(std::mem::size_of::<[u64; W]>() as u64);
        let mut bigger: Vec<[u64; W]> = Vec::new();
        bigger.try_reserve_exact(len).map_err(|_| MemoFull { bytes })?;
        bigger.resize(len, [0; W]);
        let old = std::mem::replace(&mut self.slots, bigger);
        for slot in old {
            if slot.iter().any(|&x| x != 0) {
                let mut key = slot;
                key[W - 1] &= !VALUE_BIT;
                self.place(slot, hash(&key));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_the_allocator_refuses_is_an_error_and_keeps_the_entries() {
        let mut memo = Memo::<2>::new();
        for k in 1..=5000u64 {
            memo.insert(&[k, k * 3], k % 2 == 0).unwrap();
        }
        let (len, bytes) = (memo.len(), memo.bytes());
        assert_eq!(bytes, 8192 * 16, "grown once past 3/4 of 4096 slots");
        // 2^62 slots of 16 bytes: more than any address space.
        let e = memo.grow_to(1 << 62).unwrap_err();
        assert_eq!(e, MemoFull { bytes: u64::MAX });
        assert_eq!((memo.len(), memo.bytes()), (len, bytes));
        for k in 1..=5000u64 {
            assert_eq!(memo.get(&[k, k * 3]), Some(k % 2 == 0), "{k}");
        }
        assert_eq!(memo.get(&[5001, 15003]), None);
    }
}
