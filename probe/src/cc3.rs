//! Three-player Chinese checkers: the 12 forcing answers of a position from
//! the three computed layers (solo(A), enable(A>B), enable(A>C)) by rotation,
//! its category, and a prober that reads them from tablebase files (one block
//! per lookup) with every legal move's child.

use crate::{Layer, Plies, ProbeError, Value, check_rank_order};
use retro_engine::tablebase::{TablebaseReader, depth_file_name, layer_file_name};
use retro_games::GameKind;
use retro_games::cc3::{Cc3, Outcome, PLAYER_NAMES, Position, for_each_move};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The three computed layers, in this order; rotation gives the other nine.
pub const COMPUTED_LAYERS: [&str; 3] = ["solo(A)", "enable(A>B)", "enable(A>C)"];

/// Names of the six enable questions, as `X>Y`.
pub const ENABLE_NAMES: [&str; 6] = ["A>B", "A>C", "B>A", "B>C", "C>A", "C>B"];

/// The six (X, Y) pairs of [`ENABLE_NAMES`].
pub const ENABLE_PAIRS: [(usize, usize); 6] = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)];

/// All 12 answers at one position (pairout(X) is solo(X) == LOSS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answers {
    /// solo(A), solo(B), solo(C).
    pub solo: [Value; 3],
    /// enable(X>Y) forced, indexed `[X][Y]` (diagonal unused).
    pub enable: [[bool; 3]; 3],
}

/// Category of a position (the first that applies).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Someone has won (illegal placements are counted here too).
    Terminal,
    /// Some player can force its own win.
    SoloWin,
    /// Some player can force at least a draw on its own and nobody wins.
    SpoilerDraw,
    /// Some pair can hand the win to one of them, who cannot force it alone.
    Kingmaker,
    /// None of the above (expected never).
    Other,
}

impl Category {
    /// The name used in summary.json.
    pub fn key(self) -> &'static str {
        match self {
            Category::Terminal => "terminal",
            Category::SoloWin => "solo_win",
            Category::SpoilerDraw => "spoiler_draw",
            Category::Kingmaker => "kingmaker",
            Category::Other => "other",
        }
    }
}

/// Ranks of `pos`, `R(pos)` and `R^2(pos)` (R the 120-degree rotation).
pub fn rotation_ranks(game: &Cc3, pos: &Position) -> [u64; 3] {
    let r1 = pos.rotated(&game.star);
    let r2 = r1.rotated(&game.star);
    [game.rank(pos), game.rank(&r1), game.rank(&r2)]
}

/// The answers at `R^j P` from the three layers' stored codes at the ranks of
/// `P`, `R P` and `R^2 P` (`v[layer][i]` at the rank of `R^i P`; the analysis
/// passes read the codes straight from decoded blocks). The rotation ranks
/// of `R^j P` are those of `P` shifted by `j`, so one orbit's nine values give
/// the answers at all three of its positions.
pub fn answers_from(v: &[[u8; 3]; 3], j: usize) -> Answers {
    let (i0, i1, i2) = (j % 3, (j + 1) % 3, (j + 2) % 3);
    let win = |layer: usize, i: usize| Value::from_code(v[layer][i]) == Value::Win;
    let mut enable = [[false; 3]; 3];
    enable[0][1] = win(1, i0);
    enable[1][2] = win(1, i2);
    enable[2][0] = win(1, i1);
    enable[0][2] = win(2, i0);
    enable[1][0] = win(2, i2);
    enable[2][1] = win(2, i1);
    let solo = [v[0][i0], v[0][i2], v[0][i1]].map(Value::from_code);
    Answers { solo, enable }
}

/// The 12 answers at `pos`, reading layer values through `value(layer, rank)`.
/// solo(B)(P) = solo(A)(R^2 P), solo(C)(P) = solo(A)(R P); enable(B>C) and
/// enable(C>A) come from enable(A>B) the same way, enable(B>A) and enable(C>B)
/// from enable(A>C).
pub fn answers_with<E>(
    game: &Cc3,
    pos: &Position,
    mut value: impl FnMut(usize, u64) -> Result<Value, E>,
) -> Result<Answers, E> {
    let ranks = rotation_ranks(game, pos);
    let mut v = [[0u8; 3]; 3];
    for (layer, row) in v.iter_mut().enumerate() {
        for (i, &r) in ranks.iter().enumerate() {
            row[i] = value(layer, r)?.code();
        }
    }
    Ok(answers_from(&v, 0))
}

/// The category of `pos` given its answers.
pub fn category(game: &Cc3, pos: &Position, a: &Answers) -> Category {
    category_of(pos.outcome(&game.star) == Outcome::Ongoing, a)
}

