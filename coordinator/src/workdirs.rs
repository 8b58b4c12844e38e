//! Which directories a run may use, and whose they are.
//!
//! A run has an output directory (tablebases, tables, `summary.json`) and a
//! checkpoint directory (manifest, worker data, row or level files). Before
//! anything is created or written, [`claim`] makes sure that
//! - neither lies inside the other: a run deletes and rewrites files under its
//!   checkpoints (a worker's `counts`, `layer-N`), and an output there was
//!   deleted while the run said where to find it;
//! - the output is not another job's: it records its owner in
//!   [`OWNER_FILE`] (and every finished job in its `summary.json`), and a run of
//!   another job there is refused, naming that job, unless the user asked to
//!   replace it (`--replace-output`);
//! - no other live process writes to the same output (its `LOCK`, as the
//!   checkpoints have theirs).

use crate::CoordinatorError;
use retro_engine::durable::write_atomic;
use retro_node::lock::DirLock;
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// The file in an output directory that names the job writing there.
pub const OWNER_FILE: &str = "job.json";

/// Largest owner file or summary read to learn a directory's owner (a
/// summary of stage 2 is a few kilobytes; a stage-3 table far less than this).
const OWNER_READ_LIMIT: u64 = 64 << 20;

/// The job an output directory belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Job name (`[job] name`).
    pub job: String,
    /// Game (`cc3`, `cc2`, `peg`, `sylver`).
    pub game: String,
    /// Identity of the plan's semantic sections, where the game has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
}

impl Owner {
    fn describe(&self) -> String {
        match &self.plan_hash {
            Some(h) => format!("job {} ({}, plan {h})", self.job, self.game),
            None => format!("job {} ({})", self.job, self.game),
        }
    }

    /// Same job: the names and games agree, and the plan hashes where both
    /// sides know one.
    fn same_job(&self, other: &Owner) -> bool {
        self.job == other.job
            && self.game == other.game
            && match (&self.plan_hash, &other.plan_hash) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

/// The held locks of a run's checkpoint and output directories; dropping
/// it releases them.
#[derive(Debug)]
pub struct Claimed {
    output: PathBuf,
    _checkpoints: DirLock,
    _output: DirLock,
}

/// `path` made absolute without touching the disk beyond what exists: the
/// longest existing ancestor resolved (symbolic links followed), the rest
/// appended with `.` and `..` folded.
pub fn resolve(path: &Path) -> Result<PathBuf, CoordinatorError> {
    let abs = std::path::absolute(path)
        .map_err(|e| CoordinatorError::Io(format!("cannot resolve the directory {}: {e}", path.display())))?;
    let mut folded = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                folded.pop();
            }
            Component::CurDir => {}
            other => folded.push(other),
        }
    }
    let mut existing = folded.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Ok(out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return Ok(folded),
        }
    }
}

/// Refuses an output directory inside the checkpoint directory, the reverse,
/// or the two the same.
pub fn check_apart(output: &Path, checkpoints: &Path) -> Result<(), CoordinatorError> {
    let (out, ck) = (resolve(output)?, resolve(checkpoints)?);
    let clash = if out == ck {
        Some("is the checkpoint directory")
    } else if out.starts_with(&ck) {
        Some("lies inside the checkpoint directory")
    } else if ck.starts_with(&out) {
        Some("holds the checkpoint directory")
    } else {
        None
    };
    match clash {
        Some(how) => Err(CoordinatorError::Io(format!(
            "the output directory {} {how} {}: a run rewrites and deletes files under its checkpoints, and its \
             results would be lost or mixed with them; give the two separate directories (--output DIR, \
             --checkpoints DIR)",
            output.display(),
            checkpoints.display()
        ))),
        None => Ok(()),
    }
}

/// Reads a small JSON file, `None` when it is absent or cannot tell an owner.
fn read_owner(path: &Path) -> Option<Owner> {
    let text = retro_node::input::read_text_limited(path, OWNER_READ_LIMIT, "summary").ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(Owner {
        job: v.get("job")?.as_str()?.to_owned(),
        game: v.get("game")?.as_str()?.to_owned(),
        plan_hash: v.get("plan_hash").and_then(|h| h.as_str()).map(str::to_owned),
    })
}

/// The job `output` belongs to, by its owner file or, for results written
/// before owner files, by its `summary.json`.
pub fn owner_of(output: &Path) -> Option<Owner> {
    read_owner(&output.join(OWNER_FILE)).or_else(|| read_owner(&output.join("summary.json")))
}

/// Removes the results a finished job listed in its `summary.json` (its
/// tablebase files, their depth files and the summary itself), so that
/// another job's files do not stay beside the new ones; nothing else is
/// touched.
fn remove_results(output: &Path) -> Result<(), CoordinatorError> {
    let summary = output.join("summary.json");
    let summary: serde_json::Value = retro_node::input::read_text_limited(&summary, OWNER_READ_LIMIT, "summary")
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let listed: Vec<String> = ["tablebases", "depth_files"]
        .iter()
        .filter_map(|key| summary.get(key).and_then(|t| t.as_array()))
        .flatten()
        .filter_map(|t| t.get("file").and_then(|f| f.as_str()).map(str::to_owned))
        .collect();
    // Only plain names: a summary must not make the program delete elsewhere.
    let names = listed.iter().filter(|f| Path::new(f).file_name().is_some_and(|n| n == f.as_str()));
    for name in names.chain(["summary.json".to_string(), "table.tsv".to_string()].iter()) {
        let path = output.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::info!("removed {}", path.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(CoordinatorError::Io(format!("cannot remove {}: {e}", path.display()))),
        }
    }
    Ok(())
}

