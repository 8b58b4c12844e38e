//! `coordinator ledger`: a summary.json rendered as a Markdown results ledger.

use super::CliError;

use std::path::Path;

/// Prints the ledger of the summary at `summary`.
pub fn run(summary: &Path) -> Result<(), CliError> {
    use retro_node::input::{MAX_JSON_BYTES, read_text_limited};
    let text = read_text_limited(summary, MAX_JSON_BYTES, "summary").map_err(|e| {
        if summary.exists() {
            e
        } else {
            format!(
                "{e}; name the run's summary with --summary PATH (it is written next to the tablebases, in the \
                 plan's output directory or --output)"
            )
        }
    })?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", summary.display()))?;
    print!("{}", retro_results::report::ledger_markdown(&v));
    Ok(())
}