/// The category of a position given whether its game is still on and its answers.
pub fn category_of(ongoing: bool, a: &Answers) -> Category {
    if !ongoing {
        return Category::Terminal;
    }
    if a.solo.contains(&Value::Win) {
        return Category::SoloWin;
    }
    if a.solo.contains(&Value::Draw) {
        return Category::SpoilerDraw;
    }
    if ENABLE_PAIRS.iter().any(|&(x, y)| a.enable[x][y] && a.solo[y] != Value::Win) {
        return Category::Kingmaker;
    }
    Category::Other
}

/// The three computed layers of one three-player job, opened for probing.
/// Every lookup takes `&self` (positioned reads, no shared cache), so one
/// prober serves many threads.
pub struct Prober {
    /// The game, from the files' headers.
    pub game: Cc3,
    layers: [Layer; 3],
}

/// Answers at one position, in words.
#[derive(Clone, Debug, Serialize)]
pub struct PositionReport {
    /// The position in the text notation.
    pub position: String,
    /// Its rank.
    pub rank: u64,
    /// Player to move.
    pub to_move: String,
    /// "ongoing", "won by X" or "illegal".
    pub outcome: String,
    /// Category.
    pub category: String,
    /// solo(X): win / loss / draw.
    pub solo: BTreeMap<String, String>,
    /// pairout(X): the other two can keep X from winning.
    pub pairout: BTreeMap<String, bool>,
    /// enable(X>Y) forced.
    pub enable: BTreeMap<String, bool>,
    /// Plies to the end under best play of each decided solo answer and
    /// forced enable, by question (`solo(B)`, `enable(C>A)`), where the
    /// layers' depth files keep them; absent for a draw, an enable not
    /// forced, or a depth not kept.
    pub plies: BTreeMap<String, u32>,
}

/// A move and what it leads to.
#[derive(Clone, Debug, Serialize)]
pub struct MoveReport {
    /// `from-to` by cell names, or `pass`.
    #[serde(rename = "move")]
    pub mv: String,
    /// The child position.
    pub child: PositionReport,
}

/// The probe result.
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    /// The position.
    pub position: PositionReport,
    /// Every legal move with its child's answers.
    pub moves: Vec<MoveReport>,
}

/// Why a three-player layer file is missing: the directory does not exist,
/// holds another game's tablebases, or the plan was not solved yet.
fn missing_layer(dir: &Path, path: &Path) -> ProbeError {
    if !dir.is_dir() {
        return ProbeError::Missing(format!(
            "{}: no such directory (solve a plan first; its [output] dir holds the tablebases)",
            dir.display()
        ));
    }
    let other = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tb"))
        .find_map(|p| TablebaseReader::open(&p).ok());
    ProbeError::Missing(match other {
        Some(r) if r.header().game != GameKind::Cc3.as_str() => format!(
            "{} holds {} tablebases ({}), not three-player Chinese checkers: `coordinator probe` answers the \
             three-player questions; explore this directory with `coordinator serve --tablebase {}`",
            dir.display(),
            r.header().game,
            r.path().display(),
            dir.display()
        ),
        _ => format!("{}: no such tablebase (solve the plan first)", path.display()),
    })
}

