//! The progress line of a breadth-first peg job: which level of how many,
//! how many keys (positions up to symmetry) it holds, how long it took and,
//! once the levels shrink, about how long is left.

use crate::progress::duration;
use retro_results::report::thousands;

/// The deepest level a start of `pegs` pegs can reach: one jump per level,
/// until one peg is left.
pub fn last_level(pegs: u32) -> usize {
    pegs.saturating_sub(1) as usize
}

/// Seconds the levels after the newest one would take, once the levels
/// shrink: the newest level's ratio to the one before carried on level by
/// level to `last`, at the newest level's seconds per key. `None` while they
/// still grow (the widest level is still to come, and nothing bounds it).
pub fn seconds_left(keys: &[u64], seconds: &[f64], last: usize) -> Option<f64> {
    let n = keys.len().checked_sub(1)?;
    if n >= last {
        return Some(0.0);
    }
    let (now, before) = (keys[n] as f64, *keys.get(n.checked_sub(1)?)? as f64);
    let spent = *seconds.get(n)?;
    if now >= before || now == 0.0 || spent <= 0.0 {
        return None;
    }
    let (ratio, per_key) = (now / before, spent / now);
    let mut level = now;
    let mut left = 0.0;
    for _ in n + 1..=last {
        level *= ratio;
        left += level * per_key;
    }
    Some(left)
}

/// The line for level `keys.len() - 1`, just computed (`keys` and `seconds`
/// per level from 0; a level loaded from checkpoints counts 0 seconds).
pub fn level_line(keys: &[u64], seconds: &[f64], last: usize, on_disk: bool) -> String {
    let n = keys.len().saturating_sub(1);
    let left = match seconds_left(keys, seconds, last) {
        Some(s) => format!("about {} left", duration(s)),
        None => "time left not known while the levels grow".to_string(),
    };
    format!(
        "level {n} of at most {last}: {} keys, {}{}; {left}",
        thousands(keys.get(n).copied().unwrap_or(0)),
        duration(seconds.get(n).copied().unwrap_or(0.0)),
        if on_disk { " (on disk)" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growing_levels_have_no_guess_and_shrinking_ones_project_their_tail() {
        assert_eq!(last_level(32), 31);
        assert_eq!(seconds_left(&[1, 4, 12], &[0.0, 1.0, 2.0], 31), None);
        // Halving from 1,000 keys at 2 s (2 ms a key): 500, 250, 125 keys in
        // the three levels left.
        let left = seconds_left(&[1, 2_000, 1_000], &[0.0, 4.0, 2.0], 5).unwrap();
        assert!((left - 1.75).abs() < 1e-9, "{left}");
        assert_eq!(seconds_left(&[1, 2, 1], &[0.0, 1.0, 1.0], 2), Some(0.0));
        let line = level_line(&[1, 2_000_000, 1_000_000], &[0.0, 80.0, 40.0], 5, true);
        assert_eq!(line, "level 2 of at most 5: 1,000,000 keys, 40 s (on disk); about 35 s left");
        let line = level_line(&[1, 4, 12], &[0.0, 1.0, 2.0], 31, false);
        assert!(line.ends_with("12 keys, 2.00 s; time left not known while the levels grow"), "{line}");
    }
}
