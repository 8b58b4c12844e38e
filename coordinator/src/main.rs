//! `coordinator`: runs a plan (embedded or as a cluster), and answers
//! questions about plans and tablebases (estimate, explore, probe, board, verify, serve).

use clap::{Parser, Subcommand};
use retro_coordinator::analysis;
use retro_coordinator::estimate::{bytes_human, estimate};
use retro_coordinator::job::{self, RunOptions};
use retro_coordinator::peg;
use retro_coordinator::plan::{ClusterSection, DEFAULT_PLAN, Plan};
use retro_coordinator::summary;
use retro_coordinator::witness::WitnessKind;
use retro_engine::tablebase::TablebaseReader;
use retro_games::cc3::Cc3;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

mod commands;

/// Strongly solves games by distributed retrograde analysis.
///
/// Without a subcommand, runs a plan: embedded (workers in-process) unless
/// --listen / --expect-workers or the plan's [cluster] workers ask for remote
/// workers (`worker --connect HOST:PORT`). Run the same command again after a
/// crash: the job resumes from its checkpoints.
#[derive(Parser, Debug)]
#[command(name = "coordinator", version = retro_proto::LONG_VERSION, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
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
    /// Serve /healthz and /status (JSON progress) over HTTP on this address.
    #[arg(long, value_name = "ADDR")]
    status: Option<SocketAddr>,
    /// Print summary.json instead of the table.
    #[arg(long)]
    json: bool,
    /// Run even when this machine lacks the memory or disk the job needs
    /// (checked before anything is allocated; the figures are logged).
    #[arg(long)]
    ignore_resources: bool,
    /// Embedded runs: make a round durable at most every SECS seconds (0:
    /// every round). Rounds in between commit in memory and save each chunk
    /// once to the undo log; a crash replays them from the last checkpoint.
    /// Cluster runs checkpoint every round.
    #[arg(long, value_name = "SECS", default_value_t = job::DEFAULT_CHECKPOINT_SECS)]
    checkpoint_secs: u64,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Exact position counts and memory/disk needs of a plan (any order).
    Estimate {
        /// Plan file (default: built-in stage 1).
        #[arg(long)]
        plan: Option<PathBuf>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Breadth-first search from the start: new positions per depth (and their
    /// categories when the plan's tablebases exist).
    Explore {
        /// Plan file (default: built-in stage 1).
        #[arg(long)]
        plan: Option<PathBuf>,
        /// Deepest ply to explore (default: until nothing new).
        #[arg(long)]
        depth: Option<u32>,
        /// Tablebase directory (default: the plan's output directory).
        #[arg(long)]
        tablebase: Option<PathBuf>,
        /// Threads (default: the plan's [cluster] threads, 0 there meaning all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// A position's answers (three-player: the 12; two-player: the value) and
    /// each move's child's, from the tablebases.
    Probe {
        /// Directory holding the tablebase files.
        #[arg(long)]
        tablebase: PathBuf,
        /// Position in the text notation (see `coordinator board`); default: the start.
        #[arg(long, conflicts_with_all = ["witness", "batch"])]
        position: Option<String>,
        /// Read positions from stdin, one per line (blank lines and `#`
        /// comments skipped), and write one JSON line each: the answers and
        /// moves, or `{"input": ..., "error": ...}`. Fails at the end if any
        /// line could not be answered.
        #[arg(long, conflicts_with = "witness")]
        batch: bool,
        /// Instead of one position, find a witness of a category in the
        /// tablebases: the shallowest solo-win or spoiler-draw position with
        /// the line from the start, a kingmaker choosing the winner, or a
        /// spoiler's drawing cycle ("none: ..." when there is none).
        #[arg(long, value_enum, value_name = "KIND")]
        witness: Option<WitnessKind>,
        /// With --witness: search at most this many plies from the start
        /// (default: every reachable position, if need be).
        #[arg(long, value_name = "PLIES", requires = "witness")]
        max_depth: Option<u32>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Prints the board with every cell's name (the notation's vocabulary).
    Board {
        /// Star order.
        #[arg(long, default_value_t = 1)]
        order: u32,
    },
    /// Peg solitaire: decide one single-vacancy problem.
    Peg {
        #[command(subcommand)]
        command: PegCommand,
    },
    /// Renders a summary.json as a Markdown results ledger.
    Ledger {
        /// The summary file.
        #[arg(long, default_value = "tablebases/stage1/summary.json")]
        summary: PathBuf,
    },
    /// Measures move generation, ranking, predecessors, the init pass and a round.
    Bench {
        /// Star order.
        #[arg(long, default_value_t = 2)]
        order: u32,
        /// Random positions for the per-position figures.
        #[arg(long, default_value_t = 1_000_000)]
        samples: u64,
        /// Contiguous positions for the init pass and the round.
        #[arg(long, default_value_t = 20_000_000)]
        slice: u64,
        /// Threads for the kernel passes (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// A position explorer in the browser over a tablebase directory: the
    /// board, the answers and every move's child (docs/EXPLORER.md).
    Serve {
        /// Directory holding the tablebase files (three-player or two-player).
        #[arg(long)]
        tablebase: PathBuf,
        /// Address to serve on (port 0: any free port; the bound address is printed).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Wall time one request's search may take (a peg finish, a Sylver
        /// position, a depth); then it answers with what it has (`unknown`).
        #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
        search_seconds: u64,
    },
    /// Sylver coinage: one position (t, nameable numbers, ender, winning moves) or the first-move table.
    Sylver(retro_coordinator::sylver::SylverArgs),
    /// Compares a three-player summary.json with every published number of its
    /// stage (built in); fails on a mismatch or a number the summary lacks.
    Check {
        /// The run's summary.json.
        #[arg(long)]
        summary: PathBuf,
    },
    /// Verifies every checksum of the tablebase files in a directory.
    Verify {
        /// Directory holding the tablebase files.
        #[arg(long)]
        tablebase: PathBuf,
    },
}

fn load_plan(path: &Option<PathBuf>) -> Result<Plan, String> {
    match path {
        Some(p) => Plan::load(p).map_err(|e| e.to_string()),
        None => Plan::from_toml_str(DEFAULT_PLAN, "built-in stage-1 plan").map_err(|e| e.to_string()),
    }
}

/// Refuses peg plans in the commands that only know Chinese checkers.
fn not_peg(plan: Plan) -> Result<Plan, String> {
    if plan.job.game == "peg" {
        return Err(format!(
            "plan {} is a peg solitaire plan: run it (`coordinator --plan ...`) for its ledger, or use `coordinator peg solve`",
            plan.job.name
        ));
    }
    Ok(plan)
}

/// `coordinator peg ...`.
#[derive(Subcommand, Debug)]
enum PegCommand {
    /// Decides whether the board with one hole empty can end with one peg on a
    /// given hole, and prints a solution as hole-name jumps.
    Solve {
        /// `english` (33 holes) or `european` (37 holes).
        #[arg(long, default_value = "english")]
        board: String,
        /// The vacant hole at the start (a1..g7).
        #[arg(long, default_value = "d4")]
        start: String,
        /// The hole of the last peg (default: the start's hole).
        #[arg(long)]
        finish: Option<String>,
        /// Positions the search may expand before it gives up.
        #[arg(long, default_value_t = peg::PROBLEM_BUDGET)]
        budget: u64,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
}

fn peg_solve(board: &str, start: &str, finish: Option<&str>, budget: u64, json: bool) -> Result<(), String> {
    use retro_games::peg::{Board, BoardKind, class, parse_hole, search};
    let kind = BoardKind::parse(board).ok_or_else(|| format!("unknown board {board:?} (english or european)"))?;
    if budget == 0 {
        return Err(
            "--budget 0 searches nothing; give the number of positions the search may expand (at least 1)".into()
        );
    }
    let board = Board::new(kind);
    let hole = |name: &str, what: &str| {
        parse_hole(name)
            .filter(|&h| board.has_hole(h))
            .ok_or_else(|| format!("--{what} {name:?} is not a hole of the {} board (a1..g7)", kind.name()))
    };
    let s = hole(start, "start")?;
    let f = hole(finish.unwrap_or(start), "finish")?;
    let start_pegs = board.single_vacancy(s);
    let feasible = class::feasible(start_pegs, f);
    let began = std::time::Instant::now();
    let found = feasible.then(|| search::solve(&board, start_pegs, f, budget));
    let (status, solution, positions) = match &found {
        None => ("infeasible", None, 0),
        Some(r) => match &r.outcome {
            search::Outcome::Solved(jumps) => {
                search::replay(&board, start_pegs, jumps)?;
                ("solvable", Some(peg::problems::jumps_text(jumps)), r.positions)
            }
            search::Outcome::Impossible => ("impossible", None, r.positions),
            search::Outcome::Undecided => ("undecided", None, r.positions),
        },
    };
    let (start, finish) = (retro_games::peg::hole_name(s), retro_games::peg::hole_name(f));
    if json {
        let v = serde_json::json!({"board": kind.name(), "start": start, "finish": finish,
            "class_feasible": feasible, "status": status, "solution": solution, "positions": positions,
            "seconds": began.elapsed().as_secs_f64()});
        println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?);
    } else {
        println!("{} board, {start} empty, last peg on {finish}: {status}", kind.name());
        match status {
            "infeasible" => println!("ruled out by the position class (no search needed)"),
            "undecided" => println!("gave up after {positions} positions; try a larger --budget"),
            _ => println!("{positions} positions searched in {:.2}s", began.elapsed().as_secs_f64()),
        }
        if let Some(jumps) = solution {
            println!("{jumps}");
        }
    }
    // An undecided problem is not an answer: scripts must not read it as one.
    if status == "undecided" {
        return Err(format!("undecided after {positions} positions; run again with a larger --budget"));
    }
    Ok(())
}

/// The TLS identity the plan names, read from its files.
fn server_tls(cluster: &ClusterSection) -> Result<Option<retro_coordinator::service::ServerTls>, String> {
    let (Some(cert), Some(key)) = (&cluster.tls_cert, &cluster.tls_key) else { return Ok(None) };
    let read = |p: &PathBuf, what: &str| std::fs::read(p).map_err(|e| format!("[cluster] {what} {}: {e}", p.display()));
    Ok(Some(retro_coordinator::service::ServerTls {
        cert_pem: read(cert, "tls_cert")?,
        key_pem: read(key, "tls_key")?,
    }))
}

/// Binds `--listen` (or the plan's `cluster.listen`) and prints the address
/// (tests read it when the port was 0).
async fn bind_listener(
    listen: Option<SocketAddr>,
    cluster: &ClusterSection,
) -> Result<tokio::net::TcpListener, String> {
    let text = &cluster.listen;
    let addr = match listen {
        Some(a) => a,
        None => text.parse().map_err(|e| format!("cluster.listen {text:?}: {e}"))?,
    };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    print_listen(listener.local_addr().map_err(|e| e.to_string())?);
    Ok(listener)
}

/// Says where the job listens, on stderr: stdout carries only results (a
/// `--json` summary must parse as it comes).
fn print_listen(addr: SocketAddr) {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "listening on {addr}");
    let _ = err.flush();
}

async fn run(args: RunArgs) -> Result<(), String> {
    if let Some(path) = &args.plan
        && retro_coordinator::sylver_job::is_sylver_plan(path)
    {
        let path = path.clone();
        return run_sylver(&path, args).await;
    }
    let plan = load_plan(&args.plan)?;
    if !plan.is_solvable() {
        return Err(format!(
            "plan {}: order {} is too large to solve (its ranks do not fit 64 bits); try `coordinator estimate`",
            plan.job.name, plan.job.order
        ));
    }
    if plan.job.game == "peg" {
        return run_peg(&plan, &args).await;
    }
    let cluster = args.listen.is_some() || args.expect_workers.is_some() || plan.cluster.workers > 0;
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
    let opts = RunOptions {
        output: args.output.unwrap_or_else(|| plan.output.dir.clone()),
        checkpoints: args.checkpoints.unwrap_or_else(|| plan.output.checkpoints.clone()),
        listen,
        expect_workers: expect,
        token: plan.token(),
        on_listen: Some(print_listen),
        status_listen: args.status,
        tls: server_tls(&plan.cluster)?,
        ignore_resources: args.ignore_resources,
        checkpoint_every: Duration::from_secs(args.checkpoint_secs),
    };
    let output = opts.output.clone();
    let s = job::run(&plan, opts).await?;
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
async fn run_sylver(path: &std::path::Path, args: RunArgs) -> Result<(), String> {
    use retro_coordinator::sylver_job::{self, SylverPlan};
    let plan = SylverPlan::load(path).map_err(|e| e.to_string())?;
    let output = args.output.unwrap_or_else(|| plan.output.clone());
    let checkpoints = args.checkpoints.unwrap_or_else(|| plan.checkpoints.clone());
    job::ensure_dir(&output, "output")?;
    job::ensure_dir(&checkpoints, "checkpoint")?;
    let _lock = retro_common::lock::DirLock::acquire(&checkpoints).map_err(|e| e.to_string())?;
    let cluster = args.listen.is_some() || args.expect_workers.is_some() || plan.cluster.workers > 0;
    let summary = if cluster {
        let listener = bind_listener(args.listen, &plan.cluster).await?;
        let tls = server_tls(&plan.cluster)?;
        let expect = args.expect_workers.unwrap_or(plan.cluster.workers as usize).max(1);
        let opts = sylver_job::RunOptions::default();
        retro_coordinator::sylver_cluster::run(&plan, expect, &output, &checkpoints, &opts, listener, tls).await?
    } else {
        let (plan, output, checkpoints) = (plan.clone(), output.clone(), checkpoints.clone());
        tokio::task::spawn_blocking(move || {
            sylver_job::run(&plan, &output, &checkpoints, &sylver_job::RunOptions::default())
        })
        .await
        .map_err(|e| e.to_string())??
    };
    sylver_job::print_summary(&summary, &output, args.json)
}

/// Runs a peg plan; a ledger whose OEIS check fails is an error (non-zero exit).
async fn run_peg(plan: &Plan, args: &RunArgs) -> Result<(), String> {
    let output = args.output.clone().unwrap_or_else(|| plan.output.dir.clone());
    let checkpoints = args.checkpoints.clone().unwrap_or_else(|| plan.output.checkpoints.clone());
    job::ensure_dir(&output, "output")?;
    job::ensure_dir(&checkpoints, "checkpoint")?;
    let _lock = retro_common::lock::DirLock::acquire(&checkpoints).map_err(|e| e.to_string())?;
    let plan2 = plan.clone();
    let (out2, ck2) = (output.clone(), checkpoints.clone());
    if plan.job.task.as_deref() == Some("problems") {
        let summary = tokio::task::spawn_blocking(move || peg::run_problems(&plan2, &out2))
            .await
            .map_err(|e| e.to_string())??;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?);
        } else {
            for b in &summary.boards {
                println!("{}", b.markdown());
            }
            println!("summary.json and problems.md in {}", output.display());
        }
        return Ok(());
    }
    let cluster = args.listen.is_some() || args.expect_workers.is_some() || plan.cluster.workers > 0;
    if cluster {
        // Remote workers compute the levels; the ledger is then computed here
        // from the level files they uploaded, exactly as after an embedded run.
        let expect = args.expect_workers.unwrap_or(plan.cluster.workers as usize);
        if expect == 0 {
            return Err("say how many workers to wait for: --expect-workers N (or the plan's [cluster] workers)".into());
        }
        let listener = bind_listener(args.listen, &plan.cluster).await?;
        let (_, start) = peg::plan_start(plan)?;
        peg::cluster::run(plan, start, expect, checkpoints.clone(), listener, plan.token(), server_tls(&plan.cluster)?)
            .await?;
    }
    let summary = tokio::task::spawn_blocking(move || peg::run_ledger(&plan2, &out2, &ck2))
        .await
        .map_err(|e| e.to_string())??;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?);
    } else {
        print!("{}", summary.text());
        println!("summary.json in {}", output.display());
    }
    if !summary.oeis_ok() {
        return Err("the ledger does not match the OEIS (see the MISMATCH lines)".into());
    }
    Ok(())
}

