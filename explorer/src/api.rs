//! Routes of `coordinator serve`. Every answer under `/api/` is JSON; an error
//! is `{"error": "..."}` with a 4xx status (500 when a tablebase file cannot
//! be read, 503 when every slot of that kind of search is taken; see
//! [`super::limits`]). hyper's own 400, 414 and 431 get JSON bodies too
//! ([`super::wire`]).
//!
//! | route | answer |
//! |---|---|
//! | `GET /` (`/app.js`, `/peg.js`, `/sylver.js`, `/style.css`) | the page |
//! | `GET /api/info` | the game kind, title, board cells, players, start, witness kinds |
//! | `GET /api/position?pos=TEXT` or `?rank=R` | the position (default: the start), its answers, plies to the end and every move's child |
//! | `GET /api/witness?kind=KIND` | a witness line (three-player only) |
//! | `GET /api/peg/ledger` | the peg ledger (counts past 2^53 as strings) |
//! | `GET /api/peg/problems` | the peg problem tables (class-feasible rows) |
//! | `GET /api/peg/position?board=B&pos=PICTURE` | a peg position: jumps, class, finishing holes searched |
//! | `GET /api/stats` | per layer its rounds, seconds and positions decided per round; the job's counts by value (`scopes`) |
//! | `GET /api/files` | the job's manifest: each recorded tablebase file with its size, sha256 and URL |
//! | `GET /files/NAME` | `summary.json` or a file it lists, for download |
//! | `GET /api/sylver/position?numbers=5+14&budget=N` | a Sylver coinage position: t, nameable numbers winning or losing, table row (any directory) |

use super::limits::{Stop, Work};
use super::peg::SEARCH_BUDGET;
use super::{ApiError, Explorer, Opened, PegExplorer, Shared, files as tb_files, sylver};
use axum::Router;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use retro_games::GameKind;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");
const PEG_JS: &str = include_str!("assets/peg.js");
const SYLVER_JS: &str = include_str!("assets/sylver.js");

/// Longest query string accepted (a position of the largest board is a few
/// hundred bytes).
const MAX_QUERY_BYTES: usize = 4096;

/// The explorer's routes over `state`.
pub fn router(state: Arc<Shared>) -> Router {
    let asset = |kind: &'static str, body: &'static str| {
        get(move || async move { ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "no-cache")], body) })
            .fallback(method_not_allowed)
    };
    Router::new()
        .route("/", asset("text/html; charset=utf-8", INDEX_HTML))
        .route("/app.js", asset("text/javascript; charset=utf-8", APP_JS))
        .route("/style.css", asset("text/css; charset=utf-8", STYLE_CSS))
        .route("/peg.js", asset("text/javascript; charset=utf-8", PEG_JS))
        .route("/sylver.js", asset("text/javascript; charset=utf-8", SYLVER_JS))
        .route("/api/info", get(info).fallback(method_not_allowed))
        .route("/api/position", get(position).fallback(method_not_allowed))
        .route("/api/witness", get(witness).fallback(method_not_allowed))
        .route("/api/peg/ledger", get(peg_ledger).fallback(method_not_allowed))
        .route("/api/peg/problems", get(peg_problems).fallback(method_not_allowed))
        .route("/api/peg/position", get(peg_position).fallback(method_not_allowed))
        .route("/api/sylver/position", get(sylver_position).fallback(method_not_allowed))
        .route("/api/files", get(files).fallback(method_not_allowed))
        .route("/api/stats", get(stats).fallback(method_not_allowed))
        .route("/files/{name}", get(download).fallback(method_not_allowed))
        .fallback(not_found)
        .with_state(state)
}

/// A JSON body with `status`.
pub fn json_response(status: StatusCode, body: &impl Serialize) -> Response {
    match serde_json::to_string(body) {
        Ok(text) => (status, [(header::CONTENT_TYPE, "application/json")], text).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, [(header::CONTENT_TYPE, "application/json")], {
            serde_json::json!({ "error": e.to_string() }).to_string()
        })
            .into_response(),
    }
}

