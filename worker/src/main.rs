//! `worker --connect host:50051`: joins a coordinator's job and works until it is done.

use clap::Parser;
use retro_node::fault::Fault;
use retro_worker::join::join_and_run_on;
use retro_worker::link::GrpcLink;
use retro_worker::run::{WorkerError, WorkerOptions};
use std::path::PathBuf;
use std::sync::Arc;

/// A worker of a retrograde-analysis job: owns shards, runs rounds, checkpoints
/// after every round. Run the same command again after a crash to resume.
/// It follows whatever job the coordinator runs: retrograde layers, breadth-first
/// levels (peg solitaire, kept under --data) or tasks (Sylver m-classes: nothing kept
/// under --data but its lock).
#[derive(Parser, Debug)]
#[command(name = "worker", version = retro_build_info::LONG_VERSION, after_help = ENVIRONMENT_HELP)]
struct Args {
    /// Coordinator address (host:port).
    #[arg(long, value_name = "HOST:PORT", value_parser = retro_worker::link::check_host_port)]
    connect: String,
    /// Directory for this worker's checkpoints; reuse it to resume after a crash.
    /// One worker process per directory (a second one is refused).
    #[arg(long, value_name = "DIR", default_value = "checkpoints/worker")]
    data: PathBuf,
    /// Address for the Peer service (other workers send updates here).
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:50052")]
    listen: std::net::SocketAddr,
    /// Address other workers use to reach this one (host or host:port); default:
    /// the local address that routes to the coordinator.
    #[arg(long, value_name = "HOST[:PORT]")]
    advertise: Option<String>,
    /// Kernel threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Start layers even when this machine lacks the memory or disk they need
    /// (the state is memory-mapped: it then pages to disk, many times slower).
    #[arg(long)]
    ignore_resources: bool,
    /// Take the place of a worker lost for good (its machine and --data are
    /// gone), named by the id the coordinator's log gives it (e.g. w3). Needs
    /// an empty --data; the layer in progress starts again on every worker.
    #[arg(long, value_name = "WORKER_ID")]
    replace: Option<String>,
    /// Refuse to join unless the coordinator runs the plan with this hash.
    #[arg(long, value_name = "HASH")]
    plan_hash: Option<String>,
    /// Cluster token (default: the RETRO_TOKEN environment variable).
    #[arg(long, env = "RETRO_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Talk TLS to the coordinator, trusting this CA certificate (PEM file); the
    /// coordinator's plan then has `[cluster] tls_cert` and `tls_key`.
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// The name the coordinator's certificate carries (default: the host of --connect).
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    tls_domain: Option<String>,
    /// TLS between workers too: this worker's certificate (PEM) for its Peer
    /// service, signed by the --tls-ca authority and carrying --tls-peer-name.
    #[arg(long, value_name = "FILE", requires_all = ["tls_ca", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The name every worker certificate carries (one certificate can serve all workers).
    #[arg(long, value_name = "NAME", default_value = "retro-worker")]
    tls_peer_name: String,
    /// Serve /healthz and /metrics (Prometheus text: tasks by kind and
    /// outcome, their durations, updates exchanged, resident memory, the
    /// --data directory's disk use) over HTTP on this address.
    #[arg(long, value_name = "ADDR")]
    status: Option<std::net::SocketAddr>,
    #[command(flatten)]
    log: retro_node::LogArgs,
    /// Protocol version to announce (tests only).
    #[arg(long, hide = true)]
    protocol_version: Option<u32>,
}

/// Every environment variable the worker reads, for `--help`
/// (`help_names_every_environment_variable` keeps it complete).
const ENVIRONMENT_HELP: &str = "\
Environment:
  RETRO_TOKEN  the cluster token (as --token)
  RETRO_FAULT  tests only: a fault to inject, POINT:LAYER:ROUND (docs/ARCHITECTURE.md)
  RUST_LOG     what the log shows (default: info), e.g. RUST_LOG=debug";

