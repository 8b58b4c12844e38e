//! `coordinator check`: a three-player summary.json against every published
//! number of its stage.

use super::CliError;

/// Runs `check` on the summary at `path`.
pub fn run(path: &std::path::Path, json: bool) -> Result<(), CliError> {
    use retro_node::input::{MAX_JSON_BYTES, read_text_limited};
    let text = read_text_limited(path, MAX_JSON_BYTES, "summary")?;
    let summary: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not a summary.json: {e}", path.display()))?;
    let lines = retro_results::cc3::check::check_cc3(&summary).map_err(|e| format!("{}: {e}", path.display()))?;
    let all_match = retro_results::cc3::check::all_match(&lines);
    if json {
        let report =
            serde_json::json!({ "summary": path.display().to_string(), "all_match": all_match, "lines": lines });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", retro_results::cc3::check::markdown(&lines));
    }
    if all_match {
        Ok(())
    } else {
        Err(format!("{} does not reproduce every published number (see the table)", path.display()).into())
    }
}
