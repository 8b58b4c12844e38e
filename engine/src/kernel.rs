//! The wavefront kernel: the init pass, the frontier scan both rounds share,
//! and the reference round (the generate step: frontier -> predecessor
//! updates bucketed by destination shard; the apply step: updates -> counters
//! and decisions), which the routed round the workers run ([`crate::routed`])
//! is tested against. Plain functions over byte slices and
//! sorted update lists: no I/O, no sockets, no per-position allocation.
//!
//! An update key is `predecessor_rank << 1 | child_is_loss`. Apply is
//! order-independent (a counter reaches zero only when no child is good for
//! the mover, and one good child decides at once), so threads may apply
//! updates of one shard concurrently with atomic compare-and-swap on the bytes.

use crate::layout::Layout;
use crate::values::{self, Codes, ILLEGAL, LOSS_TERMINAL};
use retro_games::{Classification, Question, RetroGame};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Counts from the init pass of one shard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InitStats {
    /// Illegal placements.
    pub illegal: u64,
    /// Terminal positions (someone has won).
    pub terminal: u64,
    /// Terminal positions that are a WIN for MAX.
    pub terminal_win: u64,
    /// Open positions whose player to move has no move (they pass).
    pub no_move: u64,
}

impl InitStats {
    /// Adds another shard's counts.
    pub fn add(&mut self, o: &InitStats) {
        self.illegal += o.illegal;
        self.terminal += o.terminal;
        self.terminal_win += o.terminal_win;
        self.no_move += o.no_move;
    }
}

/// Positions decided by one round in one shard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Decided {
    /// Newly decided WIN.
    pub win: u64,
    /// Newly decided LOSS.
    pub loss: u64,
}

impl Decided {
    /// Total decided.
    pub fn total(&self) -> u64 {
        self.win + self.loss
    }
    /// Adds another count.
    pub fn add(&mut self, o: &Decided) {
        self.win += o.win;
        self.loss += o.loss;
    }
}

/// What went wrong in a kernel pass.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// A position has more children than a state byte can count.
    #[error("position {rank} has {children} children; the state byte counts at most {max}")]
    TooManyChildren {
        /// The position.
        rank: u64,
        /// Its child count.
        children: u32,
        /// The limit.
        max: u8,
    },
    /// Two regions of a routed round hold blocks that overlap: the game's
    /// predecessor blocks do not tile its rank space.
    #[error("predecessor blocks overlap at ranks {start}..{end}; the game's blocks must tile its rank space")]
    OverlappingBlocks {
        /// Start of the later block.
        start: u64,
        /// End of the earlier one.
        end: u64,
    },
    /// A predecessor lies outside the block the game gave for its position.
    #[error("predecessor {rank} of the position with frontier record {child} lies outside its predecessor block")]
    OutsideBlock {
        /// The predecessor.
        rank: u64,
        /// The position's frontier record ([`retro_games::RetroGame::frontier_record`]).
        child: u64,
    },
    /// A routed apply was given state bytes of another length than its shard.
    #[error("shard state holds {got} positions, the routed records are for {expected}")]
    ShardLength {
        /// Positions in the shard.
        expected: u64,
        /// Bytes given.
        got: u64,
    },
    /// A position given as a known LOSS is a terminal win for MAX: the set
    /// came from layers that do not fit this one.
    #[error("position {rank} was given as a known LOSS, but MAX has won there")]
    KnownLossIsWin {
        /// The position.
        rank: u64,
    },
    /// A position's children, generated again, are not as many as its move count.
    #[error("position {rank} has {children} children, its move count says {counted}")]
    ChildCount {
        /// The position.
        rank: u64,
        /// Children generated.
        children: u32,
        /// The move count.
        counted: u32,
    },
    /// An update names a position outside the shard it was sent to.
    #[error("update for position {rank} does not belong to shard range {start}..{end}")]
    ForeignUpdate {
        /// The position.
        rank: u64,
        /// Shard start.
        start: u64,
        /// Shard end.
        end: u64,
    },
}

