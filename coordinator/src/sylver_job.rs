//! The Sylver coinage table job: `coordinator --plan P` with `[job] game = "sylver"`.
//!
//! A plan lists rows `{m, n}` (coprime, `m < n`) and a question: `winning`
//! (every winning move of `{m, n}`, Sicherman's table) or `t_wins` (does
//! naming the Frobenius number `t` win, i.e. is `{m, n, t}` P). Rows are
//! grouped into m-classes ([`ClassUnit`], the unit of work: one memo serves
//! every row of a class, solved in increasing `n`); classes run on threads,
//! the most expensive first. Each finished row is a [`RowResult`] checkpointed
//! in its own file (checked JSON, written atomically), so a killed run redoes
//! only the rows without a file. The job writes `table.tsv` and `summary.json`.
//!
//! Plan format (`[job]`; `[output]` as in other plans):
//!
//! ```toml
//! [job]
//! name = "sylver-table"
//! game = "sylver"
//! question = "winning"          # or "t_wins"
//! ranges = [[4, 39, 40]]        # [m_lo, m_hi, n_max]: all coprime m < n <= n_max
//! pairs = [[13, 27]]            # extra single rows (optional)
//! cap = 40000000                # memo positions per class before a row is `capped`
//! threads = 1                   # classes solved at once; 0 = all cores
//! ```

use crate::CoordinatorError;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use config::ValueKind;
use retro_engine::durable::{read_checked_json, write_atomic, write_checked_json};
use retro_engine::sylver::{ClassSolver, MAX_M};
use retro_games::GameKind;
use retro_games::sylver::gcd;

use crate::plan::{ClusterSection, PlanError, Reader};

pub use retro_engine::sylver::table::{
    ClassUnit, RowResult, RowStatus, SOLVER_STACK, SylverQuestion, expected_cost, solve_class,
};
use retro_results::sylver::table::{Summary, summarize, table_tsv};

/// Default memo cap of one class: 250 million positions, which with 16-byte
/// slots, a table at most 3/4 full and the doubling step stays near 16 GB.
pub const DEFAULT_CAP: u64 = 250_000_000;

/// The allowed fields of each section.
const SCHEMA: [(&str, &[&str]); 3] = [
    ("job", &["name", "game", "question", "ranges", "pairs", "cap", "threads"]),
    ("cluster", ClusterSection::FIELDS),
    ("output", &["dir", "checkpoints"]),
];

/// A validated Sylver plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SylverPlan {
    /// Job name.
    pub name: String,
    /// The question every row answers.
    pub question: SylverQuestion,
    /// The rows `(m, n)`, ascending.
    pub rows: Vec<(u64, u64)>,
    /// Memo positions per class before a row is capped.
    pub cap: u64,
    /// Classes solved at once (at least 1).
    pub threads: usize,
    /// Where `table.tsv` and `summary.json` go.
    pub output: PathBuf,
    /// Where the row checkpoints go.
    pub checkpoints: PathBuf,
    /// `[cluster]`: with `workers > 0` remote workers take the classes.
    pub cluster: ClusterSection,
}

/// `job.<key>`: an array of integer arrays of length `len` (absent: empty).
fn tuples(r: &Reader, key: &str, len: usize) -> Result<Vec<Vec<u64>>, PlanError> {
    let field = format!("job.{key}");
    let Some(v) = r.get("job", key) else { return Ok(Vec::new()) };
    let ValueKind::Array(items) = &v.kind else {
        return Err(r.invalid(&field, format!("expected an array of {len}-number arrays")));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let f = format!("{field}[{i}]");
            match &item.kind {
                ValueKind::Array(xs) if xs.len() == len => {
                    xs.iter().map(|x| r.int_value(&f, x, 1, 1 << 20)).collect::<Result<Vec<_>, _>>()
                }
                _ => Err(r.invalid(&f, format!("expected an array of {len} integers"))),
            }
        })
        .collect()
}