async fn not_found() -> ApiError {
    ApiError::not_found(
        "no such page: try / (the explorer), /api/info, /api/position?pos=TEXT, /api/witness?kind=KIND, \
         for peg solitaire /api/peg/ledger, /api/peg/problems, /api/peg/position?board=B&pos=PICTURE, \
         or for Sylver coinage /api/sylver/position?numbers=5+14",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError { status: StatusCode::METHOD_NOT_ALLOWED, message: "GET only".into() }
}

/// How long past its deadline a handler waits for a search that does not
/// stop by itself (a witness search, a wait for the readers' lock) before it
/// answers 503; the search keeps its slot until it ends.
const GRACE: Duration = Duration::from_secs(5);

/// Runs `f` on a blocking thread in a slot of kind `work` (503 when none frees
/// up), with a [`Stop`] that the deadline raises and that is raised when this
/// handler is dropped (the client went away); answers its result as JSON.
async fn search<T: Serialize + Send + 'static>(
    state: &Shared,
    work: Work,
    f: impl FnOnce(&Stop) -> Result<T, ApiError> + Send + 'static,
) -> Response {
    let permit = match state.slots().acquire(work).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let limit = state.slots().limits().deadline;
    let (stop, _cancel_on_drop) = Stop::new(limit);
    let task = tokio::task::spawn_blocking(move || {
        // The slot is freed when the search ends, not when the handler does.
        let _permit = permit;
        f(&stop)
    });
    match tokio::time::timeout(limit.saturating_add(GRACE), task).await {
        Ok(Ok(Ok(v))) => json_response(StatusCode::OK, &v),
        Ok(Ok(Err(e))) => e.into_response(),
        Ok(Err(e)) => ApiError::internal(format!("request failed: {e}")).into_response(),
        Err(_) => ApiError::busy(format!(
            "no answer within the explorer's time limit of {} s (a search that cannot be stopped, such as a \
             witness search, goes on and keeps what it finds): try again later",
            limit.as_secs_f64()
        ))
        .into_response(),
    }
}

/// Runs `f` on the explorer (under the readers' lock) as a tablebase search.
async fn answer<T: Serialize + Send + 'static>(
    state: Arc<Shared>,
    f: impl FnOnce(&mut Explorer, &Stop) -> Result<T, ApiError> + Send + 'static,
) -> Response {
    let shared = Arc::clone(&state);
    search(&state, Work::Tablebase, move |stop| shared.with(|ex| f(ex, stop))).await
}

/// What the directory answers without a search, opening it first if need be
/// (a look at its files, off the async threads, in no slot).
async fn opened(state: &Arc<Shared>) -> Result<&Opened, ApiError> {
    if let Some(o) = state.opened() {
        return Ok(o);
    }
    let shared = Arc::clone(state);
    match tokio::task::spawn_blocking(move || shared.with(|_| Ok(()))).await {
        Ok(Ok(())) => state.opened().ok_or_else(|| ApiError::internal("explorer missing after open")),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(ApiError::internal(format!("request failed: {e}"))),
    }
}

/// Answered from memory once the directory is open: no slot, no lock.
async fn info(State(state): State<Arc<Shared>>) -> Response {
    match opened(&state).await {
        Ok(o) => json_response(StatusCode::OK, &o.info),
        Err(e) => e.into_response(),
    }
}

/// 404 for a route of the Chinese checkers views on another kind of directory.
fn not_chinese_checkers(kind: GameKind) -> Option<ApiError> {
    match kind {
        GameKind::Peg => Some(ApiError::not_found(PEG_POSITIONS)),
        GameKind::Sylver => Some(ApiError::not_found(SYLVER_POSITIONS)),
        GameKind::Cc3 | GameKind::Cc2 => None,
    }
}

async fn position(State(state): State<Arc<Shared>>, RawQuery(query): RawQuery) -> Response {
    let q = match parse_query(query.as_deref(), &["pos", "rank"]) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    if let Some(e) = state.opened().and_then(|o| not_chinese_checkers(o.kind)) {
        return e.into_response();
    }
    let rank = match q.get("rank").map(|r| r.trim().parse::<u64>()) {
        None => None,
        Some(Ok(r)) if !q.contains_key("pos") => Some(r),
        Some(Ok(_)) => return ApiError::bad_request("give pos or rank, not both").into_response(),
        Some(Err(_)) => return ApiError::bad_request("rank must be a whole number 0 or more").into_response(),
    };
    answer(state, move |ex, stop| {
        let text = rank.map(|r| ex.text_of_rank(r)).transpose()?;
        let pos = text.as_deref().or(q.get("pos").map(String::as_str));
        match ex {
            Explorer::Cc3(e) => serde_json::to_value(e.position(pos, stop)?),
            Explorer::Cc2(e) => serde_json::to_value(e.position(pos, stop)?),
            Explorer::Ranked(e) => serde_json::to_value(e.position(pos)?),
            Explorer::Peg(_) => return Err(ApiError::not_found(PEG_POSITIONS)),
            Explorer::Sylver => return Err(ApiError::not_found(SYLVER_POSITIONS)),
        }
        .map_err(ApiError::internal)
    })
    .await
}

