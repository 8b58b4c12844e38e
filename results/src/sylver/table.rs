//! The Sylver coinage table: a job's rows compared with the published values
//! (Sicherman's tables and the `t`-wins pairs), as `summary.json`,
//! `table.tsv` and the Markdown ledger.

use std::collections::{BTreeMap, BTreeSet};

use retro_engine::sylver::table::{RowResult, RowStatus, SylverQuestion};
use retro_games::GameKind;
use retro_games::sylver::parse_numbers;
use serde::Serialize;

/// The published reference lines (source line inside), for the comparison column.
const REFERENCE: &str = retro_games::sylver::PUBLISHED;

/// A summary row: the result plus the comparison with the published value.
#[derive(Clone, Debug, Serialize)]
pub struct SummaryRow {
    /// The row.
    #[serde(flatten)]
    pub result: RowResult,
    /// `match` / `mismatch` against the published value, absent where none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<&'static str>,
    /// True when the row came from a checkpoint of an earlier run.
    pub resumed: bool,
}

/// `summary.json` of a Sylver job.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Job name.
    pub job: String,
    /// Always `sylver`.
    pub game: GameKind,
    /// The question.
    pub question: SylverQuestion,
    /// Memo cap per class.
    pub cap: u64,
    /// Rows solved / capped.
    pub solved: usize,
    /// Rows capped.
    pub capped: usize,
    /// Rows compared with a published value, and how many differ.
    pub compared: usize,
    /// Rows whose answer differs from the published one.
    pub mismatches: usize,
    /// Every row, ascending.
    pub rows: Vec<SummaryRow>,
}

/// The published answers: `winning` lines of two numbers, and the `t`-wins pairs.
/// Published winning moves by row, and the rows where `t` wins.
type Published = (BTreeMap<(u64, u64), Vec<u64>>, BTreeSet<(u64, u64)>);

fn published() -> Published {
    let mut winning = BTreeMap::new();
    let mut twins = BTreeSet::new();
    for line in REFERENCE.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            ["winning", pos, moves, ..] => {
                if let (Ok(p), Ok(w)) = (parse_numbers(pos), parse_numbers(moves))
                    && let [m, n] = p[..]
                {
                    winning.insert((m.min(n), m.max(n)), w);
                }
            }
            ["t_wins_pairs", pairs, ..] => {
                for pair in pairs.split(',') {
                    if let Ok(p) = parse_numbers(pair)
                        && let [m, n] = p[..]
                    {
                        twins.insert((m, n));
                    }
                }
            }
            _ => {}
        }
    }
    (winning, twins)
}

/// The article's search bounds for the `t`-wins question: `n <= N(m)`.
fn article_twins_bound(m: u64) -> Option<u64> {
    Some(match m {
        2 | 3 => 200,
        4 => 160,
        5 => 100,
        6 => 82,
        7 | 8 => 40,
        9 => 37,
        10 => 32,
        11 => 30,
        12 => 28,
        13 => 26,
        14 => 24,
        15 => 21,
        16 => 20,
        17 => 18,
        _ => return None,
    })
}

/// The summary of job `job`'s rows (each with `true` when it came from a
/// checkpoint of an earlier run), every solved row compared with the
/// published value where there is one.
pub fn summarize(
    job: &str,
    question: SylverQuestion,
    cap: u64,
    results: BTreeMap<(u64, u64), (RowResult, bool)>,
) -> Summary {
    let (winning, twins) = published();
    let rows: Vec<SummaryRow> = results
        .into_values()
        .map(|(r, resumed)| {
            let reference = match (r.status, r.question) {
                (RowStatus::Capped, _) => None,
                (_, SylverQuestion::Winning) => {
                    winning.get(&(r.m, r.n)).map(|w| if *w == r.winning { "match" } else { "mismatch" })
                }
                (_, SylverQuestion::TWins) => article_twins_bound(r.m)
                    .filter(|&b| r.n <= b)
                    .map(|_| if r.t_wins == Some(twins.contains(&(r.m, r.n))) { "match" } else { "mismatch" }),
            };
            SummaryRow { result: r, reference, resumed }
        })
        .collect();
    Summary {
        job: job.to_string(),
        game: GameKind::Sylver,
        question,
        cap,
        solved: rows.iter().filter(|r| r.result.status == RowStatus::Solved).count(),
        capped: rows.iter().filter(|r| r.result.status == RowStatus::Capped).count(),
        compared: rows.iter().filter(|r| r.reference.is_some()).count(),
        mismatches: rows.iter().filter(|r| r.reference == Some("mismatch")).count(),
        rows,
    }
}

