//! Job plans: the TOML file that says what to solve and how to split it.
//!
//! A plan names the game and its size (`[job]`), how the rank space is cut
//! into shards and blocks (`[shards]`), how the cluster runs (`[cluster]`) and
//! where results go (`[output]`). [`Plan::load`] reads one with the `config`
//! crate, rejects unknown fields and wrong types with the dotted field name,
//! fills in every default and validates every value, so the rest of the
//! coordinator can use a [`Plan`] without further checks.
//!
//! `config` is lenient with types (it turns `1.5` into `2`, `true` into `1`
//! and `5` into `"5"`) and reports unknown fields without their section, so
//! the file is parsed by `config` into its value tree and that tree is walked
//! here with strict types instead of deserializing through `config` directly.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use config::{Value, ValueKind};
use retro_games::GameKind;
use retro_games::cc2::{Board, Cc2, MAX_PIECES, MAX_SIZE, MIN_SIZE, Part2};
use retro_games::cc3::{Objective, RANKED_QUESTION};
use retro_games::peg::{Board as PegBoard, BoardKind, parse_hole};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The built-in stage-1 plan, used when the user gives no `--plan`.
pub const DEFAULT_PLAN: &str = include_str!("../../plans/stage1.toml");

/// The questions asked when a plan does not list any.
const DEFAULT_QUESTIONS: [&str; 3] = ["solo(A)", "enable(A>B)", "enable(A>C)"];
/// Default `shards.count`.
const DEFAULT_SHARDS: u32 = 1;
/// Default `shards.block_positions` (2^20).
const DEFAULT_BLOCK_POSITIONS: u64 = 1 << 20;
/// Default `shards.chunk_bytes` (1 MiB).
const DEFAULT_CHUNK_BYTES: u64 = 1 << 20;
/// Default `cluster.listen`.
const DEFAULT_LISTEN: &str = "0.0.0.0:50051";
/// Default `cluster.memory_mb`: the memory bound of a level job.
pub const DEFAULT_MEMORY_MB: u64 = 8000;

fn default_memory_mb() -> u64 {
    DEFAULT_MEMORY_MB
}

/// Default `cluster.heartbeat_timeout_secs`.
const DEFAULT_HEARTBEAT_SECS: u64 = 30;
/// Default `job.questions` of `cc2`: player 1 plays to win (three-valued).
const DEFAULT_QUESTIONS_CC2: [&str; 1] = ["solo(1)"];

/// What a `peg` plan computes (`[job] task`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PegTask {
    /// The breadth-first ledger of one single-vacancy start (the default).
    Ledger,
    /// The table of every single-vacancy start and single-survivor finish.
    Problems,
}

/// A plan of any game, read once: its `[job] game` decides which plan type
/// validates the rest.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // one per run, never in a collection
pub enum AnyPlan {
    /// Chinese checkers (cc2, cc3) or peg solitaire.
    Plan(Plan),
    /// A Sylver coinage table.
    Sylver(crate::sylver_job::SylverPlan),
}

impl AnyPlan {
    /// Reads and validates the plan file at `path`.
    pub fn load(path: &Path) -> Result<AnyPlan, PlanError> {
        let text = read_plan_text(path)?;
        AnyPlan::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses and validates plan text; `origin` names it in error messages.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<AnyPlan, PlanError> {
        let r = Reader::parse(text, origin)?;
        Ok(match r.game()? {
            GameKind::Sylver => AnyPlan::Sylver(crate::sylver_job::SylverPlan::from_reader(r)?),
            _ => AnyPlan::Plan(Plan::from_reader(r)?),
        })
    }
}

/// A validated job plan with every default filled in. Its serde form (and
/// the JSON [`Plan::hash`] digests) is the flat `[job]` table of the file,
/// field for field as plans were written before the typed [`GamePlan`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// What to solve.
    pub job: JobSection,
    /// How the rank space is split.
    pub shards: ShardSection,
    /// How the cluster runs (does not change the job's identity).
    pub cluster: ClusterSection,
    /// Where results go (does not change the job's identity).
    pub output: OutputSection,
}

/// `[job]`: the name, the game with its settings, and the questions to answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "JobWire", try_from = "JobWire")]
pub struct JobSection {
    /// Job name, `[a-z0-9_-]+`; names the default output and checkpoint directories.
    pub name: String,
    /// The game and its settings.
    pub game: GamePlan,
    /// Questions: for `cc3` each `solo(X)` or `enable(X>Y)` with X, Y in A, B, C;
    /// for `cc2` `solo(1)` or `solo(2)`; none for `peg`.
    pub questions: Vec<String>,
}

impl JobSection {
    /// Which game the plan solves.
    pub fn kind(&self) -> GameKind {
        self.game.kind()
    }
}

/// A plan's game with the settings of that game and no other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GamePlan {
    /// Three-player Chinese checkers on the star of this order, 1..=4 (3 and
    /// 4 can only be estimated).
    Cc3 {
        /// The star order.
        order: u32,
        /// The stage game (the default; plans without the key keep their
        /// hash) or the ranked game (`objective = "ranked"`, docs/RANKED.md).
        objective: Objective,
    },
    /// Two-player Chinese checkers on the size x size diamond.
    Cc2 {
        /// Board side m.
        size: u32,
        /// Pieces per player.
        pieces: u32,
        /// Fold the rank space by colour symmetry (default true; half the
        /// positions, the same results).
        colour_symmetry: bool,
        /// Also fold by the board's mirror (boards with 1, 3, 4 or 6 pieces;
        /// about half the positions again). `None` when the plan does not
        /// say (false): such a plan keeps the hash it had before the field.
        mirror_symmetry: Option<bool>,
        /// Six pieces: which reading of the part-2 illegal pattern
        /// (`part2 = "literal"` or `"as-published"`, required); `None` below.
        part2: Option<Part2>,
    },
    /// Peg solitaire.
    Peg(PegPlan),
}

/// What a `peg` plan computes (`[job] task`), with the settings of each task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PegPlan {
    /// The breadth-first ledger of one single-vacancy start (the default).
    Ledger {
        /// The board (default English).
        board: BoardKind,
        /// The start's vacant hole (`a1`..`g7`, default `d4`).
        vacancy: String,
        /// Also count each level's states, a position with the hole its last
        /// jump landed in, as the published European enumeration does.
        /// `None` when the plan does not say (false), for the plan hash.
        landing_holes: Option<bool>,
    },
    /// Every single-vacancy start and single-survivor finish decided.
    Problems {
        /// The board; `None` covers both.
        board: Option<BoardKind>,
    },
}

impl PegPlan {
    /// The plan's `task`.
    pub fn task(&self) -> PegTask {
        match self {
            PegPlan::Ledger { .. } => PegTask::Ledger,
            PegPlan::Problems { .. } => PegTask::Problems,
        }
    }
}

impl GamePlan {
    /// Which game this is.
    pub fn kind(&self) -> GameKind {
        match self {
            GamePlan::Cc3 { .. } => GameKind::Cc3,
            GamePlan::Cc2 { .. } => GameKind::Cc2,
            GamePlan::Peg(_) => GameKind::Peg,
        }
    }
}

/// `[job]` as the file spells it: one flat table, each setting present only
/// for its game. The serde form of [`JobSection`] and, through it, what the
/// plan hash digests, so the field order and the skipped fields are those of
/// every plan hash recorded so far (`shipped_plans_parse` pins them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobWire {
    name: String,
    game: GameKind,
    order: u32,
    questions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pieces: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    colour_symmetry: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mirror_symmetry: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    board: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vacancy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task: Option<PegTask>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    landing_holes: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    part2: Option<Part2>,
    #[serde(default, skip_serializing_if = "Objective::is_first_winner")]
    objective: Objective,
}

