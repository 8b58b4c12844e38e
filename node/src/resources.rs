//! What a job needs in memory and disk, against what the machine has.
//!
//! Checked before anything is allocated, so a plan too big for the machine
//! (a cc2 board with 76 T positions, a stage-2 worker on a small server) is
//! refused up front with both figures, instead of creating a 38 TB file or
//! paging a mapped state to disk for days. `--ignore-resources` overrides:
//! the state is memory-mapped, so a job larger than RAM does run, slowly.

use std::path::Path;

/// Memory and disk a piece of work needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Bytes that should stay resident.
    pub memory: u64,
    /// Bytes of disk.
    pub disk: u64,
}

impl Needs {
    /// A retrograde layer over `stored` positions: one state byte each,
    /// mapped and resident; on disk the state, the move counts (one byte
    /// each, kept for the whole job; `with_counts` when they are not on disk
    /// yet) and a second copy of the state: the undo logs of a shared
    /// mapping (a heavy round saves nearly every chunk) or the second file
    /// of a private one.
    pub fn retrograde(stored: u64, with_counts: bool) -> Needs {
        let counts = if with_counts { stored } else { 0 };
        Needs { memory: stored, disk: 2 * stored + counts }
    }

    /// The larger of each figure.
    pub fn max(self, other: Needs) -> Needs {
        Needs { memory: self.memory.max(other.memory), disk: self.disk.max(other.disk) }
    }
}

/// What this machine has for work stored under a directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Available {
    /// `MemAvailable` of /proc/meminfo (memory usable without swapping).
    pub memory: Option<u64>,
    /// Free bytes (for an unprivileged user) on the directory's filesystem.
    pub disk: Option<u64>,
    /// Bytes already allocated under the directory (a resumed job's own
    /// files, which count towards what it needs).
    pub already_used: u64,
}

impl Available {
    /// Reads the figures for `dir` (or its nearest existing ancestor).
    pub fn measure(dir: &Path) -> Available {
        let existing = dir.ancestors().find(|a| a.exists()).unwrap_or(Path::new("."));
        Available { memory: mem_available(), disk: disk_free(existing), already_used: allocated_bytes(dir) }
    }
}

/// A byte count in the unit that shows it: `512 bytes`, `3.10 MB`, `9.00 GB`
/// (a small job's needs printed as "0.00 GB" said nothing).
pub fn human_bytes(b: u64) -> String {
    match b {
        0..1_000 => format!("{b} bytes"),
        1_000..1_000_000 => format!("{:.2} kB", b as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2} MB", b as f64 / 1e6),
        _ => format!("{:.2} GB", b as f64 / 1e9),
    }
}

/// Compares `needs` with `have`: `Ok` with a line for the log, or an error
/// that names both figures and the override. `what` names the work, `dir`
/// where its files go.
pub fn check(what: &str, needs: Needs, have: Available, dir: &Path, ignore: bool) -> Result<String, crate::NodeError> {
    let gb = human_bytes;
    let shown = |b: Option<u64>| b.map_or("unknown".to_string(), gb);
    let line = format!(
        "{what} needs about {} of memory and {} of disk in {}; this machine has {} of memory available and {} free \
         there (+{} already used by this job)",
        gb(needs.memory),
        gb(needs.disk),
        dir.display(),
        shown(have.memory),
        shown(have.disk),
        gb(have.already_used)
    );
    let mut short = Vec::new();
    if let Some(m) = have.memory
        && needs.memory > m
    {
        short.push(format!("memory ({} needed, {} available)", gb(needs.memory), gb(m)));
    }
    if let Some(d) = have.disk
        && needs.disk > d.saturating_add(have.already_used)
    {
        short.push(format!("disk ({} needed, {} free)", gb(needs.disk), gb(d.saturating_add(have.already_used))));
    }
    if short.is_empty() {
        return Ok(line);
    }
    if ignore {
        tracing::warn!("{what}: not enough {} (--ignore-resources: running anyway)", short.join(" or "));
        return Ok(line);
    }
    Err(crate::NodeError::Resources { what: what.to_string(), short: short.join(" or ") })
}

/// `MemAvailable` from /proc/meminfo, in bytes.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// Free bytes for an unprivileged user on the filesystem holding `path`.
pub fn disk_free(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is a C struct of integers, for which all-zero bytes are a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    (st.f_bavail as u64).checked_mul(st.f_frsize as u64)
}

/// Bytes allocated on disk by the files under `dir` (0 when it is absent).
pub fn allocated_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => allocated_bytes(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_are_shown_in_a_unit_that_shows_them() {
        assert_eq!(human_bytes(0), "0 bytes");
        assert_eq!(human_bytes(999), "999 bytes");
        assert_eq!(human_bytes(45_300), "45.30 kB");
        assert_eq!(human_bytes(3_100_000), "3.10 MB");
        assert_eq!(human_bytes(9_000_000_000), "9.00 GB");
    }

    #[test]
    fn refuses_what_does_not_fit_and_names_both_figures() {
        let have = Available { memory: Some(8_000_000_000), disk: Some(10_000_000_000), already_used: 0 };
        let dir = Path::new("/data");
        assert!(check("job", Needs::retrograde(1_000_000_000, true), have, dir, false).is_ok());
        let e = check("job", Needs::retrograde(9_000_000_000, true), have, dir, false).unwrap_err().to_string();
        assert!(e.contains("memory (9.00 GB needed, 8.00 GB available)"), "{e}");
        assert!(e.contains("disk (27.00 GB needed, 10.00 GB free)"), "{e}");
        assert!(e.contains("--ignore-resources"), "{e}");
        assert!(check("job", Needs::retrograde(9_000_000_000, true), have, dir, true).is_ok(), "overridden");
        // A resumed job's own files count towards what it has.
        let resumed = Available { already_used: 20_000_000_000, memory: Some(9_500_000_000), ..have };
        assert!(check("job", Needs::retrograde(9_000_000_000, true), resumed, dir, false).is_ok());
        // Unknown figures are not a refusal.
        assert!(check("job", Needs::retrograde(u64::MAX / 4, true), Available::default(), dir, false).is_ok());
    }

    #[test]
    fn measures_this_machine() {
        let have = Available::measure(Path::new("/surely/not/here"));
        assert!(have.memory.is_some_and(|m| m > 0));
        assert!(have.disk.is_some(), "the nearest existing ancestor (/) is measured");
        assert_eq!(have.already_used, 0);
    }
}
