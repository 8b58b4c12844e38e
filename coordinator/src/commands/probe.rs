//! `coordinator probe`: one position's answers and its moves', a witness of a
//! category, or (`--batch`) positions read one per line from stdin and
//! answered as JSON lines. Everything is read through the probe library.

use super::CliError;

use retro_probe::Tablebases;
use retro_results::cc3::witness::{self, WitnessKind};
use std::io::{BufRead, Write};
use std::path::Path;

/// What `probe` was asked.
pub enum Request {
    /// One position (the start when `None`).
    One(Option<String>),
    /// A witness of a category (three-player only).
    Witness(WitnessKind, Option<u32>),
    /// Positions from stdin, one per line, answered as JSON lines.
    Batch,
}

/// Runs `probe` on the tablebases in `dir`.
pub fn run(dir: &Path, request: Request, json: bool) -> Result<(), CliError> {
    let tb = retro_probe::open(dir)?;
    match (request, tb) {
        (Request::Witness(kind, max_depth), Tablebases::ThreePlayer(p)) => {
            let w = witness::find(&p, kind, max_depth)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&w)?);
            } else {
                print!("{}", witness::text(&w));
            }
            Ok(())
        }
        (Request::Witness(..), Tablebases::TwoPlayer(_)) => Err(format!(
            "{}: witnesses are three-player categories; this directory holds a two-player tablebase",
            dir.display()
        )
        .into()),
        (Request::Witness(..), Tablebases::Ranked(_)) => Err(format!(
            "{}: witnesses are categories of the first-winner game; this directory holds a ranked job's top2(A) \
             (probe a position instead, or `coordinator kingmaking` beside the first-winner tablebases)",
            dir.display()
        )
        .into()),
        (Request::One(text), tb) => {
            let (answer, plain) = tb.probe_text(text.as_deref())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&answer)?);
            } else {
                print!("{plain}");
            }
            Ok(())
        }
        (Request::Batch, tb) => batch(&tb, std::io::stdin().lock(), &mut std::io::stdout().lock()),
    }
}

/// Answers every line of `input` (a position's text; blank lines and lines
/// starting with `#` are skipped) with one JSON line: the position's answers
/// and moves, or `{"input": ..., "error": ...}`. A bad line does not stop the
/// batch; the exit status says whether any failed.
fn batch(tb: &Tablebases, input: impl BufRead, out: &mut impl Write) -> Result<(), CliError> {
    let (mut answered, mut failed) = (0u64, 0u64);
    use retro_node::input::{BoundedLines, Line, MAX_LINE_BYTES};
    for (number, line) in BoundedLines::new(input, MAX_LINE_BYTES).enumerate() {
        let number = number + 1;
        let line = line.map_err(|e| format!("reading stdin, line {number}: {e}"))?;
        // A bad line gets its error line, and the rest are still answered.
        let bad = match &line {
            Line::Text(_) => None,
            Line::NotUtf8(shown) => Some((shown.clone(), format!("line {number} is not UTF-8 text"))),
            Line::TooLong(head) => {
                Some((format!("{head}..."), format!("line {number} is longer than {MAX_LINE_BYTES} bytes")))
            }
        };
        if let Some((shown, e)) = bad {
            failed += 1;
            writeln!(out, "{}", serde_json::json!({ "line": number, "input": shown, "error": e }))
                .map_err(|e| format!("writing stdout: {e}"))?;
            continue;
        }
        let Line::Text(line) = line else { unreachable!("bad lines were answered above") };
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let v = match tb.probe_text(Some(text)) {
            Ok((v, _)) => {
                answered += 1;
                v
            }
            Err(e) => {
                failed += 1;
                serde_json::json!({ "line": number, "input": text, "error": e.to_string() })
            }
        };
        writeln!(out, "{v}").map_err(|e| format!("writing stdout: {e}"))?;
    }
    out.flush().map_err(|e| format!("writing stdout: {e}"))?;
    if failed > 0 {
        return Err(format!(
            "{failed} of {} positions could not be answered (see their error lines)",
            answered + failed
        )
        .into());
    }
    Ok(())
}