impl From<JobSection> for JobWire {
    fn from(job: JobSection) -> JobWire {
        let mut w = JobWire {
            name: job.name,
            game: job.game.kind(),
            order: 0,
            questions: job.questions,
            size: None,
            pieces: None,
            colour_symmetry: None,
            mirror_symmetry: None,
            board: None,
            vacancy: None,
            task: None,
            landing_holes: None,
            part2: None,
            objective: Objective::FirstWinner,
        };
        match job.game {
            GamePlan::Cc3 { order, objective } => (w.order, w.objective) = (order, objective),
            GamePlan::Cc2 { size, pieces, colour_symmetry, mirror_symmetry, part2 } => {
                (w.size, w.pieces, w.colour_symmetry, w.mirror_symmetry, w.part2) =
                    (Some(size), Some(pieces), Some(colour_symmetry), mirror_symmetry, part2);
            }
            GamePlan::Peg(peg) => {
                w.task = Some(peg.task());
                match peg {
                    PegPlan::Ledger { board, vacancy, landing_holes } => {
                        (w.board, w.vacancy, w.landing_holes) =
                            (Some(board.name().into()), Some(vacancy), landing_holes);
                    }
                    PegPlan::Problems { board } => w.board = board.map(|b| b.name().into()),
                }
            }
        }
        w
    }
}

impl TryFrom<JobWire> for JobSection {
    type Error = String;

    /// The typed form of a flat `[job]` written by [`JobWire::from`]; the
    /// file itself is validated by [`Plan::from_reader`], with field names.
    fn try_from(w: JobWire) -> Result<JobSection, String> {
        let missing = |field: &str| format!("a {} plan's job has no {field}", w.game.as_str());
        let board = |b: &Option<String>| -> Result<Option<BoardKind>, String> {
            b.as_deref().map(|b| BoardKind::parse(b).ok_or_else(|| format!("unknown peg board {b:?}"))).transpose()
        };
        let game = match w.game {
            GameKind::Cc3 => GamePlan::Cc3 { order: w.order, objective: w.objective },
            GameKind::Cc2 => GamePlan::Cc2 {
                size: w.size.ok_or_else(|| missing("size"))?,
                pieces: w.pieces.ok_or_else(|| missing("pieces"))?,
                colour_symmetry: w.colour_symmetry.ok_or_else(|| missing("colour_symmetry"))?,
                mirror_symmetry: w.mirror_symmetry,
                part2: w.part2,
            },
            GameKind::Peg => GamePlan::Peg(match w.task.ok_or_else(|| missing("task"))? {
                PegTask::Ledger => PegPlan::Ledger {
                    board: board(&w.board)?.ok_or_else(|| missing("board"))?,
                    vacancy: w.vacancy.clone().ok_or_else(|| missing("vacancy"))?,
                    landing_holes: w.landing_holes,
                },
                PegTask::Problems => PegPlan::Problems { board: board(&w.board)? },
            }),
            GameKind::Sylver => return Err("a sylver plan is a SylverPlan, not a Plan".into()),
        };
        Ok(JobSection { name: w.name, game, questions: w.questions })
    }
}

/// `[shards]`: how the rank space is cut up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardSection {
    /// Number of shards, 1..=65536.
    pub count: u32,
    /// Positions per tablebase block, a power of two in 64..=2^26.
    pub block_positions: u64,
    /// Undo/checksum granularity in shard files, 512..=2^30 bytes.
    pub chunk_bytes: u64,
}

/// `[cluster]`: workers, security and liveness settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// Remote workers to wait for; 0 runs the workers in-process.
    pub workers: u32,
    /// Shared secret from the file (`None` when absent or empty); see [`Plan::token`].
    #[serde(default)]
    pub token: Option<String>,
    /// Address the coordinator listens on; always parses as a socket address.
    pub listen: String,
    /// Kernel threads per worker; 0 means all cores (see [`Plan::threads`]).
    pub threads: u32,
    /// Seconds without a heartbeat before a worker is declared lost, 1..=3600.
    pub heartbeat_timeout_secs: u64,
    /// Memory bound for level jobs (peg ledgers), in MB (default 8000): a
    /// level whose successors would not fit is expanded on disk, through
    /// spill files under the checkpoint directory.
    #[serde(default = "default_memory_mb")]
    pub memory_mb: u64,
    /// TLS certificate chain (PEM file) the coordinator presents; with
    /// `tls_key`, workers must connect with `--tls-ca`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM file; keep it out of the repo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<PathBuf>,
}

impl ClusterSection {
    /// The shared secret: env `RETRO_TOKEN` when set and non-empty, else
    /// `cluster.token` when non-empty, else none.
    pub fn token(&self) -> Option<String> {
        self.token_given(std::env::var("RETRO_TOKEN").ok())
    }

    /// The shared secret when `given` (a flag, or the environment) may name
    /// it: `given` when set and non-empty, else `cluster.token` when non-empty.
    pub fn token_given(&self, given: Option<String>) -> Option<String> {
        pick_token(given, self.token.as_ref())
    }

    /// The fields `[cluster]` may have.
    pub const FIELDS: &[&str] =
        &["workers", "token", "listen", "threads", "heartbeat_timeout_secs", "memory_mb", "tls_cert", "tls_key"];
}

/// `[output]`: where finished tablebases and checkpoints go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    /// Tablebase directory; default `tablebases/<name>`.
    pub dir: PathBuf,
    /// Checkpoint directory; default `checkpoints/<name>`.
    pub checkpoints: PathBuf,
}

/// Why a plan could not be loaded. Every message names the plan file and,
/// where there is one, the dotted field.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The file could not be read.
    #[error("plan {origin}: cannot read: {error}")]
    Read {
        /// The plan file.
        origin: String,
        /// The I/O error (shown in the message, not chained as a source).
        error: std::io::Error,
    },
    /// The text is not TOML.
    #[error("plan {origin}: not valid TOML: {message}")]
    Syntax {
        /// The plan file.
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// A required field is absent.
    #[error("plan {origin}: missing field `{field}`")]
    Missing {
        /// The plan file.
        origin: String,
        /// Dotted field name, e.g. `job.order`.
        field: String,
    },
    /// A field the plan format does not have.
    #[error("plan {origin}: unknown field `{field}`")]
    Unknown {
        /// The plan file.
        origin: String,
        /// Dotted field name, e.g. `shards.cuont`.
        field: String,
    },
    /// A field of the wrong type or with a value out of range.
    #[error("plan {origin}: field `{field}` {problem}")]
    Invalid {
        /// The plan file.
        origin: String,
        /// Dotted field name, e.g. `shards.count`.
        field: String,
        /// What is wrong, e.g. `must be between 1 and 65536, got 0`.
        problem: String,
    },
}

impl PlanError {
    /// The dotted field the error is about, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            PlanError::Missing { field, .. } | PlanError::Unknown { field, .. } | PlanError::Invalid { field, .. } => {
                Some(field)
            }
            PlanError::Read { .. } | PlanError::Syntax { .. } => None,
        }
    }
}

/// The allowed fields of each section, in file order.
const SCHEMA: [(&str, &[&str]); 4] = [
    (
        "job",
        &[
            "name",
            "game",
            "order",
            "size",
            "pieces",
            "colour_symmetry",
            "mirror_symmetry",
            "part2",
            "objective",
            "questions",
            "board",
            "vacancy",
            "task",
            "landing_holes",
        ],
    ),
    ("shards", &["count", "block_positions", "chunk_bytes"]),
    ("cluster", ClusterSection::FIELDS),
    ("output", &["dir", "checkpoints"]),
];

/// The sections that environment variables `RETRO_<SECTION>__<FIELD>` may
/// set over the plan file (`RETRO_CLUSTER__WORKERS=3`,
/// `RETRO_OUTPUT__DIR=/data/tb`): they say where and how a job runs, never
/// what it computes, so the plan hash (of `[job]` and `[shards]`) and the
/// results do not depend on the environment.
pub const ENV_SECTIONS: [&str; 2] = ["cluster", "output"];