fn split(len: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.max(1).min(len.max(1));
    let step = len.div_ceil(parts).max(1);
    (0..parts).map(|i| (i * step).min(len)..((i + 1) * step).min(len)).filter(|r| !r.is_empty()).collect()
}

/// Code in a move-count byte: an open position whose player to move must pass.
pub const COUNT_PASS: u8 = 249;
/// Code in a move-count byte: a terminal position won by player `p` is `COUNT_WON + p`.
pub const COUNT_WON: u8 = 250;

/// Splits `bytes` into about `threads` parts and runs `f(first_rank, part)` on each.
fn par_chunks_mut<T: Send>(
    bytes: &mut [u8],
    base: u64,
    threads: usize,
    f: impl Fn(u64, &mut [u8]) -> T + Sync,
) -> Vec<T> {
    let step = bytes.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = bytes
            .chunks_mut(step)
            .enumerate()
            .map(|(i, part)| {
                let f = &f;
                s.spawn(move || f(base + (i * step) as u64, part))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("kernel thread panicked")).collect()
    })
}

/// The question-independent half of the init pass: for every position of a
/// shard, its child count (`COUNT_PASS` for a forced pass), `COUNT_WON + p` when
/// player `p` has won, or `ILLEGAL`. Every layer starts from these bytes, so the
/// expensive move generation runs once per job, not once per layer.
pub fn count_moves<G: RetroGame>(game: &G, base: u64, bytes: &mut [u8], threads: usize) -> Result<(), KernelError> {
    let results = par_chunks_mut(bytes, base, threads, |first, part| {
        let mut result = Ok(());
        let max = Codes::of(game, false).counter_max;
        game.classify_run(first, part.len(), &mut |i, class| {
            part[i] = match class {
                Classification::Illegal => ILLEGAL,
                Classification::Terminal { winner } => COUNT_WON + winner,
                Classification::Open { no_move: true, .. } => COUNT_PASS,
                Classification::Open { children, .. } => {
                    if children > u32::from(max) && result.is_ok() {
                        result = Err(KernelError::TooManyChildren { rank: first + i as u64, children, max });
                    }
                    children.min(u32::from(max)) as u8
                }
            };
        });
        result
    });
    results.into_iter().collect()
}

/// The question-dependent half of the init pass: turns move-count bytes into a
/// layer's round-0 state (terminal positions become the first frontier), in
/// the layer's `codes`.
pub fn init_from_counts(q: Question, codes: Codes, counts: &[u8], bytes: &mut [u8], threads: usize) -> InitStats {
    let parts = par_chunks_mut(bytes, 0, threads, |first, dst| {
        let src = &counts[first as usize..][..dst.len()];
        let mut st = InitStats::default();
        for (c, b) in src.iter().zip(dst.iter_mut()) {
            *b = match *c {
                ILLEGAL => {
                    st.illegal += 1;
                    ILLEGAL
                }
                COUNT_PASS => {
                    st.no_move += 1;
                    1
                }
                won if won >= COUNT_WON => {
                    st.terminal += 1;
                    if won - COUNT_WON == q.target {
                        st.terminal_win += 1;
                        codes.win_new(0)
                    } else if q.three_valued {
                        codes.loss_new(0)
                    } else {
                        // Two-valued: a LOSS never propagates.
                        LOSS_TERMINAL
                    }
                }
                n => n,
            };
        }
        st
    });
    let mut total = InitStats::default();
    for p in &parts {
        total.add(p);
    }
    total
}

