//! The position explorer (`coordinator serve`): a position explorer in the browser. One page (plain
//! HTML, CSS and JavaScript with SVG, built into the binary) and a small JSON
//! API over a directory of tablebase files, read through the same code as
//! `coordinator probe` ([`retro_probe::cc3::Prober`], [`retro_results::cc3::witness`]).
//!
//! The game kind comes from the files: `solo_A.tb` (with `enable_A_B.tb` and
//! `enable_A_C.tb`) is a three-player job, `top2_A.tb` a ranked three-player
//! one, `solo_1.tb` a two-player one.
//! A directory holding the `summary.json` of a peg solitaire plan (or
//! directories holding them) is a peg job; one holding only Sylver table
//! summaries is a Sylver one (the Sylver view works over any directory). `/api/info` names the kind and the
//! page picks the view that draws it, so
//! another game plugs in as one more [`Explorer`] variant and one more view in
//! `assets/app.js`. See docs/EXPLORER.md for the API.
//!
//! - [`api`]: routes, query parsing, JSON errors.
//! - [`limits`]: slots per kind of search (503 when full), a deadline per
//!   request, and the stop flag raised when the client goes away.
//! - [`files`]: what the job recorded: layer statistics, the manifest and its files, for download.
//! - [`wire`]: JSON bodies for the errors hyper answers itself (400, 414, 431).
//! - `cc3` / `cc2`: each game's board, positions and moves as JSON.
//! - `depth`: plies to the end of a decided answer, by a bounded search.
//! - [`peg`]: peg solitaire's ledger, problem table and positions.
//! - [`sylver`]: Sylver coinage positions (over any directory) and the rows of
//!   Sylver table summaries.

pub mod api;
mod cc2;
mod cc3;
mod depth;
mod error;
pub mod files;
pub mod limits;
pub mod peg;
mod ranked;
pub mod sylver;
pub mod wire;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use limits::{Limits, Slots};
use retro_games::GameKind;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub use cc2::{Cc2Explorer, Cc2Move, Cc2Report, Cc2View};
pub use cc3::{Cc3Explorer, DepthLine, MoveView, PositionView};
pub use error::ExplorerError;
pub use peg::PegExplorer;
pub use ranked::{RankedExplorer, RankedMoveView, RankedView};

/// An error answered as `{"error": message}` with a 4xx (bad input, nothing
/// there), 500 (a tablebase that cannot be read) or 503 (busy) status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for a person.
    pub message: String,
}

impl ApiError {
    /// 400: the request itself is wrong (malformed notation, unknown kind).
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    /// 404: nothing there (no tablebase, a position the tablebases do not hold).
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    /// 500: the tablebase files failed us (a bad block, an I/O error).
    pub fn internal(e: impl std::fmt::Display) -> ApiError {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, message: e.to_string() }
    }

    /// 503: every slot for this kind of search is taken (sent with `Retry-After: 1`).
    pub fn busy(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::SERVICE_UNAVAILABLE, message: message.into() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = api::json_response(self.status, &serde_json::json!({ "error": self.message }));
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        }
        r
    }
}

/// The tablebases of one job, opened for exploring.
// One per server: the size difference of the variants does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Explorer {
    /// Three-player Chinese checkers (three layers, 12 answers).
    Cc3(Cc3Explorer),
    /// Two-player Chinese checkers (one layer, win/loss/draw).
    Cc2(Cc2Explorer),
    /// The ranked three-player game (one layer, top2(A), read for every player).
    Ranked(RankedExplorer),
    /// Peg solitaire: a ledger and/or a problem table, and positions searched
    /// on demand (shared so a search runs without holding the server's lock).
    Peg(Arc<PegExplorer>),
    /// Sylver coinage table summaries and nothing else (the tables are read
    /// per request by [`sylver`]; positions need no files).
    Sylver,
}

impl Explorer {
    /// The game, as `/api/info` names it.
    pub fn kind(&self) -> GameKind {
        match self {
            Explorer::Cc3(_) | Explorer::Ranked(_) => GameKind::Cc3,
            Explorer::Cc2(_) => GameKind::Cc2,
            Explorer::Peg(_) => GameKind::Peg,
            Explorer::Sylver => GameKind::Sylver,
        }
    }

