//! `coordinator [--plan PLAN]`: runs a plan, embedded or as a cluster, and
//! prints its summary (three-player, two-player, peg or Sylver).

use super::CliError;

use super::{load_any_plan, print_listen};
use retro_coordinator::job::{self, RunOptions};
use retro_coordinator::peg;
use retro_coordinator::plan::AnyPlan;
use retro_coordinator::plan::{ClusterSection, Plan};
use retro_coordinator::service::{ClusterJob, ServeOptions};
use retro_coordinator::workdirs;
use retro_games::GameKind;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::runtime::Runtime;

/// The flags of a run (the command without a subcommand).
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Plan file (TOML); default: the built-in stage-1 plan (plans/stage1.toml).
    #[arg(long, value_name = "PLAN")]
    plan: Option<PathBuf>,
    /// Output directory for tablebases and summary.json (default: the plan's).
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Checkpoint directory (default: the plan's).
    #[arg(long, value_name = "DIR")]
    checkpoints: Option<PathBuf>,
    /// Listen for remote workers on this address (port 0: any free port).
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Number of remote workers to wait for.
    #[arg(long, value_name = "N")]
    expect_workers: Option<usize>,
    /// Serve /healthz, /status (JSON progress) and /metrics (Prometheus text)
    /// over HTTP on this address: retrograde jobs, and the cluster runs of
    /// peg (levels) and Sylver (tasks) plans.
    #[arg(long, value_name = "ADDR")]
    status: Option<SocketAddr>,
    /// Keep serving --status this many seconds after the job finished, so
    /// that a monitor's last scrape sees the final state (a stop signal ends
    /// the wait: a retrograde job then exits 0). Level and task jobs: after
    /// their last level or result (a peg ledger is computed after it).
    #[arg(long, value_name = "SECS", default_value_t = 0, requires = "status")]
    status_linger: u64,
    /// Print summary.json instead of the table.
    #[arg(long)]
    json: bool,
    /// The cluster token every worker must present (default: the plan's
    /// [cluster] token). Prefer the RETRO_TOKEN variable to the flag: a
    /// flag shows in `ps`.
    #[arg(long, value_name = "TOKEN", env = "RETRO_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Run even when this machine lacks the memory or disk the job needs
    /// (checked before anything is allocated; the figures are logged).
    #[arg(long)]
    ignore_resources: bool,
    /// Embedded runs: make a round durable at most every SECS seconds (0:
    /// every round), and no more often than every 20 times what the last
    /// checkpoint cost (so durability takes at most about 5 % of the run).
    /// Rounds in between commit in memory (the state is mapped privately and
    /// nothing is written; a checkpoint writes it to the shards' second
    /// files); a crash replays them from the last checkpoint. With 0 the
    /// state is mapped shared and kept by undo logs, as in a cluster, which
    /// checkpoints every round.
    #[arg(long, value_name = "SECS", default_value_t = job::DEFAULT_CHECKPOINT_SECS)]
    checkpoint_secs: u64,
    /// Embedded three-player runs: solve solo(A) after the two enable layers
    /// and start it from the LOSS positions they prove (B and C can force a
    /// win for one of them): the same tablebases, about 14.8 G fewer records
    /// at stage 2. Its rounds are then not the full layer's, so the
    /// summary does not report the published solo round count.
    #[arg(long)]
    seed_solo: bool,
    /// Write into an output directory that holds another job's results
    /// (its job.json or summary.json names the job), replacing them. Without
    /// it such a directory is refused.
    #[arg(long)]
    replace_output: bool,
}

impl RunArgs {
    /// Whether the plan runs as a cluster (remote workers) rather than
    /// embedded: `--listen`, `--expect-workers` or the plan's `[cluster] workers`.
    fn cluster(&self, plan_workers: u32) -> bool {
        self.listen.is_some() || self.expect_workers.is_some() || plan_workers > 0
    }

    /// The cluster token: `--token` (or RETRO_TOKEN) when set and not
    /// empty, else the plan's `[cluster] token`.
    fn token(&self, cluster: &ClusterSection) -> Option<String> {
        cluster.token_given(self.token.clone())
    }
}