/// [`init_from_counts`] for a three-valued layer of which some LOSS positions
/// are known before it starts (`known_loss`; e.g. solo(A) is LOSS wherever B
/// and C together can force a win for one of them, which two enable layers
/// already say). Those positions are settled LOSS at once and never propagate:
/// every other open position counts its children in the set itself, which is
/// what their LOSS updates would have told it (a MAX position has that many
/// fewer open children, an opponent's is LOSS at once). The rounds then
/// propagate only the WIN positions and the LOSS positions outside the set,
/// and end in the same values as the rounds after [`init_from_counts`], for
/// any subset of the LOSS positions: at stage 2 about 1.2 G records instead of
/// 14.8 G. Costs one child generation per open position outside the set.
///
/// Returns the init counts and what round 0 decided: the terminal wins as
/// WIN, the known positions and those decided by their children as LOSS.
/// The codes are the seeded layout ([`Codes::of`] with `seeded`), whose LOSS
/// rounds are not kept: they are not plies here.
pub fn init_with_known_losses<G: RetroGame>(
    game: &G,
    q: Question,
    base: u64,
    counts: &[u8],
    known_loss: &(impl Fn(u64) -> bool + Sync),
    bytes: &mut [u8],
    threads: usize,
) -> Result<(InitStats, Decided), KernelError> {
    debug_assert!(q.three_valued && !game.edges_negate(), "known losses seed a three-valued layer of an unfolded game");
    let codes = Codes::of(game, true);
    let parts = par_chunks_mut(bytes, base, threads, |first, dst| {
        let src = &counts[(first - base) as usize..][..dst.len()];
        let (mut st, mut d) = (InitStats::default(), Decided::default());
        for (i, (c, b)) in src.iter().zip(dst.iter_mut()).enumerate() {
            let rank = first + i as u64;
            *b = match *c {
                ILLEGAL => {
                    st.illegal += 1;
                    ILLEGAL
                }
                won if won >= COUNT_WON => {
                    st.terminal += 1;
                    if won - COUNT_WON == q.target {
                        if known_loss(rank) {
                            return Err(KernelError::KnownLossIsWin { rank });
                        }
                        st.terminal_win += 1;
                        d.win += 1;
                        codes.win_new(0)
                    } else {
                        d.loss += 1;
                        if known_loss(rank) { LOSS_TERMINAL } else { codes.loss_new(0) }
                    }
                }
                open => {
                    let counted = if open == COUNT_PASS {
                        st.no_move += 1;
                        1
                    } else {
                        u32::from(open)
                    };
                    if known_loss(rank) {
                        d.loss += 1;
                        values::LOSS
                    } else {
                        let (mut children, mut known) = (0u32, 0u32);
                        game.for_each_child(rank, &mut |child| {
                            children += 1;
                            known += u32::from(known_loss(child));
                        });
                        if children != counted {
                            return Err(KernelError::ChildCount { rank, children, counted });
                        }
                        if q.is_max(game.side_to_move(rank)) {
                            // Every child known LOSS: no way out for MAX.
                            if known == counted {
                                d.loss += 1;
                                codes.loss_new(0)
                            } else {
                                (counted - known) as u8
                            }
                        } else if known > 0 {
                            d.loss += 1;
                            codes.loss_new(0)
                        } else {
                            counted as u8
                        }
                    }
                }
            };
        }
        Ok((st, d))
    });
    let (mut total, mut decided) = (InitStats::default(), Decided::default());
    for p in parts {
        let (st, d) = p?;
        total.add(&st);
        decided.add(&d);
    }
    Ok((total, decided))
}

/// The whole init pass over one shard (`bytes[i]` describes rank `base + i`):
/// move counts, then this question's terminal values.
pub fn init_shard<G: RetroGame>(
    game: &G,
    q: Question,
    base: u64,
    bytes: &mut [u8],
    threads: usize,
) -> Result<InitStats, KernelError> {
    count_moves(game, base, bytes, threads)?;
    let counts = bytes.to_vec();
    Ok(init_from_counts(q, Codes::of(game, false), &counts, bytes, threads))
}

/// The updates one shard's frontier sends, bucketed by destination shard.
pub struct Generated {
    /// `(destination shard, keys)`, unsorted: one entry per generate thread and
    /// destination shard that gets any, so a shard may appear more than once.
    pub buckets: Vec<(u32, Vec<u64>)>,
    /// Chunks of this shard that hold frontier positions (the apply pass settles them).
    pub frontier_chunks: Vec<u64>,
    /// Frontier size.
    pub frontier: u64,
}

