//! `coordinator sylver`: one Sylver coinage position or the first-move
//! table, from `retro_results::sylver::position`. The flags are checked as
//! they are parsed, each against its limit, so a wrong number is refused
//! with the range it must lie in before anything is sized by it.

use super::CliError;

use std::io::Write;

use retro_engine::sylver::theory::{Limits, MAX_BOUND};
use retro_engine::sylver::{MAX_CAP, check_cap};
use retro_results::sylver::position::{
    DEFAULT_CAP, MAX_OPENINGS, OpeningRow, openings, openings_range, position_report, report_text,
};

/// Arguments of `coordinator sylver`.
#[derive(clap::Args, Debug)]
pub struct SylverArgs {
    /// The named numbers, any order, e.g. "5 14"; each at most 1048576 (2^20). A finite position (gcd 1) is
    /// solved exactly, which takes a smallest number of at most 64 and at most 255 nameable numbers in each
    /// class mod that number.
    #[arg(long, required_unless_present = "openings")]
    pub position: Option<String>,
    /// Also print the solver's figures: positions, seconds, memo bytes, peak RSS.
    #[arg(long)]
    pub stats: bool,
    /// Stop after this many memo positions (1 to 4294967296 = 2^32; the memo grows as the search needs).
    #[arg(long, default_value_t = DEFAULT_CAP, value_parser = cap_arg)]
    pub cap: u64,
    /// Infinite positions: try replies up to this number (at most 1048576 = 2^20, the largest nameable here).
    #[arg(long, default_value_t = 120, value_parser = bound_arg)]
    pub bound: u64,
    /// Take a child that is an ender with t > 1 as N without searching it.
    #[arg(long)]
    pub ender_pruning: bool,
    /// Print the first-move table for 1..=N instead of a position (N from 1 to 1048576 = 2^20).
    #[arg(long, value_name = "N", conflicts_with = "position", value_parser = openings_arg)]
    pub openings: Option<u64>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

/// `--cap`: a number of positions in `1..=`[`MAX_CAP`].
fn cap_arg(text: &str) -> Result<u64, CliError> {
    let cap = text.parse().map_err(|_| format!("say a number of positions from 1 to {MAX_CAP}"))?;
    Ok(check_cap(cap)?)
}

/// `--bound`: a number up to [`MAX_BOUND`].
fn bound_arg(text: &str) -> Result<u64, CliError> {
    let bound = text.parse().map_err(|_| format!("say a number from 0 to {MAX_BOUND}"))?;
    Ok(Limits { bound, cap: 1 }.check().map(|l| l.bound)?)
}

/// `--openings`: `N` in `1..=`[`MAX_OPENINGS`].
fn openings_arg(text: &str) -> Result<u64, CliError> {
    match text.parse() {
        Ok(n) if (1..=MAX_OPENINGS).contains(&n) => Ok(n),
        _ => Err(openings_range().into()),
    }
}

/// Prints the first-move table as it is made: text lines, or one JSON array
/// (the same text `serde_json::to_string_pretty` gives for the whole table).
/// A reader that stops reading (`| head`) ends it without an error.
fn print_openings(rows: impl Iterator<Item = OpeningRow>, json: bool) -> Result<(), CliError> {
    match write_openings(&mut std::io::stdout().lock(), rows, json) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r.map_err(|e| format!("stdout: {e}"))?),
    }
}

fn write_openings(out: &mut impl Write, rows: impl Iterator<Item = OpeningRow>, json: bool) -> std::io::Result<()> {
    if json {
        let mut first = true;
        for r in rows {
            let row = serde_json::to_string_pretty(&r).map_err(std::io::Error::other)?;
            write!(out, "{}\n  {}", if first { "[" } else { "," }, row.replace('\n', "\n  "))?;
            first = false;
        }
        writeln!(out, "{}", if first { "[]" } else { "\n]" })?;
    } else {
        for r in rows {
            writeln!(out, "{:>4}  {:<5}  {}", r.n, r.result, r.reason)?;
        }
    }
    out.flush()
}

/// Runs `coordinator sylver`.
pub fn run(args: SylverArgs) -> Result<(), CliError> {
    if let Some(up_to) = args.openings {
        let rows = openings(up_to, Limits { bound: args.bound, cap: args.cap })?;
        return print_openings(rows, args.json);
    }
    let text = args.position.as_deref().unwrap_or_default();
    let r = position_report(text, args.cap, args.bound, args.ender_pruning)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", report_text(&r, args.stats));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits { bound: 60, cap: 100_000 }
    }

    /// The table written row by row is the JSON the whole table gives.
    #[test]
    fn streamed_json_is_the_pretty_json_of_the_table() {
        let rows: Vec<OpeningRow> = openings(13, limits()).unwrap().collect();
        assert_eq!(rows.len(), 13);
        let mut out = Vec::new();
        write_openings(&mut out, rows.clone().into_iter(), true).unwrap();
        let whole = serde_json::to_string_pretty(&rows).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), format!("{whole}\n"));
        let mut empty = Vec::new();
        write_openings(&mut empty, std::iter::empty(), true).unwrap();
        assert_eq!(String::from_utf8(empty).unwrap(), "[]\n");
        let mut text = Vec::new();
        write_openings(&mut text, rows.into_iter(), false).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.lines().count(), 13);
        assert!(text.starts_with("   1  loses  whoever names 1 loses\n"), "{text}");
    }

    #[test]
    fn arguments_name_their_limits() {
        assert_eq!(cap_arg("1").ok(), Some(1));
        assert_eq!(cap_arg(&MAX_CAP.to_string()).ok(), Some(MAX_CAP));
        for bad in ["0", "4294967297", "99999999999999999999999", "-1", "x"] {
            let e = cap_arg(bad).unwrap_err().to_string();
            assert!(e.contains("4294967296"), "{bad}: {e}");
        }
        assert_eq!(bound_arg("0").ok(), Some(0));
        assert_eq!(bound_arg("1048576").ok(), Some(MAX_BOUND));
        for bad in ["1048577", "18446744073709551616", "-5"] {
            let e = bound_arg(bad).unwrap_err().to_string();
            assert!(e.contains("1048576"), "{bad}: {e}");
        }
        assert_eq!(openings_arg("1048576").ok(), Some(MAX_OPENINGS));
        for bad in ["0", "1048577", "100000000", "1e9"] {
            let e = openings_arg(bad).unwrap_err().to_string();
            assert!(e.contains("1048576"), "{bad}: {e}");
        }
        assert!(openings(0, limits()).is_err());
        let e = openings(100_000_000, limits()).err().unwrap().to_string();
        assert!(e.starts_with("--openings 100000000:") && e.contains("1048576"), "{e}");
        let e = openings(30, Limits { bound: 1 << 30, cap: 1 }).err().unwrap().to_string();
        assert!(e.starts_with("--bound 1073741824:") && e.contains("1048576"), "{e}");
        let e = openings(30, Limits { bound: 60, cap: 0 }).err().unwrap().to_string();
        assert!(e.starts_with("--cap 0:") && e.contains("4294967296"), "{e}");
    }
}
