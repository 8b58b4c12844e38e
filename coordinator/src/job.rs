//! Runs a plan: embedded (one in-process worker owning every shard) or as a
//! cluster (a gRPC server that waits for remote workers). Either way the same
//! scheduler drives the same worker code; the job resumes from the manifest
//! and the workers' checkpoints when the same command is run again.

use crate::CoordinatorError;
use crate::inproc::InProcessLink;
use crate::manifest::Manifest;
use crate::plan::{GamePlan, Plan};
use crate::scheduler::{Phase, Scheduler};
use retro_engine::durable::write_atomic;
use retro_engine::rankset::RankSet;
use retro_games::GameKind;
use retro_games::RetroGame;
use retro_node::spec::JobSpec;
use retro_results::cc2::summary::{self as twoplayer, TwoPlayerSummary};
use retro_results::cc3::ranked::{self, RankedSummary};
use retro_results::cc3::seeds;
use retro_results::cc3::summary::{self, Summary};
use retro_worker::run::{WorkerOptions, run_worker};
use retro_worker::steps::{KnownLossSource, KnownLosses};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What an embedded run's worker knows before a layer starts: solo(A)'s
/// LOSS positions that the enable layers' tablebases prove
/// ([`retro_results::cc3::seeds`]), once both are written.
struct TablebaseSeeds {
    scheduler: Arc<Scheduler>,
    output: PathBuf,
    threads: usize,
}

impl KnownLosses for TablebaseSeeds {
    fn known_losses(&self, layer: u32) -> Result<Option<RankSet>, String> {
        let spec = &self.scheduler.spec;
        if spec.questions.get(layer as usize).map(String::as_str) != Some(seeds::SEEDED) {
            return Ok(None);
        }
        let retro_games::AnyGame::Cc3(game) = spec.game().map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let started = std::time::Instant::now();
        let job = self.scheduler.manifest().solved();
        let set = seeds::solo_a_known_losses_from(&game, &self.output, &job, self.threads)
            .map_err(|e| format!("reading the enable layers for {}: {e}", seeds::SEEDED))?;
        if let Some(set) = &set {
            tracing::info!(
                "{}: {} positions known LOSS from {} and {} ({} bytes), {:.1}s",
                seeds::SEEDED,
                set.count(),
                seeds::SEEDS[0],
                seeds::SEEDS[1],
                set.bytes(),
                started.elapsed().as_secs_f64()
            );
        }
        Ok(set)
    }
}

/// How the job runs.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Output directory (tablebases, summary.json).
    pub output: PathBuf,
    /// Checkpoint directory (manifest, staging, the embedded worker's data).
    pub checkpoints: PathBuf,
    /// Listen address; `None` runs embedded.
    pub listen: Option<SocketAddr>,
    /// Remote workers to wait for.
    pub expect_workers: usize,
    /// Cluster token.
    pub token: Option<String>,
    /// Called with the bound address once the server listens.
    pub on_listen: Option<fn(SocketAddr)>,
    /// Serve `/healthz`, `/status` and `/metrics` over HTTP on this address.
    pub status_listen: Option<SocketAddr>,
    /// Keep serving the final status this long after the job finished
    /// (zero: the page stops with the job).
    pub status_linger: Duration,
    /// Serve the workers over TLS with this identity.
    pub tls: Option<crate::service::ServerTls>,
    /// Run even when the machine lacks the memory or disk the job needs.
    pub ignore_resources: bool,
    /// Embedded runs: the least time between durable rounds (zero: every
    /// round). Cluster runs make every round durable.
    pub checkpoint_every: Duration,
    /// Embedded three-player runs: solve solo(A) last, from the LOSS
    /// positions the enable layers prove ([`retro_results::cc3::seeds`]).
    pub seed_solo: bool,
    /// Write into an output directory that holds another job's results
    /// ([`crate::workdirs::claim`]).
    pub replace_output: bool,
    /// Stop at the next checkpoint on SIGTERM or SIGINT (and at once on a
    /// second one), as the `coordinator` binary does: see [`listen_for_stop`].
    pub handle_signals: bool,
}