/// Generate step of round `round` (>= 1) for a shard or a slice of one
/// (`bytes[i]` is rank `base + i`, in the layer's `codes`): every position
/// decided in round `round - 1` sends one update to each predecessor.
/// Read-only. This is the reference round (one key per predecessor); the
/// workers run [`crate::routed`], which the tests compare with it.
#[allow(clippy::too_many_arguments)] // every input is a distinct piece of the round; a struct would only rename them
pub fn generate<G: RetroGame>(
    game: &G,
    layout: &Layout,
    codes: Codes,
    round: u32,
    base: u64,
    bytes: &[u8],
    threads: usize,
) -> Generated {
    scan_decided(game, layout, codes, round, base, bytes, threads, |buckets, children, loss_bits| {
        for (&child, &loss_bit) in children.iter().zip(loss_bits) {
            game.for_each_predecessor(child, &mut |p| buckets[layout.shard_of(p) as usize].push(p << 1 | loss_bit));
        }
    })
}

/// Positions in one piece of a frontier scan's shared work counter.
const SCAN_PIECE: usize = 1 << 16;

/// Calls `f(i, byte)` for each index of `bytes` whose byte is `a` or `b`, in
/// order. Eight bytes are tested at once: most of a round's state holds
/// neither code (a late round's frontier is a few positions in millions), and
/// a word without them costs a few ALU operations instead of eight compares
/// and branches.
#[inline]
pub fn for_each_byte_of(bytes: &[u8], a: u8, b: u8, mut f: impl FnMut(usize, u8)) {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let (wa, wb) = (LOW * u64::from(a), LOW * u64::from(b));
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().expect("chunks of eight"));
        let (xa, xb) = (x ^ wa, x ^ wb);
        // Non-zero when some byte of x is a or b (the zero-byte test; it may
        // flag more bytes than match, so the bytes are checked one by one).
        if ((xa.wrapping_sub(LOW) & !xa) | (xb.wrapping_sub(LOW) & !xb)) & HIGH != 0 {
            for (j, &c) in w.iter().enumerate() {
                if c == a || c == b {
                    f(at + j, c);
                }
            }
        }
        at += 8;
    }
    for (j, &c) in words.remainder().iter().enumerate() {
        if c == a || c == b {
            f(at + j, c);
        }
    }
}

/// The frontier scan both rounds share: visits every position of `bytes`
/// (`bytes[i]` is rank `base + i`) decided in round `round - 1`, a piece of
/// the state at a time, as `visit(buckets, ranks, loss_bits)` (in rank order;
/// `loss_bits[j]` is `ranks[j]`'s, already negated in a folded game), where
/// `buckets[d]` collects the keys for shard `d`; and records the
/// chunks holding the frontier. Threads take pieces from a shared counter:
/// frontier positions bunch up, so fixed halves would leave one core idle.
#[allow(clippy::too_many_arguments)] // every input is a distinct piece of the round; a struct would only rename them
pub(crate) fn scan_decided<G: RetroGame>(
    game: &G,
    layout: &Layout,
    codes: Codes,
    round: u32,
    base: u64,
    bytes: &[u8],
    threads: usize,
    visit: impl Fn(&mut [Vec<u64>], &[u64], &[u64]) + Sync,
) -> Generated {
    let prev = round - 1;
    let negate = game.edges_negate();
    let shards = layout.shards as usize;
    let pieces = bytes.len().div_ceil(SCAN_PIECE);
    let next_piece = AtomicUsize::new(0);
    let (next_piece, visit) = (&next_piece, &visit);
    // Chunk numbers count from the start of the shard `bytes` belongs to.
    let offset = base - layout.range(layout.shard_of(base)).start;
    let parts: Vec<(Vec<Vec<u64>>, Vec<u64>, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1).min(pieces.max(1)))
            .map(|_| {
                s.spawn(move || {
                    let mut buckets: Vec<Vec<u64>> = vec![Vec::new(); shards];
                    let mut chunks = Vec::new();
                    let mut frontier = 0u64;
                    let (mut ranks, mut loss_bits) = (Vec::new(), Vec::new());
                    loop {
                        let piece = next_piece.fetch_add(1, Ordering::Relaxed);
                        if piece >= pieces {
                            break;
                        }
                        let first = piece * SCAN_PIECE;
                        let part = &bytes[first..(first + SCAN_PIECE).min(bytes.len())];
                        let (win, loss) = (codes.win_new(prev), codes.loss_new(prev));
                        for_each_byte_of(part, win, loss, |j, code| {
                            let i = first + j;
                            frontier += 1;
                            let chunk = layout.chunk_of(offset + i as u64);
                            if chunks.last() != Some(&chunk) {
                                chunks.push(chunk);
                            }
                            // In a folded game the child's value counts negated.
                            loss_bits.push(((code == loss) ^ negate) as u64);
                            ranks.push(base + i as u64);
                        });
                        visit(&mut buckets, &ranks, &loss_bits);
                        ranks.clear();
                        loss_bits.clear();
                    }
                    (buckets, chunks, frontier)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("scan thread panicked")).collect()
    });
    // Each thread's buckets are kept as they are (a shard may get one list per
    // thread): copying them into one list per shard would be a serial pass over
    // every key, and every consumer takes several lists per shard anyway.
    let mut buckets = Vec::new();
    let mut frontier_chunks = Vec::new();
    let mut frontier = 0;
    for (lists, chunks, f) in parts {
        // Trimmed to their length: a list grown by doubling holds up to twice
        // its keys, and the worker keeps a round's lists until they are applied.
        buckets.extend(lists.into_iter().enumerate().filter(|(_, b)| !b.is_empty()).map(|(d, mut b)| {
            b.shrink_to_fit();
            (d as u32, b)
        }));
        frontier_chunks.extend(chunks);
        frontier += f;
    }
    // Threads took pieces in any order.
    frontier_chunks.sort_unstable();
    frontier_chunks.dedup();
    Generated { buckets, frontier_chunks, frontier }
}