impl Prober {
    /// Opens `solo_A.tb`, `enable_A_B.tb` and `enable_A_C.tb` in `dir` and checks
    /// that they belong together.
    pub fn open(dir: &Path) -> Result<Prober, ProbeError> {
        let mut readers = Vec::new();
        for q in COMPUTED_LAYERS {
            let path = dir.join(layer_file_name(q));
            if !path.exists() {
                return Err(missing_layer(dir, &path));
            }
            readers.push(TablebaseReader::open(&path)?);
        }
        check_rank_order(&readers[0], retro_games::cc3::RANK_ORDER)?;
        for (r, q) in readers.iter().zip(COMPUTED_LAYERS) {
            let h = r.header();
            if h.layer != q || h.game != GameKind::Cc3.as_str() {
                return Err(ProbeError::Mismatch(format!(
                    "{}: header says game {} layer {}, expected cc3 layer {q}",
                    r.path().display(),
                    h.game,
                    h.layer
                )));
            }
        }
        // The three must come from one job. When one differs, the other two
        // agreeing say which file is the stranger (comparing each with the
        // first file blamed the second one when the first was foreign).
        let key = |r: &TablebaseReader| (r.header().params.clone(), r.header().plan_hash.clone());
        let keys: Vec<_> = readers.iter().map(key).collect();
        if keys.iter().any(|k| *k != keys[0]) {
            let Some(majority) = keys.iter().find(|k| keys.iter().filter(|o| o == k).count() >= 2) else {
                let files: Vec<String> = readers.iter().map(|r| r.path().display().to_string()).collect();
                return Err(ProbeError::Mismatch(format!(
                    "{} come from three different jobs (plans {}, {}, {}); restore the job's own files",
                    files.join(", "),
                    keys[0].1,
                    keys[1].1,
                    keys[2].1
                )));
            };
            let (params, plan) = majority;
            let stranger = readers.iter().zip(&keys).find(|(_, k)| *k != majority).expect("one file differs");
            let h = stranger.0.header();
            return Err(ProbeError::Mismatch(format!(
                "{}: header says {} plan {}, but the directory's other two layers are {params} plan {plan}; this \
                 file is another job's: restore this job's own",
                stranger.0.path().display(),
                h.params,
                h.plan_hash
            )));
        }
        let h0 = readers[0].header().clone();
        let path = readers[0].path().display().to_string();
        let order =
            h0.params
                .get("order")
                .and_then(|v| v.as_u64())
                .ok_or_else(|| ProbeError::Mismatch(format!("{path}: the header has no order")))? as u32;
        let game = Cc3::new(order).map_err(|e| ProbeError::Mismatch(format!("{path}: {e}")))?;
        if game.ranker.positions() != h0.positions as u128 {
            return Err(ProbeError::Mismatch(format!(
                "{path}: holds {} positions, order {order} has {}",
                h0.positions,
                game.ranker.positions()
            )));
        }
        let [a, b, c]: [TablebaseReader; 3] =
            readers.try_into().map_err(|_| ProbeError::Mismatch("three layers expected".into()))?;
        let depth = |q: &str| dir.join(depth_file_name(q));
        let layers = [
            Layer::with_depth_at(a, &depth(COMPUTED_LAYERS[0]))?,
            Layer::with_depth_at(b, &depth(COMPUTED_LAYERS[1]))?,
            Layer::with_depth_at(c, &depth(COMPUTED_LAYERS[2]))?,
        ];
        Ok(Prober { game, layers })
    }

    /// Ranks in the layer file (its header's positions).
    pub fn layer_positions(&self) -> u64 {
        self.layers[0].reader().header().positions
    }

    /// A position from its text notation (see `coordinator board`).
    pub fn parse(&self, text: &str) -> Result<Position, ProbeError> {
        self.game.parse(text).map_err(|e| ProbeError::Notation(e.to_string()))
    }

    /// The position of a rank (the inverse of [`Cc3::rank`]).
    pub fn position_of(&self, rank: u64) -> Result<Position, ProbeError> {
        if u128::from(rank) >= self.game.ranker.positions() {
            return Err(ProbeError::Notation(format!(
                "rank {rank} is past the last position ({} positions)",
                self.game.ranker.positions()
            )));
        }
        Ok(self.game.unrank(rank))
    }

    /// The value of computed layer `layer` (index into [`COMPUTED_LAYERS`]) at `rank`.
    pub fn layer_value(&self, layer: usize, rank: u64) -> Result<Value, ProbeError> {
        self.layers[layer].value(rank)
    }

    /// The plies to the end recorded for computed layer `layer` at `rank`
    /// (its depth file's word; [`Plies::Unknown`] without one).
    pub fn layer_plies(&self, layer: usize, rank: u64) -> Result<Plies, ProbeError> {
        self.layers[layer].plies(rank)
    }

    /// The 12 answers at `pos`.
    pub fn answers(&self, pos: &Position) -> Result<Answers, ProbeError> {
        answers_with(&self.game, pos, |layer, rank| self.layers[layer].value(rank))
    }

    /// The values of many `(layer, rank)` lookups (layer as in
    /// [`COMPUTED_LAYERS`]), read in sorted order: each reader caches one block,
    /// so every block is read and decompressed once per call instead of once
    /// per lookup. A layer index above 2 is a programming error (it panics).
    pub fn values(&self, requests: &[(usize, u64)]) -> Result<Vec<Value>, ProbeError> {
        let mut order: Vec<usize> = (0..requests.len()).collect();
        order.sort_unstable_by_key(|&i| requests[i]);
        let mut out = vec![Value::Illegal; requests.len()];
        for i in order {
            let (layer, rank) = requests[i];
            out[i] = self.layers[layer].value(rank)?;
        }
        Ok(out)
    }

    /// Describes one position.
    pub fn report(&self, pos: &Position) -> Result<PositionReport, ProbeError> {
        let a = self.answers(pos)?;
        let g = &self.game;
        Ok(PositionReport {
            position: g.format(pos),
            rank: g.rank(pos),
            to_move: PLAYER_NAMES[pos.turn as usize].to_string(),
            outcome: match pos.outcome(&g.star) {
                Outcome::Ongoing => "ongoing".into(),
                Outcome::Won(p) => format!("won by {}", PLAYER_NAMES[p as usize]),
                Outcome::Illegal => "illegal".into(),
            },
            category: category(g, pos, &a).key().into(),
            solo: (0..3).map(|p| (PLAYER_NAMES[p].to_string(), a.solo[p].word().to_string())).collect(),
            pairout: (0..3).map(|p| (PLAYER_NAMES[p].to_string(), a.solo[p] == Value::Loss)).collect(),
            enable: ENABLE_PAIRS
                .iter()
                .enumerate()
                .map(|(i, &(x, y))| (ENABLE_NAMES[i].to_string(), a.enable[x][y]))
                .collect(),
            plies: self.plies(pos)?,
        })
    }