/// Exit status of a run that stopped on request at a checkpoint (BSD's
/// EX_TEMPFAIL: run it again to resume); the Hetzner units count it as a
/// clean stop.
pub use retro_node::EXIT_STOPPED;

/// Exit status after a second stop signal: stopped at once (128 + SIGINT, as
/// shells report an interrupted command).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Listens for SIGTERM and SIGINT: the first asks the job to stop at its
/// next safe point ([`Scheduler::request_stop`]) and sets `stop`; the second
/// ends the process at once (the checkpoints then resume it as after a
/// crash).
fn listen_for_stop(scheduler: Arc<Scheduler>, stop: tokio::sync::watch::Sender<bool>) -> Result<(), CoordinatorError> {
    use tokio::signal::unix::{SignalKind, signal};
    let io = |e: std::io::Error| CoordinatorError::Io(format!("cannot listen for stop signals: {e}"));
    let mut term = signal(SignalKind::terminate()).map_err(io)?;
    let mut int = signal(SignalKind::interrupt()).map_err(io)?;
    tokio::spawn(async move {
        let first = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        let doing = scheduler.request_stop();
        tracing::warn!(
            "{first}: stopping at the next checkpoint (now: {doing}); a second SIGTERM or SIGINT stops at once"
        );
        let _ = stop.send(true);
        let second = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::warn!("{second} again: stopping at once; run the same command to resume from the last checkpoint");
        std::process::exit(EXIT_INTERRUPTED);
    });
    Ok(())
}

/// Default of `--checkpoint-secs`: at most five minutes of rounds replayed
/// after a crash (or 20 checkpoint costs where a checkpoint costs more, see
/// [`crate::scheduler::DURABILITY_SPACING`]), and far fewer chunk copies and
/// flushes than one per round.
pub const DEFAULT_CHECKPOINT_SECS: u64 = 300;