/// The table as tab-separated text, one row per line.
pub fn table_tsv(s: &Summary) -> String {
    let mut out = String::from("# m\tn\tt\tstatus\tanswer\tpositions\tseconds\treference\n");
    for r in &s.rows {
        let x = &r.result;
        let answer = match (x.status, x.question) {
            (RowStatus::Capped, _) => "-".to_owned(),
            (_, SylverQuestion::Winning) => x.winning.iter().map(u64::to_string).collect::<Vec<_>>().join(" "),
            (_, SylverQuestion::TWins) => if x.t_wins == Some(true) { "t wins" } else { "t loses" }.to_owned(),
        };
        let status = if x.status == RowStatus::Solved { "solved" } else { "capped" };
        out += &format!(
            "{}\t{}\t{}\t{status}\t{answer}\t{}\t{:.2}\t{}\n",
            x.m,
            x.n,
            x.t,
            x.positions,
            x.seconds,
            r.reference.unwrap_or("-")
        );
    }
    out
}

/// The Markdown ledger of a Sylver `summary.json` (`coordinator ledger`): one
/// line per m-class, then every row.
pub fn ledger_markdown(v: &serde_json::Value) -> String {
    let rows = v["rows"].as_array().cloned().unwrap_or_default();
    let question = v["question"].as_str().unwrap_or("?");
    let mut out = format!(
        "## {} — Sylver coinage, question `{question}`\n\nProduced by `coordinator ledger` from the run's summary.json: \
         {} rows, {} solved, {} capped (memo cap {} positions per m-class); {} rows compared with published \
         values, {} mismatches. Seconds are wall-clock on a machine shared with another job: upper bounds.\n\n",
        v["job"].as_str().unwrap_or("?"),
        rows.len(),
        v["solved"],
        v["capped"],
        v["cap"],
        v["compared"],
        v["mismatches"]
    );
    let mut by_m: BTreeMap<u64, Vec<&serde_json::Value>> = BTreeMap::new();
    for r in &rows {
        by_m.entry(r["m"].as_u64().unwrap_or(0)).or_default().push(r);
    }
    out += "| m | rows solved / all | n solved up to | largest t solved | slowest row | positions (class) |\n";
    out += "|---:|---:|---:|---:|---|---:|\n";
    for (m, rs) in &by_m {
        let solved: Vec<_> = rs.iter().filter(|r| r["status"] == "solved").collect();
        let slowest = solved
            .iter()
            .max_by(|a, b| a["seconds"].as_f64().unwrap_or(0.0).total_cmp(&b["seconds"].as_f64().unwrap_or(0.0)));
        out += &format!(
            "| {m} | {} / {} | {} | {} | {} | {} |\n",
            solved.len(),
            rs.len(),
            solved.iter().filter_map(|r| r["n"].as_u64()).max().map_or("-".into(), |n| n.to_string()),
            solved.iter().filter_map(|r| r["t"].as_u64()).max().map_or("-".into(), |t| t.to_string()),
            slowest.map_or("-".into(), |r| format!(
                "{{{m}, {}}} {:.2} s",
                r["n"],
                r["seconds"].as_f64().unwrap_or(0.0)
            )),
            rs.iter().filter_map(|r| r["positions"].as_u64()).sum::<u64>()
        );
    }
    out +=
        "\n| m | n | t | status | answer | positions | seconds | published |\n|---:|---:|---:|---|---|---:|---:|---|\n";
    for r in &rows {
        let answer = if r["status"] != "solved" {
            "-".to_owned()
        } else if question == "t_wins" {
            if r["t_wins"] == true { "t wins".into() } else { "t loses".into() }
        } else {
            let w: Vec<String> = r["winning"].as_array().into_iter().flatten().map(|x| x.to_string()).collect();
            w.join(" ")
        };
        out += &format!(
            "| {} | {} | {} | {} | {answer} | {} | {:.2} | {} |\n",
            r["m"],
            r["n"],
            r["t"],
            r["status"].as_str().unwrap_or("?"),
            r["positions"],
            r["seconds"].as_f64().unwrap_or(0.0),
            r["reference"].as_str().unwrap_or("-")
        );
    }
    out + "\n"
}