/// Apply step of round `round` for one shard: settle the previous frontier,
/// then apply every update. `updates` are key lists (local and received, any order).
#[allow(clippy::too_many_arguments)] // every input is a distinct piece of the round; a struct would only rename them
pub fn apply<G: RetroGame>(
    game: &G,
    q: Question,
    layout: &Layout,
    codes: Codes,
    round: u32,
    base: u64,
    bytes: &mut [u8],
    frontier_chunks: &[u64],
    updates: &[&[u64]],
    threads: usize,
) -> Result<Decided, KernelError> {
    let d = apply_updates(game, q, codes, round, base, bytes, updates, threads)?;
    settle_frontier(layout, codes, round, bytes, frontier_chunks, threads);
    Ok(d)
}

/// Settles the codes of the positions decided in round `round - 1` (the frontier
/// this round has propagated) in the listed chunks of a shard, where that
/// round's codes are parity codes ([`Codes::needs_settling`]); a tagged code
/// keeps its round.
pub fn settle_frontier(layout: &Layout, codes: Codes, round: u32, bytes: &mut [u8], chunks: &[u64], threads: usize) {
    let prev = round - 1;
    if !codes.needs_settling(prev) {
        return;
    }
    let (mut win, loss) = (codes.win_new(prev), codes.loss_new(prev));
    let mut win_to = values::WIN;
    if win < LOSS_TERMINAL {
        // A tagged WIN in a seeded layer keeps its code: only the LOSS is settled.
        (win, win_to) = (loss, values::LOSS);
    }
    let chunk_len = layout.chunk_len as usize;
    let mut wanted = vec![false; bytes.len().div_ceil(chunk_len)];
    for &c in chunks {
        if let Some(w) = wanted.get_mut(c as usize) {
            *w = true;
        }
    }
    let mut parts: Vec<&mut [u8]> =
        bytes.chunks_mut(chunk_len).enumerate().filter(|(i, _)| wanted[*i]).map(|(_, c)| c).collect();
    let per = parts.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        for group in parts.chunks_mut(per) {
            s.spawn(move || {
                for part in group.iter_mut() {
                    for line in part.chunks_mut(64) {
                        settle_line(line, (win, win_to), loss);
                    }
                }
            });
        }
    });
}

