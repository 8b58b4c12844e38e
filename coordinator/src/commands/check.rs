//! `coordinator check`: a three-player summary.json against every published
//! number of its stage.

/// Runs `check` on the summary at `path`.
pub fn run(path: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let summary: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not a summary.json: {e}", path.display()))?;
    let lines = retro_results::cc3::check::check_cc3(&summary).map_err(|e| format!("{}: {e}", path.display()))?;
    print!("{}", retro_results::cc3::check::markdown(&lines));
    if retro_results::cc3::check::all_match(&lines) {
        Ok(())
    } else {
        Err(format!("{} does not reproduce every published number (see the table)", path.display()))
    }
}
