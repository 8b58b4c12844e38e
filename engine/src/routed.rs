//! The routed round: the predecessor block as the unit of work.
//!
//! Every predecessor of a position lies in one block of the rank space
//! ([`RetroGame::predecessor_block`]; in the ranked game some positions have
//! two, and send a record for each, [`RetroGame::frontier_records`]). So a
//! position decided in round `r - 1` sends one record,
//! `frontier_record(child) << 1 | child_is_loss`, to the owner of each shard
//! its block overlaps (one shard but at a shard
//! boundary), instead of one key per predecessor. The owner groups its records by where their blocks start
//! ([`route`]: regions of [`REGION_LEN`] positions, which fit a core's cache),
//! then walks the regions ([`apply_routed`]), generating each record's
//! predecessors and updating them while the region is in cache: a region is
//! fetched from memory once per round instead of once per predecessor, and a
//! frontier position costs 8 bytes in a buffer (or under a byte on the wire)
//! instead of 8 bytes per predecessor.
//!
//! Regions are disjoint sets of whole blocks, so threads that work on
//! different regions never touch the same position and update it with plain
//! loads and stores. [`route`] checks that promise for the blocks it sees and
//! [`apply_routed`] checks every predecessor against its region's span, so a
//! game whose blocks overlapped would give an error, never a lost update.
//!
//! The result of a round is the same as [`crate::kernel::generate`] followed
//! by [`crate::kernel::apply`] (both are order-independent), which the tests
//! check position by position.

use crate::kernel::{self, Decided, Generated, KernelError};
use crate::layout::Layout;
use crate::values::{self, Codes};
use retro_games::{Question, RetroGame};
use std::ops::Range;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Positions per region: 64 KB of state, which stays in a core's L2 cache
/// while the region's records are applied.
pub const REGION_LEN: u64 = 1 << 16;

/// The span of a region with no records yet: empty, and any block widens it.
#[allow(clippy::reversed_empty_ranges)] // deliberately inverted, so min/max of a first block give its own range
const NO_SPAN: Range<u64> = u64::MAX..0;

/// How far ahead, in sorted records, the apply starts loading a record's
/// block. At stage 2 a flush holds under one record per block, so each
/// record's block comes from memory: fetched two records early, its loads
/// overlap the work on the records before it (`coordinator bench` at a
/// flush's density, docs/benchmarks/log.md, 2026-12-04).
const PREFETCH_RECORDS_AHEAD: usize = 2;

/// Regions taken at once from the apply step's shared work counter.
const REGIONS_PER_TAKE: usize = 4;

/// Scan step of round `round` (>= 1) for a shard or a slice of one
/// (`bytes[i]` is rank `base + i`): every position decided in round
/// `round - 1` becomes one record for each shard its predecessor block
/// overlaps. Read-only. The buckets hold records, not predecessor keys.
/// `codes`: the layer's code layout.
#[allow(clippy::too_many_arguments)] // every input is a distinct piece of the round; a struct would only rename them
pub fn scan_frontier<G: RetroGame>(
    game: &G,
    layout: &Layout,
    codes: Codes,
    round: u32,
    base: u64,
    bytes: &[u8],
    threads: usize,
) -> Generated {
    kernel::scan_decided(game, layout, codes, round, base, bytes, threads, |buckets, children, loss_bits| {
        game.frontier_records(children, &mut |j, record, block| {
            let (first, last) = (layout.shard_of(block.start), layout.shard_of(block.end - 1));
            for d in first..=last.min(layout.shards - 1) {
                buckets[d as usize].push(record << 1 | loss_bits[j]);
            }
        });
    })
}

/// One thread's records of a shard, grouped by region.
struct Part {
    /// Records, region by region.
    keys: Vec<u64>,
    /// `keys[starts[g]..starts[g + 1]]` are region `g`'s records.
    starts: Vec<usize>,
}

