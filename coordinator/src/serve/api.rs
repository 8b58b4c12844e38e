//! Routes of `coordinator serve`. Every answer under `/api/` is JSON; an error
//! is `{"error": "..."}` with a 4xx status (5xx only when a tablebase file
//! cannot be read).
//!
//! | route | answer |
//! |---|---|
//! | `GET /` (`/app.js`, `/peg.js`, `/sylver.js`, `/style.css`) | the page |
//! | `GET /api/info` | the game kind, title, board cells, players, start, witness kinds |
//! | `GET /api/position?pos=TEXT` | the position (default: the start), its answers and every move's child |
//! | `GET /api/witness?kind=KIND` | a witness line (three-player only) |
//! | `GET /api/peg/ledger` | the peg ledger (counts past 2^53 as strings) |
//! | `GET /api/peg/problems` | the peg problem tables (class-feasible rows) |
//! | `GET /api/peg/position?board=B&pos=PICTURE` | a peg position: jumps, class, finishing holes searched |
//! | `GET /api/sylver/position?numbers=5+14&budget=N` | a Sylver coinage position: t, nameable numbers winning or losing, table row (any directory) |

use super::peg::SEARCH_BUDGET;
use super::{ApiError, Explorer, PegExplorer, Shared, sylver};
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

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

/// Runs `f` on the explorer off the async threads (tablebase reads block),
/// and answers its result as JSON.
async fn answer<T: Serialize + Send + 'static>(
    state: Arc<Shared>,
    f: impl FnOnce(&mut Explorer) -> Result<T, ApiError> + Send + 'static,
) -> Response {
    match tokio::task::spawn_blocking(move || state.with(f)).await {
        Ok(Ok(v)) => json_response(StatusCode::OK, &v),
        Ok(Err(e)) => e.into_response(),
        Err(e) => ApiError::internal(format!("request failed: {e}")).into_response(),
    }
}

async fn info(State(state): State<Arc<Shared>>) -> Response {
    let dir = state.dir.clone();
    answer(state, move |ex| {
        Ok(match ex {
            Explorer::Cc3(e) => e.info(),
            Explorer::Cc2(e) => e.info(),
            Explorer::Peg(e) => e.info(),
            Explorer::Sylver => sylver::info(&dir),
        })
    })
    .await
}

async fn position(State(state): State<Arc<Shared>>, RawQuery(query): RawQuery) -> Response {
    let q = match parse_query(query.as_deref(), &["pos"]) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    answer(state, move |ex| {
        let pos = q.get("pos").map(String::as_str);
        match ex {
            Explorer::Cc3(e) => serde_json::to_value(e.position(pos)?),
            Explorer::Cc2(e) => serde_json::to_value(e.position(pos)?),
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
    answer(state, move |ex| match ex {
        Explorer::Cc3(e) => e.witness(&kind),
        Explorer::Cc2(_) => Err(ApiError::not_found("two-player tablebases have no witnesses (three-player only)")),
        Explorer::Peg(_) => Err(ApiError::not_found("peg solitaire has no witnesses (three-player only)")),
        Explorer::Sylver => Err(ApiError::not_found("Sylver coinage has no witnesses (three-player only)")),
    })
    .await
}

const PEG_POSITIONS: &str =
    "this directory holds peg solitaire summaries: positions are at /api/peg/position?board=B&pos=PICTURE";

const SYLVER_POSITIONS: &str =
    "this directory holds Sylver coinage tables: positions are at /api/sylver/position?numbers=5+14";

/// Runs `f` on the peg explorer off the async threads, without holding the
/// server's lock (a position's searches take seconds); 404 for another game.
async fn answer_peg<T: Serialize + Send + 'static>(
    state: Arc<Shared>,
    f: impl FnOnce(&PegExplorer) -> Result<T, ApiError> + Send + 'static,
) -> Response {
    let run = move || {
        let peg = state.with(|ex| match ex {
            Explorer::Peg(p) => Ok(Arc::clone(p)),
            _ => Err(ApiError::not_found("no peg solitaire here: this directory holds Chinese checkers tablebases")),
        })?;
        f(&peg)
    };
    match tokio::task::spawn_blocking(run).await {
        Ok(Ok(v)) => json_response(StatusCode::OK, &v),
        Ok(Err(e)) => e.into_response(),
        Err(e) => ApiError::internal(format!("request failed: {e}")).into_response(),
    }
}

async fn peg_ledger(State(state): State<Arc<Shared>>, RawQuery(query): RawQuery) -> Response {
    if let Err(e) = parse_query(query.as_deref(), &[]) {
        return e.into_response();
    }
    answer_peg(state, |p| p.ledger()).await
}

async fn peg_problems(State(state): State<Arc<Shared>>, RawQuery(query): RawQuery) -> Response {
    if let Err(e) = parse_query(query.as_deref(), &[]) {
        return e.into_response();
    }
    answer_peg(state, |p| p.problems()).await
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
    let search = match q.get("search").map(String::as_str) {
        None | Some("1" | "yes" | "true") => true,
        Some("0" | "no" | "false") => false,
        Some(other) => return ApiError::bad_request(format!("search={other:?}: say 1 or 0")).into_response(),
    };
    answer_peg(state, move |p| {
        p.position(q.get("board").map(String::as_str), q.get("pos").map(String::as_str), budget, search)
    })
    .await
}

async fn sylver_position(State(state): State<Arc<Shared>>, RawQuery(query): RawQuery) -> Response {
    let q = match parse_query(query.as_deref(), &["numbers", "budget"]) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    let budget = match q.get("budget").map(|b| b.trim().parse::<u64>()) {
        None => sylver::SOLVE_BUDGET,
        Some(Ok(b)) => b,
        Some(Err(_)) => {
            return ApiError::bad_request(format!("budget {:?} is not a number of positions", q["budget"]))
                .into_response();
        }
    };
    let numbers = q.get("numbers").cloned().unwrap_or_default();
    let dir = state.dir.clone();
    // No lock on the explorer: a Sylver position needs no tablebase.
    match tokio::task::spawn_blocking(move || sylver::position(&dir, &numbers, budget)).await {
        Ok(Ok(v)) => json_response(StatusCode::OK, &v),
        Ok(Err(e)) => e.into_response(),
        Err(e) => ApiError::internal(format!("request failed: {e}")).into_response(),
    }
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