/// Creates `dir` (and its parents) for use as the `what` directory; a path
/// that names a file gets an error saying so, not the bare "File exists".
pub fn ensure_dir(dir: &Path, what: &str) -> Result<(), CoordinatorError> {
    if dir.exists() && !dir.is_dir() {
        return Err(CoordinatorError::Io(format!(
            "the {what} directory {} is a file, not a directory; choose a directory",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        let blocked = dir.ancestors().skip(1).find(|a| a.is_file());
        match blocked {
            Some(f) => CoordinatorError::Io(format!(
                "cannot create the {what} directory {}: {} is a file",
                dir.display(),
                f.display()
            )),
            None => CoordinatorError::Io(format!("cannot create the {what} directory {}: {e}", dir.display())),
        }
    })
}

/// The embedded worker is the job's only worker, and its data lives under
/// the checkpoints this process has locked. The manifest records it at its
/// first join, the worker's `identity.json` a moment later: a run killed in
/// between (or an identity file lost) left a manifest whose one worker no
/// data directory claimed, and every later run was refused as a job that
/// already had its workers. The worker's data is the job's own, so its
/// identity is written again from the manifest (each layer's state keeps its
/// own checks) and the run resumes.
fn adopt_embedded_worker(manifest: &Manifest, data: &Path) -> Result<(), CoordinatorError> {
    let mut ids = manifest.workers.keys();
    let (Some(id), None) = (ids.next(), ids.next()) else { return Ok(()) };
    let known = retro_worker::join::data_identity(data)?;
    if known.is_some() {
        return Ok(());
    }
    ensure_dir(data, "embedded worker's data")?;
    let identity = retro_worker::store::Identity {
        job: manifest.job.clone(),
        worker_id: id.clone(),
        plan_hash: manifest.plan_hash.clone(),
        generation: manifest.fences.get(id).map_or(0, |f| f.confirmed),
    };
    retro_worker::store::write_identity(data, &identity)?;
    tracing::warn!(
        "{} had no identity (a run stopped between its join and its first write?); it is the embedded worker {id} \
         of the manifest again",
        data.display()
    );
    Ok(())
}

/// The job description workers receive.
pub fn job_spec(plan: &Plan) -> JobSpec {
    let (order, size, pieces, colour_symmetry, mirror_symmetry, part2) = match plan.job.game {
        GamePlan::Cc3 { order, .. } => (order, 0, 0, false, false, None),
        GamePlan::Cc2 { size, pieces, colour_symmetry, mirror_symmetry, part2 } => {
            (0, size, pieces, colour_symmetry, mirror_symmetry.unwrap_or(false), part2)
        }
        GamePlan::Peg(_) => (0, 0, 0, false, false, None),
    };
    let objective = match plan.job.game {
        GamePlan::Cc3 { objective, .. } => objective,
        _ => retro_games::cc3::Objective::FirstWinner,
    };
    let mut spec = JobSpec {
        rank_order: 0,
        name: plan.job.name.clone(),
        game: plan.job.kind(),
        order,
        size,
        pieces,
        colour_symmetry,
        mirror_symmetry,
        part2,
        objective,
        questions: plan.job.questions.clone(),
        shards: plan.shards.count,
        block_positions: plan.shards.block_positions,
        chunk_bytes: plan.shards.chunk_bytes,
        plan_hash: plan.hash(),
    };
    spec.rank_order = match plan.job.kind() {
        GameKind::Cc2 => retro_games::cc2::rank_order_of(spec.folding()),
        _ => retro_games::cc3::RANK_ORDER,
    };
    spec
}

/// What the coordinator's machine needs for a job over `stored` positions.
/// The analysis of a three-player job holds its layers compressed in chunks
/// (allowed a thirty-second of a byte a position each, 8:1; the tablebase
/// files of stage 2 compress 25:1 in larger blocks) and three of the
/// breadth-first search's bitsets of a third of the positions each (an
/// eighth of a byte a position; the other two wait on disk): at stage 2
/// about 3.2 GB. A two-player summary reads one layer packed. The tablebases
/// go to disk, allowed a sixteenth of a byte a position each. Embedded, the
/// worker's layers run here too.
pub fn coordinator_needs(spec: &JobSpec, stored: u64, embedded: bool) -> retro_node::resources::Needs {
    let layers = spec.questions.len() as u64;
    // The three-player search's two parked bitsets (a third of the positions
    // each) wait beside the tablebases.
    let (analysis, parked) = match spec.game {
        GameKind::Cc2 => (stored / 4, 0),
        // The ranked summary holds top2(A) packed and the search's visited bitset.
        GameKind::Cc3 if !spec.objective.is_first_winner() => (stored / 4 + stored / 8, 0),
        _ => (stored / 8 + layers * (stored / 32), stored / 12),
    };
    // Each layer's depth file, about a third of a byte a position compressed
    // (measured: 0.31 at stage 2's ranked layer, 0.21 at 7 x 7 x 3), and one
    // layer's staged depth blocks beside it while the merge writes it.
    let depth = stored / 3;
    let own = retro_node::resources::Needs { memory: analysis, disk: layers * (stored / 16 + depth) + depth + parked };
    if embedded {
        let worker = retro_node::resources::Needs::retrograde(stored, true);
        retro_node::resources::Needs { memory: own.memory.max(worker.memory), disk: own.disk + worker.disk }
    } else {
        own
    }
}

/// What a finished job reports, by game (one per run: its size does not matter).
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum JobReport {
    /// Three-player Chinese checkers.
    Cc3(Summary),
    /// Two-player Chinese checkers.
    Cc2(TwoPlayerSummary),
    /// The ranked three-player game.
    Ranked(RankedSummary),
}

impl JobReport {
    /// The summary as pretty JSON (what `summary.json` holds).
    pub fn to_json(&self) -> Result<String, CoordinatorError> {
        match self {
            JobReport::Cc3(s) => serde_json::to_string_pretty(s),
            JobReport::Cc2(s) => serde_json::to_string_pretty(s),
            JobReport::Ranked(s) => serde_json::to_string_pretty(s),
        }
        .map_err(CoordinatorError::from)
    }

    /// The short human table.
    pub fn human_table(&self) -> String {
        match self {
            JobReport::Cc3(s) => summary::human_table(s),
            JobReport::Cc2(s) => twoplayer::human_table(s),
            JobReport::Ranked(s) => ranked::human_table(s),
        }
    }
}

/// [`run`] to its end on `runtime`, for a caller that is not async.
///
/// The `coordinator` binary calls this rather than awaiting [`run`]: an
/// async call from the binary makes the compiler generate the whole job's
/// state machine a second time inside the binary (about a minute of CPU in
/// every clean build).
pub fn run_on(runtime: &tokio::runtime::Runtime, plan: &Plan, opts: RunOptions) -> Result<JobReport, CoordinatorError> {
    runtime.block_on(run(plan, opts))
}

/// Runs the plan to the end and returns the summary (also written to
/// `output/summary.json`).
pub async fn run(plan: &Plan, opts: RunOptions) -> Result<JobReport, CoordinatorError> {
    let spec = job_spec(plan);
    let game = spec.game()?;
    let layout = spec.layout(game.position_count());
    let claimed = crate::workdirs::claim(&opts.output, &opts.checkpoints)?;
    let embedded = opts.listen.is_none();
    let manifest_path = opts.checkpoints.join("coordinator.json");
    let loaded = Manifest::load(&manifest_path, &spec.name, &spec.plan_hash, spec.rank_order)?;
    // A job whose every layer is written has only its analysis left: the
    // solving's memory and disk are not asked of the machine again.
    let solved = loaded.as_ref().is_some_and(|m| m.layers.iter().all(|l| l.tablebase.is_some()));
    if solved {
        tracing::info!("job {}: every layer is written; only the analysis runs", spec.name);
    } else {
        let needs = coordinator_needs(&spec, layout.positions, embedded);
        let what = format!("job {} ({})", spec.name, if embedded { "embedded" } else { "the coordinator's share" });
        let have = retro_node::resources::Available::measure(&opts.checkpoints);
        tracing::info!(
            "{}",
            retro_node::resources::check(&what, needs, have, &opts.checkpoints, opts.ignore_resources)?
        );
    }
    if !embedded && !solved {
        // Each worker checks its own share when its first layer starts.
        let share = layout.positions.div_ceil(opts.expect_workers.max(1) as u64);
        let w = retro_node::resources::Needs::retrograde(share, true);
        tracing::info!(
            "each of the {} workers needs about {} of memory and {} of disk for its shards",
            opts.expect_workers.max(1),
            retro_node::resources::human_bytes(w.memory),
            retro_node::resources::human_bytes(w.disk)
        );
    }
    let mut manifest = match loaded {
        Some(m) => {
            tracing::info!("resuming job {} from {}", spec.name, manifest_path.display());
            m
        }
        None => Manifest::new(&spec.name, &spec.plan_hash, spec.rank_order, &spec.questions),
    };
    // Whose checkpoints these are is said first; then whose output it is.
    let owner = crate::workdirs::Owner {
        job: spec.name.clone(),
        game: spec.game.to_string(),
        plan_hash: Some(spec.plan_hash.clone()),
    };
    claimed.own(&owner, opts.replace_output)?;
    for note in manifest.claim_output(&opts.output)? {
        tracing::info!("{note}");
    }
    manifest.save(&manifest_path)?;
    if embedded {
        adopt_embedded_worker(&manifest, &opts.checkpoints.join("worker"))?;
    }
    let expected = if embedded { 1 } else { opts.expect_workers.max(1) };
    if manifest.workers.len() > expected {
        return Err(CoordinatorError::WorkerCount { path: manifest_path, started: manifest.workers.len() });
    }
    tracing::info!(
        "job {} (plan {}): {} positions in {} shards, {} layers, {}",
        spec.name,
        spec.plan_hash,
        layout.positions,
        layout.shards,
        spec.questions.len(),
        if embedded { "embedded".to_string() } else { format!("{expected} remote workers") }
    );
    let mut scheduler = Scheduler::new(
        spec.clone(),
        layout,
        manifest,
        expected,
        Duration::from_secs(plan.cluster.heartbeat_timeout_secs),
        manifest_path,
        opts.checkpoints.join("staging"),
        opts.output.clone(),
    );
    // A worker that dies alone must find its rounds on disk: only when the
    // worker lives and dies with this process may rounds wait for a checkpoint.
    if embedded && !opts.checkpoint_every.is_zero() {
        scheduler.checkpoint_every = Some(opts.checkpoint_every);
    }
    let seed_solo = embedded && opts.seed_solo;
    if opts.seed_solo && !embedded {
        // The workers do not hold the coordinator's tablebases.
        tracing::warn!("--seed-solo applies to embedded runs; this cluster solves every layer from the move counts");
    }
    if seed_solo {
        scheduler.seed_solo();
    }
    let scheduler = Arc::new(scheduler);
    let (signal_tx, mut signalled) = tokio::sync::watch::channel(false);
    if opts.handle_signals {
        listen_for_stop(scheduler.clone(), signal_tx)?;
    }
    let (stop_tx, shutdown) = crate::service::Shutdown::new();
    let mut worker_task = None;
    let mut server_task = None;
    if embedded {
        let link = Arc::new(InProcessLink { scheduler: scheduler.clone() });
        let mut wopts = WorkerOptions::new(opts.checkpoints.join("worker"));
        wopts.threads = plan.threads();
        wopts.ignore_resources = opts.ignore_resources;
        wopts.fault = retro_node::fault::Fault::from_env();
        wopts.spaced_checkpoints = !opts.checkpoint_every.is_zero();
        if seed_solo {
            let seeds =
                TablebaseSeeds { scheduler: scheduler.clone(), output: opts.output.clone(), threads: plan.threads() };
            wopts.known_losses = Some(KnownLossSource(Arc::new(seeds)));
        }
        worker_task = Some(tokio::spawn(run_worker(link, wopts)));
    } else {
        let addr = opts.listen.expect("cluster mode has an address");
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| CoordinatorError::Io(format!("cannot listen on {addr}: {e}")))?;
        let bound = listener.local_addr().map_err(|e| CoordinatorError::Io(e.to_string()))?;
        tracing::info!("coordinator listening on {bound}; waiting for {expected} workers");
        if let Some(f) = opts.on_listen {
            f(bound);
        }
        let serve = crate::service::ServeOptions {
            listener,
            tls: opts.tls.clone(),
            token: opts.token.clone(),
            status: None, // served below, for embedded runs too
            status_linger: Duration::ZERO,
        };
        server_task = Some(tokio::spawn(crate::service::serve(scheduler.clone(), serve, shutdown.clone())));
    }
    let status_page =
        crate::status::spawn(scheduler.clone(), opts.status_listen, Some(opts.checkpoints.clone())).await?;
    // The heartbeat sweep, as level and task jobs run it.
    let s = scheduler.clone();
    crate::service::every_second(shutdown, move || s.check_heartbeats());
    let mut phase = scheduler.phase();
    let outcome = loop {
        let p = phase.borrow_and_update().clone();
        match p {
            Phase::Finish => {
                let m = scheduler.manifest();
                let out = opts.output.clone();
                let threads = plan.threads();
                let analysed = spec.clone();
                let fault = retro_node::fault::Fault::from_env();
                // A thread of its own, not `spawn_blocking`: a stop abandons the
                // analysis, and dropping the runtime waits for every blocking
                // task, so a stopped stage-2 run went on computing the analysis
                // it had given up (25 minutes) and swallowed the second signal.
                // The process exits past a detached thread.
                let (done, analysis) = tokio::sync::oneshot::channel();
                let analyse = move || {
                    retro_node::fault::Fault::check(&fault, "analysis", 0, 0);
                    let (solved, memory) = (m.solved(), retro_node::resources::mem_available());
                    let report = match analysed.game()? {
                        retro_games::AnyGame::Cc3(game) => {
                            JobReport::Cc3(summary::compute(&game, &out, &solved, threads, memory)?)
                        }
                        retro_games::AnyGame::Cc2(game) => JobReport::Cc2(twoplayer::compute(&game, &out, &solved)?),
                        retro_games::AnyGame::Ranked(game) => {
                            JobReport::Ranked(ranked::compute(&game, &out, &solved, threads, memory)?)
                        }
                    };
                    let json = report.to_json()?;
                    write_atomic(&out.join("summary.json"), format!("{json}\n").as_bytes())?;
                    Ok::<JobReport, CoordinatorError>(report)
                };
                std::thread::Builder::new()
                    .name("analysis".into())
                    .spawn(move || {
                        let _ = done.send(analyse());
                    })
                    .map_err(|e| CoordinatorError::Io(format!("cannot start the analysis thread: {e}")))?;
                // Every tablebase is written: a stop asked for now loses only
                // the analysis, which the next run computes again.
                let result = tokio::select! {
                    r = analysis => r
                        .map_err(|_| CoordinatorError::Thread {
                            what: "the analysis".into(),
                            detail: "its thread ended without a result".into(),
                        })
                        .and_then(|r| r),
                    _ = signalled.wait_for(|s| *s) => break Err(CoordinatorError::Stopped(format!(
                        "job {} stopped during its analysis: every tablebase is written in {}; run the same \
                         command again to compute the summary",
                        spec.name,
                        opts.output.display()
                    ))),
                };
                scheduler.finish(result.as_ref().map(|_| ()).map_err(|e| e.to_string()));
                break result;
            }
            Phase::Failed(_) if scheduler.stopped() => {
                let m = scheduler.manifest();
                let at = m
                    .layers
                    .iter()
                    .find(|l| l.tablebase.is_none())
                    .map(|l| match l.committed_round {
                        Some(r) => format!("layer {} round {r}", l.question),
                        None => format!("before layer {}", l.question),
                    })
                    .unwrap_or_else(|| "before the analysis".into());
                break Err(CoordinatorError::Stopped(format!(
                    "job {} stopped at a checkpoint ({at}, in {}); run the same command again to resume",
                    spec.name,
                    opts.checkpoints.display()
                )));
            }
            Phase::Failed(m) => break Err(CoordinatorError::Failed(m)),
            Phase::Done => {
                break Err(CoordinatorError::Failed("job ended without a summary".into()));
            }
            _ => {}
        }
        if let Some(w) = &worker_task
            && w.is_finished()
        {
            let w = worker_task.take().expect("checked");
            match w.await {
                Ok(Err(e)) => break Err(CoordinatorError::EmbeddedWorker(e)),
                Err(e) => {
                    break Err(CoordinatorError::Thread { what: "the embedded worker".into(), detail: e.to_string() });
                }
                Ok(Ok(())) => {}
            }
        }
        tokio::select! {
            _ = phase.changed() => {}
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    };
    // Let every worker hear that the job ended, then stop serving.
    if let Some(w) = worker_task {
        let _ = tokio::time::timeout(Duration::from_secs(10), w).await;
    } else {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !scheduler.all_told() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let _ = stop_tx.send(true);
    if let Some(s) = server_task {
        let _ = tokio::time::timeout(Duration::from_secs(5), s).await;
    }
    // A job that failed or stopped closes its status page now (dropped); a
    // finished one may keep it up for a last scrape.
    if outcome.is_ok() {
        let interrupted = async move {
            let _ = signalled.wait_for(|s| *s).await;
        };
        status_page.close_after(opts.status_linger, interrupted).await;
    }
    outcome
}