/// The TLS identity the plan names, read from its files.
fn server_tls(cluster: &ClusterSection) -> Result<Option<retro_coordinator::service::ServerTls>, CliError> {
    let (Some(cert), Some(key)) = (&cluster.tls_cert, &cluster.tls_key) else { return Ok(None) };
    let read = |p: &PathBuf, what: &str| std::fs::read(p).map_err(|e| format!("[cluster] {what} {}: {e}", p.display()));
    Ok(Some(retro_coordinator::service::ServerTls {
        cert_pem: read(cert, "tls_cert")?,
        key_pem: read(key, "tls_key")?,
    }))
}

/// Binds `--listen` (or the plan's `cluster.listen`) on `runtime` and prints
/// the address (tests read it when the port was 0).
fn bind_listener(
    runtime: &Runtime,
    listen: Option<SocketAddr>,
    cluster: &ClusterSection,
) -> Result<tokio::net::TcpListener, CliError> {
    let text = &cluster.listen;
    let addr = match listen {
        Some(a) => a,
        None => text.parse().map_err(|e| format!("cluster.listen {text:?}: {e}"))?,
    };
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|source| CliError::Socket { what: format!("cannot listen on {addr}"), source })?;
    print_listen(listener.local_addr().map_err(|source| CliError::Socket { what: format!("{addr}"), source })?);
    Ok(listener)
}

/// How the workers of a level or task job reach it: the listener bound
/// (`--listen` or the plan's), the plan's TLS identity, the token (env
/// `RETRO_TOKEN` or the plan's) and `--status`.
fn serve_options(runtime: &Runtime, args: &RunArgs, cluster: &ClusterSection) -> Result<ServeOptions, CliError> {
    Ok(ServeOptions {
        listener: bind_listener(runtime, args.listen, cluster)?,
        tls: server_tls(cluster)?,
        token: args.token(cluster),
        status: args.status,
        status_linger: Duration::from_secs(args.status_linger),
    })
}

/// Runs a plan (the command without a subcommand). Not async: the jobs run
/// on a runtime through the library (`job::run_on` says why), and the long
/// computations of embedded peg and Sylver plans on this thread.
pub fn run(args: RunArgs) -> Result<(), CliError> {
    let runtime = super::runtime()?;
    let plan = match load_any_plan(&args.plan)? {
        AnyPlan::Sylver(plan) => return run_sylver(&runtime, plan, args),
        AnyPlan::Plan(plan) => plan,
    };
    if let retro_coordinator::plan::GamePlan::Cc3 { order, .. } = plan.job.game
        && !plan.is_solvable()
    {
        return Err(format!(
            "plan {}: order {order} is too large to solve (its ranks do not fit 64 bits); try `coordinator estimate`",
            plan.job.name
        )
        .into());
    }
    if plan.job.kind() == GameKind::Peg {
        return run_peg(&runtime, &plan, &args);
    }
    let cluster = args.cluster(plan.cluster.workers);
    let listen = if cluster {
        let text = plan.cluster.listen.clone();
        Some(args.listen.unwrap_or(text.parse().map_err(|e| format!("cluster.listen {text:?}: {e}"))?))
    } else {
        None
    };
    let expect = args.expect_workers.unwrap_or(plan.cluster.workers as usize);
    if cluster && expect == 0 {
        return Err("say how many workers to wait for: --expect-workers N (or the plan's [cluster] workers)".into());
    }
    let token = args.token(&plan.cluster);
    let opts = RunOptions {
        output: args.output.unwrap_or_else(|| plan.output.dir.clone()),
        checkpoints: args.checkpoints.unwrap_or_else(|| plan.output.checkpoints.clone()),
        listen,
        expect_workers: expect,
        token,
        on_listen: Some(print_listen),
        status_listen: args.status,
        status_linger: Duration::from_secs(args.status_linger),
        tls: server_tls(&plan.cluster)?,
        ignore_resources: args.ignore_resources,
        checkpoint_every: Duration::from_secs(args.checkpoint_secs),
        seed_solo: args.seed_solo,
        replace_output: args.replace_output,
        handle_signals: true,
    };
    let output = opts.output.clone();
    let s = job::run_on(&runtime, &plan, opts)?;
    if args.json {
        println!("{}", s.to_json()?);
    } else {
        print!("{}", s.human_table());
        println!("tablebases and summary.json in {}", output.display());
    }
    Ok(())
}