/// A shard's records grouped by region, ready for [`apply_routed`].
pub struct Routed {
    /// The shard's rank range.
    range: Range<u64>,
    /// One per routing thread (no merge: apply reads region `g` of each).
    parts: Vec<Part>,
    /// The span of the blocks whose records are in each region (empty when none).
    spans: Vec<Range<u64>>,
    /// Chunks of the shard the blocks overlap (sorted): what apply may modify.
    pub touched: Vec<u64>,
    /// Records in all.
    pub records: u64,
}

/// What one routing thread found.
struct RouteOut {
    part: Part,
    spans: Vec<Range<u64>>,
    hit: Vec<bool>,
}

/// Groups the records sent to shard `shard` (any number of lists, any order)
/// by the region their predecessor block starts in, and lists the chunks those
/// blocks overlap. Fails when a record's block misses the shard (it was routed
/// wrongly) or when two regions' blocks overlap (the game breaks the tiling
/// promise, and threads would race).
pub fn route<G: RetroGame>(
    game: &G,
    layout: &Layout,
    shard: u32,
    lists: &[&[u64]],
    threads: usize,
) -> Result<Routed, KernelError> {
    let range = layout.range(shard);
    let (base, end) = (range.start, range.end);
    let regions = (end - base).div_ceil(REGION_LEN) as usize;
    let chunks = layout.chunks(shard) as usize;
    // Flattened into slices of about equal size, one run of slices per thread.
    let total: usize = lists.iter().map(|l| l.len()).sum();
    let per = total.div_ceil(threads.max(1)).max(1);
    let mut runs: Vec<Vec<&[u64]>> = vec![Vec::new()];
    let mut room = per;
    for list in lists {
        let mut rest = *list;
        while !rest.is_empty() {
            let take = rest.len().min(room);
            runs.last_mut().expect("one run at least").push(&rest[..take]);
            rest = &rest[take..];
            room -= take;
            if room == 0 {
                runs.push(Vec::new());
                room = per;
            }
        }
    }
    let outs: Vec<Result<RouteOut, KernelError>> = std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .iter()
            .filter(|run| !run.is_empty())
            .map(|run| {
                s.spawn(move || {
                    let n: usize = run.iter().map(|l| l.len()).sum();
                    let mut count = vec![0usize; regions + 1];
                    let mut spans: Vec<Range<u64>> = vec![NO_SPAN; regions];
                    let mut hit = vec![false; chunks];
                    // Each record's region, kept for the second pass: 4 bytes a
                    // record spare the block's computation a second time.
                    let mut region_of = Vec::with_capacity(n);
                    for list in run {
                        for &k in list.iter() {
                            let record = k >> 1;
                            let block = game.record_block(record);
                            if block.end <= base || block.start >= end {
                                return Err(KernelError::ForeignUpdate { rank: record, start: base, end });
                            }
                            let (lo, hi) = (block.start.max(base) - base, block.end.min(end) - base);
                            let g = (lo / REGION_LEN) as usize;
                            region_of.push(g as u32);
                            count[g + 1] += 1;
                            let span = &mut spans[g];
                            span.start = span.start.min(block.start);
                            span.end = span.end.max(block.end);
                            for c in layout.chunk_of(lo)..=layout.chunk_of(hi - 1) {
                                hit[c as usize] = true;
                            }
                        }
                    }
                    // Counting sort by region.
                    for g in 0..regions {
                        count[g + 1] += count[g];
                    }
                    let starts = count.clone();
                    let mut keys = vec![0u64; n];
                    let mut next = count;
                    for (&k, &g) in run.iter().flat_map(|l| l.iter()).zip(&region_of) {
                        let g = g as usize;
                        keys[next[g]] = k;
                        next[g] += 1;
                    }
                    Ok(RouteOut { part: Part { keys, starts }, spans, hit })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("route thread panicked")).collect()
    });
    let mut parts = Vec::new();
    let mut spans: Vec<Range<u64>> = vec![NO_SPAN; regions];
    let mut hit = vec![false; chunks];
    for out in outs {
        let out = out?;
        for (all, one) in spans.iter_mut().zip(&out.spans) {
            all.start = all.start.min(one.start);
            all.end = all.end.max(one.end);
        }
        for (all, one) in hit.iter_mut().zip(&out.hit) {
            *all |= *one;
        }
        parts.push(out.part);
    }
    // Regions are worked on by different threads: their blocks must not overlap.
    let mut last_end = 0;
    for span in spans.iter().filter(|s| s.start < s.end) {
        if span.start < last_end {
            return Err(KernelError::OverlappingBlocks { start: span.start, end: last_end });
        }
        last_end = span.end;
    }
    let touched = hit.iter().enumerate().filter(|(_, h)| **h).map(|(c, _)| c as u64).collect();
    Ok(Routed { range, parts, spans, touched, records: total as u64 })
}

/// Apply step of a routed round for one shard (`bytes[i]` is rank
/// `routed`'s shard start + `i`): generates each record's predecessors and
/// decrements counters or decides positions with round `round`'s codes,
/// region by region. Never touches a decided position, so the previous
/// frontier stays intact until [`crate::kernel::settle_frontier`].
pub fn apply_routed<G: RetroGame>(
    game: &G,
    q: Question,
    codes: Codes,
    round: u32,
    bytes: &mut [u8],
    routed: &Routed,
    threads: usize,
) -> Result<Decided, KernelError> {
    let (base, end) = (routed.range.start, routed.range.end);
    if bytes.len() as u64 != end - base {
        return Err(KernelError::ShardLength { expected: end - base, got: bytes.len() as u64 });
    }
    // SAFETY: AtomicU8 has the same size and alignment as u8, and we hold the
    // only (mutable) borrow of `bytes` for the lifetime of `cells`.
    let cells: &[AtomicU8] = unsafe { &*(bytes as *mut [u8] as *const [AtomicU8]) };
    let round_codes = RoundCodes { win_new: codes.win_new(round), loss_new: codes.loss_new(round), codes };
    let regions = routed.spans.len();
    let next = AtomicUsize::new(0);
    let next = &next;
    let results: Vec<Result<Decided, KernelError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1).min(regions.max(1)))
            .map(|_| {
                s.spawn(move || {
                    let mut d = Decided::default();
                    let codes = &round_codes;
                    // Applies one record's predecessors (offsets into the shard).
                    let update = |offsets: &[usize], is_max: bool, child_loss: bool, d: &mut Decided| {
                        let good = is_max != child_loss;
                        for &i in offsets {
                            update_cell(&cells[i], good, is_max, codes, d);
                        }
                    };
                    // A region's records, sorted where the game gains from it
                    // ([`RetroGame::records_share_decoding`]): records of one
                    // block come together, so the game decodes each block once
                    // ([`RetroGame::for_each_records_predecessor`]).
                    let sort = game.records_share_decoding();
                    let (mut keys, mut records) = (Vec::new(), Vec::new());
                    // Unsorted, a record's predecessors are generated and their state
                    // bytes prefetched while the previous record's are applied: once
                    // the state outgrows the cache, the misses then overlap with work.
                    let (mut pending, mut generated) = (Vec::new(), Vec::new());
                    let (mut pending_max, mut pending_loss) = (false, false);
                    loop {
                        let first = next.fetch_add(REGIONS_PER_TAKE, Ordering::Relaxed);
                        if first >= regions {
                            break;
                        }
                        for g in first..(first + REGIONS_PER_TAKE).min(regions) {
                            let span = routed.spans[g].clone();
                            keys.clear();
                            for part in &routed.parts {
                                keys.extend_from_slice(&part.keys[part.starts[g]..part.starts[g + 1]]);
                            }
                            let mut stray = None;
                            if sort {
                                keys.sort_unstable();
                                records.clear();
                                records.extend(keys.iter().map(|k| k >> 1));
                                // Sorted, a block's records come together and its
                                // state bytes stay in L1 from the first record on:
                                // each predecessor is applied as it is generated,
                                // without the per-predecessor prefetch and the second
                                // pass below (about 8 % of a routed apply in
                                // `coordinator bench`). Where records are sparse (under
                                // one a block), the block itself is fetched a few
                                // records ahead instead.
                                // The end of the last block fetched ahead: a record
                                // below it lies in that block (records are sorted).
                                let mut fetched_to = 0u64;
                                // Once a record: fetch ahead, and what its predecessors
                                // share (whether MAX moves there, whether the record's
                                // value is good for the mover, the record's index).
                                let mut on_record = |j: usize, mover: u8| {
                                    if let Some(&r) = records.get(j + PREFETCH_RECORDS_AHEAD)
                                        && r >= fetched_to
                                    {
                                        let b = game.record_block(r);
                                        fetched_to = b.end;
                                        let (lo, hi) = (b.start.max(base), b.end.min(end));
                                        if hi > lo {
                                            crate::prefetch::prefetch_all(
                                                &cells[(lo - base) as usize..(hi - base) as usize],
                                            );
                                        }
                                    }
                                    let is_max = q.is_max(mover);
                                    (is_max != (keys[j] & 1 == 1), is_max, j)
                                };
                                game.for_each_records_predecessor(
                                    &records,
                                    &mut on_record,
                                    &mut |&(good, is_max, j), p| {
                                        if !span.contains(&p) {
                                            stray = Some((p, records[j]));
                                        } else if p >= base && p < end {
                                            update_cell(&cells[(p - base) as usize], good, is_max, codes, &mut d);
                                        }
                                    },
                                );
                                if let Some((p, record)) = stray {
                                    return Err(KernelError::OutsideBlock { rank: p, child: record });
                                }
                                continue;
                            }
                            // Record by record ([`RetroGame::for_each_record_predecessor`]):
                            // an unsorted game shares no decoding between records,
                            // and the per-predecessor closure stays small enough to
                            // inline (no "is this a new record?" test per predecessor).
                            for &key in &keys {
                                let record = key >> 1;
                                game.for_each_record_predecessor(record, &mut |p| {
                                    if !span.contains(&p) {
                                        stray = Some((p, record));
                                    } else if p >= base && p < end {
                                        // (Else the neighbouring shard's part of a block on the boundary.)
                                        let i = (p - base) as usize;
                                        crate::prefetch::prefetch(&cells[i]);
                                        generated.push(i);
                                    }
                                });
                                let Some(&first) = generated.first() else { continue };
                                // This record's predecessors are being fetched: apply
                                // the last one's and keep these pending.
                                update(&pending, pending_max, pending_loss, &mut d);
                                std::mem::swap(&mut pending, &mut generated);
                                generated.clear();
                                // Every predecessor has the block's player to move.
                                pending_max = q.is_max(game.side_to_move(base + first as u64));
                                pending_loss = key & 1 == 1;
                            }
                            if let Some((p, record)) = stray {
                                return Err(KernelError::OutsideBlock { rank: p, child: record });
                            }
                        }
                        update(&pending, pending_max, pending_loss, &mut d);
                        pending.clear();
                    }
                    Ok(d)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("apply thread panicked")).collect()
    });
    let mut total = Decided::default();
    for r in results {
        total.add(&r?);
    }
    Ok(total)
}

/// The codes one round's apply writes, and the layout that tells counters
/// from decided codes.
#[derive(Clone, Copy)]
struct RoundCodes {
    win_new: u8,
    loss_new: u8,
    codes: Codes,
}

/// One predecessor's update with a round's "new" codes: a plain load and
/// store (no other thread works on its block), counted in `d` when it decides
/// the position.
#[inline]
fn update_cell(cell: &AtomicU8, good: bool, is_max: bool, c: &RoundCodes, d: &mut Decided) {
    let cur = cell.load(Ordering::Relaxed);
    if c.codes.is_decided(cur) {
        return;
    }
    let next = values::after_update(cur, good, is_max, c.win_new, c.loss_new);
    cell.store(next, Ordering::Relaxed);
    if next == c.win_new {
        d.win += 1;
    } else if next == c.loss_new {
        d.loss += 1;
    }
}