/// Settles the code `win.0` into `win.1` and `loss` (one round's "new"
/// codes) into LOSS in a cache line of state. Written as a test over the line
/// and selects, both of which compile to vector instructions on any x86-64 (a
/// store under a condition needs AVX-512's masked stores); a line without
/// those codes is not written, so its page stays clean.
#[inline]
fn settle_line(line: &mut [u8], (win, win_to): (u8, u8), loss: u8) {
    if !line.iter().fold(false, |any, &c| any | (c == win) | (c == loss)) {
        return;
    }
    for b in line.iter_mut() {
        let c = *b;
        *b = if c == win {
            win_to
        } else if c == loss {
            values::LOSS
        } else {
            c
        };
    }
}

/// Applies update lists (any order) to a shard (`bytes[i]` is rank `base + i`):
/// decrements counters and decides positions with round `round`'s codes. Never
/// touches a decided position, so it leaves the previous frontier intact.
#[allow(clippy::too_many_arguments)] // every input is a distinct piece of the round; a struct would only rename them
pub fn apply_updates<G: RetroGame>(
    game: &G,
    q: Question,
    codes: Codes,
    round: u32,
    base: u64,
    bytes: &mut [u8],
    updates: &[&[u64]],
    threads: usize,
) -> Result<Decided, KernelError> {
    let end = base + bytes.len() as u64;
    for list in updates {
        for &k in list.iter() {
            let rank = k >> 1;
            if rank < base || rank >= end {
                return Err(KernelError::ForeignUpdate { rank, start: base, end });
            }
        }
    }
    // SAFETY: AtomicU8 has the same size and alignment as u8, and we hold the
    // only (mutable) borrow of `bytes` for the lifetime of `cells`.
    let cells: &[AtomicU8] = unsafe { &*(bytes as *mut [u8] as *const [AtomicU8]) };
    let (win_new, loss_new) = (codes.win_new(round), codes.loss_new(round));
    let mut total = Decided::default();
    for list in updates {
        let ranges = split(list.len(), threads);
        let results: Vec<Decided> = std::thread::scope(|s| {
            let handles: Vec<_> = ranges
                .iter()
                .map(|r| {
                    let part = &list[r.clone()];
                    s.spawn(move || {
                        let mut d = Decided::default();
                        for &k in part {
                            let rank = k >> 1;
                            let child_loss = k & 1 == 1;
                            let is_max = q.is_max(game.side_to_move(rank));
                            let good = is_max != child_loss;
                            let cell = &cells[(rank - base) as usize];
                            let mut cur = cell.load(Ordering::Relaxed);
                            loop {
                                if codes.is_decided(cur) {
                                    break;
                                }
                                let next = values::after_update(cur, good, is_max, win_new, loss_new);
                                match cell.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
                                    Ok(_) => {
                                        if next == win_new {
                                            d.win += 1;
                                        } else if next == loss_new {
                                            d.loss += 1;
                                        }
                                        break;
                                    }
                                    Err(seen) => cur = seen,
                                }
                            }
                        }
                        d
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("apply thread panicked")).collect()
        });
        for d in results {
            total.add(&d);
        }
    }
    Ok(total)
}

/// Settles every decided code (after the last round) so the shard holds only
/// counters (DRAW), WIN, LOSS and ILLEGAL: what [`values::tablebase_value`]
/// reads. The rounds are gone then: take [`depths`] first.
pub fn settle_all(codes: Codes, bytes: &mut [u8]) {
    for b in bytes {
        *b = codes.settle(*b);
    }
}

/// 2-bit values (one per byte, 0..=3) of a range of a shard, for the tablebase.
pub fn tablebase_values(codes: Codes, bytes: &[u8]) -> Vec<u8> {
    bytes.iter().map(|&b| codes.tablebase_value(b)).collect()
}

/// Depth bytes ([`Codes::depth`]) of a range of a shard, for the depth file.
pub fn depths(codes: Codes, bytes: &[u8]) -> Vec<u8> {
    bytes.iter().map(|&b| codes.depth(b)).collect()
}
