//! Reads solved tablebases without the rest of the system: open a directory,
//! probe a position by its text or by its rank, from many threads (`&self`),
//! and list a position's moves with their values. No async runtime, no
//! network: the file container is in `retro_engine::tablebase`, the rank orders
//! in `retro_games`, and both are specified in docs/FORMAT.md.
//!
//! ```no_run
//! let tb = retro_probe::open(std::path::Path::new("tablebases/stage1")).unwrap();
//! if let retro_probe::Tablebases::ThreePlayer(p) = tb {
//!     let start = p.game.start();
//!     println!("{}", retro_probe::cc3::text(&p.probe(&start).unwrap()));
//! }
//! ```

mod any;
pub mod cc2;
pub mod cc3;
mod layer;
pub mod ranked;
pub mod recorded;
mod value;

pub use layer::{Layer, Plies};
pub use recorded::TablebaseEntry;
pub use value::Value;

use retro_engine::tablebase::{TablebaseError, TablebaseReader};
use std::path::Path;

/// Why a tablebase directory cannot be probed, or a position not answered.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A file could not be read, or failed its checks.
    #[error(transparent)]
    Tablebase(#[from] TablebaseError),
    /// A layer file (or the directory) is missing; the text says what to do.
    #[error("{0}")]
    Missing(String),
    /// The files do not belong together, or not to this program's game.
    #[error("{0}")]
    Mismatch(String),
    /// A position's text or rank does not name a position of the game.
    #[error("{0}")]
    Notation(String),
    /// A report could not be put into JSON.
    #[error("cannot encode the report as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// A directory of tablebases, opened by the kind of game its files hold.
// One per opened directory: the size difference of the variants does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Tablebases {
    /// Three-player Chinese checkers: `solo_A.tb`, `enable_A_B.tb`, `enable_A_C.tb`.
    ThreePlayer(cc3::Prober),
    /// Two-player Chinese checkers: `solo_1.tb`.
    TwoPlayer(cc2::Prober),
    /// The ranked three-player game: `top2_A.tb`.
    Ranked(ranked::RankedProber),
}

/// Opens the tablebases in `dir`: two-player when it holds `solo_1.tb`,
/// the ranked game when it holds `top2_A.tb`, three-player otherwise (whose
/// error then says what is missing).
pub fn open(dir: &Path) -> Result<Tablebases, ProbeError> {
    let has = |layer: &str| dir.join(retro_engine::tablebase::layer_file_name(layer)).exists();
    if has(cc2::LAYER) {
        return cc2::Prober::open(dir).map(Tablebases::TwoPlayer);
    }
    if has(retro_games::cc3::RANKED_QUESTION) {
        return ranked::RankedProber::open(dir).map(Tablebases::Ranked);
    }
    cc3::Prober::open(dir).map(Tablebases::ThreePlayer)
}

/// Refuses a tablebase whose header records another rank order than `want`
/// (or none): its values would be read at the wrong positions, and totals
/// over the whole space would not even show it.
pub fn check_rank_order(r: &TablebaseReader, want: u32) -> Result<(), ProbeError> {
    let got = &r.header().params["rank_order"];
    if *got != want {
        return Err(ProbeError::Mismatch(format!(
            "{}: written with rank order {got}, this program uses {want}; solve the plan again with this version \
             (into a fresh checkpoint directory)",
            r.path().display()
        )));
    }
    Ok(())
}
