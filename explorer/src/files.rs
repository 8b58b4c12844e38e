//! What a job recorded in its `summary.json`, served: each layer's rounds and
//! the counts by value (`/api/stats`), the tablebase files with their sizes
//! and sha256 and the layers' depth files (`/api/files`, the manifest a
//! downloader checks against), and
//! the files themselves, streamed with their length (`/files/NAME`). Only
//! `summary.json` and the files it lists are served: a name is looked up in
//! that list, never joined to the directory as given, so no request reaches
//! another file.

use super::ApiError;
use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use retro_results::solved::{LayerSummary, TablebaseSummary};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The manifest's name in a job's output directory.
const SUMMARY: &str = "summary.json";

/// One file to download, as the job recorded it, and where to fetch it.
#[derive(Clone, Debug, Serialize)]
pub struct Listed {
    /// The layer, file name, size and sha256 the summary records.
    #[serde(flatten)]
    pub recorded: TablebaseSummary,
    /// Where to fetch it from this explorer.
    pub url: String,
}

/// `GET /api/files`: the manifest and the files it lists.
#[derive(Debug, Serialize)]
pub struct Manifest {
    /// Where to fetch the manifest itself (`summary.json`).
    pub manifest_url: String,
    /// The recorded files.
    pub files: Vec<Listed>,
}

/// What the explorer reads of a job's summary: the fields every retrograde
/// game's summary shares (a peg or Sylver summary has none of the lists).
#[derive(Debug, Deserialize)]
pub struct Recorded {
    /// The job's name.
    pub job: Option<String>,
    /// Per layer, in the order solved.
    #[serde(default)]
    pub layers: Vec<LayerSummary>,
    /// The tablebase files written.
    #[serde(default)]
    pub tablebases: Vec<TablebaseSummary>,
    /// Each layer's depth file (docs/FORMAT.md, "Depth files").
    #[serde(default)]
    pub depth_files: Vec<TablebaseSummary>,
    /// The counts by value, per game (null where the summary has none).
    #[serde(default)]
    pub scopes: serde_json::Value,
}

/// The job's `summary.json` in `dir`, read; a 404 that says so where there
/// is none (a directory a job has not finished writing yet).
pub fn read_summary(dir: &Path) -> Result<(PathBuf, Recorded), ApiError> {
    let path = dir.join(SUMMARY);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ApiError::not_found(format!("no {SUMMARY} in {}: no job's record here", dir.display())));
        }
        Err(e) => return Err(ApiError::internal(format!("{}: {e}", path.display()))),
    };
    let v = serde_json::from_str(&text).map_err(|e| ApiError::internal(format!("{}: {e}", path.display())))?;
    Ok((path, v))
}

/// The files `dir`'s summary records, or a 404 that says why there are none.
pub fn manifest(dir: &Path) -> Result<Manifest, ApiError> {
    let (path, recorded) = read_summary(dir)?;
    let mut files = Vec::new();
    for t in recorded.tablebases.into_iter().chain(recorded.depth_files) {
        let file = &t.file;
        // A name with a separator is no file of this directory: refuse the
        // whole manifest rather than serve a path it names.
        if file.is_empty() || file.contains(['/', '\\']) || file == ".." || file == SUMMARY {
            return Err(ApiError::internal(format!("{}: {file:?} is not a file name", path.display())));
        }
        let url = format!("/files/{file}");
        files.push(Listed { recorded: t, url });
    }
    Ok(Manifest { manifest_url: format!("/files/{SUMMARY}"), files })
}

/// `GET /files/NAME`: `summary.json` or a file it lists, streamed with its
/// length (and, for a listed file, its sha256 as the ETag).
pub async fn download(dir: &Path, name: &str) -> Result<Response, ApiError> {
    let (content_type, etag) = if name == SUMMARY {
        ("application/json", None)
    } else {
        let listed = manifest(dir)?.files.into_iter().find(|f| f.recorded.file == name);
        let Some(listed) = listed else {
            return Err(ApiError::not_found(format!("{name:?} is not a file this job recorded (see /api/files)")));
        };
        ("application/octet-stream", Some(format!("\"{}\"", listed.recorded.sha256)))
    };
    let path = dir.join(name);
    let file = tokio::fs::File::open(&path).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ApiError::not_found(format!("{}: recorded but not there", path.display())),
        _ => ApiError::internal(format!("{}: {e}", path.display())),
    })?;
    let len = file.metadata().await.map_err(|e| ApiError::internal(format!("{}: {e}", path.display())))?.len();
    let body = Body::from_stream(tokio_util::io::ReaderStream::with_capacity(file, 1 << 16));
    let mut response = (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CONTENT_LENGTH, len.to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
        ],
        body,
    )
        .into_response();
    if let Some(etag) = etag.and_then(|e| header::HeaderValue::from_str(&e).ok()) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    Ok(response)
}

/// `GET /api/stats`: every layer's rounds, and the job's counts by value.
#[derive(Debug, Serialize)]
pub struct Stats {
    /// The job's name.
    pub job: Option<String>,
    /// Per layer, in the order solved: rounds, seconds, positions decided
    /// per round (round 0: the terminal positions).
    pub layers: Vec<LayerSummary>,
    /// The counts by value over all positions and over those reachable from
    /// the start (the summary's `scopes`, per game; null where it has none).
    pub scopes: serde_json::Value,
}

/// The statistics `dir`'s summary records.
pub fn stats(dir: &Path) -> Result<Stats, ApiError> {
    let (_, recorded) = read_summary(dir)?;
    Ok(Stats { job: recorded.job, layers: recorded.layers, scopes: recorded.scopes })
}