fn main() -> std::process::ExitCode {
    retro_node::tune_allocator();
    let args = Args::parse();
    retro_node::init_logging(&args.log);
    // Each server's connection limit is a share of this (retro_node::net).
    retro_node::net::raise_descriptor_limit();
    match try_main(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(MainError::Worker(WorkerError::Aborted(why), data)) if why == retro_node::STOPPED_AT_CHECKPOINT => {
            eprintln!(
                "the coordinator stopped the job at a checkpoint; when it runs again, start this worker again with \
                 --data {} to resume",
                data.display()
            );
            std::process::ExitCode::from(retro_node::EXIT_STOPPED)
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Why the worker process stopped before the job was done.
#[derive(Debug, thiserror::Error)]
enum MainError {
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// A file named on the command line could not be read.
    #[error("{flag} {}: {source}", path.display())]
    Read { flag: &'static str, path: PathBuf, source: std::io::Error },
    /// The coordinator's address or TLS settings are unusable.
    #[error(transparent)]
    Link(#[from] retro_worker::link::LinkError),
    /// The status port cannot be bound.
    #[error("--status {addr}: {source}")]
    Status { addr: std::net::SocketAddr, source: std::io::Error },
    /// A stop signal cannot be listened for.
    #[error("cannot listen for {signal}: {source}")]
    Signals { signal: &'static str, source: std::io::Error },
    /// The job failed on this worker (or the coordinator ended it), with the
    /// worker's data directory.
    #[error("{0}")]
    Worker(WorkerError, PathBuf),
}

/// Joins the coordinator's job and works until it is done.
fn try_main(args: Args) -> Result<(), MainError> {
    // The link is made inside the runtime (its channel spawns a task), and
    // the job runs on it through the library: see `join_and_run_on`.
    let runtime = tokio::runtime::Runtime::new().map_err(MainError::Runtime)?;
    let _entered = runtime.enter();
    let token = args.token.filter(|t| !t.is_empty());
    let read = |flag: &'static str, path: &PathBuf| {
        std::fs::read(path).map_err(|source| MainError::Read { flag, path: path.clone(), source })
    };
    let tls = match &args.tls_ca {
        None => None,
        Some(path) => {
            let ca_pem = read("--tls-ca", path)?;
            let host = args.connect.rsplit_once(':').map_or(args.connect.as_str(), |(h, _)| h);
            let domain = args.tls_domain.clone().unwrap_or_else(|| host.trim_matches(['[', ']']).to_string());
            Some(retro_worker::link::ClientTls { ca_pem, domain })
        }
    };
    let link = Arc::new(GrpcLink::with_tls(&args.connect, token.clone(), tls.as_ref())?);
    let mut opts = WorkerOptions::new(args.data);
    opts.peer_listener = Some(args.listen);
    opts.advertise = args.advertise;
    opts.coordinator = Some(args.connect.clone());
    if let Some(t) = args.threads {
        opts.threads = retro_node::bounded_threads(t, "--threads");
    }
    opts.plan_hash = args.plan_hash;
    opts.replace = args.replace;
    opts.ignore_resources = args.ignore_resources;
    if let Some(v) = args.protocol_version {
        opts.protocol_version = v;
    }
    opts.token = token;
    opts.fault = Fault::from_env();
    if let (Some(cert), Some(key), Some(client)) = (&args.tls_cert, &args.tls_key, &tls) {
        let (cert_pem, key_pem) = (read("--tls-cert", cert)?, read("--tls-key", key)?);
        let client = retro_worker::link::ClientTls { ca_pem: client.ca_pem.clone(), domain: args.tls_peer_name };
        opts.peer_tls = Some(retro_worker::run::PeerTls { cert_pem, key_pem, client });
    }
    if let Some(addr) = args.status {
        runtime
            .block_on(retro_worker::metrics::spawn(opts.metrics.clone(), addr))
            .map_err(|source| MainError::Status { addr, source })?;
    }
    let data = opts.data.clone();
    stop_on_signals(&runtime, &data)?;
    join_and_run_on(&runtime, link, opts).map_err(|e| MainError::Worker(e, data))
}

/// SIGTERM or SIGINT stops the worker at once, saying how to go on: every
/// round a cluster worker applies is durable when it reports it (its undo
/// logs roll back a round cut short), so any instant is a safe point, and
/// the coordinator waits for it as for a lost worker.
fn stop_on_signals(runtime: &tokio::runtime::Runtime, data: &std::path::Path) -> Result<(), MainError> {
    use tokio::signal::unix::{SignalKind, signal};
    let _entered = runtime.enter();
    let mut term =
        signal(SignalKind::terminate()).map_err(|source| MainError::Signals { signal: "SIGTERM", source })?;
    let mut int = signal(SignalKind::interrupt()).map_err(|source| MainError::Signals { signal: "SIGINT", source })?;
    let data = data.to_path_buf();
    runtime.spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        eprintln!(
            "{name}: worker stopping; its last reported round is durable in {}: start it again with the same --data \
             to resume",
            data.display()
        );
        std::process::exit(retro_node::EXIT_STOPPED.into());
    });
    Ok(())
}