/// Runs a Sylver table plan: on this machine's threads, or (with `[cluster]
/// workers`, `--listen` or `--expect-workers`) on any number of remote workers
/// that take whole m-classes; both write the same table.
fn run_sylver(
    runtime: &Runtime,
    plan: retro_coordinator::sylver_job::SylverPlan,
    args: RunArgs,
) -> Result<(), CliError> {
    use retro_coordinator::sylver_job;
    let cluster = args.cluster(plan.cluster.workers);
    let output = args.output.clone().unwrap_or_else(|| plan.output.clone());
    let checkpoints = args.checkpoints.clone().unwrap_or_else(|| plan.checkpoints.clone());
    let owner = workdirs::Owner { job: plan.name.clone(), game: "sylver".into(), plan_hash: Some(plan.hash()) };
    let _claimed = workdirs::claim_for(&output, &checkpoints, &owner, args.replace_output)?;
    let summary = if cluster {
        let job = ClusterJob {
            workers: args.expect_workers.unwrap_or(plan.cluster.workers as usize).max(1),
            checkpoints: checkpoints.clone(),
            serve: serve_options(runtime, &args, &plan.cluster)?,
        };
        let opts = sylver_job::RunOptions::default();
        retro_coordinator::sylver_cluster::run(runtime, &plan, &output, &opts, job)?
    } else {
        embedded_has_no_status(args.status)?;
        sylver_job::run(&plan, &output, &checkpoints, &sylver_job::RunOptions::default())?
    };
    Ok(sylver_job::print_summary(&summary, &output, args.json)?)
}

/// Peg and Sylver plans run embedded without the job service that `/status`
/// reads: say so rather than ignore `--status`.
fn embedded_has_no_status(status: Option<SocketAddr>) -> Result<(), CliError> {
    match status {
        Some(addr) => Err(format!(
            "--status {addr}: an embedded peg or Sylver run (and a peg problem table) has no status page; run the \
             plan as a cluster (--listen ADDR --expect-workers N) to watch it"
        )
        .into()),
        None => Ok(()),
    }
}

/// Runs a peg plan; a ledger whose OEIS check fails is an error (non-zero exit).
fn run_peg(runtime: &Runtime, plan: &Plan, args: &RunArgs) -> Result<(), CliError> {
    let output = args.output.clone().unwrap_or_else(|| plan.output.dir.clone());
    let checkpoints = args.checkpoints.clone().unwrap_or_else(|| plan.output.checkpoints.clone());
    let owner = workdirs::Owner { job: plan.job.name.clone(), game: "peg".into(), plan_hash: Some(plan.hash()) };
    let _claimed = workdirs::claim_for(&output, &checkpoints, &owner, args.replace_output)?;
    use retro_coordinator::plan::{GamePlan, PegPlan};
    let problems = matches!(plan.job.game, GamePlan::Peg(PegPlan::Problems { .. }));
    let cluster = args.cluster(plan.cluster.workers);
    if problems || !cluster {
        embedded_has_no_status(args.status)?;
    }
    if problems {
        let summary = peg::run_problems(plan, &output)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&summary)?);
        } else {
            for b in &summary.boards {
                println!("{}", b.markdown());
            }
            println!("summary.json and problems.md in {}", output.display());
        }
        return Ok(());
    }
    if cluster {
        // Remote workers compute the levels; the ledger is then computed here
        // from the level files they uploaded, exactly as after an embedded run.
        let expect = args.expect_workers.unwrap_or(plan.cluster.workers as usize);
        if expect == 0 {
            return Err("say how many workers to wait for: --expect-workers N (or the plan's [cluster] workers)".into());
        }
        let (_, _, start) = peg::plan_start(plan)?;
        let job = ClusterJob {
            workers: expect,
            checkpoints: checkpoints.clone(),
            serve: serve_options(runtime, args, &plan.cluster)?,
        };
        peg::cluster::run(runtime, plan, start, job)?;
    }
    let summary = peg::run_ledger(plan, &output, &checkpoints)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", summary.text());
        println!("summary.json in {}", output.display());
    }
    if !summary.oeis_ok() {
        return Err("the ledger does not match the OEIS (see the MISMATCH lines)".into());
    }
    Ok(())
}