fn explore(
    plan: Option<PathBuf>,
    depth: Option<u32>,
    tablebase: Option<PathBuf>,
    threads: Option<usize>,
    json: bool,
) -> Result<(), String> {
    let plan = not_peg(load_plan(&plan)?)?;
    let threads = match threads {
        Some(0) => return Err("--threads must be at least 1".into()),
        Some(t) => retro_common::bounded_threads(t, "--threads"),
        None => plan.threads(),
    };
    let game = Cc3::new(plan.job.order).map_err(|e| e.to_string())?;
    if !game.ranker.fits_u64() {
        return Err(format!("order {} is too large to explore exhaustively", plan.job.order));
    }
    let dir = tablebase.unwrap_or(plan.output.dir.clone());
    let manifest_path = plan.output.checkpoints.join("coordinator.json");
    let layers = match retro_coordinator::manifest::Manifest::load(
        &manifest_path,
        &plan.job.name,
        &plan.hash(),
        retro_games::cc3::RANK_ORDER,
    ) {
        Ok(Some(m)) if dir.join("summary.json").exists() => Some(summary::load_layers(&dir, &m)?),
        _ => None,
    };
    let reach = analysis::explore(&game, layers.as_ref(), depth, threads);
    if json {
        let v = serde_json::json!({ "positions": game.ranker.positions() as u64, "depths": reach.depths,
            "categories_from": layers.as_ref().map(|_| dir.display().to_string()) });
        println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?);
    } else {
        for d in &reach.depths {
            let cats = d
                .categories
                .as_ref()
                .map(|c| {
                    c.iter().filter(|(_, v)| **v > 0).map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
                })
                .unwrap_or_default();
            println!("depth {:>3}: {:>12} new  {cats}", d.depth, d.new);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    retro_common::init_logging();
    let cli = Cli::parse();
    let result: Result<(), String> = match cli.command {
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
            .and_then(|rt| rt.block_on(run(cli.run))),
        Some(Command::Estimate { plan, json }) => load_plan(&plan).and_then(not_peg).and_then(|p| {
            let e = estimate(&p)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&e).map_err(|e| e.to_string())?);
            } else {
                println!("{} order {}: {} cells, {} pieces each", e.game, e.order, e.cells, e.pieces_each);
                println!("positions            {}", e.positions);
                println!("canonical placements {}", e.canonical_placements);
                println!(
                    "per layer: {} while solving, {} as a 2-bit tablebase (before compression); {} layers",
                    bytes_human(e.bytes_per_layer_solving),
                    bytes_human(e.bytes_per_layer_tablebase),
                    e.layers
                );
                println!("solvable with u64 ranks: {}", if e.solvable { "yes" } else { "no (estimate only)" });
            }
            Ok(())
        }),
        Some(Command::Explore { plan, depth, tablebase, threads, json }) => {
            explore(plan, depth, tablebase, threads, json)
        }
        Some(Command::Probe { tablebase, position, witness, max_depth, batch, json }) => {
            let request = match (witness, batch) {
                (Some(kind), _) => commands::probe::Request::Witness(kind, max_depth),
                (None, true) => commands::probe::Request::Batch,
                (None, false) => commands::probe::Request::One(position),
            };
            commands::probe::run(&tablebase, request, json)
        }
        Some(Command::Board { order }) => Cc3::new(order).map_err(|e| e.to_string()).map(|g| {
            print!("{}", g.board_picture(None));
            println!("start: {}", g.format(&g.start()));
            print!("{}", g.board_picture(Some(&g.start())));
        }),
        Some(Command::Verify { tablebase }) => verify(&tablebase),
        Some(Command::Check { summary }) => check(&summary),
        Some(Command::Serve { tablebase, listen, search_seconds }) => {
            tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string()).and_then(|rt| {
                let deadline = Duration::from_secs(search_seconds);
                rt.block_on(retro_coordinator::serve::run(tablebase, listen, deadline, print_listen))
            })
        }
        Some(Command::Sylver(args)) => retro_coordinator::sylver::run(args),
        Some(Command::Bench { order, samples, slice, threads, json }) => {
            let threads = retro_common::bounded_threads(threads.unwrap_or(0), "--threads");
            retro_coordinator::bench::run(order, samples, slice, threads).and_then(|r| {
                if json {
                    println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
                } else {
                    println!("order {}, {} threads", r.order, r.threads);
                    for f in &r.figures {
                        if f.seconds > 0.0 {
                            println!(
                                "{:<58} {:>14} in {:>8.3}s = {:>14.0}/s",
                                f.what, f.items, f.seconds, f.per_second
                            );
                        } else {
                            println!("{:<58} {:>14}   {:>8} {:>14.2}", f.what, f.items, "", f.per_second);
                        }
                    }
                    println!("peak RSS {:.1} MB", r.peak_rss_bytes as f64 / 1e6);
                }
                Ok(())
            })
        }
        Some(Command::Peg { command: PegCommand::Solve { board, start, finish, budget, json } }) => {
            peg_solve(&board, &start, finish.as_deref(), budget, json)
        }
        Some(Command::Ledger { summary }) => std::fs::read_to_string(&summary)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "{}: no such file; name the run's summary with --summary PATH (it is written \
                     next to the tablebases, in the plan's output directory or --output)",
                    summary.display()
                ),
                _ => format!("{}: {e}", summary.display()),
            })
            .and_then(|t| {
                serde_json::from_str::<serde_json::Value>(&t).map_err(|e| format!("{}: {e}", summary.display()))
            })
            .map(|v| print!("{}", summary::ledger_markdown(&v))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn check(path: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let summary: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not a summary.json: {e}", path.display()))?;
    let lines = retro_coordinator::check::check_cc3(&summary).map_err(|e| format!("{}: {e}", path.display()))?;
    print!("{}", retro_coordinator::check::markdown(&lines));
    if retro_coordinator::check::all_match(&lines) {
        Ok(())
    } else {
        Err(format!("{} does not reproduce every published number (see the table)", path.display()))
    }
}

fn verify(dir: &std::path::Path) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "tb")).collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("{}: no tablebase files (*.tb)", dir.display()));
    }
    // What the job recorded: each file's layer, size and digest, and the plan.
    // Each file's own checksums cannot tell a valid file of another layer or
    // job copied over this name; the recorded digests can.
    let summary_path = dir.join("summary.json");
    let recorded = match std::fs::read_to_string(&summary_path) {
        Ok(text) => Some(
            serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| format!("{}: not a summary.json: {e}", summary_path.display()))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", summary_path.display())),
    };
    let mut bad = Vec::new();
    let mut seen = Vec::new();
    for path in &paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let checked = TablebaseReader::open(path).and_then(|mut r| r.verify().map(|()| r)).map_err(|e| e.to_string());
        let r = match checked {
            Ok(r) => r,
            Err(e) => {
                println!("BAD {e}");
                bad.push(e);
                continue;
            }
        };
        let sha = retro_engine::tablebase::sha256_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let header = r.header().clone();
        let mismatch = recorded.as_ref().and_then(|v| {
            let listed = v["tablebases"].as_array().into_iter().flatten().find(|t| t["file"] == name.as_str());
            let Some(t) = listed else {
                return Some(format!("{}: not listed in {}", path.display(), summary_path.display()));
            };
            seen.push(name.clone());
            // The same identity checks a job makes before it reads a layer.
            let entry = retro_coordinator::manifest::TablebaseEntry {
                file: name.clone(),
                bytes: t["bytes"].as_u64().unwrap_or(u64::MAX),
                sha256: t["sha256"].as_str().unwrap_or_default().to_string(),
            };
            let rank_order =
                if v["game"] == "cc2" { retro_games::cc2::RANK_ORDER } else { retro_games::cc3::RANK_ORDER };
            let (question, plan_hash) = (t["question"].as_str().unwrap_or("?"), v["plan_hash"].as_str().unwrap_or("?"));
            entry.open_checked(dir, question, plan_hash, rank_order).err()
        });
        match mismatch {
            None => println!("ok  {}  {}  {}", sha, header.layer, path.display()),
            Some(e) => {
                println!("BAD {e}");
                bad.push(e);
            }
        }
    }
    match &recorded {
        Some(v) => {
            for t in v["tablebases"].as_array().into_iter().flatten() {
                let file = t["file"].as_str().unwrap_or("?");
                if !seen.iter().any(|s| s == file) && !dir.join(file).exists() {
                    let e = format!("{}: listed in summary.json but missing", dir.join(file).display());
                    println!("BAD {e}");
                    bad.push(e);
                }
            }
        }
        None => println!(
            "note: no {}; each file's own checksums were checked, not that it is the file its job wrote",
            summary_path.display()
        ),
    }
    if !bad.is_empty() {
        return Err(format!(
            "{}: {} tablebase file(s) failed verification: {}",
            dir.display(),
            bad.len(),
            bad.join("; ")
        ));
    }
    Ok(())
}
