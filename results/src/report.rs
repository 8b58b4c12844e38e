//! What every game's report shares: numbers with thousands separators, the
//! program that wrote a summary, and the Markdown ledger of any summary.json
//! (the file `docs/RESULTS.md` is made of), by the game it names.

use retro_games::GameKind;

/// `n` with a comma every three digits.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The program that wrote a summary, as the ledgers print it: its version and,
/// when recorded, its commit.
pub fn program_of(v: &serde_json::Value) -> String {
    let version = v["program_version"].as_str().unwrap_or("?");
    match v["program_commit"].as_str() {
        Some(commit) => format!("{version}, commit {commit}"),
        None => version.to_string(),
    }
}

/// The game a summary's (or another file's) `game` field names, if it names one.
pub fn game_named(name: Option<&str>) -> Option<GameKind> {
    name?.parse().ok()
}

/// A Markdown ledger of a summary.json, by the game it names (three-player
/// when it names none: the summaries written before the field).
pub fn ledger_markdown(v: &serde_json::Value) -> String {
    match game_named(v["game"].as_str()) {
        Some(GameKind::Cc2) => crate::cc2::summary::ledger_markdown(v),
        Some(GameKind::Peg) => crate::peg::summary::ledger_markdown(v),
        Some(GameKind::Sylver) => crate::sylver::table::ledger_markdown(v),
        Some(GameKind::Cc3) if crate::cc3::ranked::is_ranked(v) => crate::cc3::ranked::ledger_markdown(v),
        Some(GameKind::Cc3) | None => crate::cc3::summary::ledger_markdown(v),
    }
}

/// The Markdown table of a summary's tablebase files (file, bytes, SHA-256).
pub fn tablebase_table(v: &serde_json::Value) -> String {
    let mut out = String::from("\n| tablebase | bytes | sha256 |\n|---|---:|---|\n");
    for t in v["tablebases"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "| {} | {} | `{}` |\n",
            t["file"].as_str().unwrap_or("?"),
            t["bytes"].as_u64().map(thousands).unwrap_or_else(|| "?".into()),
            t["sha256"].as_str().unwrap_or("?")
        ));
    }
    out
}
