//! `coordinator ledger`: a summary.json rendered as a Markdown results ledger.

use std::path::Path;

/// Prints the ledger of the summary at `summary`.
pub fn run(summary: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(summary).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "{}: no such file; name the run's summary with --summary PATH (it is written \
             next to the tablebases, in the plan's output directory or --output)",
            summary.display()
        ),
        _ => format!("{}: {e}", summary.display()),
    })?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", summary.display()))?;
    print!("{}", retro_results::report::ledger_markdown(&v));
    Ok(())
}
