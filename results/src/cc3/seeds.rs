//! What the enable layers already say about solo(A), so that its layer need
//! not find it again.
//!
//! solo(A) is LOSS where B and C together force a terminal A did not win. Where
//! they can force a win for one of them (enable(B>C) or enable(C>B)), they can
//! force that: at stage 2 this covers about 13.6 G of solo(A)'s 13.9 G LOSS
//! positions. Solved after the two enable layers, solo(A) starts from these
//! positions settled ([`retro_engine::kernel::init_with_known_losses`]), and
//! its rounds propagate the 0.95 G WIN positions and the few LOSS positions
//! left, instead of 14.8 G positions.

use crate::ResultsError;
use crate::cc3::analysis::{Merge, answers_from, orbit_values_pass};
use crate::cc3::compressed::{CHUNK_POSITIONS, CompressedLayers};
use crate::solved::SolvedJob;
use retro_engine::rankset::RankSet;
use retro_games::RetroGame;
use retro_games::cc3::Cc3;
use std::path::Path;

/// The layer whose known losses [`solo_a_known_losses`] gives.
pub const SEEDED: &str = "solo(A)";

/// The layers it reads them from.
pub const SEEDS: [&str; 2] = ["enable(A>B)", "enable(A>C)"];

impl Merge for () {
    fn merge_from(&mut self, _: &()) {}
}

/// The positions where solo(A) is LOSS by the enable layers alone:
/// enable(B>C) or enable(C>B) is forced there (read by rotation from
/// enable(A>B) and enable(A>C), layers 1 and 2 of `values`; layer 0 is not
/// read). One pass over the rotation orbits, as the analysis counts.
pub fn solo_a_known_losses(game: &Cc3, values: &CompressedLayers, threads: usize) -> RankSet {
    let set = RankSet::new(game.position_count());
    let third = game.ranker.placements() as u64;
    orbit_values_pass(
        game,
        values,
        [false, true, true],
        "solo(A)'s known losses",
        0..third,
        threads,
        |_: &mut (), _, r, v| {
            for (j, &rank) in r.iter().enumerate() {
                let a = answers_from(v, j);
                if a.enable[1][2] || a.enable[2][1] {
                    set.insert(rank);
                }
            }
        },
    );
    set
}

/// [`solo_a_known_losses`] from the job's enable tablebases in `dir`, or
/// `None` while either is not written.
pub fn solo_a_known_losses_from(
    game: &Cc3,
    dir: &Path,
    job: &SolvedJob,
    threads: usize,
) -> Result<Option<RankSet>, ResultsError> {
    let written = |q: &str| job.layers.iter().any(|l| l.summary.question == q && l.tablebase.is_some());
    if !SEEDS.iter().all(|q| written(q)) {
        return Ok(None);
    }
    let open = |q: &str| job.open(dir, q, retro_games::cc3::RANK_ORDER);
    let readers = [None, Some(open(SEEDS[0])?), Some(open(SEEDS[1])?)];
    let layers = CompressedLayers::from_some_tablebases(readers, game.ranker.placements() as u64, CHUNK_POSITIONS)?;
    Ok(Some(solo_a_known_losses(game, &layers, threads)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TestDir;
    use retro_engine::layout::Layout;
    use retro_engine::memsolve::{solve, solve_with_known_losses};
    use retro_engine::tablebase::{TablebaseHeader, TablebaseReader, TablebaseWriter, VALUE_LOSS, VALUE_WIN};
    use retro_engine::values::tablebase_value;
    use retro_games::Question;
    use retro_probe::cc3::answers_with;

    /// The order-1 layers solved in memory: solo(A)'s values, and the two
    /// enable layers as tablebase files in `dir`.
    fn layers(game: &Cc3, dir: &Path) -> (Vec<u8>, [TablebaseReader; 2]) {
        let layout = Layout::new(game.position_count(), 3, 64, 64);
        let values = |q| solve(game, q, &layout, 2).unwrap().bytes.iter().map(|&b| tablebase_value(b)).collect();
        let solo: Vec<u8> = values(Question::solo(0));
        let readers = [(0u8, 1u8), (0, 2)].map(|(x, y)| {
            let v: Vec<u8> = values(Question::enable(x, y));
            let path = dir.join(format!("enable_{x}_{y}.tb"));
            let header = TablebaseHeader::new("cc3", serde_json::json!({}), "test", v.len() as u64, 64, "x");
            let mut w = TablebaseWriter::create(&path, header).unwrap();
            for block in v.chunks(64) {
                w.push_values(block).unwrap();
            }
            w.finish().unwrap();
            TablebaseReader::open(&path).unwrap()
        });
        (solo, readers)
    }

    #[test]
    fn the_known_losses_are_the_positions_where_b_and_c_force_one_of_their_wins() {
        let dir = TestDir::new("seeds");
        let game = Cc3::new(1).unwrap();
        let (solo, [ab, ac]) = layers(&game, dir.path());
        let third = game.ranker.placements() as u64;
        let store = CompressedLayers::from_some_tablebases([None, Some(ab), Some(ac)], third, 16).unwrap();
        let known = solo_a_known_losses(&game, &store, 2);
        // The definition, position by position.
        let mut reader = crate::cc3::analysis::LayerValues::reader(&store);
        let mut count = 0;
        for rank in 0..game.position_count() {
            // Layer 0 (solo(A)) is not in the store: read as DRAW.
            let a: Result<_, ()> = answers_with(&game, &game.unrank(rank), |layer, r| {
                Ok(retro_probe::Value::from_code(if layer == 0 {
                    0
                } else {
                    crate::cc3::analysis::LayerReader::value(&mut reader, layer, r)
                }))
            });
            let a = a.unwrap();
            let want = a.enable[1][2] || a.enable[2][1];
            assert_eq!(known.contains(rank), want, "rank {rank}");
            // Known losses are solo(A) losses, and most of them.
            assert!(!want || solo[rank as usize] == VALUE_LOSS, "rank {rank}");
            count += u64::from(want);
        }
        assert_eq!(known.count(), count);
        let losses = solo.iter().filter(|&&v| v == VALUE_LOSS).count() as u64;
        assert!(count > losses / 2, "{count} of {losses}");
        // solo(A) started from them is solo(A).
        let layout = Layout::new(game.position_count(), 3, 64, 64);
        let seeded = solve_with_known_losses(&game, Question::solo(0), &layout, &|r| known.contains(r), 2).unwrap();
        let values: Vec<u8> = seeded.bytes.iter().map(|&b| tablebase_value(b)).collect();
        assert_eq!(values, solo);
        assert!(solo.contains(&VALUE_WIN));
    }
}
