//! `summary.json` of a two-player (`cc2`) job: wins, losses, draws and illegal
//! positions over the whole space and by side to move, counted from the
//! tablebase file itself, and the value of the start position.

use crate::ResultsError;
use crate::report::{program_of, thousands};
use crate::solved::{LayerSummary, SolvedJob, TablebaseSummary};
use retro_engine::tablebase::{VALUE_DRAW, VALUE_ILLEGAL, VALUE_LOSS, VALUE_WIN, unpack_value};
use retro_games::GameKind;
use retro_games::cc2::{Cc2, PLAYER_NAMES};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Counts of one scope. Values are player 1's: `wins` are positions won for
/// player 1 whichever side is to move, `losses` those won for player 2.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// Positions in the scope.
    pub positions: u64,
    /// Won for player 1.
    pub wins: u64,
    /// Won for player 2.
    pub losses: u64,
    /// Neither side can force a win (repetition).
    pub draws: u64,
    /// The player to move already meets its win condition.
    pub illegal: u64,
}

/// The start position and its value.
#[derive(Clone, Debug, Serialize)]
pub struct StartValue {
    /// The start in the text notation.
    pub position: String,
    /// "win" (for player 1) | "loss" | "draw".
    pub value: String,
}

/// The whole two-player summary.
#[derive(Clone, Debug, Serialize)]
pub struct TwoPlayerSummary {
    /// Job name.
    pub job: String,
    /// Always `cc2`.
    pub game: GameKind,
    /// Board side m.
    pub size: u32,
    /// Pieces per player.
    pub pieces: u32,
    /// True when the run stored player 1 to move only and derived the other
    /// half by colour symmetry.
    pub colour_symmetry: bool,
    /// True when the run also folded the positions by the board's mirror.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mirror_symmetry: bool,
    /// Six pieces: the reading of the part-2 illegal pattern the run used
    /// (`literal` or `as-published`); absent for other piece counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part2: Option<&'static str>,
    /// Plan hash.
    pub plan_hash: String,
    /// Program version.
    pub program_version: String,
    /// The git commit the program was built from (`unknown` outside git).
    pub program_commit: String,
    /// Counts over every position (both sides to move, no symmetry), flattened
    /// so the keys read `positions`, `wins`, `losses`, `draws`, `illegal`.
    #[serde(flatten)]
    pub all: Counts,
    /// The same split by the player to move (`"1"`, `"2"`).
    pub by_side_to_move: BTreeMap<String, Counts>,
    /// The start position, player 1 to move.
    pub start: StartValue,
    /// Per computed layer.
    pub layers: Vec<LayerSummary>,
    /// The tablebase files.
    pub tablebases: Vec<TablebaseSummary>,
    /// Each layer's depth file (the plies to the end of every position,
    /// docs/FORMAT.md), beside its tablebase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depth_files: Vec<TablebaseSummary>,
    /// Seconds spent counting.
    pub analysis_seconds: f64,
}

/// Computes the summary from the `solo(1)` tablebase `job` recorded.
pub fn compute(game: &Cc2, dir: &Path, job: &SolvedJob) -> Result<TwoPlayerSummary, ResultsError> {
    let started = std::time::Instant::now();
    let mut reader = job.open(dir, "solo(1)", game.rank_order())?;
    let per_turn = game.per_turn();
    let mut sides = [Counts::default(), Counts::default()];
    // Folded by colour symmetry, the file holds player 1 to move only; the
    // positions with player 2 to move are their mirror images, negated.
    // Folded by the mirror, a rank may stand for a position and its image.
    let stored = if game.is_folded() { per_turn } else { 2 * per_turn };
    let block = game.block_len();
    // Read a tablebase block at a time (a quarter byte a position would be
    // the whole file in memory, and the analysis would set the job's peak).
    let file_block = reader.header().block_positions;
    for b in 0..reader.block_count() {
        let packed = reader.read_block(b)?;
        let first = b * file_block;
        let end = (first + reader.header().block_len(b)).min(stored);
        let mut rank = first;
        while rank < end {
            // A game block's ranks share their multiplicity and side to move.
            let run_end = ((rank / block + 1) * block).min(end);
            let weight = game.multiplicity(rank);
            let counts = &mut sides[(rank / per_turn) as usize];
            for r in rank..run_end {
                let c = match unpack_value(&packed, r - first) {
                    VALUE_WIN => &mut counts.wins,
                    VALUE_LOSS => &mut counts.losses,
                    VALUE_DRAW => &mut counts.draws,
                    VALUE_ILLEGAL => &mut counts.illegal,
                    other => {
                        return Err(ResultsError::Inconsistent(format!(
                            "rank {r}: value {other} is not a tablebase value"
                        )));
                    }
                };
                *c += weight;
                counts.positions += weight;
            }
            rank = run_end;
        }
    }
    if game.is_folded() {
        let one = sides[0].clone();
        sides[1] = Counts { wins: one.losses, losses: one.wins, ..one };
    }
    let mut all = Counts::default();
    for s in &sides {
        all.positions += s.positions;
        all.wins += s.wins;
        all.losses += s.losses;
        all.draws += s.draws;
        all.illegal += s.illegal;
    }
    if all.positions != 2 * game.positions_per_side() {
        return Err(ResultsError::Inconsistent(format!(
            "counted {} positions, the game has {}",
            all.positions,
            2 * game.positions_per_side()
        )));
    }
    let start = game.start();
    let value = retro_probe::Value::from_code(reader.probe(game.rank(&start))?).word();
    Ok(TwoPlayerSummary {
        job: job.job.clone(),
        game: GameKind::Cc2,
        size: game.board.size,
        pieces: game.board.pieces,
        colour_symmetry: game.is_folded(),
        mirror_symmetry: game.folding().mirror,
        part2: game.board.part2.as_ref().map(|(_, reading)| reading.name()),
        plan_hash: job.plan_hash.clone(),
        program_version: env!("CARGO_PKG_VERSION").into(),
        program_commit: job.program_commit.clone(),
        all,
        by_side_to_move: PLAYER_NAMES.iter().map(|p| p.to_string()).zip(sides).collect(),
        start: StartValue { position: game.format(&start), value: value.into() },
        layers: job.layer_summaries(),
        tablebases: job.tablebase_summaries(),
        depth_files: job.depth_summaries(),
        analysis_seconds: started.elapsed().as_secs_f64(),
    })
}

