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

/// Checks the contract of [`crate::RetroGame::predecessor_block`] on `samples`
/// random ranks: every predecessor lies in its position's block, and blocks
/// tile the rank space (any two are equal or disjoint), and a position's
/// frontier record gives its block and predecessors. Panics on a violation.
pub fn check_predecessor_blocks(game: &impl crate::RetroGame, seed: u64, samples: usize) {
    let n = game.position_count();
    let mut rng = XorShift(seed.max(1));
    let mut blocks = Vec::with_capacity(samples);
    for _ in 0..samples {
        let r = rng.next_u64() % n;
        let block = game.predecessor_block(r);
        assert!(block.start < block.end && block.end <= n, "block {block:?} of rank {r} is outside 0..{n}");
        let mut preds = Vec::new();
        game.for_each_predecessor(r, &mut |p| {
            assert!(block.contains(&p), "predecessor {p} of rank {r} is outside its block {block:?}");
            preds.push(p);
        });
        // The frontier record stands for the same position: the same block and
        // the same predecessors, in the same order.
        let record = game.frontier_record(r);
        assert!(record < 1 << 63, "record {record} of rank {r} does not leave room for the loss bit");
        assert_eq!(game.record_block(record), block, "block of the record of rank {r}");
        assert_eq!(game.frontier_record_and_block(r), (record, block.clone()), "record and block of rank {r}");
        let mut from_record = Vec::new();
        game.for_each_record_predecessor(record, &mut |p| from_record.push(p));
        assert_eq!(from_record, preds, "predecessors from the record of rank {r}");
        blocks.push((block.start, block.end));
    }
    blocks.sort_unstable();
    blocks.dedup();
    for w in blocks.windows(2) {
        assert!(w[0].1 <= w[1].0, "blocks {:?} and {:?} overlap without being equal", w[0], w[1]);
    }
}

/// Checks [`crate::RetroGame::classify_run`] against
/// [`crate::RetroGame::classify`] on `runs` runs of random starts and lengths
/// (up to a few thousand ranks, so most cross block boundaries), and on the
/// last ranks of the space. Panics on a difference.
pub fn check_classify_runs(game: &impl crate::RetroGame, seed: u64, runs: usize) {
    let n = game.position_count();
    let mut rng = XorShift(seed.max(1));
    let mut starts: Vec<(u64, usize)> = (0..runs)
        .map(|_| {
            let first = rng.next_u64() % n;
            (first, (rng.next_u64() % 5_000).min(n - first) as usize)
        })
        .collect();
    starts.push((n.saturating_sub(3_000), 3_000.min(n) as usize));
    for (first, len) in starts {
        let mut seen = 0;
        game.classify_run(first, len, &mut |i, class| {
            assert_eq!(i, seen, "run from {first}: ranks out of order");
            assert_eq!(class, game.classify(first + i as u64), "rank {}", first + i as u64);
            seen += 1;
        });
        assert_eq!(seen, len, "run from {first} of {len} ranks");
    }
}

/// Checks [`crate::RetroGame::frontier_records`] against
/// [`crate::RetroGame::frontier_record_and_block`] on `runs` windows of ranks
/// as a scan meets them: every rank of a few thousand in a row, then every
/// seventh, then a sparse sorted sample of the whole space. Panics on a
/// difference.
pub fn check_frontier_records(game: &impl crate::RetroGame, seed: u64, runs: usize) {
    let n = game.position_count();
    let mut rng = XorShift(seed.max(1));
    let mut lists: Vec<Vec<u64>> = Vec::new();
    for _ in 0..runs {
        let first = rng.next_u64() % n;
        let end = (first + 3_000).min(n);
        lists.push((first..end).collect());
        lists.push((first..end).step_by(7).collect());
    }
    let mut sparse: Vec<u64> = (0..runs * 100).map(|_| rng.next_u64() % n).collect();
    sparse.sort_unstable();
    lists.push(sparse);
    for ranks in lists {
        let mut seen = 0;
        game.frontier_records(&ranks, &mut |i, record, block| {
            assert_eq!(i, seen, "frontier records out of order");
            assert_eq!((record, block), game.frontier_record_and_block(ranks[i]), "rank {}", ranks[i]);
            seen += 1;
        });
        assert_eq!(seen, ranks.len());
    }
}

/// Checks [`crate::RetroGame::for_each_records_predecessor`] against
/// [`crate::RetroGame::for_each_record_predecessor`] record by record, call
/// for call and in order, on sorted lists of records (as the routed apply
/// hands them over: many records of one block, repeats, block boundaries),
/// and the player to move it names for each record against every
/// predecessor's.
pub fn check_records_predecessors(game: &impl crate::RetroGame, seed: u64, runs: usize) {
    let n = game.position_count();
    let mut rng = XorShift(seed.max(1));
    for _ in 0..runs {
        let first = rng.next_u64() % n;
        let ranks: Vec<u64> = (first..(first + 2_000).min(n)).chain((0..200).map(|_| rng.next_u64() % n)).collect();
        let mut records: Vec<u64> = ranks.iter().map(|&r| game.frontier_record(r)).collect();
        records.sort_unstable();
        let mut one_by_one = Vec::new();
        for (i, &record) in records.iter().enumerate() {
            game.for_each_record_predecessor(record, &mut |p| one_by_one.push((i, p)));
        }
        let mut batched = Vec::new();
        game.for_each_records_predecessor(&records, &mut |i, mover| (i, mover), &mut |&(i, mover), p| {
            assert_eq!(game.side_to_move(p), mover, "the mover named for record {}", records[i]);
            batched.push((i, p));
        });
        assert!(!batched.is_empty());
        assert_eq!(batched, one_by_one, "records from rank {first}");
    }
}