/// The `RETRO_<SECTION>__<FIELD>` variables among `vars` whose section is in
/// [`ENV_SECTIONS`]; other `RETRO_*` variables (`RETRO_TOKEN`, `RETRO_FAULT`)
/// are not plan fields.
fn plan_overrides(vars: impl IntoIterator<Item = (String, String)>) -> config::Map<String, String> {
    let prefixes: Vec<String> = ENV_SECTIONS.iter().map(|s| format!("RETRO_{}__", s.to_uppercase())).collect();
    vars.into_iter().filter(|(k, _)| prefixes.iter().any(|p| k.starts_with(p.as_str()))).collect()
}

/// Plan text as a tree of sections, with this process's `RETRO_<SECTION>__<FIELD>`
/// variables over it; a syntax error names the file.
pub(crate) fn parse_toml(text: &str, origin: &str) -> Result<BTreeMap<String, Value>, PlanError> {
    parse_toml_with(text, origin, std::env::vars())
}

/// [`parse_toml`] with the environment given (tests pass their own).
pub(crate) fn parse_toml_with(
    text: &str,
    origin: &str,
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<BTreeMap<String, Value>, PlanError> {
    let syntax =
        |message: String| PlanError::Syntax { origin: origin.to_owned(), message: message.trim_end().to_owned() };
    let env = config::Environment::with_prefix("RETRO")
        .prefix_separator("_")
        .separator("__")
        .try_parsing(true)
        .source(Some(plan_overrides(vars)));
    let root = config::Config::builder()
        .add_source(config::File::from_str(text, config::FileFormat::Toml))
        .add_source(env)
        .build()
        .map_err(|e| syntax(e.to_string()))?
        .try_deserialize::<config::Map<String, Value>>()
        .map_err(|e| syntax(e.to_string()))?;
    Ok(root.into_iter().collect())
}

/// Walks the value tree `config` produced, with strict types. Shared by every
/// plan kind (the Sylver plans too), so all of them report errors alike.
pub(crate) struct Reader<'a> {
    /// The file (or other origin) named in errors.
    pub(crate) origin: &'a str,
    /// The sections, by name.
    pub(crate) root: BTreeMap<String, Value>,
}