    /// The text of the position at `rank` of the game's tablebase (for
    /// `/api/position?rank=R`); an error for a rank past the end or a game
    /// without ranks.
    pub fn text_of_rank(&self, rank: u64) -> Result<String, ApiError> {
        let past = |n: u64| ApiError::bad_request(format!("rank {rank} is past the last position ({n} positions)"));
        match self {
            Explorer::Cc3(e) => {
                let pos = e.prober.position_of(rank).map_err(|err| ApiError::bad_request(err.to_string()))?;
                Ok(e.prober.game.format(&pos))
            }
            Explorer::Cc2(e) => {
                let n = e.prober.layer_positions();
                if rank >= n {
                    return Err(past(n));
                }
                Ok(e.prober.game.format(&e.prober.game.unrank(rank)))
            }
            Explorer::Ranked(e) => {
                let n = e.prober.layer_positions();
                if rank >= n {
                    return Err(past(n));
                }
                Ok(e.prober.game.cc3.format(&e.prober.game.cc3.unrank(rank)))
            }
            Explorer::Peg(_) | Explorer::Sylver => Err(ApiError::not_found("this game's positions have no ranks here")),
        }
    }

    /// Opens the tablebases in `dir`, choosing the game by the files there.
    pub fn open(dir: &Path) -> Result<Explorer, ExplorerError> {
        let has = |q: &str| dir.join(retro_engine::tablebase::layer_file_name(q)).exists();
        if has(retro_results::cc3::analysis::COMPUTED_LAYERS[0]) {
            return Ok(Explorer::Cc3(Cc3Explorer::new(retro_probe::cc3::Prober::open(dir)?)));
        }
        if has(cc2::LAYER) {
            return Ok(Explorer::Cc2(Cc2Explorer::open(dir)?));
        }
        if has(retro_games::cc3::RANKED_QUESTION) {
            return Ok(Explorer::Ranked(RankedExplorer::new(retro_probe::ranked::RankedProber::open(dir)?)));
        }
        if !dir.is_dir() {
            return Err(ExplorerError::NothingToShow(format!(
                "{}: no such directory (solve a plan first, or pass --tablebase DIR)",
                dir.display()
            )));
        }
        if let Some(peg) = PegExplorer::open(dir)? {
            return Ok(Explorer::Peg(Arc::new(peg)));
        }
        if sylver::has_tables(dir) {
            return Ok(Explorer::Sylver);
        }
        Err(ExplorerError::NothingToShow(format!(
            "{}: no tablebase here (solo_A.tb for three-player Chinese checkers, solo_1.tb for two-player, \
             summary.json of a peg or sylver plan here or one directory down); solve a plan first, \
             or open /?game=sylver for Sylver coinage",
            dir.display()
        )))
    }
}

/// What an opened directory answers without a search: `/api/info`, and the
/// peg explorer (whose ledger and problem table are in memory).
pub struct Opened {
    /// `cc3`, `cc2`, `peg` or `sylver`.
    pub kind: GameKind,
    /// The `/api/info` answer (a Sylver directory's table list as found when
    /// it was opened).
    pub info: Value,
    /// The peg explorer, for a peg directory.
    pub peg: Option<Arc<PegExplorer>>,
}

/// The server's state: the directory and, once it could be opened, its
/// explorer (one request at a time reads the files; each reader caches a
/// block), what it answers without a search, and the slots of the searches.
pub struct Shared {
    dir: PathBuf,
    explorer: Mutex<Option<Explorer>>,
    opened: OnceLock<Opened>,
    slots: Slots,
}

impl Shared {
    /// State over `dir`, opened lazily: a directory without tablebases yet
    /// answers 404 until a run writes them, and the server keeps going.
    pub fn new(dir: PathBuf) -> Shared {
        Shared::with_limits(dir, Limits::default())
    }

    /// [`Shared::new`] with other limits on the searches.
    pub fn with_limits(dir: PathBuf, limits: Limits) -> Shared {
        let explorer = Explorer::open(&dir).ok();
        let shared = Shared { dir, explorer: Mutex::new(None), opened: OnceLock::new(), slots: Slots::new(limits) };
        if let Some(e) = explorer {
            shared.remember(&e);
            *shared.explorer.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        }
        shared
    }