/// The short human table printed at the end of a two-player run.
pub fn human_table(s: &TwoPlayerSummary) -> String {
    let mut out = format!(
        "{} (two-player Chinese checkers, {} x {}, {} per player): {} positions\n",
        s.job, s.size, s.size, s.pieces, s.all.positions
    );
    if let Some(reading) = s.part2 {
        out.push_str(&format!("part-2 illegal pattern read {reading}\n"));
    }
    out.push_str("side to move   won for 1     won for 2     draws   illegal\n");
    let row = |name: &str, c: &Counts| {
        format!("{name:<12} {:>11} {:>13} {:>9} {:>9}\n", c.wins, c.losses, c.draws, c.illegal)
    };
    for (side, c) in &s.by_side_to_move {
        out.push_str(&row(&format!("player {side}"), c));
    }
    out.push_str(&row("both", &s.all));
    out.push_str(&format!("start {}: {} for player 1\n", s.start.position, s.start.value));
    for l in &s.layers {
        out.push_str(&format!("layer {}: {} rounds, {:.1} s\n", l.question, l.rounds, l.seconds));
    }
    out
}

/// The Markdown ledger of a two-player summary.json (`coordinator ledger`).
pub fn ledger_markdown(v: &serde_json::Value) -> String {
    let n = |x: &serde_json::Value| x.as_u64().map(thousands).unwrap_or_else(|| x.to_string());
    let mut out = format!(
        "## {} — two-player Chinese checkers, {} x {}, {} per player\n\nProduced by `coordinator ledger` from the \
         run's summary.json (plan {}, program {}{}).\n\n",
        v["job"].as_str().unwrap_or("?"),
        v["size"],
        v["size"],
        v["pieces"],
        v["plan_hash"].as_str().unwrap_or("?"),
        program_of(v),
        match (v["colour_symmetry"] == true, v["mirror_symmetry"] == true) {
            (true, true) => "; player 1 to move stored, the other half by colour symmetry, folded by the mirror",
            (true, false) => "; player 1 to move stored, the other half by colour symmetry",
            (false, true) => "; folded by the mirror",
            (false, false) => "",
        }
    );
    if let Some(reading) = v["part2"].as_str() {
        out.push_str(&format!("The part-2 illegal pattern read `{reading}` (docs/NOTATION.md).\n\n"));
    }
    out.push_str("| side to move | positions | won for player 1 | won for player 2 | draws | illegal |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|\n");
    let row = |name: &str, c: &serde_json::Value| {
        format!(
            "| {name} | {} | {} | {} | {} | {} |\n",
            n(&c["positions"]),
            n(&c["wins"]),
            n(&c["losses"]),
            n(&c["draws"]),
            n(&c["illegal"])
        )
    };
    for side in ["1", "2"] {
        out.push_str(&row(&format!("player {side}"), &v["by_side_to_move"][side]));
    }
    out.push_str(&row("both", v));
    out.push_str(&format!(
        "\nStart `{}`: {} for player 1.\n",
        v["start"]["position"].as_str().unwrap_or("?"),
        v["start"]["value"].as_str().unwrap_or("?")
    ));
    for l in v["layers"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "Layer {}: {} rounds, {:.1} s.\n",
            l["question"].as_str().unwrap_or("?"),
            l["rounds"],
            l["seconds"].as_f64().unwrap_or(0.0)
        ));
    }
    for t in v["tablebases"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "Tablebase `{}`: {} bytes, sha256 `{}`.\n",
            t["file"].as_str().unwrap_or("?"),
            n(&t["bytes"]),
            t["sha256"].as_str().unwrap_or("?")
        ));
    }
    out.push('\n');
    out
}
