//! One type for every game a job can name, so the worker and the kernel are
//! compiled once and pick the rules at run time (one predictable branch per
//! call, negligible next to move generation).

use crate::cc2::Cc2;
use crate::cc3::{Cc3, Ranked};
use crate::{Classification, RetroGame};

/// A game chosen by a job's plan.
// One value per process: the variants' size difference costs nothing, and a box
// would add an indirection to every call from the kernel's inner loops.
#[allow(clippy::large_enum_variant)]
pub enum AnyGame {
    /// Three-player Chinese checkers.
    Cc3(Cc3),
    /// Two-player Chinese checkers.
    Cc2(Cc2),
    /// Three-player Chinese checkers, ranked: play goes on for second place.
    Ranked(Ranked),
}

impl AnyGame {
    /// Version of this game's rank order (recorded in every file that holds ranks).
    pub fn rank_order(&self) -> u32 {
        match self {
            AnyGame::Cc3(_) | AnyGame::Ranked(_) => crate::cc3::RANK_ORDER,
            AnyGame::Cc2(g) => g.rank_order(),
        }
    }
}

impl RetroGame for AnyGame {
    fn position_count(&self) -> u64 {
        match self {
            AnyGame::Cc3(g) => g.position_count(),
            AnyGame::Cc2(g) => g.position_count(),
            AnyGame::Ranked(g) => g.position_count(),
        }
    }

    #[inline]
    fn side_to_move(&self, rank: u64) -> u8 {
        match self {
            AnyGame::Cc3(g) => g.side_to_move(rank),
            AnyGame::Cc2(g) => g.side_to_move(rank),
            AnyGame::Ranked(g) => g.side_to_move(rank),
        }
    }

    #[inline]
    fn classify(&self, rank: u64) -> Classification {
        match self {
            AnyGame::Cc3(g) => g.classify(rank),
            AnyGame::Cc2(g) => g.classify(rank),
            AnyGame::Ranked(g) => g.classify(rank),
        }
    }

    fn classify_run(&self, first: u64, len: usize, f: &mut impl FnMut(usize, Classification)) {
        match self {
            AnyGame::Cc3(g) => g.classify_run(first, len, f),
            AnyGame::Cc2(g) => g.classify_run(first, len, f),
            AnyGame::Ranked(g) => g.classify_run(first, len, f),
        }
    }

    fn frontier_records(&self, ranks: &[u64], f: &mut impl FnMut(usize, u64, std::ops::Range<u64>)) {
        match self {
            AnyGame::Cc3(g) => g.frontier_records(ranks, f),
            AnyGame::Cc2(g) => g.frontier_records(ranks, f),
            AnyGame::Ranked(g) => g.frontier_records(ranks, f),
        }
    }

    #[inline]
    fn for_each_predecessor(&self, rank: u64, f: &mut impl FnMut(u64)) {
        match self {
            AnyGame::Cc3(g) => g.for_each_predecessor(rank, f),
            AnyGame::Cc2(g) => g.for_each_predecessor(rank, f),
            AnyGame::Ranked(g) => g.for_each_predecessor(rank, f),
        }
    }

    #[inline]
    fn predecessor_block(&self, rank: u64) -> std::ops::Range<u64> {
        match self {
            AnyGame::Cc3(g) => g.predecessor_block(rank),
            AnyGame::Cc2(g) => g.predecessor_block(rank),
            AnyGame::Ranked(g) => g.predecessor_block(rank),
        }
    }

    #[inline]
    fn frontier_record(&self, rank: u64) -> u64 {
        match self {
            AnyGame::Cc3(g) => g.frontier_record(rank),
            AnyGame::Cc2(g) => g.frontier_record(rank),
            AnyGame::Ranked(g) => g.frontier_record(rank),
        }
    }

    #[inline]
    fn record_block(&self, record: u64) -> std::ops::Range<u64> {
        match self {
            AnyGame::Cc3(g) => g.record_block(record),
            AnyGame::Cc2(g) => g.record_block(record),
            AnyGame::Ranked(g) => g.record_block(record),
        }
    }

    #[inline]
    fn frontier_record_and_block(&self, rank: u64) -> (u64, std::ops::Range<u64>) {
        match self {
            AnyGame::Cc3(g) => g.frontier_record_and_block(rank),
            AnyGame::Cc2(g) => g.frontier_record_and_block(rank),
            AnyGame::Ranked(g) => g.frontier_record_and_block(rank),
        }
    }

    #[inline]
    fn for_each_record_predecessor(&self, record: u64, f: &mut impl FnMut(u64)) {
        match self {
            AnyGame::Cc3(g) => g.for_each_record_predecessor(record, f),
            AnyGame::Cc2(g) => g.for_each_record_predecessor(record, f),
            AnyGame::Ranked(g) => g.for_each_record_predecessor(record, f),
        }
    }

    fn records_share_decoding(&self) -> bool {
        match self {
            AnyGame::Cc3(g) => g.records_share_decoding(),
            AnyGame::Cc2(g) => g.records_share_decoding(),
            AnyGame::Ranked(g) => g.records_share_decoding(),
        }
    }

    fn for_each_records_predecessor<C>(
        &self,
        records: &[u64],
        on_record: &mut impl FnMut(usize, u8) -> C,
        on_predecessor: &mut impl FnMut(&C, u64),
    ) {
        match self {
            AnyGame::Cc3(g) => g.for_each_records_predecessor(records, on_record, on_predecessor),
            AnyGame::Cc2(g) => g.for_each_records_predecessor(records, on_record, on_predecessor),
            AnyGame::Ranked(g) => g.for_each_records_predecessor(records, on_record, on_predecessor),
        }
    }

    #[inline]
    fn for_each_child(&self, rank: u64, f: &mut impl FnMut(u64)) {
        match self {
            AnyGame::Cc3(g) => g.for_each_child(rank, f),
            AnyGame::Cc2(g) => g.for_each_child(rank, f),
            AnyGame::Ranked(g) => g.for_each_child(rank, f),
        }
    }

    #[inline]
    fn edges_negate(&self) -> bool {
        match self {
            AnyGame::Cc3(g) => g.edges_negate(),
            AnyGame::Cc2(g) => g.edges_negate(),
            AnyGame::Ranked(g) => g.edges_negate(),
        }
    }

    fn max_children(&self) -> u32 {
        match self {
            AnyGame::Cc3(g) => g.max_children(),
            AnyGame::Cc2(g) => g.max_children(),
            AnyGame::Ranked(g) => g.max_children(),
        }
    }
}