impl SylverPlan {
    /// Reads and validates a Sylver plan file.
    pub fn load(path: &Path) -> Result<SylverPlan, PlanError> {
        let text = crate::plan::read_plan_text(path)?;
        SylverPlan::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses and validates plan text; `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<SylverPlan, PlanError> {
        SylverPlan::from_reader(Reader::parse(text, origin)?)
    }

    /// Validates a parsed Sylver plan.
    pub(crate) fn from_reader(r: Reader<'_>) -> Result<SylverPlan, PlanError> {
        r.check_schema(&SCHEMA)?;
        let name = r.string("job", "name")?.ok_or_else(|| r.missing("job.name"))?;
        if name.is_empty()
            || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        {
            return Err(r.invalid("job.name", format!("must match [a-z0-9_-]+, got {name:?}")));
        }
        let game = r.game()?;
        if game != GameKind::Sylver {
            return Err(r.invalid("job.game", format!("must be \"sylver\" in a Sylver plan, got \"{game}\"")));
        }
        let question = match r.string("job", "question")?.as_deref() {
            None | Some("winning") => SylverQuestion::Winning,
            Some("t_wins") => SylverQuestion::TWins,
            Some(other) => {
                return Err(r.invalid("job.question", format!("must be \"winning\" or \"t_wins\", got {other:?}")));
            }
        };
        let mut rows = BTreeSet::new();
        for (i, t) in tuples(&r, "ranges", 3)?.into_iter().enumerate() {
            let (lo, hi, n_max) = (t[0], t[1], t[2]);
            if lo < 2 || lo > hi || hi >= n_max {
                return Err(r.invalid(
                    &format!("job.ranges[{i}]"),
                    format!("[m_lo, m_hi, n_max] needs 2 <= m_lo <= m_hi < n_max, got [{lo}, {hi}, {n_max}]"),
                ));
            }
            for m in lo..=hi {
                for n in m + 1..=n_max {
                    // {2, 3} has t = 1: naming t is naming 1, not a question.
                    if gcd(m, n) == 1 && !(question == SylverQuestion::TWins && (m, n) == (2, 3)) {
                        rows.insert((m, n));
                    }
                }
            }
        }
        for (i, p) in tuples(&r, "pairs", 2)?.into_iter().enumerate() {
            let (m, n) = (p[0].min(p[1]), p[0].max(p[1]));
            let field = format!("job.pairs[{i}]");
            if m < 2 || m == n || gcd(m, n) != 1 {
                return Err(r.invalid(&field, format!("needs two coprime numbers >= 2, got [{}, {}]", p[0], p[1])));
            }
            if question == SylverQuestion::TWins && (m, n) == (2, 3) {
                return Err(r.invalid(&field, "{2, 3} has t = 1: naming t is naming 1"));
            }
            rows.insert((m, n));
        }
        if rows.is_empty() {
            return Err(r.invalid("job.ranges", "the plan has no rows: give `ranges` or `pairs`"));
        }
        let mut n_max: BTreeMap<u64, u64> = BTreeMap::new();
        for &(m, n) in &rows {
            let e = n_max.entry(m).or_default();
            *e = (*e).max(n);
        }
        for (&m, &n) in &n_max {
            if m > MAX_M as u64 {
                return Err(r.invalid("job.ranges", format!("m = {m} is above the solver's largest m, {MAX_M}")));
            }
            if let Err(e) = ClassSolver::new(m, n - 1) {
                return Err(r.invalid("job.ranges", format!("row {{{m}, {n}}}: {e}")));
            }
        }
        let cap = r.int("job", "cap", 1, retro_engine::sylver::MAX_CAP)?.unwrap_or(DEFAULT_CAP);
        // Each thread holds a class's memo (up to `cap` positions): never more
        // threads than cores.
        let threads =
            retro_node::bounded_threads(r.int("job", "threads", 0, 1024)?.unwrap_or(1) as usize, "job.threads");
        let dir_of = |key: &str, base: &str| -> Result<PathBuf, PlanError> {
            match r.string("output", key)? {
                Some(d) if d.is_empty() => Err(r.invalid(&format!("output.{key}"), "must not be empty")),
                Some(d) => Ok(PathBuf::from(d)),
                None => Ok(Path::new(base).join(&name)),
            }
        };
        let output = dir_of("dir", "tablebases")?;
        let checkpoints = dir_of("checkpoints", "checkpoints")?;
        let cluster = r.cluster()?;
        Ok(SylverPlan { name, question, rows: rows.into_iter().collect(), cap, threads, output, checkpoints, cluster })
    }

    /// Identity of what the plan computes (question, rows, cap): hex SHA-256,
    /// first 16 digits, as [`crate::plan::Plan::hash`]. Threads and paths do
    /// not change a table.
    pub fn hash(&self) -> String {
        use sha2::Digest;
        let text = format!("{:?} {:?} {}", self.question, self.rows, self.cap);
        sha2::Sha256::digest(text.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// The rows grouped into m-classes, `n` ascending within each.
    pub fn classes(&self) -> Vec<ClassUnit> {
        let mut by_m: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for &(m, n) in &self.rows {
            by_m.entry(m).or_default().push(n);
        }
        by_m.into_iter()
            .map(|(m, ns)| ClassUnit { m, n_max: *ns.last().unwrap_or(&m), ns, question: self.question, cap: self.cap })
            .collect()
    }
}

fn row_path(dir: &Path, m: u64, n: u64) -> PathBuf {
    dir.join(format!("row-{m}-{n}.json"))
}

/// Options of one run (tests use `stop_after` as the fault hook).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Stop with an error after this many rows were checkpointed in this run.
    pub stop_after: Option<usize>,
}

/// The rows of a job so far: those read back from checkpoints and those
/// finished in this run. The embedded threads and the cluster service feed
/// it the same way, so a table does not depend on who solved its rows.
pub struct RowStore {
    rows_dir: PathBuf,
    results: BTreeMap<(u64, u64), (RowResult, bool)>,
    wanted: BTreeSet<(u64, u64)>,
    written: usize,
    stop_after: Option<usize>,
}

impl RowStore {
    /// Reads the row checkpoints of `plan` under `checkpoints` (a damaged or
    /// stale one is logged and its row solved again).
    pub fn open(plan: &SylverPlan, checkpoints: &Path, opts: &RunOptions) -> Result<RowStore, CoordinatorError> {
        let rows_dir = checkpoints.join("rows");
        std::fs::create_dir_all(&rows_dir)
            .map_err(|source| CoordinatorError::File { path: rows_dir.clone(), source })?;
        let mut results = BTreeMap::new();
        for &(m, n) in &plan.rows {
            let path = row_path(&rows_dir, m, n);
            match read_checked_json::<RowResult>(&path) {
                // A file copied or renamed from another row checks as a good
                // file: it must also be the row its name stands for.
                Ok(Some(r)) if (r.m, r.n) != (m, n) => tracing::warn!(
                    "{} holds row {{{}, {}}}, not {{{m}, {n}}}; the row will be solved again",
                    path.display(),
                    r.m,
                    r.n
                ),
                Ok(Some(r)) if r.question == plan.question && (r.status == RowStatus::Solved || r.cap == plan.cap) => {
                    results.insert((m, n), (r, true));
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("{e}; the row will be solved again"),
            }
        }
        let wanted = plan.rows.iter().copied().collect();
        Ok(RowStore { rows_dir, results, wanted, written: 0, stop_after: opts.stop_after })
    }

    /// The classes still to solve, each with only its unfinished rows,
    /// cheapest first (so `pop()` hands out the dearest).
    pub fn pending_units(&self, plan: &SylverPlan) -> Vec<ClassUnit> {
        let mut units: Vec<ClassUnit> = plan
            .classes()
            .into_iter()
            .map(|mut u| {
                u.ns.retain(|&n| !self.has(u.m, n));
                u
            })
            .filter(|u| !u.ns.is_empty())
            .collect();
        units.sort_by(|a, b| expected_cost(a).total_cmp(&expected_cost(b)));
        units
    }

    /// True when row `{m, n}` is done.
    pub fn has(&self, m: u64, n: u64) -> bool {
        self.results.contains_key(&(m, n))
    }

    /// Rows done (from checkpoints and this run).
    pub fn done(&self) -> usize {
        self.results.len()
    }

    /// True when every row of the plan is done.
    pub fn is_complete(&self) -> bool {
        self.results.len() == self.wanted.len()
    }

    /// Checks that `row` answers a row of `plan` the way the plan asks.
    pub fn check(&self, plan: &SylverPlan, row: &RowResult) -> Result<(), CoordinatorError> {
        if !self.wanted.contains(&(row.m, row.n)) {
            return Err(CoordinatorError::BadRow {
                m: row.m,
                n: row.n,
                why: format!("is not part of job {}", plan.name),
            });
        }
        if row.question != plan.question || row.cap != plan.cap {
            let why = format!(
                "answers {:?} under cap {}; the job asks {:?} under cap {}",
                row.question, row.cap, plan.question, plan.cap
            );
            return Err(CoordinatorError::BadRow { m: row.m, n: row.n, why });
        }
        if row.t != row.m * row.n - row.m - row.n {
            return Err(CoordinatorError::BadRow { m: row.m, n: row.n, why: format!("reports t = {}", row.t) });
        }
        Ok(())
    }

    /// Checkpoints a finished row (a row already done is ignored: answers do
    /// not depend on who computed them). Fails when the checkpoint cannot be
    /// written, or at the fault hook.
    pub fn record(&mut self, row: RowResult) -> Result<(), CoordinatorError> {
        if self.has(row.m, row.n) {
            return Ok(());
        }
        write_checked_json(&row_path(&self.rows_dir, row.m, row.n), &row)?;
        tracing::info!(
            "row {{{}, {}}} t = {}: {:?}, {} positions, {:.2} s{} ({} of {} rows done)",
            row.m,
            row.n,
            row.t,
            row.status,
            row.positions,
            row.seconds,
            match (row.question, row.status) {
                (_, RowStatus::Capped) => String::new(),
                (SylverQuestion::Winning, _) => format!(", winning {:?}", row.winning),
                (SylverQuestion::TWins, _) => format!(", t wins: {}", row.t_wins.unwrap_or(false)),
            },
            self.results.len() + 1,
            self.wanted.len()
        );
        self.results.insert((row.m, row.n), (row, false));
        self.written += 1;
        if self.stop_after.is_some_and(|k| self.written >= k) {
            return Err(CoordinatorError::FaultStop(self.written));
        }
        Ok(())
    }

    /// Writes `table.tsv` and `summary.json` into `output`.
    pub fn finish(&self, plan: &SylverPlan, output: &Path) -> Result<Summary, CoordinatorError> {
        std::fs::create_dir_all(output)
            .map_err(|source| CoordinatorError::File { path: output.to_path_buf(), source })?;
        let summary = summarize(&plan.name, plan.question, plan.cap, self.results.clone());
        write_outputs(output, &summary)?;
        Ok(summary)
    }
}

/// Runs the plan on this machine's threads: solves the rows without a
/// checkpoint, then writes the table and `summary.json`.
pub fn run(
    plan: &SylverPlan,
    output: &Path,
    checkpoints: &Path,
    opts: &RunOptions,
) -> Result<Summary, CoordinatorError> {
    std::fs::create_dir_all(output).map_err(|source| CoordinatorError::File { path: output.to_path_buf(), source })?;
    let mut rows = RowStore::open(plan, checkpoints, opts)?;
    let units = rows.pending_units(plan);
    let todo: usize = units.iter().map(|u| u.ns.len()).sum();
    tracing::info!(
        "sylver job {}: {} rows, {} from checkpoints, {} to solve in {} classes on {} threads",
        plan.name,
        plan.rows.len(),
        rows.done(),
        todo,
        units.len(),
        plan.threads
    );
    let queue = Arc::new(Mutex::new(units));
    let (tx, rx) = mpsc::channel::<RowResult>();
    let mut handles = Vec::new();
    for _ in 0..plan.threads.min(todo.max(1)) {
        let queue = Arc::clone(&queue);
        let tx = tx.clone();
        let h = std::thread::Builder::new()
            .name("sylver-class".into())
            .stack_size(SOLVER_STACK)
            .spawn(move || {
                loop {
                    let next = queue.lock().ok().and_then(|mut q| q.pop());
                    let Some(unit) = next else { break };
                    let mut stop = false;
                    solve_class(&unit, |row| {
                        stop = tx.send(row).is_err();
                        !stop
                    });
                    if stop {
                        break;
                    }
                }
            })
            .map_err(|e| CoordinatorError::Thread {
                what: "a solver thread".into(),
                detail: format!("cannot start: {e}"),
            })?;
        handles.push(h);
    }
    drop(tx);
    for row in rx {
        // On failure, threads still solving see the channel closed at their
        // next row and stop; do not wait for a long row to finish.
        rows.record(row)?;
    }
    for h in handles {
        let _ = h.join();
    }
    rows.finish(plan, output)
}

fn write_outputs(dir: &Path, s: &Summary) -> Result<(), CoordinatorError> {
    let json = serde_json::to_string_pretty(s)?;
    write_atomic(&dir.join("table.tsv"), table_tsv(s).as_bytes())?;
    Ok(write_atomic(&dir.join("summary.json"), json.as_bytes())?)
}

/// Prints a finished table (or its `summary.json` with `json`) for `coordinator --plan P`.
pub fn print_summary(s: &Summary, output: &Path, json: bool) -> Result<(), CoordinatorError> {
    if json {
        println!("{}", serde_json::to_string_pretty(s)?);
    } else {
        print!("{}", table_tsv(s));
        println!(
            "{} rows: {} solved, {} capped; {} compared with published values, {} mismatches",
            s.rows.len(),
            s.solved,
            s.capped,
            s.compared,
            s.mismatches
        );
        println!("table.tsv and summary.json in {}", output.display());
    }
    Ok(())
}
