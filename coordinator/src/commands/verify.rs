//! `coordinator verify`: every checksum of the tablebase files and the depth
//! files beside them in a directory, and that each is the file its job
//! recorded in summary.json.

use super::CliError;

use retro_engine::tablebase::{DepthReader, TablebaseHeader, TablebaseReader};
use serde::Serialize;
use std::path::PathBuf;

/// What `verify` found about one file.
#[derive(Serialize)]
struct FileVerdict {
    /// The file's path.
    path: String,
    /// Its layer, when its header could be read.
    layer: Option<String>,
    /// Its SHA-256, when every checksum held.
    sha256: Option<String>,
    /// Whether it passed every check.
    ok: bool,
    /// What failed.
    error: Option<String>,
}

impl FileVerdict {
    fn bad(path: String, error: String) -> FileVerdict {
        FileVerdict { path, layer: None, sha256: None, ok: false, error: Some(error) }
    }
}

/// The two kinds of file a job writes per layer.
#[derive(Clone, Copy, PartialEq)]
enum FileKind {
    /// `<layer>.tb`: the values.
    Values,
    /// `<layer>.depth`: the plies to the end.
    Depth,
}

impl FileKind {
    /// The files of this kind in `dir`, by name.
    fn of(path: &std::path::Path) -> Option<FileKind> {
        match path.extension()?.to_str()? {
            "tb" => Some(FileKind::Values),
            "depth" => Some(FileKind::Depth),
            _ => None,
        }
    }

    /// Where summary.json lists the files of this kind.
    fn summary_key(self) -> &'static str {
        match self {
            FileKind::Values => "tablebases",
            FileKind::Depth => "depth_files",
        }
    }

    /// Opens the file and checks every block's checksum; its header.
    fn verify(self, path: &std::path::Path) -> Result<TablebaseHeader, String> {
        let header = match self {
            FileKind::Values => TablebaseReader::open(path).and_then(|mut r| r.verify().map(|()| r.header().clone())),
            FileKind::Depth => DepthReader::open(path).and_then(|mut r| r.verify().map(|()| r.header().clone())),
        };
        header.map_err(|e| e.to_string())
    }
}

/// Runs `verify` on the directory `dir`: a line per file (or, with `json`,
/// one JSON object), and a failure when any file fails.
pub fn run(dir: &std::path::Path, json: bool) -> Result<(), CliError> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| FileKind::of(p).is_some()).collect();
    paths.sort();
    if !paths.iter().any(|p| FileKind::of(p) == Some(FileKind::Values)) {
        return Err(format!("{}: no tablebase files (*.tb)", dir.display()).into());
    }
    // What the job recorded: each file's layer, size and digest, and the plan.
    // Each file's own checksums cannot tell a valid file of another layer or
    // job copied over this name; the recorded digests can.
    let summary_path = dir.join("summary.json");
    let recorded = if summary_path.exists() {
        let text = retro_node::input::read_text_limited(&summary_path, retro_node::input::MAX_JSON_BYTES, "summary")?;
        Some(
            serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| format!("{}: not a summary.json: {e}", summary_path.display()))?,
        )
    } else {
        None
    };
    let mut files = Vec::new();
    let mut seen = Vec::new();
    for path in &paths {
        let kind = FileKind::of(path).expect("listed by kind");
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let header = match kind.verify(path) {
            Ok(h) => h,
            Err(e) => {
                files.push(FileVerdict::bad(path.display().to_string(), e));
                continue;
            }
        };
        let sha = retro_engine::tablebase::sha256_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mismatch = recorded.as_ref().and_then(|v| {
            let listed = v[kind.summary_key()].as_array().into_iter().flatten().find(|t| t["file"] == name.as_str());
            let Some(t) = listed else {
                return Some(format!("{}: not listed in {}", path.display(), summary_path.display()));
            };
            seen.push(name.clone());
            // The same identity checks a job makes before it reads a layer.
            let entry = retro_probe::TablebaseEntry {
                file: name.clone(),
                bytes: t["bytes"].as_u64().unwrap_or(u64::MAX),
                sha256: t["sha256"].as_str().unwrap_or_default().to_string(),
            };
            let (question, plan_hash) = (t["question"].as_str().unwrap_or("?"), v["plan_hash"].as_str().unwrap_or("?"));
            if kind == FileKind::Depth {
                return entry.open_checked_depth(dir, question, plan_hash).err().map(|e| e.to_string());
            }
            let rank_order =
                if retro_results::report::game_named(v["game"].as_str()) == Some(retro_games::GameKind::Cc2) {
                    let (colour, mirror) = (v["colour_symmetry"] == true, v["mirror_symmetry"] == true);
                    retro_games::cc2::rank_order_of(retro_games::cc2::Folding { colour, mirror })
                } else {
                    retro_games::cc3::RANK_ORDER
                };
            entry.open_checked(dir, question, plan_hash, rank_order).err().map(|e| e.to_string())
        });
        files.push(FileVerdict {
            path: path.display().to_string(),
            layer: Some(header.layer.clone()),
            sha256: Some(sha),
            ok: mismatch.is_none(),
            error: mismatch,
        });
    }
    if let Some(v) = &recorded {
        let listed = ["tablebases", "depth_files"].into_iter().flat_map(|k| v[k].as_array().into_iter().flatten());
        for t in listed {
            let file = t["file"].as_str().unwrap_or("?");
            if !seen.iter().any(|s| s == file) && !dir.join(file).exists() {
                let path = dir.join(file).display().to_string();
                files.push(FileVerdict::bad(path.clone(), format!("{path}: listed in summary.json but missing")));
            }
        }
    }
    let bad: Vec<&str> = files.iter().filter_map(|f| f.error.as_deref()).collect();
    if json {
        let report = serde_json::json!({
            "dir": dir.display().to_string(),
            "recorded": recorded.is_some(),
            "ok": bad.is_empty(),
            "files": &files,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for f in &files {
            match (&f.error, &f.sha256, &f.layer) {
                (None, Some(sha), Some(layer)) => println!("ok  {sha}  {layer}  {}", f.path),
                (e, _, _) => println!("BAD {}", e.as_deref().unwrap_or("?")),
            }
        }
        if recorded.is_none() {
            println!(
                "note: no {}; each file's own checksums were checked, not that it is the file its job wrote",
                summary_path.display()
            );
        }
    }
    if !bad.is_empty() {
        return Err(format!(
            "{}: {} tablebase file(s) failed verification: {}",
            dir.display(),
            bad.len(),
            bad.join("; ")
        )
        .into());
    }
    Ok(())
}