/// Takes `output` and `checkpoints` for one run, after [`check_apart`]:
/// creates both, locks the checkpoints (another live process on them is
/// refused, as before) and then the output (another live run writing there
/// is refused). [`Claimed::own`] then says whose the output is.
pub fn claim(output: &Path, checkpoints: &Path) -> Result<Claimed, CoordinatorError> {
    check_apart(output, checkpoints)?;
    crate::job::ensure_dir(output, "output")?;
    crate::job::ensure_dir(checkpoints, "checkpoint")?;
    let checkpoint_lock = DirLock::acquire(checkpoints)?;
    let output_lock = DirLock::acquire(output).map_err(|e| match e {
        retro_node::NodeError::Locked { holder, .. } => CoordinatorError::Io(format!(
            "the output directory {} is in use by another run{}; two jobs writing one output would replace each \
             other's results: wait for it to end, or give this run its own --output DIR",
            output.display(),
            holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
        )),
        other => other.into(),
    })?;
    Ok(Claimed { output: output.to_path_buf(), _checkpoints: checkpoint_lock, _output: output_lock })
}

impl Claimed {
    /// Makes the output `owner`'s: refuses it when it holds another job's
    /// results and `replace` is false (with `replace`, removes the results
    /// that job listed); records the owner.
    pub fn own(&self, owner: &Owner, replace: bool) -> Result<(), CoordinatorError> {
        let output = &self.output;
        match owner_of(output) {
            Some(found) if !found.same_job(owner) && !replace => {
                return Err(CoordinatorError::Io(format!(
                    "the output directory {} holds the results of {}, not of this {}; give this run its own \
                     --output DIR, or pass --replace-output to replace them",
                    output.display(),
                    found.describe(),
                    owner.describe()
                )));
            }
            Some(found) if !found.same_job(owner) => {
                tracing::warn!(
                    "replacing the results of {} in {} (--replace-output)",
                    found.describe(),
                    output.display()
                );
                remove_results(output)?;
            }
            _ => {}
        }
        let json = serde_json::to_string_pretty(owner)?;
        write_atomic(&output.join(OWNER_FILE), format!("{json}\n").as_bytes())?;
        Ok(())
    }
}

/// [`claim`], then [`Claimed::own`].
pub fn claim_for(output: &Path, checkpoints: &Path, owner: &Owner, replace: bool) -> Result<Claimed, CoordinatorError> {
    let claimed = claim(output, checkpoints)?;
    claimed.own(owner, replace)?;
    Ok(claimed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("retro-workdirs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn owner(job: &str, hash: Option<&str>) -> Owner {
        Owner { job: job.into(), game: "cc2".into(), plan_hash: hash.map(str::to_owned) }
    }

    #[test]
    fn nested_directories_are_refused_either_way_and_through_dots() {
        let d = scratch("apart");
        let ck = d.join("ck");
        for out in [ck.join("worker/counts"), ck.clone(), d.join("out/../ck/x"), d.join("./ck")] {
            let e = check_apart(&out, &ck).unwrap_err().to_string();
            assert!(e.contains("checkpoint directory"), "{}: {e}", out.display());
        }
        let e = check_apart(&d, &ck).unwrap_err().to_string();
        assert!(e.contains("holds the checkpoint directory"), "{e}");
        check_apart(&d.join("out"), &ck).unwrap();
        check_apart(&d.join("ck-out"), &ck).unwrap();
        // Nothing was created by the checks.
        assert!(!ck.exists());
        // A symbolic link into the checkpoints is seen through.
        std::fs::create_dir_all(&ck).unwrap();
        std::os::unix::fs::symlink(&ck, d.join("link")).unwrap();
        assert!(check_apart(&d.join("link/worker"), &ck).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn another_jobs_output_is_refused_unless_replaced() {
        let d = scratch("owner");
        let out = d.join("out");
        let first = claim_for(&out, &d.join("ck1"), &owner("a", Some("h1")), false).unwrap();
        // A live run holds the output.
        let e = claim(&out, &d.join("ck2")).unwrap_err().to_string();
        assert!(e.contains("in use by another run"), "{e}");
        let e = claim(&d.join("out2"), &d.join("ck1")).unwrap_err().to_string();
        assert!(e.contains("in use by another process"), "the checkpoints' own message: {e}");
        drop(first);
        // The same job again (a resume) is welcome.
        drop(claim_for(&out, &d.join("ck1"), &owner("a", Some("h1")), false).unwrap());
        for other in [owner("b", Some("h1")), owner("a", Some("h2"))] {
            let e = claim_for(&out, &d.join("ck2"), &other, false).unwrap_err().to_string();
            assert!(e.contains("holds the results of job a (cc2, plan h1)") && e.contains("--replace-output"), "{e}");
        }
        drop(claim_for(&out, &d.join("ck2"), &owner("b", None), true).unwrap());
        assert_eq!(owner_of(&out), Some(owner("b", None)));
        // Results written before owner files: the summary tells.
        std::fs::remove_file(out.join(OWNER_FILE)).unwrap();
        std::fs::write(out.join("summary.json"), r#"{"job": "c", "game": "peg"}"#).unwrap();
        let e = claim_for(&out, &d.join("ck3"), &owner("b", None), false).unwrap_err().to_string();
        assert!(e.contains("job c (peg)"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
