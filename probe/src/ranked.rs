//! Probing a ranked job's tablebase (docs/RANKED.md): `top2_A.tb`, read as
//! every player's top2 through the rotation, and after a first finish the
//! race for second place.

use crate::{Layer, Plies, ProbeError, Value};
use retro_engine::tablebase::{TablebaseReader, layer_file_name};
use retro_games::GameKind;
use retro_games::cc3::{PLAYER_NAMES, Position, RANK_ORDER, RANKED_QUESTION, Ranked, Standing, for_each_move};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The race for second place at a position where one player finished.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct RaceReport {
    /// The player who finished first.
    pub first: String,
    /// The two racing for second, in turn order from the player to move.
    pub racers: [String; 2],
    /// "win" when the first racer (the player to move) takes 2nd by force,
    /// "loss" when the other does, "draw" when neither can force it.
    pub value: String,
}

/// A position of the ranked game with its values.
#[derive(Clone, Debug, Serialize)]
pub struct RankedReport {
    /// The position in the text notation.
    pub position: String,
    /// Its rank.
    pub rank: u64,
    /// Player to move (for a finished game: the second finisher).
    pub to_move: String,
    /// "ongoing", "A 1st, B 2nd, C 3rd" or "illegal".
    pub outcome: String,
    /// The players whose goal is full, first finisher first when known.
    pub finished: Vec<String>,
    /// top2(X) for each player: "win" | "loss" | "draw" ("illegal" for an illegal rank).
    pub top2: BTreeMap<String, String>,
    /// After one finish, the race for second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub race: Option<RaceReport>,
    /// Plies to the end of each player's decided top2 under best play, where
    /// the layer's depth file keeps them (absent for a draw or a depth not kept).
    pub top2_plies: BTreeMap<String, u32>,
}

/// A move of the ranked game with its child's values.
#[derive(Clone, Debug, Serialize)]
pub struct RankedMove {
    /// `from-to` by cell names, or `pass`.
    #[serde(rename = "move")]
    pub mv: String,
    /// The child.
    pub child: RankedReport,
    /// True when the child keeps the mover's top2 value (after a first
    /// finish, its race value too): a move that holds what the mover has.
    pub keeps: bool,
}

/// A position with its moves.
#[derive(Clone, Debug, Serialize)]
pub struct RankedProbe {
    /// The position's values.
    pub position: RankedReport,
    /// Every legal move (or the pass) of a live position.
    pub moves: Vec<RankedMove>,
}

/// An opened ranked tablebase.
pub struct RankedProber {
    /// The ranked game of the file's star (objective A).
    pub game: Ranked,
    layer: Layer,
}

impl RankedProber {
    /// Opens `top2_A.tb` in `dir`, checking that its header is a ranked job's.
    pub fn open(dir: &Path) -> Result<RankedProber, ProbeError> {
        let path = dir.join(layer_file_name(RANKED_QUESTION));
        if !path.exists() {
            return Err(ProbeError::Missing(format!(
                "{}: no such tablebase (solve a ranked plan, e.g. plans/stage1-ranked.toml, first)",
                path.display()
            )));
        }
        let reader = TablebaseReader::open(&path)?;
        let h = reader.header().clone();
        if h.game != GameKind::Cc3.as_str() || h.layer != RANKED_QUESTION || h.params["objective"] != "ranked" {
            return Err(ProbeError::Mismatch(format!(
                "{}: header says game {} layer {} params {}, expected a ranked cc3 layer {RANKED_QUESTION}",
                path.display(),
                h.game,
                h.layer,
                h.params
            )));
        }
        if h.params["rank_order"] != RANK_ORDER {
            return Err(ProbeError::Mismatch(format!(
                "{}: rank order {}, this program uses {RANK_ORDER}",
                path.display(),
                h.params["rank_order"]
            )));
        }
        let order = h.params["order"].as_u64().unwrap_or(0) as u32;
        let game = Ranked::new(order, 0).map_err(|e| ProbeError::Mismatch(format!("{}: {e}", path.display())))?;
        if game.cc3.ranker.positions() != u128::from(h.positions) {
            return Err(ProbeError::Mismatch(format!(
                "{}: holds {} positions, order {order} has {}",
                path.display(),
                h.positions,
                game.cc3.ranker.positions()
            )));
        }
        let depth = dir.join(retro_engine::tablebase::depth_file_name(RANKED_QUESTION));
        Ok(RankedProber { game, layer: Layer::with_depth_at(reader, &depth)? })
    }

    /// Ranks in the layer file (its header's positions).
    pub fn layer_positions(&self) -> u64 {
        self.layer.reader().header().positions
    }

    /// A position from its text notation.
    pub fn parse(&self, text: &str) -> Result<Position, ProbeError> {
        self.game.cc3.parse(text).map_err(|e| ProbeError::Notation(e.to_string()))
    }