impl<'a> Reader<'a> {
    /// Parses plan text; a syntax error names `origin`.
    pub(crate) fn parse(text: &str, origin: &'a str) -> Result<Reader<'a>, PlanError> {
        Ok(Reader { origin, root: parse_toml(text, origin)? })
    }

    /// `[job] game`, read once through serde into a [`GameKind`].
    pub(crate) fn game(&self) -> Result<GameKind, PlanError> {
        let value = self.get("job", "game").ok_or_else(|| self.missing("job.game"))?;
        value.clone().try_deserialize().map_err(|_| {
            let shown = match &value.kind {
                ValueKind::String(s) => format!("{s:?}"),
                other => other.to_string(),
            };
            let known = GameKind::ALL.map(|k| format!("{:?}", k.as_str())).join(", ");
            self.invalid("job.game", format!("must be one of {known}; got {shown}"))
        })
    }

    /// An error about `field`.
    pub(crate) fn invalid(&self, field: &str, problem: impl Into<String>) -> PlanError {
        PlanError::Invalid { origin: self.origin.to_owned(), field: field.to_owned(), problem: problem.into() }
    }

    /// The error for a required `field` that is absent.
    pub(crate) fn missing(&self, field: &str) -> PlanError {
        PlanError::Missing { origin: self.origin.to_owned(), field: field.to_owned() }
    }

    /// The `[cluster]` section (every field optional).
    pub(crate) fn cluster(&self) -> Result<ClusterSection, PlanError> {
        let r = self;
        let workers = r.int("cluster", "workers", 0, u32::MAX.into())?.unwrap_or(0) as u32;
        let token = r.string("cluster", "token")?.filter(|t| !t.is_empty());
        let listen = r.string("cluster", "listen")?.unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        if let Err(e) = listen.parse::<SocketAddr>() {
            return Err(r.invalid(
                "cluster.listen",
                format!("must be a socket address like {DEFAULT_LISTEN}, got {listen:?} ({e})"),
            ));
        }
        let threads = r.int("cluster", "threads", 0, u32::MAX.into())?.unwrap_or(0) as u32;
        let heartbeat_timeout_secs =
            r.int("cluster", "heartbeat_timeout_secs", 1, 3600)?.unwrap_or(DEFAULT_HEARTBEAT_SECS);

        let tls_cert = r.string("cluster", "tls_cert")?.filter(|t| !t.is_empty()).map(PathBuf::from);
        let tls_key = r.string("cluster", "tls_key")?.filter(|t| !t.is_empty()).map(PathBuf::from);
        if tls_cert.is_some() != tls_key.is_some() {
            let missing = if tls_cert.is_some() { "cluster.tls_key" } else { "cluster.tls_cert" };
            return Err(r.invalid(missing, "TLS needs both tls_cert and tls_key"));
        }
        let memory_mb = r.int("cluster", "memory_mb", 1, 1 << 30)?.unwrap_or(DEFAULT_MEMORY_MB);
        Ok(ClusterSection { workers, token, listen, threads, heartbeat_timeout_secs, memory_mb, tls_cert, tls_key })
    }

    /// Rejects sections and fields that `schema` does not list, and sections
    /// that are not tables.
    pub(crate) fn check_schema(&self, schema: &[(&str, &[&str])]) -> Result<(), PlanError> {
        for (key, value) in &self.root {
            let Some((_, fields)) = schema.iter().find(|(name, _)| name == key) else {
                return Err(PlanError::Unknown { origin: self.origin.to_owned(), field: key.clone() });
            };
            let ValueKind::Table(table) = &value.kind else {
                return Err(self.invalid(key, format!("must be a table, got {}", describe(value))));
            };
            let mut keys: Vec<&String> = table.keys().collect();
            keys.sort();
            if let Some(bad) = keys.into_iter().find(|k| !fields.contains(&k.as_str())) {
                return Err(PlanError::Unknown { origin: self.origin.to_owned(), field: format!("{key}.{bad}") });
            }
        }
        Ok(())
    }

    /// The raw value of `section.key`, if present.
    pub(crate) fn get(&self, section: &str, key: &str) -> Option<&Value> {
        match &self.root.get(section)?.kind {
            ValueKind::Table(table) => table.get(key),
            _ => None,
        }
    }

    /// A string field.
    pub(crate) fn string(&self, section: &str, key: &str) -> Result<Option<String>, PlanError> {
        let Some(value) = self.get(section, key) else {
            return Ok(None);
        };
        match &value.kind {
            ValueKind::String(s) => Ok(Some(s.clone())),
            _ => Err(self.invalid(&format!("{section}.{key}"), format!("expected a string, got {}", describe(value)))),
        }
    }

    /// A boolean field.
    fn boolean(&self, section: &str, key: &str) -> Result<Option<bool>, PlanError> {
        let Some(value) = self.get(section, key) else {
            return Ok(None);
        };
        match &value.kind {
            ValueKind::Boolean(b) => Ok(Some(*b)),
            _ => {
                Err(self
                    .invalid(&format!("{section}.{key}"), format!("expected true or false, got {}", describe(value))))
            }
        }
    }

    /// An integer field checked against `lo..=hi`.
    pub(crate) fn int(&self, section: &str, key: &str, lo: u64, hi: u64) -> Result<Option<u64>, PlanError> {
        self.get(section, key).map(|v| self.int_value(&format!("{section}.{key}"), v, lo, hi)).transpose()
    }

    /// `value` (named `field` in errors) as an integer in `lo..=hi`.
    pub(crate) fn int_value(&self, field: &str, value: &Value, lo: u64, hi: u64) -> Result<u64, PlanError> {
        let n: i128 = match value.kind {
            ValueKind::I64(n) => n.into(),
            ValueKind::U64(n) => n.into(),
            ValueKind::I128(n) => n,
            ValueKind::U128(n) => i128::try_from(n).unwrap_or(i128::MAX),
            _ => {
                return Err(self.invalid(field, format!("expected an integer, got {}", describe(value))));
            }
        };
        if n < i128::from(lo) || n > i128::from(hi) {
            return Err(self.invalid(field, format!("must be between {lo} and {hi}, got {n}")));
        }
        Ok(n as u64)
    }

    fn strings(&self, section: &str, key: &str) -> Result<Option<Vec<String>>, PlanError> {
        let field = format!("{section}.{key}");
        let Some(value) = self.get(section, key) else {
            return Ok(None);
        };
        let ValueKind::Array(items) = &value.kind else {
            return Err(self.invalid(&field, format!("expected an array of strings, got {}", describe(value))));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match &item.kind {
                ValueKind::String(s) => Ok(s.clone()),
                _ => Err(self.invalid(&format!("{field}[{i}]"), format!("expected a string, got {}", describe(item)))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// A short description of a value for type errors.
fn describe(value: &Value) -> String {
    match &value.kind {
        ValueKind::Nil => "nothing".to_owned(),
        ValueKind::Boolean(b) => format!("boolean {b}"),
        ValueKind::I64(n) => format!("integer {n}"),
        ValueKind::I128(n) => format!("integer {n}"),
        ValueKind::U64(n) => format!("integer {n}"),
        ValueKind::U128(n) => format!("integer {n}"),
        ValueKind::Float(x) => format!("float {x}"),
        ValueKind::String(s) => format!("string {s:?}"),
        ValueKind::Table(_) => "a table".to_owned(),
        ValueKind::Array(_) => "an array".to_owned(),
    }
}

/// Checks one question: `solo(X)` or `enable(X>Y)`, X != Y, X, Y in A, B, C.
fn valid_question(q: &str) -> bool {
    let player = |s: &str| matches!(s, "A" | "B" | "C");
    if let Some(x) = q.strip_prefix("solo(").and_then(|r| r.strip_suffix(')')) {
        return player(x);
    }
    if let Some(pair) = q.strip_prefix("enable(").and_then(|r| r.strip_suffix(')')) {
        return matches!(pair.split_once('>'), Some((x, y)) if player(x) && player(y) && x != y);
    }
    false
}

/// The token rule: `env` when set and non-empty, else the plan's when non-empty.
fn pick_token(env: Option<String>, plan: Option<&String>) -> Option<String> {
    env.filter(|t| !t.is_empty()).or_else(|| plan.filter(|t| !t.is_empty()).cloned())
}

/// The largest plan file read (the biggest real plan is a few KB). A path
/// such as `/dev/zero` or a multi-gigabyte file given by mistake is refused
/// after this many bytes instead of being read into memory without end.
pub const MAX_PLAN_BYTES: u64 = 1 << 20;

/// Reads a plan file's text, at most [`MAX_PLAN_BYTES`] of it.
pub fn read_plan_text(path: &Path) -> Result<String, PlanError> {
    use std::io::Read;
    let origin = path.display().to_string();
    let read_err = |error| PlanError::Read { origin: origin.clone(), error };
    let file = std::fs::File::open(path).map_err(read_err)?;
    if file.metadata().map_err(read_err)?.is_dir() {
        return Err(read_err(std::io::Error::other("it is a directory, not a plan file")));
    }
    let mut bytes = Vec::new();
    file.take(MAX_PLAN_BYTES + 1).read_to_end(&mut bytes).map_err(read_err)?;
    if bytes.len() as u64 > MAX_PLAN_BYTES {
        return Err(read_err(std::io::Error::other(format!(
            "more than {MAX_PLAN_BYTES} bytes; a plan is a small TOML file (see plans/)"
        ))));
    }
    String::from_utf8(bytes).map_err(|_| read_err(std::io::Error::other("not UTF-8 text; a plan is a TOML file")))
}

impl Plan {
    /// Reads and validates the plan file at `path` (cc2, cc3 or peg; see
    /// [`AnyPlan`] for a plan of any game).
    pub fn load(path: &Path) -> Result<Plan, PlanError> {
        let text = read_plan_text(path)?;
        Plan::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses and validates plan text; `origin` names it in error messages.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Plan, PlanError> {
        Plan::from_reader(Reader::parse(text, origin)?)
    }

    /// Validates a parsed plan (the file, with the environment over it).
    pub(crate) fn from_reader(r: Reader<'_>) -> Result<Plan, PlanError> {
        let game = r.game()?;
        if game == GameKind::Sylver {
            // Sylver plans have their own fields (rows, not a rank space): see sylver_job.
            return Err(r.invalid(
                "job.game",
                "\"sylver\" plans are run by `coordinator --plan FILE` itself (sylver_job); this command is for cc2/cc3 plans",
            ));
        }
        r.check_schema(&SCHEMA)?;

        // [job]
        let name = r.string("job", "name")?.ok_or_else(|| r.missing("job.name"))?;
        if name.is_empty()
            || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        {
            return Err(r.invalid("job.name", format!("must match [a-z0-9_-]+, got {name:?}")));
        }
        for key in ["board", "vacancy", "task", "landing_holes"] {
            if game != GameKind::Peg && r.get("job", key).is_some() {
                return Err(r.invalid(&format!("job.{key}"), "is for peg plans"));
            }
        }
        let plan = if game == GameKind::Peg {
            for key in
                ["order", "size", "pieces", "colour_symmetry", "mirror_symmetry", "part2", "objective", "questions"]
            {
                if r.get("job", key).is_some() {
                    return Err(r.invalid(
                        &format!("job.{key}"),
                        "is not a peg setting (peg plans have board, vacancy, task, landing_holes)",
                    ));
                }
            }
            let task = match r.get("job", "task") {
                None => PegTask::Ledger,
                Some(v) => v.clone().try_deserialize().map_err(|_| {
                    r.invalid("job.task", format!("must be \"ledger\" or \"problems\", got {}", v.kind))
                })?,
            };
            let board = match r.string("job", "board")? {
                Some(b) => Some(BoardKind::parse(&b).ok_or_else(|| {
                    r.invalid("job.board", format!("must be \"english\" or \"european\", got {b:?}"))
                })?),
                None => None,
            };
            let vacancy = r.string("job", "vacancy")?;
            let landing_holes = r.boolean("job", "landing_holes")?;
            GamePlan::Peg(match task {
                // The problems task covers both boards unless the plan names one.
                PegTask::Problems => {
                    if vacancy.is_some() {
                        return Err(r.invalid("job.vacancy", "is for the ledger task (problems try every vacancy)"));
                    }
                    if landing_holes.is_some() {
                        return Err(r.invalid("job.landing_holes", "is for the ledger task"));
                    }
                    PegPlan::Problems { board }
                }
                PegTask::Ledger => {
                    let board = board.unwrap_or(BoardKind::English);
                    let vacancy = vacancy.unwrap_or_else(|| "d4".into());
                    let board_holes = PegBoard::new(board);
                    if !parse_hole(&vacancy).is_some_and(|h| board_holes.has_hole(h)) {
                        return Err(r.invalid(
                            "job.vacancy",
                            format!("must be a hole of the {} board (a1..g7), got {vacancy:?}", board.name()),
                        ));
                    }
                    PegPlan::Ledger { board, vacancy, landing_holes }
                }
            })
        } else if game == GameKind::Cc2 {
            if r.get("job", "order").is_some() {
                return Err(r.invalid("job.order", "is for cc3; a cc2 board has `size` and `pieces`"));
            }
            if r.get("job", "objective").is_some() {
                return Err(r.invalid("job.objective", "is for cc3 (the ranked three-player game)"));
            }
            let size =
                r.int("job", "size", MIN_SIZE.into(), MAX_SIZE.into())?.ok_or_else(|| r.missing("job.size"))? as u32;
            let pieces = r.int("job", "pieces", 1, MAX_PIECES.into())?.ok_or_else(|| r.missing("job.pieces"))? as u32;
            // Sizes and counts in range may still not fit: 3 x 3 holds at
            // most 3 pieces a player before the start areas meet.
            let board = Board::new(size, pieces).map_err(|e| r.invalid("job.pieces", e.to_string()))?;
            // Six pieces have two readings of a rule that change the counts:
            // the plan must say which (no silent default).
            let part2 = match (r.string("job", "part2")?, pieces) {
                (None, 6) => {
                    return Err(r.invalid(
                        "job.part2",
                        "is needed for six pieces: \"literal\" (the rule as stated) or \"as-published\" \
                         (as Sturtevant's solver applies it); see docs/NOTATION.md, two-player section",
                    ));
                }
                (Some(_), p) if p != 6 => return Err(r.invalid("job.part2", "is for six pieces only")),
                (None, _) => None,
                (Some(name), _) => Some(Part2::parse(&name).ok_or_else(|| {
                    r.invalid("job.part2", format!("must be \"literal\" or \"as-published\", got {name:?}"))
                })?),
            };
            let colour_symmetry = r.boolean("job", "colour_symmetry")?.unwrap_or(true);
            let mirror_symmetry = r.boolean("job", "mirror_symmetry")?;
            if mirror_symmetry == Some(true) && !board.has_mirror_symmetry() {
                return Err(r.invalid(
                    "job.mirror_symmetry",
                    format!(
                        "needs a board whose start areas are symmetric (1, 3, 4 or 6 pieces); {size} x {size} with \
                         {pieces} pieces has none"
                    ),
                ));
            }
            GamePlan::Cc2 { size, pieces, colour_symmetry, mirror_symmetry, part2 }
        } else {
            for key in ["size", "pieces", "colour_symmetry", "mirror_symmetry", "part2"] {
                if r.get("job", key).is_some() {
                    return Err(r.invalid(&format!("job.{key}"), "is for cc2; a cc3 star has `order`"));
                }
            }
            let objective = match r.string("job", "objective")? {
                None => Objective::FirstWinner,
                Some(name) => Objective::parse(&name).ok_or_else(|| {
                    r.invalid(
                        "job.objective",
                        format!("must be \"first-winner\" or \"ranked\" (docs/RANKED.md), got {name:?}"),
                    )
                })?,
            };
            GamePlan::Cc3 {
                order: r.int("job", "order", 1, 4)?.ok_or_else(|| r.missing("job.order"))? as u32,
                objective,
            }
        };
        let ranked = matches!(plan, GamePlan::Cc3 { objective: Objective::Ranked, .. });
        let defaults: &[&str] = match game {
            GameKind::Cc2 => &DEFAULT_QUESTIONS_CC2,
            GameKind::Peg | GameKind::Sylver => &[],
            GameKind::Cc3 if ranked => &[RANKED_QUESTION],
            GameKind::Cc3 => &DEFAULT_QUESTIONS,
        };
        let questions = match r.strings("job", "questions")? {
            Some(qs) => qs,
            None => defaults.iter().map(|q| (*q).to_owned()).collect(),
        };
        if questions.is_empty() && game != GameKind::Peg {
            return Err(r.invalid("job.questions", "must list at least one question"));
        }
        let colour_symmetry = match plan {
            GamePlan::Cc2 { colour_symmetry, .. } => Some(colour_symmetry),
            _ => None,
        };
        if ranked && questions != [RANKED_QUESTION] {
            return Err(r.invalid(
                "job.questions",
                format!(
                    "of a ranked plan is the one layer [\"{RANKED_QUESTION}\"] (the default): top2(B), top2(C) and \
                     every race value follow from it by rotation, and solo and enable are the first-winner plan's; \
                     got {questions:?}"
                ),
            ));
        }
        for (i, q) in questions.iter().enumerate() {
            let valid = match colour_symmetry {
                Some(folded) => Cc2::question(q, folded).is_some(),
                None => ranked || valid_question(q),
            };
            if !valid {
                let hint = if colour_symmetry == Some(true) {
                    "a space folded by colour symmetry answers solo(1) only"
                } else if game == GameKind::Cc2 {
                    "use solo(1) or solo(2)"
                } else {
                    "use solo(X) or enable(X>Y) with X, Y in A, B, C and X != Y"
                };
                return Err(r.invalid("job.questions", format!("has invalid question {q:?} ({hint})")));
            }
            if questions[..i].contains(q) {
                return Err(r.invalid("job.questions", format!("has duplicate question {q:?}")));
            }
        }

        // The summary reads these layers: a plan without one would solve
        // every layer and only then fail.
        let needed: &[&str] = match game {
            GameKind::Cc3 if ranked => &[RANKED_QUESTION],
            GameKind::Cc3 => &DEFAULT_QUESTIONS,
            GameKind::Cc2 => &DEFAULT_QUESTIONS_CC2,
            GameKind::Peg | GameKind::Sylver => &[],
        };
        if let Some(q) = needed.iter().find(|q| !questions.iter().any(|have| have == *q)) {
            return Err(r.invalid(
                "job.questions",
                format!("lacks {q}, which the summary needs (it reads {}); add it to the list", needed.join(", ")),
            ));
        }

        // [shards]
        let count = r.int("shards", "count", 1, 65536)?.unwrap_or(DEFAULT_SHARDS.into()) as u32;
        let block_positions = r.int("shards", "block_positions", 64, 1 << 26)?.unwrap_or(DEFAULT_BLOCK_POSITIONS);
        if !block_positions.is_power_of_two() {
            return Err(r.invalid("shards.block_positions", format!("must be a power of two, got {block_positions}")));
        }
        let chunk_bytes = r.int("shards", "chunk_bytes", 512, 1 << 30)?.unwrap_or(DEFAULT_CHUNK_BYTES);

        let cluster = r.cluster()?;

        // [output]
        let dir_of = |key: &str, base: &str| -> Result<PathBuf, PlanError> {
            match r.string("output", key)? {
                Some(d) if d.is_empty() => Err(r.invalid(&format!("output.{key}"), "must not be empty")),
                Some(d) => Ok(PathBuf::from(d)),
                None => Ok(Path::new(base).join(&name)),
            }
        };
        let dir = dir_of("dir", "tablebases")?;
        let checkpoints = dir_of("checkpoints", "checkpoints")?;

        Ok(Plan {
            job: JobSection { name, game: plan, questions },
            shards: ShardSection { count, block_positions, chunk_bytes },
            cluster,
            output: OutputSection { dir, checkpoints },
        })
    }

    /// Identity of the job: hex SHA-256 (first 16 digits) of the canonical JSON
    /// of `job` and `shards`. Cluster and output settings do not affect it.
    pub fn hash(&self) -> String {
        #[derive(Serialize)]
        struct Semantic<'a> {
            job: JobWire,
            shards: &'a ShardSection,
        }
        let json = serde_json::to_vec(&Semantic { job: self.job.clone().into(), shards: &self.shards })
            .expect("plan sections always serialize");
        Sha256::digest(&json).iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// True when the position space fits u64 ranks and so can be solved
    /// (star orders 1 and 2); larger orders can only be estimated.
    pub fn is_solvable(&self) -> bool {
        match self.job.game {
            GamePlan::Cc3 { order, .. } => retro_games::cc3::Cc3::new(order).is_ok_and(|game| game.ranker.fits_u64()),
            GamePlan::Cc2 { .. } | GamePlan::Peg(_) => true,
        }
    }

    /// The memory bound of a level job in bytes (`cluster.memory_mb`).
    pub fn memory_bytes(&self) -> u64 {
        self.cluster.memory_mb * 1_000_000
    }

    /// Kernel threads per worker: `cluster.threads`, or all cores when 0;
    /// never more than [`retro_node::bounded_threads`] allows (the cores).
    pub fn threads(&self) -> usize {
        retro_node::bounded_threads(self.cluster.threads as usize, "[cluster] threads")
    }

    /// The shared secret: env `RETRO_TOKEN` when set and non-empty, else
    /// `cluster.token` when non-empty, else none.
    pub fn token(&self) -> Option<String> {
        self.cluster.token()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "[job]\nname = \"t\"\ngame = \"cc3\"\norder = 1\n";

    fn err(text: &str) -> String {
        Plan::from_toml_str(text, "plans/x.toml").expect_err("plan should be rejected").to_string()
    }

    fn assert_err(text: &str, needles: &[&str]) {
        let msg = err(text);
        assert!(msg.starts_with("plan plans/x.toml: "), "{msg}");
        for n in needles {
            assert!(msg.contains(n), "message {msg:?} lacks {n:?}");
        }
    }

    fn ok(text: &str) -> Plan {
        Plan::from_toml_str(text, "plans/x.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn any_plan_reads_the_game_once_and_picks_the_plan_type() {
        let sylver = "[job]\nname = \"s\"\ngame = \"sylver\"\nranges = [[4, 5, 9]]\n";
        assert!(matches!(AnyPlan::from_toml_str(sylver, "s.toml"), Ok(AnyPlan::Sylver(p)) if p.name == "s"));
        let cc3 = "[job]\nname = \"t\"\ngame = \"cc3\"\norder = 1\n";
        assert!(matches!(AnyPlan::from_toml_str(cc3, "t.toml"), Ok(AnyPlan::Plan(p)) if p.job.kind() == GameKind::Cc3));
        let chess = "[job]\nname = \"t\"\ngame = \"chess\"\n";
        let e = AnyPlan::from_toml_str(chess, "t.toml").unwrap_err().to_string();
        assert!(e.contains("`job.game`") && e.contains("\"chess\"") && e.contains("\"sylver\""), "{e}");
        let number = "[job]\nname = \"t\"\ngame = 3\n";
        let e = AnyPlan::from_toml_str(number, "t.toml").unwrap_err().to_string();
        assert!(e.contains("`job.game`") && e.contains("got 3"), "{e}");
        // The cc2/cc3/peg loader points a Sylver plan to the command that runs it.
        let e = Plan::from_toml_str(sylver, "s.toml").unwrap_err().to_string();
        assert!(e.contains("coordinator --plan FILE"), "{e}");
    }

    #[test]
    fn peg_plans() {
        let peg = "[job]\nname = \"p\"\ngame = \"peg\"\n";
        let ledger = |board, vacancy: &str, landing_holes| {
            GamePlan::Peg(PegPlan::Ledger { board, vacancy: vacancy.into(), landing_holes })
        };
        let p = ok(peg);
        assert_eq!(p.job.game, ledger(BoardKind::English, "d4", None));
        assert!(p.job.questions.is_empty());
        let p = ok(&format!("{peg}task = \"problems\"\n"));
        assert_eq!(p.job.game, GamePlan::Peg(PegPlan::Problems { board: None }), "a problems plan covers both boards");
        let p = ok(&format!("{peg}board = \"french\"\nvacancy = \"b2\"\n"));
        assert_eq!(p.job.game, ledger(BoardKind::European, "b2", None));
        assert_err(&format!("{peg}board = \"hex\"\n"), &["job.board", "\"hex\""]);
        assert_err(&format!("{peg}vacancy = \"b2\"\n"), &["job.vacancy", "english board"]);
        assert_err(&format!("{peg}vacancy = \"zz\"\n"), &["job.vacancy"]);
        assert_err(&format!("{peg}task = \"solve\"\n"), &["job.task"]);
        assert_err(&format!("{peg}task = \"problems\"\nvacancy = \"d4\"\n"), &["job.vacancy", "ledger"]);
        assert_eq!(ok(&format!("{peg}landing_holes = true\n")).job.game, ledger(BoardKind::English, "d4", Some(true)));
        assert_err(&format!("{peg}landing_holes = 1\n"), &["job.landing_holes"]);
        assert_err(&format!("{peg}task = \"problems\"\nlanding_holes = true\n"), &["job.landing_holes", "ledger"]);
        assert_err(&format!("{peg}order = 2\n"), &["job.order", "peg"]);
        assert_err(&format!("{MINIMAL}board = \"english\"\n"), &["job.board", "peg plans"]);
    }

    #[test]
    fn default_plan_parses() {
        let p = ok(DEFAULT_PLAN);
        assert_eq!(p.job.name, "stage1");
        assert_eq!(p.job.game, GamePlan::Cc3 { order: 1, objective: Objective::FirstWinner });
        assert_eq!(p.job.questions, DEFAULT_QUESTIONS);
        assert_eq!(p.shards, ShardSection { count: 6, block_positions: 64, chunk_bytes: 4096 });
        assert_eq!(p.cluster.workers, 0);
        assert_eq!(p.cluster.token, None);
        assert_eq!(p.cluster.listen, "0.0.0.0:50051");
        assert_eq!(p.cluster.threads, 0);
        assert_eq!(p.cluster.heartbeat_timeout_secs, 30);
        assert_eq!(p.output.dir, PathBuf::from("tablebases/stage1"));
        assert_eq!(p.output.checkpoints, PathBuf::from("checkpoints/stage1"));
        assert!(p.is_solvable());
        assert!(p.threads() >= 1);
    }

    #[test]
    fn defaults_filled_in() {
        let p = ok(MINIMAL);
        assert_eq!(p.job.questions, DEFAULT_QUESTIONS);
        assert_eq!(p.shards, ShardSection { count: 1, block_positions: 1 << 20, chunk_bytes: 1 << 20 });
        assert_eq!(
            p.cluster,
            ClusterSection {
                workers: 0,
                token: None,
                listen: "0.0.0.0:50051".into(),
                threads: 0,
                heartbeat_timeout_secs: 30,
                memory_mb: DEFAULT_MEMORY_MB,
                tls_cert: None,
                tls_key: None,
            }
        );
        assert_eq!(p.output.dir, PathBuf::from("tablebases/t"));
        assert_eq!(p.output.checkpoints, PathBuf::from("checkpoints/t"));
    }

    #[test]
    fn shipped_plans_parse() {
        let load = |p: &str| Plan::load(Path::new(p)).unwrap_or_else(|e| panic!("{e}"));
        let s1 = load(concat!(env!("CARGO_MANIFEST_DIR"), "/../plans/stage1.toml"));
        assert_eq!(s1, ok(DEFAULT_PLAN));
        let s2 = load(concat!(env!("CARGO_MANIFEST_DIR"), "/../plans/stage2.toml"));
        assert_eq!(
            (s2.job.name.as_str(), &s2.job.game),
            ("stage2", &GamePlan::Cc3 { order: 2, objective: Objective::FirstWinner })
        );
        assert_eq!(s2.shards, ShardSection { count: 64, block_positions: 1 << 20, chunk_bytes: 1 << 20 });
        assert!(s2.is_solvable());
        let s3 = load(concat!(env!("CARGO_MANIFEST_DIR"), "/../plans/stage3.toml"));
        assert_eq!(
            (s3.job.name.as_str(), &s3.job.game),
            ("stage3", &GamePlan::Cc3 { order: 3, objective: Objective::FirstWinner })
        );
        assert!(!s3.is_solvable());
    }

    /// A plan's hash names its job in every checkpoint, tablebase and
    /// summary: the typed plan must digest exactly what the flat `[job]`
    /// table did. The hashes of the shipped plans as the reader before
    /// `GamePlan` computed them (at 1d87194, in the `job.json` of a run; the
    /// stage-2 and 7 x 7 x 3/4 hashes are also those of the summaries in
    /// docs/results).
    #[test]
    fn shipped_plans_keep_their_hashes() {
        let recorded = [
            ("cc2-m7p1-mirror", "126b921ac1d3163e"),
            ("cc2-m7p1", "4986d0f883e78cb7"),
            ("cc2-m7p2", "390b76dafd3e54f0"),
            ("cc2-m7p3", "b71d135bc8ca109f"),
            ("cc2-m7p4", "6faaba6d792fcf86"),
            ("chaos", "f72e6943eca591fa"),
            ("peg-english", "0d64d2183a6a973b"),
            ("peg-european-c1", "2545230a5861832c"),
            ("peg-european-d2", "6398d812b693417f"),
            ("peg-european-d3", "d14a577d7a40fb24"),
            ("peg-problems", "eac74a8f559ea004"),
            ("stage1", "0d8d8a626c30c394"),
            ("stage1-ranked", "24a4d174891fadce"),
            ("stage2", "beab9bdba698c8a9"),
            ("stage2-ranked", "cc6567e470e793ed"),
        ];
        for (name, hash) in recorded {
            let path = format!("{}/../plans/{name}.toml", env!("CARGO_MANIFEST_DIR"));
            let plan = Plan::load(Path::new(&path)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(plan.hash(), hash, "{name}");
            // The serde form is the same flat table, so it reads back the same.
            let back: Plan = serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
            assert_eq!(back, plan, "{name}");
        }
    }

    #[test]
    fn missing_required_fields() {
        assert_err("[job]\ngame = \"cc3\"\norder = 1\n", &["missing field `job.name`"]);
        assert_err("[job]\nname = \"t\"\norder = 1\n", &["missing field `job.game`"]);
        assert_err("[job]\nname = \"t\"\ngame = \"cc3\"\n", &["missing field `job.order`"]);
        assert_err("", &["missing field `job.game`"]); // the game decides what else a plan needs
    }

    #[test]
    fn bad_job_values() {
        assert_err("[job]\nname = \"Big\"\ngame = \"cc3\"\norder = 1\n", &["`job.name`", "[a-z0-9_-]+"]);
        assert_err("[job]\nname = \"\"\ngame = \"cc3\"\norder = 1\n", &["`job.name`"]);
        assert_err("[job]\nname = \"t\"\ngame = \"chess\"\norder = 1\n", &["`job.game`", "\"chess\""]);
        assert_err(
            "[job]\nname = \"t\"\ngame = \"cc3\"\norder = 0\n",
            &["field `job.order` must be between 1 and 4, got 0"],
        );
        assert_err(
            "[job]\nname = \"t\"\ngame = \"cc3\"\norder = 9\n",
            &["field `job.order` must be between 1 and 4, got 9"],
        );
        assert_err("[job]\nname = \"t\"\ngame = \"cc3\"\norder = -1\n", &["`job.order`", "got -1"]);
    }

    /// Six pieces have two readings of the part-2 rule; a plan must name
    /// one, and only six-piece plans may.
    #[test]
    fn part2_is_required_for_six_pieces_and_refused_elsewhere() {
        let cc2 = |pieces: u32, extra: &str| {
            format!(
                "[job]\nname = \"t\"\ngame = \"cc2\"\nsize = 5\npieces = {pieces}\nquestions = [\"solo(1)\"]\n{extra}"
            )
        };
        assert_err(&cc2(6, ""), &["`job.part2`", "is needed for six pieces", "\"literal\"", "\"as-published\""]);
        assert_err(&cc2(4, "part2 = \"literal\"\n"), &["`job.part2`", "is for six pieces only"]);
        assert_err(&cc2(6, "part2 = \"loose\"\n"), &["`job.part2`", "got \"loose\""]);
        assert_err(
            "[job]\nname = \"t\"\ngame = \"cc3\"\norder = 1\npart2 = \"literal\"\n",
            &["`job.part2`", "is for cc2"],
        );
        for (name, reading) in [("literal", Part2::Literal), ("as-published", Part2::AsPublished)] {
            let plan = ok(&cc2(6, &format!("part2 = \"{name}\"\n")));
            let GamePlan::Cc2 { part2, .. } = plan.job.game else { panic!("a cc2 plan") };
            assert_eq!(part2, Some(reading));
        }
        // The readings are different jobs: their hashes differ.
        assert_ne!(ok(&cc2(6, "part2 = \"literal\"\n")).hash(), ok(&cc2(6, "part2 = \"as-published\"\n")).hash());
    }

    #[test]
    fn bad_shards() {
        assert_err(
            &format!("{MINIMAL}[shards]\ncount = 0\n"),
            &["plan plans/x.toml: field `shards.count` must be between 1 and 65536, got 0"],
        );
        assert_err(&format!("{MINIMAL}[shards]\ncount = 65537\n"), &["`shards.count`"]);
        assert_err(
            &format!("{MINIMAL}[shards]\nblock_positions = 100\n"),
            &["`shards.block_positions`", "power of two"],
        );
        assert_err(&format!("{MINIMAL}[shards]\nblock_positions = 32\n"), &["`shards.block_positions`", "between"]);
        assert_err(&format!("{MINIMAL}[shards]\nblock_positions = 134217728\n"), &["`shards.block_positions`"]);
        assert_err(&format!("{MINIMAL}[shards]\nchunk_bytes = 100\n"), &["`shards.chunk_bytes`"]);
        assert_err(&format!("{MINIMAL}[cluster]\nheartbeat_timeout_secs = 0\n"), &["`cluster.heartbeat_timeout_secs`"]);
        assert_err(&format!("{MINIMAL}[cluster]\nmemory_mb = 0\n"), &["`cluster.memory_mb`"]);
        assert_eq!(ok(&format!("{MINIMAL}[cluster]\nmemory_mb = 50\n")).memory_bytes(), 50_000_000);
    }

    #[test]
    fn unknown_fields() {
        assert_err(&format!("{MINIMAL}[shards]\ncuont = 6\n"), &["plan plans/x.toml: unknown field `shards.cuont`"]);
        assert_err(&format!("{MINIMAL}[shardz]\ncount = 6\n"), &["unknown field `shardz`"]);
        assert_err("[job]\nname = \"t\"\ngame = \"cc3\"\nOrder = 1\n", &["unknown field `job.Order`"]);
        assert_err(&format!("{MINIMAL}[output]\ndir = \"a\"\ntmp = \"b\"\n"), &["unknown field `output.tmp`"]);
        assert_err(&format!("shards = 3\n{MINIMAL}"), &["`shards`", "table"]);
    }

    #[test]
    fn wrong_types() {
        assert_err(
            "[job]\nname = \"t\"\ngame = \"cc3\"\norder = \"two\"\n",
            &["field `job.order` expected an integer", "\"two\""],
        );
        // config would coerce these; the plan reader does not.
        assert_err("[job]\nname = \"t\"\ngame = \"cc3\"\norder = \"2\"\n", &["field `job.order` expected an integer"]);
        assert_err(
            &format!("{MINIMAL}[shards]\ncount = 1.5\n"),
            &["field `shards.count` expected an integer, got float 1.5"],
        );
        assert_err(&format!("{MINIMAL}[shards]\ncount = true\n"), &["field `shards.count` expected an integer"]);
        assert_err(
            "[job]\nname = 5\ngame = \"cc3\"\norder = 1\n",
            &["field `job.name` expected a string, got integer 5"],
        );
        assert_err(&format!("{MINIMAL}questions = \"solo(A)\"\n"), &["field `job.questions` expected an array"]);
        assert_err(
            &format!("{MINIMAL}questions = [\"solo(A)\", 3]\n"),
            &["field `job.questions[1]` expected a string"],
        );
        assert_err(&format!("{MINIMAL}[output]\ndir = 3\n"), &["field `output.dir` expected a string"]);
    }

    #[test]
    fn bad_listen() {
        assert_err(
            &format!("{MINIMAL}[cluster]\nlisten = \"localhost\"\n"),
            &["field `cluster.listen`", "\"localhost\""],
        );
        assert_err(&format!("{MINIMAL}[cluster]\nlisten = \"0.0.0.0:99999\"\n"), &["field `cluster.listen`"]);
        let p = ok(&format!("{MINIMAL}[cluster]\nlisten = \"[::1]:7000\"\n"));
        assert_eq!(p.cluster.listen, "[::1]:7000");
    }

    #[test]
    fn questions() {
        let asked = ["enable(A>C)", "enable(C>B)", "solo(A)", "solo(B)", "enable(A>B)"];
        let p = ok(&format!("{MINIMAL}questions = {asked:?}\n"));
        assert_eq!(p.job.questions, asked, "the plan's order is kept, extra layers allowed");
        // Without a layer the summary reads, the run would solve every layer
        // and then fail: refused before any work.
        assert_err(
            &format!("{MINIMAL}questions = [\"enable(C>B)\", \"solo(B)\"]\n"),
            &["field `job.questions`", "lacks solo(A), which the summary needs"],
        );
        assert_err(
            &format!("{MINIMAL}questions = [\"solo(A)\", \"solo(A)\"]\n"),
            &["field `job.questions`", "duplicate", "solo(A)"],
        );
        for bad in
            ["solo(D)", "enable(A>A)", "enable(A)", "solo(a)", "Solo(A)", "enable(A>B", "solo()", "enable(A>B>C)"]
        {
            assert_err(
                &format!("{MINIMAL}questions = [\"{bad}\"]\n"),
                &["field `job.questions`", "invalid question", bad],
            );
        }
        assert_err(&format!("{MINIMAL}questions = []\n"), &["field `job.questions`"]);
    }

    #[test]
    fn invalid_toml() {
        assert_err("[job\nname = \"t\"\n", &["plan plans/x.toml: not valid TOML:", "line 1"]);
        assert_err("[job]\nname = \"t\"\nname = \"u\"\n", &["not valid TOML:", "duplicate key"]);
        assert_err("[job]\nname = t\n", &["not valid TOML:"]);
    }

    #[test]
    fn missing_file() {
        let e = Plan::load(Path::new("plans/nope.toml")).expect_err("no such file");
        let msg = e.to_string();
        assert!(msg.starts_with("plan plans/nope.toml: cannot read: "), "{msg}");
        assert!(
            matches!(e, PlanError::Read { ref error, .. } if error.kind() == std::io::ErrorKind::NotFound),
            "{msg}"
        );
        assert_eq!(e.field(), None);
    }

    #[test]
    fn error_field_accessor() {
        let e = Plan::from_toml_str(&format!("{MINIMAL}[shards]\ncount = 0\n"), "p").expect_err("bad count");
        assert_eq!(e.field(), Some("shards.count"));
    }

    #[test]
    fn hash_is_semantic() {
        let base = ok(DEFAULT_PLAN).hash();
        assert_eq!(base.len(), 16);
        assert!(base.bytes().all(|b| b.is_ascii_hexdigit()));
        let reordered = "# same job, different layout\n[output]\ncheckpoints = \"elsewhere/c\"\n\n\
                         [shards]\nchunk_bytes=4096\n  block_positions  =  64\ncount=6\n\
                         [cluster]\ntoken = \"secret\"\nlisten = \"127.0.0.1:1\"\nworkers = 5\n\
                         [job]\norder = 1\ngame = \"cc3\"\nname = \"stage1\"\n";
        assert_eq!(ok(reordered).hash(), base);
        let moved = DEFAULT_PLAN.replace("tablebases/stage1", "/mnt/big/tb");
        assert_ne!(moved, DEFAULT_PLAN);
        assert_eq!(ok(&moved).hash(), base);
        let with_token = DEFAULT_PLAN.replace("token = \"\"", "token = \"abc\"");
        let with_token = ok(&with_token);
        assert_eq!(with_token.cluster.token.as_deref(), Some("abc"));
        assert_eq!(with_token.hash(), base);

        let order2 = DEFAULT_PLAN.replace("order = 1", "order = 2");
        assert_ne!(ok(&order2).hash(), base);
        let shards = DEFAULT_PLAN.replace("count = 6", "count = 7");
        assert_ne!(ok(&shards).hash(), base);
        let block = DEFAULT_PLAN.replace("block_positions = 64", "block_positions = 128");
        assert_ne!(ok(&block).hash(), base);
    }

    #[test]
    fn token_rule() {
        let plan = Some("p".to_owned());
        assert_eq!(pick_token(Some("e".into()), plan.as_ref()), Some("e".into()));
        assert_eq!(pick_token(Some(String::new()), plan.as_ref()), Some("p".into()));
        assert_eq!(pick_token(None, plan.as_ref()), Some("p".into()));
        assert_eq!(pick_token(None, Some(&String::new())), None);
        assert_eq!(pick_token(None, None), None);
        // An empty token in the file is stored as none.
        assert_eq!(ok(&format!("{MINIMAL}[cluster]\ntoken = \"\"\n")).cluster.token, None);
    }

    #[test]
    fn threads_rule() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(ok(&format!("{MINIMAL}[cluster]\nthreads = 1\n")).threads(), 1);
        assert_eq!(ok(MINIMAL).threads(), cores, "0: all cores");
        // More threads than cores only adds switching (and 100000 would fail
        // to spawn mid-run): capped at the cores.
        assert_eq!(ok(&format!("{MINIMAL}[cluster]\nthreads = 100000\n")).threads(), cores);
    }

    #[test]
    fn serde_round_trip() {
        let p = ok(DEFAULT_PLAN);
        let json = serde_json::to_string(&p).expect("serialize");
        let back: Plan = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, p);
        assert_eq!(back.hash(), p.hash());
    }

    #[test]
    fn retro_variables_set_cluster_and_output_fields_over_the_file_and_nothing_else() {
        let text = DEFAULT_PLAN;
        let vars = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let plan_with = |pairs: &[(&str, &str)]| {
            let root = parse_toml_with(text, "t.toml", vars(pairs)).unwrap();
            Plan::from_reader(Reader { origin: "t.toml", root })
        };
        let base = plan_with(&[]).unwrap();
        let p = plan_with(&[
            ("RETRO_CLUSTER__WORKERS", "3"),
            ("RETRO_CLUSTER__HEARTBEAT_TIMEOUT_SECS", "45"),
            ("RETRO_OUTPUT__DIR", "/data/tb"),
            ("RETRO_TOKEN", "not a plan field"),
            ("RETRO_FAULT", "after-apply:0:1"),
            ("RETRO_JOB__NAME", "other"),
            ("RETRO_SHARDS__COUNT", "99"),
        ])
        .unwrap();
        assert_eq!((p.cluster.workers, p.cluster.heartbeat_timeout_secs), (3, 45));
        assert_eq!(p.output.dir, PathBuf::from("/data/tb"));
        // [job] and [shards] decide what is computed: the environment cannot
        // change them, so the plan hash stays the file's.
        assert_eq!((p.job.name.as_str(), p.shards.count), (base.job.name.as_str(), base.shards.count));
        assert_eq!(p.hash(), base.hash());
        // A bad value is refused with the field named, as in the file.
        let e = plan_with(&[("RETRO_CLUSTER__WORKERS", "many")]).err().unwrap().to_string();
        assert!(e.contains("cluster.workers"), "{e}");
    }
}