    /// The recorded plies of every question at `pos` that has them (see
    /// [`PositionReport::plies`]): each question is its layer at a rotation
    /// of `pos`, as in [`answers_from`].
    pub fn plies(&self, pos: &Position) -> Result<BTreeMap<String, u32>, ProbeError> {
        let mut out = BTreeMap::new();
        if !self.layers.iter().any(Layer::has_depth) {
            return Ok(out);
        }
        let ranks = rotation_ranks(&self.game, pos);
        // (question, layer, index into the rotation ranks), as answers_from reads them.
        let questions = [
            ("solo(A)", 0, 0),
            ("solo(B)", 0, 2),
            ("solo(C)", 0, 1),
            ("enable(A>B)", 1, 0),
            ("enable(B>C)", 1, 2),
            ("enable(C>A)", 1, 1),
            ("enable(A>C)", 2, 0),
            ("enable(B>A)", 2, 2),
            ("enable(C>B)", 2, 1),
        ];
        for (question, layer, i) in questions {
            // A two-valued enable layer's LOSS is a terminal won by another
            // player: "not forced", with no plies to tell.
            if layer > 0 && self.layers[layer].value(ranks[i])? != Value::Win {
                continue;
            }
            if let Plies::Known(p) = self.layers[layer].plies(ranks[i])? {
                out.insert(question.to_string(), p);
            }
        }
        Ok(out)
    }

    /// The position and every move with its child.
    pub fn probe(&self, pos: &Position) -> Result<Probe, ProbeError> {
        let position = self.report(pos)?;
        let mut moves = Vec::new();
        if pos.outcome(&self.game.star) == Outcome::Ongoing {
            let p = pos.turn as usize;
            let next = (pos.turn + 1) % 3;
            let mut list = Vec::new();
            for_each_move(&self.game.star, &pos.pieces, p, &mut |from, to| list.push((from, to)));
            for (from, to) in &list {
                let mut pieces = pos.pieces;
                pieces[p] ^= (1u128 << from) | (1u128 << to);
                let child = Position { pieces, turn: next };
                let mv = format!("{}-{}", self.game.star.names[*from], self.game.star.names[*to]);
                moves.push(MoveReport { mv, child: self.report(&child)? });
            }
            if list.is_empty() {
                let child = Position { pieces: pos.pieces, turn: next };
                moves.push(MoveReport { mv: "pass".into(), child: self.report(&child)? });
            }
        }
        Ok(Probe { position, moves })
    }
}

/// solo and enable answers of a position on one line.
pub fn answers_line(r: &PositionReport) -> String {
    let solo: Vec<String> = r.solo.iter().map(|(p, v)| format!("solo({p}) {v}")).collect();
    let enable: Vec<String> = r.enable.iter().map(|(k, v)| format!("{k} {}", if *v { "yes" } else { "no" })).collect();
    format!("{}; enable: {}", solo.join(", "), enable.join(", "))
}

/// The probe as text.
pub fn text(p: &Probe) -> String {
    let r = &p.position;
    let mut out = format!(
        "position {} (rank {}), {} to move, {}\ncategory: {}\n{}\npairout: {}\n",
        r.position,
        r.rank,
        r.to_move,
        r.outcome,
        r.category,
        answers_line(r),
        r.pairout.iter().map(|(k, v)| format!("{k} {}", if *v { "yes" } else { "no" })).collect::<Vec<_>>().join(", ")
    );
    if !r.plies.is_empty() {
        let plies: Vec<String> = r.plies.iter().map(|(q, p)| format!("{q} {p}")).collect();
        out.push_str(&format!("plies to the end: {}\n", plies.join(", ")));
    }
    if p.moves.is_empty() {
        out.push_str("no moves (the game is over)\n");
    } else {
        out.push_str(&format!("{} moves:\n", p.moves.len()));
        for m in &p.moves {
            out.push_str(&move_line(m, "  "));
        }
    }
    out
}

/// One move and its child's answers on a line, after `indent`.
pub fn move_line(m: &MoveReport, indent: &str) -> String {
    format!("{indent}{:<8} -> {} [{}] {}\n", m.mv, m.child.position, m.child.category, answers_line(&m.child))
}
