//! `coordinator verify`: every checksum of the tablebase files in a directory,
//! and that each is the file its job recorded in summary.json.

use super::CliError;

use retro_engine::tablebase::TablebaseReader;
use std::path::PathBuf;

/// Runs `verify` on the directory `dir`.
pub fn run(dir: &std::path::Path) -> Result<(), CliError> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "tb")).collect();
    paths.sort();
    if paths.is_empty() {
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
    let mut bad = Vec::new();
    let mut seen = Vec::new();
    for path in &paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let checked = TablebaseReader::open(path).and_then(|mut r| r.verify().map(|()| r)).map_err(|e| e.to_string());
        let r = match checked {
            Ok(r) => r,
            Err(e) => {
                println!("BAD {e}");
                bad.push(e);
                continue;
            }
        };
        let sha = retro_engine::tablebase::sha256_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let header = r.header().clone();
        let mismatch = recorded.as_ref().and_then(|v| {
            let listed = v["tablebases"].as_array().into_iter().flatten().find(|t| t["file"] == name.as_str());
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
            let rank_order =
                if retro_results::report::game_named(v["game"].as_str()) == Some(retro_games::GameKind::Cc2) {
                    let (colour, mirror) = (v["colour_symmetry"] == true, v["mirror_symmetry"] == true);
                    retro_games::cc2::rank_order_of(retro_games::cc2::Folding { colour, mirror })
                } else {
                    retro_games::cc3::RANK_ORDER
                };
            let (question, plan_hash) = (t["question"].as_str().unwrap_or("?"), v["plan_hash"].as_str().unwrap_or("?"));
            entry.open_checked(dir, question, plan_hash, rank_order).err().map(|e| e.to_string())
        });
        match mismatch {
            None => println!("ok  {}  {}  {}", sha, header.layer, path.display()),
            Some(e) => {
                println!("BAD {e}");
                bad.push(e);
            }
        }
    }
    match &recorded {
        Some(v) => {
            for t in v["tablebases"].as_array().into_iter().flatten() {
                let file = t["file"].as_str().unwrap_or("?");
                if !seen.iter().any(|s| s == file) && !dir.join(file).exists() {
                    let e = format!("{}: listed in summary.json but missing", dir.join(file).display());
                    println!("BAD {e}");
                    bad.push(e);
                }
            }
        }
        None => println!(
            "note: no {}; each file's own checksums were checked, not that it is the file its job wrote",
            summary_path.display()
        ),
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
