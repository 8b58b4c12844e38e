//! What a person watching a long retrograde job wants per round: where the job
//! is (layer k of n, round), how far (positions decided, percentage), how fast
//! (rate, round time) and about how long is left, in one log line, and the
//! same estimate in `/status`.

use crate::manifest::LayerRecord;
use retro_results::report::thousands;

/// Recent rounds the trend estimate looks at.
const TREND_ROUNDS: usize = 3;
/// Rounds a trend may project at most (a layer with a slowly shrinking
/// frontier would otherwise project thousands).
const MAX_PROJECTED_ROUNDS: f64 = 500.0;

/// Seconds left for the whole job, or `None` while nothing allows a guess.
///
/// With a solved layer, every layer is taken to cost what the solved ones
/// cost on average (the one in progress minus its time so far, at least what
/// its own trend projects). Before that, the layer in progress is projected
/// from the trend of its recent rounds, once the positions they decide shrink
/// from round to round (see [`trend_seconds_left`]); each layer not started
/// is taken to cost the same.
pub fn seconds_left(layers: &[LayerRecord]) -> Option<f64> {
    let solved: Vec<f64> = layers.iter().filter(|l| l.solved).map(|l| l.seconds).collect();
    let (current, not_started) = in_progress(layers);
    let trend = current.and_then(trend_seconds_left);
    if !solved.is_empty() {
        let mean = solved.iter().sum::<f64>() / solved.len() as f64;
        let in_progress = current.map_or(0.0, |l| (mean - l.seconds).max(trend.unwrap_or(0.0)));
        return Some(in_progress + mean * not_started);
    }
    let (current, left) = (current?, trend?);
    Some(with_layers_not_started(current, left, not_started))
}

/// The layer in progress (with a committed round), if any, and how many
/// layers have not started.
fn in_progress(layers: &[LayerRecord]) -> (Option<&LayerRecord>, f64) {
    let current = layers.iter().find(|l| !l.solved && l.committed_round.is_some());
    let not_started = layers.iter().filter(|l| !l.solved && l.committed_round.is_none()).count() as f64;
    (current, not_started)
}

/// `left` seconds for the layer in progress, and each layer not started
/// taken to cost as much as this one will in all.
fn with_layers_not_started(current: &LayerRecord, left: f64, not_started: f64) -> f64 {
    left + (current.seconds + left) * not_started
}

/// A rough ceiling on the seconds left while [`seconds_left`] has no guess
/// (no layer solved, the frontier of the one in progress still growing), so
/// that the first rounds of a job already say something: every position of
/// `positions` the layer has not decided, decided at the rate of its rounds
/// so far, and each layer not started costing as much again. Positions that
/// end as draws are never decided, so it is high; it gives way to the trend
/// once the rounds shrink.
pub fn ceiling_seconds_left(layers: &[LayerRecord], positions: u64) -> Option<f64> {
    let (current, not_started) = in_progress(layers);
    let current = current?;
    let rounds = current.rounds.iter().filter(|r| r.round > 0);
    let (decided, seconds) = rounds.fold((0u64, 0.0f64), |(d, s), r| (d + r.win + r.loss, s + r.seconds));
    if decided == 0 || seconds <= 0.0 {
        return None;
    }
    let left = positions.saturating_sub(current.decided()) as f64 * seconds / decided as f64;
    Some(with_layers_not_started(current, left, not_started))
}

/// Seconds the layer's recent rounds project for its remaining rounds, when
/// the positions they decide shrink from round to round.
///
/// The counts per round are taken to keep shrinking by the recent rounds'
/// ratio: the positions still to decide are that geometric tail, at the
/// recent rounds' rate, and each of the rounds until the count falls below
/// one also costs the layer's cheapest round so far (a round's fixed part:
/// scanning and committing the state). Charging every remaining round the
/// recent heavy rounds' mean instead projected 26 hours for a stage-2 layer
/// that takes about one, since a slow ratio means a long, cheap tail.
fn trend_seconds_left(layer: &LayerRecord) -> Option<f64> {
    let recent: Vec<_> = layer.rounds.iter().filter(|r| r.round > 0).rev().take(TREND_ROUNDS).collect();
    if recent.len() < TREND_ROUNDS {
        return None;
    }
    let decided: Vec<f64> = recent.iter().map(|r| (r.win + r.loss) as f64).collect();
    // Newest first: shrinking means each is below the one before it.
    if decided.windows(2).any(|w| w[0] >= w[1]) || decided[0] < 1.0 {
        return None;
    }
    // Geometric mean ratio over the recent rounds.
    let ratio = (decided[0] / decided[TREND_ROUNDS - 1]).powf(1.0 / (TREND_ROUNDS - 1) as f64);
    let rounds = (decided[0].ln() / -ratio.ln()).clamp(1.0, MAX_PROJECTED_ROUNDS);
    let tail = decided[0] * ratio / (1.0 - ratio);
    let recent_seconds: f64 = recent.iter().map(|r| r.seconds).sum();
    let rate = decided.iter().sum::<f64>() / recent_seconds.max(f64::MIN_POSITIVE);
    let cheapest = layer.rounds.iter().filter(|r| r.round > 0).map(|r| r.seconds).fold(f64::INFINITY, f64::min);
    Some(tail / rate + rounds * cheapest)
}

