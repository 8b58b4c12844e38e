//! What every process of the cluster needs, coordinator and worker alike (so
//! that neither depends on the other for it): the job as the coordinator hands it out ([`spec`]), the
//! cluster token ([`auth`]), the timing of heartbeats, back-off and
//! keepalives, the one-process-per-directory lock ([`lock`]), fault points for
//! recovery tests ([`fault`]), the memory and disk check ([`resources`]), the
//! join/heartbeat/lost-worker table every kind of job keeps ([`roster`]),
//! logging and the thread count.

pub mod auth;
mod error;
pub mod fault;
pub mod input;
pub mod lock;
pub mod metrics;
pub mod net;
pub mod resources;
pub mod roster;
pub mod spec;

pub use error::NodeError;

/// How often a busy worker pulls (the pull is its heartbeat).
pub const HEARTBEAT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1000);
/// Longest back-off between attempts to reach an unreachable coordinator or peer.
pub const MAX_BACKOFF: std::time::Duration = std::time::Duration::from_secs(5);
/// HTTP/2 keepalive ping interval on every channel (a cut link is otherwise silent).
pub const KEEPALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);
/// How long an unanswered keepalive ping may wait before the connection is dropped.
pub const KEEPALIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event (in colour on a terminal).
    #[default]
    Text,
    /// One JSON object per event, for a log collector.
    Json,
}

/// The logging flags both programs take: anywhere in a run's command line,
/// and after the name of a subcommand (`coordinator probe -v ...`; clap
/// refuses `coordinator -v probe`, since a run's flags exclude subcommands).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct LogArgs {
    /// How log lines are written on stderr.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// Log only warnings and errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Log more: -v adds debug lines, -vv trace lines (RUST_LOG, when set,
    /// decides instead of either flag).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

impl LogArgs {
    /// The level the flags ask for (quiet wins over verbose).
    pub fn level(&self) -> &'static str {
        match (self.quiet, self.verbose) {
            (true, _) => "warn",
            (false, 0) => "info",
            (false, 1) => "debug",
            _ => "trace",
        }
    }
}

/// Logs to stderr as `args` say, filtered by `RUST_LOG` when it is set
/// (stdout carries only results: a `--json` summary must parse as it comes).
pub fn init_logging(args: &LogArgs) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| args.level().into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Text => builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
        LogFormat::Json => builder.json().with_ansi(false).init(),
    }
}

/// Buffers of at least this many bytes get their own mapping from the
/// allocator, returned to the system when freed (see [`tune_allocator`]).
pub const OWN_MAPPING_BYTES: usize = 256 << 10;

/// Lets a report piped into `head` end quietly, as any Unix tool's does,
/// when the reader stops: Rust ignores SIGPIPE, so printing would fail (and
/// `println!` panic). Only for the commands that print and exit; the job and
/// the servers keep ignoring it, where a closed peer is an error to handle.
/// Call it before any thread starts.
pub fn die_quietly_on_closed_stdout() {
    // SAFETY: SIG_DFL is a valid disposition, set before other threads exist.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// Makes the C allocator give every buffer of [`OWN_MAPPING_BYTES`] or more
/// its own mapping, returned to the system when it is freed. By default
/// glibc raises that threshold after the first large free, after which the
/// round buffers (a few MB to hundreds of MB, allocated and freed every
/// flush) stay in its arenas: on cc2 7 x 7 x 3 the anonymous part of the
/// resident set was 57-65 MB during the rounds with the default and 28-32 MB
/// with this (docs/benchmarks/log.md, 2026-12-02), at no measurable cost in time. Both
/// binaries call it first; elsewhere than glibc it does nothing.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any
    // thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, OWN_MAPPING_BYTES as libc::c_int);
    }
}

/// Why a job's phase says it failed when it stopped on request (SIGTERM,
/// SIGINT) at a checkpoint: the coordinator sets it, a worker told it exits
/// with [`EXIT_STOPPED`] instead of reporting a failure.
pub const STOPPED_AT_CHECKPOINT: &str = "stopped on request at a checkpoint";

/// Exit status of a process that stopped on request with everything it did
/// durable (BSD's EX_TEMPFAIL: run the same command again to resume).
pub const EXIT_STOPPED: u8 = 75;

/// The kernel threads to run for a `requested` count (0: all cores). More
/// threads than cores only adds switching, and an absurd count (`threads =
/// 100000` in a plan) would fail to spawn mid-run: the count is capped at the
/// cores, with a warning (once per process) naming the setting `what`.
pub fn bounded_threads(requested: usize, what: &str) -> usize {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if requested == 0 {
        return cores;
    }
    if requested > cores {
        if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tracing::warn!("{what} = {requested}, but this machine has {cores} cores: running {cores} threads");
        }
        return cores;
    }
    requested
}
