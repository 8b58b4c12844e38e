//! `coordinator`: runs a plan (embedded or as a cluster), and answers
//! questions about plans and tablebases (estimate, explore, probe, board, verify, serve).

use clap::{Parser, Subcommand};
use retro_results::cc3::witness::WitnessKind;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

mod commands;

/// Strongly solves games by distributed retrograde analysis.
///
/// Without a subcommand, runs a plan: embedded (workers in-process) unless
/// --listen / --expect-workers or the plan's [cluster] workers ask for remote
/// workers (`worker --connect HOST:PORT`). Run the same command again after a
/// crash: the job resumes from its checkpoints. SIGTERM or SIGINT (Ctrl-C)
/// stops a run at its next checkpoint with exit status 75 (a second one stops
/// at once); run the same command again to resume.
#[derive(Parser, Debug)]
#[command(
    name = "coordinator",
    version = retro_build_info::LONG_VERSION,
    args_conflicts_with_subcommands = true,
    after_help = ENVIRONMENT_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: commands::run::RunArgs,
    #[command(flatten)]
    log: retro_node::LogArgs,
}

/// Every environment variable the coordinator reads, for `--help`
/// (`help_names_every_environment_variable` keeps it complete).
const ENVIRONMENT_HELP: &str = "\
Environment:
  RETRO_TOKEN             the cluster token (as --token; default: the plan's [cluster] token)
  RETRO_<SECTION>__<KEY>  overrides one plan key, e.g. RETRO_CLUSTER__WORKERS=3 or
                          RETRO_OUTPUT__DIR=/data/tb ([job] and [shards] cannot be set so)
  RETRO_FAULT             tests only: a fault to inject, POINT:LAYER:ROUND (docs/ARCHITECTURE.md)
  RUST_LOG                what the log shows (default: info), e.g. RUST_LOG=debug";

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
        /// A directory where the search parks the visited bitsets no step
        /// needs (two of three; at stage 2, 1.85 GB in memory instead of
        /// 3.1 GB). Default: all in memory.
        #[arg(long)]
        scratch: Option<PathBuf>,
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
        command: commands::peg::PegCommand,
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
        /// Records for the routed round, each from one random child of a
        /// random slice position, spread over the blocks as a real round's
        /// decided positions are (default: every child of `samples` parents,
        /// about a dozen records to a block).
        #[arg(long)]
        records: Option<u64>,
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
    Sylver(commands::sylver::SylverArgs),
    /// Compares a three-player summary.json with every published number of its
    /// stage (built in); fails on a mismatch or a number the summary lacks.
    Check {
        /// The run's summary.json.
        #[arg(long)]
        summary: PathBuf,
        /// JSON output: every line with its verdict, and whether all match.
        #[arg(long)]
        json: bool,
    },
    /// How the motive to finish second changes kingmaking and spoiling: a
    /// first-winner job's category table read beside the ranked job's top2
    /// values of the same star (definitions in docs/RANKED.md).
    Kingmaking {
        /// The first-winner job's tablebase directory (solo(A), enable(A>B), enable(A>C)).
        #[arg(long)]
        first_winner: PathBuf,
        /// The ranked job's tablebase directory (top2(A)).
        #[arg(long)]
        ranked: PathBuf,
        /// Count over this many ranks drawn at random (a fixed seed) instead of
        /// every position, and estimate the whole space's counts with a 95 %
        /// interval: stage 2's exact count reads every kingmaker position's
        /// moves (days on two cores); a million draws take about a minute.
        /// The spoiler-draw positions, too few for a sample, are then counted
        /// exactly by one pass over every rank (minutes at stage 2).
        #[arg(long)]
        sample: Option<u64>,
        /// Threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Verifies every checksum of the tablebase files and depth files in a
    /// directory, and that each is the file its job recorded.
    Verify {
        /// Directory holding the tablebase files.
        #[arg(long)]
        tablebase: PathBuf,
        /// JSON output: each file with its layer, sha256 and verdict.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    retro_node::tune_allocator();
    let cli = Cli::parse();
    retro_node::init_logging(&cli.log);
    // Each server's connection limit is a share of this (retro_node::net).
    retro_node::net::raise_descriptor_limit();
    // The job and the explorer are servers; `sylver` streams its table and
    // ends with success on a closed pipe by itself; every other command
    // prints and exits.
    if !matches!(cli.command, None | Some(Command::Serve { .. }) | Some(Command::Sylver(_))) {
        retro_node::die_quietly_on_closed_stdout();
    }
    match try_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A run stopped by a signal says where it stopped and how to go on;
        // it is not an error.
        Err(e) if e.exit_code() != 1 => {
            eprintln!("{e}");
            ExitCode::from(e.exit_code())
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the command the line asks for.
fn try_main(cli: Cli) -> Result<(), commands::CliError> {
    match cli.command {
        None => commands::run::run(cli.run),
        Some(Command::Estimate { plan, json }) => commands::estimate::run(&plan, json),
        Some(Command::Explore { plan, depth, tablebase, threads, scratch, json }) => {
            commands::explore::run(plan, depth, tablebase, threads, scratch, json)
        }
        Some(Command::Probe { tablebase, position, witness, max_depth, batch, json }) => {
            let request = match (witness, batch) {
                (Some(kind), _) => commands::probe::Request::Witness(kind, max_depth),
                (None, true) => commands::probe::Request::Batch,
                (None, false) => commands::probe::Request::One(position),
            };
            commands::probe::run(&tablebase, request, json)
        }
        Some(Command::Board { order }) => commands::board::run(order),
        Some(Command::Verify { tablebase, json }) => commands::verify::run(&tablebase, json),
        Some(Command::Kingmaking { first_winner, ranked, sample, threads, json }) => {
            commands::kingmaking::run(&first_winner, &ranked, sample, threads, json)
        }
        Some(Command::Check { summary, json }) => commands::check::run(&summary, json),
        Some(Command::Serve { tablebase, listen, search_seconds }) => {
            commands::serve::run(tablebase, listen, search_seconds)
        }
        Some(Command::Sylver(args)) => commands::sylver::run(args),
        Some(Command::Bench { order, samples, slice, records, threads, json }) => {
            commands::bench::run(order, samples, slice, records, threads, json)
        }
        Some(Command::Peg { command }) => commands::peg::run(command),
        Some(Command::Ledger { summary }) => commands::ledger::run(&summary),
    }
}