/// A duration for a person: `0.25 s`, `45 s`, `12.5 min`, `3.2 h`.
pub fn duration(seconds: f64) -> String {
    if seconds < 10.0 {
        format!("{seconds:.2} s")
    } else if seconds < 90.0 {
        format!("{seconds:.0} s")
    } else if seconds < 5400.0 {
        format!("{:.1} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

/// The progress line of a committed round of layer `index` (of `layers`).
/// The layer is counted in the order the layers run (after the solved ones),
/// which `--seed-solo` makes other than the plan's.
pub fn round_line(layers: &[LayerRecord], index: usize, positions: u64) -> String {
    let layer = &layers[index];
    let ordinal = layers.iter().enumerate().filter(|(i, l)| l.solved && *i != index).count() + 1;
    let Some(last) = layer.rounds.last() else {
        return format!("layer {ordinal} of {}: {}", layers.len(), layer.question);
    };
    let decided = layer.decided();
    let new = last.win + last.loss;
    let rate = if last.seconds > 0.0 { new as f64 / last.seconds } else { 0.0 };
    let left = match (seconds_left(layers), ceiling_seconds_left(layers, positions)) {
        (Some(s), _) => format!("about {} left in the job", duration(s)),
        (None, Some(c)) => format!(
            "up to about {} left in the job (every undecided position at this layer's rate so far; a closer guess once \
             the rounds shrink)",
            duration(c)
        ),
        (None, None) => "time left not known yet".to_string(),
    };
    format!(
        "layer {} of {} {} round {}: +{} decided ({} win, {} loss), {} of {} decided ({:.1} %), {}/s, round {}, \
         layer {} so far; {left}",
        ordinal,
        layers.len(),
        layer.question,
        last.round,
        thousands(new),
        thousands(last.win),
        thousands(last.loss),
        thousands(decided),
        thousands(positions),
        100.0 * decided as f64 / positions.max(1) as f64,
        thousands(rate as u64),
        duration(last.seconds),
        duration(layer.seconds),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::RoundLog;

    fn layer(question: &str, rounds: &[(u64, f64)], solved: bool) -> LayerRecord {
        LayerRecord {
            question: question.into(),
            committed_round: (!rounds.is_empty()).then(|| rounds.len() as u32 - 1),
            solved,
            init: None,
            rounds: rounds
                .iter()
                .enumerate()
                .map(|(i, &(d, s))| RoundLog { round: i as u32, win: d, loss: 0, frontier: 0, seconds: s })
                .collect(),
            seconds: rounds.iter().map(|r| r.1).sum(),
            tablebase: None,
            depth: None,
            attempt: 0,
            seeded: false,
        }
    }

    #[test]
    fn no_guess_while_the_frontier_grows_or_nothing_is_known() {
        assert_eq!(seconds_left(&[layer("a", &[], false), layer("b", &[], false)]), None);
        let growing = layer("a", &[(10, 5.0), (100, 10.0), (1000, 10.0), (10_000, 10.0)], false);
        assert_eq!(seconds_left(&[growing, layer("b", &[], false)]), None);
    }

    #[test]
    fn a_shrinking_frontier_projects_its_tail_and_its_rounds() {
        // 1000, 100, 10 decided: ratio 0.1, so a tail of 10/9 positions at the
        // recent 1110 per 60 s, and about one more round (10 -> 1) at the
        // cheapest round's 10 s; the layer not started costs the same again.
        let current = layer("a", &[(5, 1.0), (1000, 30.0), (100, 20.0), (10, 10.0)], false);
        let left = seconds_left(std::slice::from_ref(&current)).unwrap();
        let expected = (10.0 / 9.0) / (1110.0 / 60.0) + 10.0;
        assert!((left - expected).abs() < 1e-9, "{left}");
        let with_next = seconds_left(&[current.clone(), layer("b", &[], false)]).unwrap();
        assert!((with_next - (expected + (61.0 + expected))).abs() < 1e-9, "{with_next}");
    }

    #[test]
    fn a_slowly_shrinking_frontier_is_a_long_cheap_tail_not_many_heavy_rounds() {
        // Stage 2's solo(A) at 34 % after nine rounds (a cluster run's log):
        // 1.30 G, 1.23 G and 1.02 G decided in its last three rounds (85, 234
        // and 216 s), its cheapest round 17 s. Charging each of the ~170
        // rounds to one per round the recent mean said 10 hours; the tail is
        // about 7.9 G positions at 6.6 M/s (20 min) plus 170 cheap rounds.
        let rounds = [(0, 60.0), (82_409_498, 35.0), (78_510_878, 17.0), (424_450_893, 35.0)];
        let heavy = [(1_297_761_020, 85.0), (1_228_261_300, 234.0), (1_017_990_818, 216.0)];
        let current = layer("solo(A)", &[&rounds[..], &heavy[..]].concat(), false);
        let left = seconds_left(std::slice::from_ref(&current)).unwrap();
        assert!((3_000.0..6_000.0).contains(&left), "{left}");
    }

    #[test]
    fn solved_layers_set_the_pace() {
        let done = layer("a", &[(5, 100.0), (50, 200.0), (0, 10.0)], true);
        let current = layer("b", &[(5, 60.0), (10, 40.0)], false);
        // Mean solved layer 310 s; the current one has spent 100 s; one more after it.
        let left = seconds_left(&[done, current, layer("c", &[], false)]).unwrap();
        assert!((left - (210.0 + 310.0)).abs() < 1e-9, "{left}");
    }

    #[test]
    fn a_growing_frontier_gets_a_ceiling_from_the_rate_so_far() {
        // 1,000 positions decided in rounds 1-2 in 10 s: 100/s; 9,000 of
        // 10,000 positions undecided take 90 s, and the layer after it 100 + 90 s.
        let growing = layer("a", &[(0, 1.0), (400, 5.0), (600, 5.0)], false);
        assert_eq!(seconds_left(std::slice::from_ref(&growing)), None);
        let c = ceiling_seconds_left(std::slice::from_ref(&growing), 10_000).unwrap();
        assert!((c - 90.0).abs() < 1e-9, "{c}");
        let c = ceiling_seconds_left(&[growing.clone(), layer("b", &[], false)], 10_000).unwrap();
        assert!((c - (90.0 + 11.0 + 90.0)).abs() < 1e-9, "{c}");
        let line = round_line(&[growing], 0, 10_000);
        assert!(line.contains("; up to about 1.5 min left in the job (every undecided position"), "{line}");
        // Nothing decided in a round yet: no figure at all.
        assert_eq!(ceiling_seconds_left(&[layer("a", &[(5, 1.0)], false)], 10_000), None);
    }

    #[test]
    fn the_line_says_where_how_far_how_fast_and_how_long() {
        let layers = [layer("solo(A)", &[(5, 1.0), (1_000_000, 30.0), (100_000, 20.0), (10_000, 10.0)], false)];
        let line = round_line(&layers, 0, 10_000_000);
        assert!(line.starts_with("layer 1 of 1 solo(A) round 3: +10,000 decided"), "{line}");
        assert!(line.contains("1,110,005 of 10,000,000 decided (11.1 %)"), "{line}");
        assert!(line.contains("1,000/s, round 10 s, layer 61 s so far; about"), "{line}");
        // Counted in the order the layers run: the plan's first layer, solved
        // after the two others (`--seed-solo`), is the third.
        let solved = |q: &str| layer(q, &[(5, 1.0), (1, 1.0)], true);
        let seeded = [layers[0].clone(), solved("enable(A>B)"), solved("enable(A>C)")];
        let line = round_line(&seeded, 0, 10_000_000);
        assert!(line.starts_with("layer 3 of 3 solo(A) round 3:"), "{line}");
        let first = [layer("enable(A>B)", &[], false), layers[0].clone(), layer("enable(A>C)", &[], false)];
        let line = round_line(&first, 1, 10_000_000);
        assert!(line.starts_with("layer 1 of 3 solo(A) round 3:"), "{line}");
        assert_eq!(duration(0.25), "0.25 s");
        assert_eq!(duration(30.0), "30 s");
        assert_eq!(duration(600.0), "10.0 min");
        assert_eq!(duration(7200.0), "2.0 h");
    }
}