    /// top2(X) at `pos` for each player, as tablebase values: A's at the
    /// position, B's at its preimage under the rotation, C's at its image.
    pub fn top2(&self, pos: &Position) -> Result<[Value; 3], ProbeError> {
        let [a, b, c] = top2_ranks(&self.game.cc3, pos);
        Ok([self.layer.value(a)?, self.layer.value(b)?, self.layer.value(c)?])
    }

    /// The values of one position.
    pub fn report(&self, pos: &Position) -> Result<RankedReport, ProbeError> {
        let top2 = self.top2(pos)?;
        let done = self.game.finished(pos);
        let mover = pos.turn as usize;
        let name = |p: usize| PLAYER_NAMES[p].to_string();
        let standing = self.game.standing(pos);
        let mut finished: Vec<String> = (0..3).filter(|&p| done & (1 << p) != 0).map(name).collect();
        let outcome = match standing {
            Standing::Illegal => "illegal".to_string(),
            Standing::Over { first, second } => {
                let (first, second) = (first as usize, second as usize);
                finished = vec![name(first), name(second)];
                format!("{} 1st, {} 2nd, {} 3rd", name(first), name(second), name(3 - first - second))
            }
            Standing::Live => "ongoing".to_string(),
        };
        let race = (standing == Standing::Live && done.count_ones() == 1).then(|| {
            let first = done.trailing_zeros() as usize;
            let other = 3 - first - mover;
            RaceReport { first: name(first), racers: [name(mover), name(other)], value: top2[mover].word().into() }
        });
        Ok(RankedReport {
            position: self.game.cc3.format(pos),
            rank: self.game.cc3.rank(pos),
            to_move: name(mover),
            outcome,
            finished,
            top2: (0..3).map(|p| (name(p), top2[p].word().to_string())).collect(),
            race,
            top2_plies: self
                .top2_plies(pos)?
                .into_iter()
                .enumerate()
                .filter_map(|(p, d)| Some((name(p), d?)))
                .collect(),
        })
    }

    /// The recorded plies to the end of top2(X) at `pos` for each player.
    pub fn top2_plies(&self, pos: &Position) -> Result<[Option<u32>; 3], ProbeError> {
        let ranks = top2_ranks(&self.game.cc3, pos);
        let mut out = [None; 3];
        for (o, r) in out.iter_mut().zip(ranks) {
            if let Plies::Known(p) = self.layer.plies(r)? {
                *o = Some(p);
            }
        }
        Ok(out)
    }

    /// A position's values and each move with its child's (none when the
    /// game is over or the rank is illegal).
    pub fn probe(&self, pos: &Position) -> Result<RankedProbe, ProbeError> {
        let position = self.report(pos)?;
        let mut moves = Vec::new();
        if position.outcome == "ongoing" {
            let star = &self.game.cc3.star;
            let p = pos.turn as usize;
            let mut list = Vec::new();
            for_each_move(star, &pos.pieces, p, &mut |from, to| list.push((from, to)));
            let mut children = Vec::new();
            self.game.for_each_move_of(pos, &mut |c| children.push(c));
            // The children come in the order of the moves (the pass last, alone).
            let names: Vec<String> = if list.is_empty() {
                vec!["pass".into()]
            } else {
                list.iter().map(|(f, t)| format!("{}-{}", star.names[*f], star.names[*t])).collect()
            };
            let key = PLAYER_NAMES[p].to_string();
            let mine = position.top2[&key].clone();
            for (mv, child) in names.into_iter().zip(children) {
                let child = self.report(&child)?;
                let keeps = child.top2[&key] == mine;
                moves.push(RankedMove { mv, child, keeps });
            }
        }
        Ok(RankedProbe { position, moves })
    }
}

/// A position's values on one line.
pub fn text(p: &RankedProbe) -> String {
    let r = &p.position;
    let top2: Vec<String> = r.top2.iter().map(|(x, v)| format!("top2({x}) {v}")).collect();
    let mut out =
        format!("{} (rank {}), {} to move, {}: {}\n", r.position, r.rank, r.to_move, r.outcome, top2.join(", "));
    if let Some(race) = &r.race {
        out.push_str(&format!(
            "{} finished first; race for 2nd, {} against {}: {} for {}\n",
            race.first, race.racers[0], race.racers[1], race.value, race.racers[0]
        ));
    }
    for m in &p.moves {
        let top2: Vec<String> = m.child.top2.iter().map(|(x, v)| format!("{x} {v}")).collect();
        out.push_str(&format!("  {:<8} {}{}\n", m.mv, top2.join(", "), if m.keeps { "  (keeps)" } else { "" }));
    }
    out
}

/// The ranks at which top2(A)'s layer holds top2(A), top2(B) and top2(C) of
/// `pos`: the position, its preimage under the rotation (B's pieces given to
/// A) and its image ([`crate::cc3::rotation_ranks`] in that order).
pub fn top2_ranks(game: &retro_games::cc3::Cc3, pos: &Position) -> [u64; 3] {
    let [here, image, preimage] = crate::cc3::rotation_ranks(game, pos);
    [here, preimage, image]
}
