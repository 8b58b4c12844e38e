//! The job as the coordinator hands it to workers (part of the plan).

use retro_engine::layout::Layout;
use retro_games::cc2::{Cc2, Folding, Part2};
use retro_games::cc3::{Cc3, Objective, RANKED_QUESTION, Ranked};
use retro_games::{AnyGame, GameKind, Question};
use serde::{Deserialize, Serialize};

/// Everything a worker needs to know about the job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    /// Job name (names directories).
    pub name: String,
    /// The game (`cc3` or `cc2`: the games solved by retrograde layers).
    pub game: GameKind,
    /// Star order (`cc3`; 0 for `cc2`).
    pub order: u32,
    /// Board side m (`cc2` only; absent for `cc3`, which keeps its specs unchanged).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub size: u32,
    /// Pieces per player (`cc2` only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pieces: u32,
    /// Version of the game's rank order this job's files use (0: unrecorded,
    /// from a coordinator older than the field).
    #[serde(default)]
    pub rank_order: u32,
    /// `cc2` only: the rank space is folded by colour symmetry (player 1 to move).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub colour_symmetry: bool,
    /// `cc2` only: the rank space is also folded by the board's mirror.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mirror_symmetry: bool,
    /// `cc2` with six pieces: the reading of the part-2 illegal pattern
    /// (absent otherwise, so other specs keep their bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part2: Option<Part2>,
    /// `cc3` only: the stage game (absent, so other specs keep their bytes)
    /// or the ranked game, where play goes on for second place (docs/RANKED.md).
    #[serde(default, skip_serializing_if = "Objective::is_first_winner")]
    pub objective: Objective,
    /// The computed layers, by question name, in order.
    pub questions: Vec<String>,
    /// Number of shards.
    pub shards: u32,
    /// Positions per tablebase block.
    pub block_positions: u64,
    /// Bytes per undo/checksum chunk.
    pub chunk_bytes: u64,
    /// Hash of the plan's semantic part.
    pub plan_hash: String,
}

/// A spec that names something this build cannot run.
#[derive(Debug, thiserror::Error)]
#[error("job {job}: {why}")]
pub struct SpecError {
    /// The job.
    pub job: String,
    /// What is wrong.
    pub why: String,
}

impl JobSpec {
    /// The symmetries folding a `cc2` job's rank space.
    pub fn folding(&self) -> Folding {
        Folding { colour: self.colour_symmetry, mirror: self.mirror_symmetry }
    }

    fn err(&self, why: String) -> SpecError {
        SpecError { job: self.name.clone(), why }
    }

    /// Builds the game, refusing a job whose rank order is not this build's.
    pub fn game(&self) -> Result<AnyGame, SpecError> {
        let g = self.game_unchecked()?;
        if self.rank_order != g.rank_order() {
            return Err(self.err(format!(
                "the job uses rank order {} of {}, this program uses {}: run workers and coordinator of the \
                 same version",
                self.rank_order,
                self.game,
                g.rank_order()
            )));
        }
        Ok(g)
    }

    fn game_unchecked(&self) -> Result<AnyGame, SpecError> {
        match self.game {
            GameKind::Cc3 => {
                let g = Cc3::new(self.order).map_err(|e| self.err(e.to_string()))?;
                if !g.ranker.fits_u64() {
                    return Err(self.err(format!("order {} is too large to solve (estimate only)", self.order)));
                }
                match self.objective {
                    Objective::FirstWinner => Ok(AnyGame::Cc3(g)),
                    // One layer, top2(A): the other players' are its rotations.
                    Objective::Ranked if self.questions == [RANKED_QUESTION] => {
                        Ok(AnyGame::Ranked(Ranked { cc3: g, objective: 0 }))
                    }
                    Objective::Ranked => Err(self.err(format!(
                        "a ranked job computes the one layer {RANKED_QUESTION}, not {:?}",
                        self.questions
                    ))),
                }
            }
            GameKind::Cc2 => {
                let part2 = self.part2.unwrap_or(Part2::Literal);
                let g = Cc2::with_rules(self.size, self.pieces, self.folding(), part2);
                Ok(AnyGame::Cc2(g.map_err(|e| self.err(e.to_string()))?))
            }
            other => Err(self.err(format!("{other} is not solved by retrograde layers"))),
        }
    }

    /// The game's size parameters as tablebase headers record them.
    pub fn params(&self) -> serde_json::Value {
        match self.game {
            GameKind::Cc2 => {
                let mut params = serde_json::json!({
                    "size": self.size,
                    "pieces": self.pieces,
                    "colour_symmetry": self.colour_symmetry,
                    "rank_order": self.rank_order,
                });
                // Only when set, so that the files of unmirrored jobs keep their bytes.
                if let Some(part2) = self.part2 {
                    params["part2"] = part2.name().into();
                }
                if self.mirror_symmetry {
                    params["mirror_symmetry"] = true.into();
                }
                params
            }
            _ => {
                let mut params = serde_json::json!({ "order": self.order, "rank_order": self.rank_order });
                // Only when ranked, so that the stage game's files keep their bytes.
                if !self.objective.is_first_winner() {
                    params["objective"] = self.objective.name().into();
                }
                params
            }
        }
    }

    /// The shard layout over the game's rank space.
    pub fn layout(&self, positions: u64) -> Layout {
        Layout::new(positions, self.shards, self.block_positions, self.chunk_bytes)
    }

    /// The question of layer `layer`.
    pub fn question(&self, layer: u32) -> Result<Question, SpecError> {
        let name = self.questions.get(layer as usize).ok_or_else(|| self.err(format!("no layer {layer}")))?;
        let q = match self.game {
            GameKind::Cc2 => Cc2::question(name, self.colour_symmetry),
            _ => retro_games::cc3::parse_question(name),
        };
        q.ok_or_else(|| self.err(format!("unknown question {name:?}")))
    }
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job folded by the mirror has its own rank order: a worker that would
    /// build the game without the mirror (one that ignores the field: the
    /// older program) must refuse the job, and the job's own game is built.
    #[test]
    fn a_mirror_folded_job_names_its_own_rank_order() {
        let spec = |mirror_symmetry: bool, rank_order: u32| JobSpec {
            name: "t".into(),
            game: GameKind::Cc2,
            order: 0,
            size: 5,
            pieces: 3,
            rank_order,
            colour_symmetry: true,
            mirror_symmetry,
            part2: None,
            objective: Objective::FirstWinner,
            questions: vec!["solo(1)".into()],
            shards: 1,
            block_positions: 64,
            chunk_bytes: 4096,
            plan_hash: "0".into(),
        };
        let (plain, mirrored) = (retro_games::cc2::RANK_ORDER, retro_games::cc2::RANK_ORDER_MIRRORED);
        assert_ne!(plain, mirrored);
        let game = spec(true, mirrored).game().unwrap();
        assert_eq!(game.rank_order(), mirrored);
        assert!(spec(false, plain).game().is_ok());
        let err = spec(true, plain).game().err().expect("refused").to_string();
        assert!(err.contains("same version"), "{err}");
        // The older program read the spec without the field.
        let old: JobSpec = serde_json::from_value({
            let mut v = serde_json::to_value(spec(true, mirrored)).unwrap();
            v.as_object_mut().unwrap().remove("mirror_symmetry");
            v
        })
        .unwrap();
        assert!(old.game().is_err(), "a rank order 2 job without the mirror is refused");
    }
}