    /// The directory served.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The slots of the searches.
    pub fn slots(&self) -> &Slots {
        &self.slots
    }

    /// What the directory answers without a search, once it has been opened.
    pub fn opened(&self) -> Option<&Opened> {
        self.opened.get()
    }

    /// Keeps what `e` answers without a search.
    fn remember(&self, e: &Explorer) {
        let (info, peg) = match e {
            Explorer::Cc3(c) => (c.info(), None),
            Explorer::Cc2(c) => (c.info(), None),
            Explorer::Ranked(c) => (c.info(), None),
            Explorer::Peg(p) => (p.info(), Some(Arc::clone(p))),
            Explorer::Sylver => (sylver::info(&self.dir), None),
        };
        let _ = self.opened.set(Opened { kind: e.kind(), info, peg });
    }

    /// Runs `f` on the explorer, opening the tablebases first if need be
    /// (404 with the reason when they cannot be opened).
    pub fn with<T>(&self, f: impl FnOnce(&mut Explorer) -> Result<T, ApiError>) -> Result<T, ApiError> {
        // A panic while holding the lock cannot leave the readers half
        // updated in a way that matters (each probe rereads its block), so a
        // poisoned lock is taken over rather than failing every later request.
        let mut guard = self.explorer.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let e = Explorer::open(&self.dir).map_err(|e| ApiError::not_found(e.to_string()))?;
            self.remember(&e);
            *guard = Some(e);
        }
        match guard.as_mut() {
            Some(e) => f(e),
            None => Err(ApiError::internal("explorer missing after open")),
        }
    }
}

/// Serves the explorer over `dir` on `listener` until `shutdown` resolves.
pub async fn serve(
    dir: PathBuf,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ExplorerError> {
    serve_state(Arc::new(Shared::new(dir)), listener, shutdown).await
}

/// [`serve`] with other limits on the searches (tests use small ones).
pub async fn serve_with_limits(
    dir: PathBuf,
    limits: Limits,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ExplorerError> {
    serve_state(Arc::new(Shared::with_limits(dir, limits)), listener, shutdown).await
}

async fn serve_state(
    state: Arc<Shared>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ExplorerError> {
    use retro_node::net::{ConnectionLimits, GuardedListener, HTTP_IDLE};
    let listener = GuardedListener::new(listener, "explorer", ConnectionLimits::for_listener(HTTP_IDLE));
    retro_node::net::serve_http(listener, api::router(state), wire::JsonErrors::new, shutdown).await;
    Ok(())
}

/// [`run`] on `runtime`, until Ctrl-C, for a caller that is not async: the
/// `coordinator serve` command calls this rather than awaiting [`run`], which
/// would make the compiler generate the whole server's state machine a second
/// time inside the binary.
pub fn run_on(
    runtime: &tokio::runtime::Runtime,
    dir: PathBuf,
    listen: SocketAddr,
    search_deadline: std::time::Duration,
    on_listen: fn(SocketAddr),
) -> Result<(), ExplorerError> {
    runtime.block_on(run(dir, listen, search_deadline, on_listen))
}

/// `coordinator serve`: binds `listen`, reports the bound address through
/// `on_listen` (port 0 picks a free port), and serves until Ctrl-C; one
/// request's search stops after `search_deadline`.
pub async fn run(
    dir: PathBuf,
    listen: SocketAddr,
    search_deadline: std::time::Duration,
    on_listen: fn(SocketAddr),
) -> Result<(), ExplorerError> {
    let listen_error = |source| ExplorerError::Listen { addr: listen, source };
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(listen_error)?;
    let addr = listener.local_addr().map_err(listen_error)?;
    let state = Arc::new(Shared::with_limits(dir, Limits { deadline: search_deadline, ..Limits::default() }));
    if let Err(e) = state.with(|_| Ok(())) {
        // Not fatal: the page shows the same message, and a run that writes
        // the tablebases later makes them appear without a restart.
        tracing::warn!("{}", e.message);
    }
    on_listen(addr);
    serve_state(state, listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