async fn witness(State(state): State<Arc<Shared>>, RawQuery(query): RawQuery) -> Response {
    let q = match parse_query(query.as_deref(), &["kind"]) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    let Some(kind) = q.get("kind").cloned() else {
        return ApiError::bad_request("say which witness: ?kind=solo-win, spoiler-draw, kingmaker or draw-cycle")
            .into_response();
    };
    if let Some(e) = state.opened().and_then(|o| no_witnesses(o.kind)) {
        return e.into_response();
    }
    answer(state, move |ex, _stop| match ex {
        Explorer::Cc3(e) => e.witness(&kind),
        other => Err(no_witnesses(other.kind()).unwrap_or_else(|| ApiError::not_found("no witnesses here"))),
    })
    .await
}

/// 404 for `/api/witness` on a directory of another kind than `cc3`.
fn no_witnesses(kind: GameKind) -> Option<ApiError> {
    let what = match kind {
        GameKind::Cc2 => "two-player tablebases have",
        GameKind::Peg => "peg solitaire has",
        GameKind::Sylver => "Sylver coinage has",
        GameKind::Cc3 => return None,
    };
    Some(ApiError::not_found(format!("{what} no witnesses (three-player only)")))
}

const PEG_POSITIONS: &str =
    "this directory holds peg solitaire summaries: positions are at /api/peg/position?board=B&pos=PICTURE";

const SYLVER_POSITIONS: &str =
    "this directory holds Sylver coinage tables: positions are at /api/sylver/position?numbers=5+14";

/// The peg explorer (404 for another game), without the readers' lock.
async fn peg_explorer(state: &Arc<Shared>) -> Result<Arc<PegExplorer>, ApiError> {
    opened(state)
        .await?
        .peg
        .clone()
        .ok_or_else(|| ApiError::not_found("no peg solitaire here: this directory holds Chinese checkers tablebases"))
}

/// The ledger or problem table: from memory, no slot, no lock.
async fn peg_summary(
    state: Arc<Shared>,
    query: Option<String>,
    f: impl FnOnce(&PegExplorer) -> Result<serde_json::Value, ApiError>,
) -> Response {
    if let Err(e) = parse_query(query.as_deref(), &[]) {
        return e.into_response();
    }
    match peg_explorer(&state).await.and_then(|p| f(&p)) {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => e.into_response(),
    }
}

async fn peg_ledger(State(state): State<Arc<Shared>>, RawQuery(query): RawQuery) -> Response {
    peg_summary(state, query, |p| p.ledger()).await
}

async fn peg_problems(State(state): State<Arc<Shared>>, RawQuery(query): RawQuery) -> Response {
    peg_summary(state, query, |p| p.problems()).await
}

async fn peg_position(State(state): State<Arc<Shared>>, RawQuery(query): RawQuery) -> Response {
    let q = match parse_query(query.as_deref(), &["board", "pos", "budget", "search"]) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    let budget = match q.get("budget").map(|b| b.trim().parse::<u64>()) {
        None => SEARCH_BUDGET,
        Some(Ok(b)) => b,
        Some(Err(_)) => {
            return ApiError::bad_request(format!("budget {:?} is not a number of positions", q["budget"]))
                .into_response();
        }
    };
    let search_holes = match q.get("search").map(String::as_str) {
        None | Some("1" | "yes" | "true") => true,
        Some("0" | "no" | "false") => false,
        Some(other) => return ApiError::bad_request(format!("search={other:?}: say 1 or 0")).into_response(),
    };
    let peg = match peg_explorer(&state).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let (board, pos) = (q.get("board").cloned(), q.get("pos").cloned());
    let run = move |stop: &Stop| peg.position(board.as_deref(), pos.as_deref(), budget, search_holes, stop);
    if !search_holes {
        // Nothing searched: parsing and listing jumps is quick.
        return match run(&Stop::never()) {
            Ok(v) => json_response(StatusCode::OK, &v),
            Err(e) => e.into_response(),
        };
    }
    search(&state, Work::Peg, run).await
}

