//! Solves one layer entirely in memory with the same kernel the workers run.

use crate::kernel::{self, Decided, InitStats, KernelError};
use crate::layout::Layout;
use crate::values::Codes;
use retro_games::{Question, RetroGame};

/// A solved layer: one state byte per position (settled), its depth, and the history.
pub struct Solved {
    /// State bytes, settled (see [`crate::values`]).
    pub bytes: Vec<u8>,
    /// Depth bytes, one per position ([`Codes::depth`]): the round each
    /// position was decided in, which is its plies to the end.
    pub depth: Vec<u8>,
    /// Init pass counts.
    pub init: InitStats,
    /// Decided per round, round 1 first.
    pub rounds: Vec<Decided>,
}

/// Runs init and rounds until a round decides nothing, over `layout`'s shards.
pub fn solve<G: RetroGame>(game: &G, q: Question, layout: &Layout, threads: usize) -> Result<Solved, KernelError> {
    let mut bytes = vec![0u8; layout.positions as usize];
    let init = kernel::init_shard(game, q, 0, &mut bytes, threads)?;
    rounds(game, q, layout, Codes::of(game, false), bytes, init, threads)
}

/// [`solve`] from an init that knows some LOSS positions already
/// ([`kernel::init_with_known_losses`]); the values are the same.
pub fn solve_with_known_losses<G: RetroGame>(
    game: &G,
    q: Question,
    layout: &Layout,
    known_loss: &(impl Fn(u64) -> bool + Sync),
    threads: usize,
) -> Result<Solved, KernelError> {
    let mut counts = vec![0u8; layout.positions as usize];
    kernel::count_moves(game, 0, &mut counts, threads)?;
    let mut bytes = vec![0u8; layout.positions as usize];
    let (init, _) = kernel::init_with_known_losses(game, q, 0, &counts, known_loss, &mut bytes, threads)?;
    rounds(game, q, layout, Codes::of(game, true), bytes, init, threads)
}

/// The rounds after an init, until one decides nothing.
fn rounds<G: RetroGame>(
    game: &G,
    q: Question,
    layout: &Layout,
    codes: Codes,
    mut bytes: Vec<u8>,
    init: InitStats,
    threads: usize,
) -> Result<Solved, KernelError> {
    let mut rounds = Vec::new();
    for round in 1.. {
        let mut inbox: Vec<Vec<Vec<u64>>> = vec![Vec::new(); layout.shards as usize];
        let mut frontier_chunks = Vec::new();
        for s in 0..layout.shards {
            let r = layout.range(s);
            let g = kernel::generate(
                game,
                layout,
                codes,
                round,
                r.start,
                &bytes[r.start as usize..r.end as usize],
                threads,
            );
            for (d, keys) in g.buckets {
                inbox[d as usize].push(keys);
            }
            frontier_chunks.push(g.frontier_chunks);
        }
        let mut decided = Decided::default();
        for s in 0..layout.shards {
            let r = layout.range(s);
            let lists: Vec<&[u64]> = inbox[s as usize].iter().map(|v| v.as_slice()).collect();
            let d = kernel::apply(
                game,
                q,
                layout,
                codes,
                round,
                r.start,
                &mut bytes[r.start as usize..r.end as usize],
                &frontier_chunks[s as usize],
                &lists,
                threads,
            )?;
            decided.add(&d);
        }
        if decided.total() == 0 {
            break;
        }
        rounds.push(decided);
    }
    let depth = kernel::depths(codes, &bytes);
    kernel::settle_all(codes, &mut bytes);
    Ok(Solved { bytes, depth, init, rounds })
}
