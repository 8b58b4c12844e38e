//! Fault injection for recovery tests: `RETRO_FAULT=<point>:<layer>:<round>`
//! makes the process kill itself with SIGKILL at that point, exactly as an
//! operator's `kill -9` would, but at a reproducible instant.
//!
//! Points: `after-apply` (worker: round committed, not yet reported),
//! `mid-apply` (worker: undo written and the first shard modified, round not
//! committed), `after-generate` (worker: batches sent, not reported),
//! `after-commit` (coordinator: round committed in its manifest),
//! `after-counts-shard` (worker: the move counts of the n-th shard computed,
//! not yet recorded as done; layer 0, round n), `peg-mid-level` (a level
//! job, embedded: level n computed, its file not yet written; layer 0, round n),
//! `peg-mid-expand` (the coordinator of a level job on workers: the first
//! parcel of EXPAND(n) received, the other workers still expanding or
//! delivering; layer 0, round n), `task-after-rows` (a task worker: right after its n-th reported row; layer 0,
//! round n).
//!
//! Any point prefixed with `term-` (`term-after-apply:0:3`) sends the process
//! SIGTERM there instead, and the run goes on: the stop a service manager asks
//! for, at a reproducible instant. Prefixed with `stop-`, it sends SIGSTOP:
//! the process freezes there (as `kill -STOP` would) until a SIGCONT, the
//! way a machine that hangs, not dies, looks to the rest of a cluster.

/// A parsed fault point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Point name.
    pub point: String,
    /// Layer.
    pub layer: u32,
    /// Round.
    pub round: u32,
}

impl Fault {
    /// Reads `RETRO_FAULT`; `None` when unset or malformed (malformed is reported).
    pub fn from_env() -> Option<Fault> {
        let v = std::env::var("RETRO_FAULT").ok()?;
        let parts: Vec<&str> = v.split(':').collect();
        match parts.as_slice() {
            [p, l, r] => match (l.parse(), r.parse()) {
                (Ok(layer), Ok(round)) => Some(Fault { point: p.to_string(), layer, round }),
                _ => {
                    eprintln!("ignoring malformed RETRO_FAULT={v:?} (want point:layer:round)");
                    None
                }
            },
            _ => {
                eprintln!("ignoring malformed RETRO_FAULT={v:?} (want point:layer:round)");
                None
            }
        }
    }

    /// Kills this process with SIGKILL if `self` names this point; sends it
    /// SIGTERM (and goes on) if `self` names it with the prefix `term-`,
    /// SIGSTOP with the prefix `stop-`; never returns with the prefix `hang-`.
    pub fn check(this: &Option<Fault>, point: &str, layer: u32, round: u32) {
        let Some(f) = this else { return };
        if f.layer != layer || f.round != round {
            return;
        }
        let (signal, doing) = if f.point == point {
            (libc::SIGKILL, "killing this process")
        } else if f.point.strip_prefix("term-") == Some(point) {
            (libc::SIGTERM, "sending SIGTERM to this process")
        } else if f.point.strip_prefix("stop-") == Some(point) {
            (libc::SIGSTOP, "freezing this process (SIGSTOP)")
        } else if f.point.strip_prefix("hang-") == Some(point) {
            eprintln!("RETRO_FAULT: this thread hangs at {point} layer {layer} round {round}");
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        } else {
            return;
        };
        eprintln!("RETRO_FAULT: {doing} at {point} layer {layer} round {round}");
        // SAFETY: kill(2) with our own pid has no memory-safety preconditions.
        unsafe {
            libc::kill(libc::getpid(), signal);
        }
    }
}