async fn sylver_position(State(state): State<Arc<Shared>>, RawQuery(query): RawQuery) -> Response {
    let q = match parse_query(query.as_deref(), &["numbers", "budget"]) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    let budget = match q.get("budget").map(|b| b.trim().parse::<u64>()) {
        None => sylver::SOLVE_BUDGET,
        Some(Ok(b)) if (1..=sylver::MAX_BUDGET).contains(&b) => b,
        Some(Ok(b)) => {
            return ApiError::bad_request(format!(
                "budget {b}: the explorer takes 1 to {} positions (coordinator sylver --position takes more)",
                sylver::MAX_BUDGET
            ))
            .into_response();
        }
        Some(Err(_)) => {
            return ApiError::bad_request(format!("budget {:?} is not a number of positions", q["budget"]))
                .into_response();
        }
    };
    let numbers = q.get("numbers").cloned().unwrap_or_default();
    let dir = state.dir.clone();
    // No lock on the explorer: a Sylver position needs no tablebase.
    search(&state, Work::Sylver, move |stop| sylver::position(&dir, &numbers, budget, stop)).await
}

/// The parameters of a query string (`a=1&b=x+y`), percent-decoded; a
/// parameter outside `allowed`, a repeated one, bad escapes or bytes that are
/// not UTF-8 are a 400.
pub fn parse_query(query: Option<&str>, allowed: &[&str]) -> Result<HashMap<String, String>, ApiError> {
    let mut out = HashMap::new();
    let Some(query) = query else { return Ok(out) };
    if query.len() > MAX_QUERY_BYTES {
        return Err(ApiError::bad_request(format!("query longer than {MAX_QUERY_BYTES} bytes")));
    }
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (decode(k)?, decode(v)?);
        if !allowed.contains(&k.as_str()) {
            let takes = if allowed.is_empty() { "no parameters".to_string() } else { allowed.join(", ") };
            return Err(ApiError::bad_request(format!("unknown parameter {k:?} (this route takes {takes})")));
        }
        if out.insert(k.clone(), v).is_some() {
            return Err(ApiError::bad_request(format!("parameter {k:?} given twice")));
        }
    }
    Ok(out)
}

/// Decodes `%XX` escapes and `+` (a space, as forms and URLSearchParams write it).
fn decode(s: &str) -> Result<String, ApiError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                let b = hex.and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(b.ok_or_else(|| ApiError::bad_request(format!("bad %-escape in {s:?}")))?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| ApiError::bad_request(format!("{s:?} is not UTF-8 once decoded")))
}

/// `GET /api/files`: the manifest of the directory served.
async fn files(State(state): State<Arc<Shared>>) -> Response {
    match tb_files::manifest(state.dir()) {
        Ok(m) => json_response(StatusCode::OK, &m),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/stats`: what the job recorded of each layer.
async fn stats(State(state): State<Arc<Shared>>) -> Response {
    match tb_files::stats(state.dir()) {
        Ok(s) => json_response(StatusCode::OK, &s),
        Err(e) => e.into_response(),
    }
}

/// `GET /files/NAME`: one recorded file, streamed.
async fn download(State(state): State<Arc<Shared>>, UrlPath(name): UrlPath<String>) -> Response {
    match tb_files::download(state.dir(), &name).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_and_reject_what_they_must() {
        let q = parse_query(Some("pos=e1%2Fb4%2Fb1+A"), &["pos"]).unwrap();
        assert_eq!(q["pos"], "e1/b4/b1 A");
        assert!(parse_query(None, &["pos"]).unwrap().is_empty());
        assert_eq!(parse_query(Some("pos"), &["pos"]).unwrap()["pos"], "");
        for bad in ["pos=%zz", "pos=%4", "pos=%ff", "x=1", "pos=a&pos=b"] {
            let e = parse_query(Some(bad), &["pos"]).unwrap_err();
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{bad}");
        }
        assert!(parse_query(Some(&"a".repeat(MAX_QUERY_BYTES + 1)), &["pos"]).is_err());
    }
}
