//! The six OEIS sequences of the English central game, built into the binary
//! (`results/reference/oeis/`, each file citing its source), and the
//! term-by-term check of a computed ledger against them.

use super::ledger::{Ledger, LevelRow};

/// A sequence: its A-number, what it counts, the ledger column it checks and its text.
struct Sequence {
    id: &'static str,
    what: &'static str,
    column: fn(&LevelRow) -> u128,
    text: &'static str,
}

const SEQUENCES: [Sequence; 6] = [
    Sequence {
        id: "A335656",
        what: "positions",
        column: |r| r.positions.into(),
        text: include_str!("../../reference/oeis/A335656.txt"),
    },
    Sequence {
        id: "A112737",
        what: "positions up to symmetry",
        column: |r| r.up_to_symmetry.into(),
        text: include_str!("../../reference/oeis/A112737.txt"),
    },
    Sequence {
        id: "A350561",
        what: "jump sequences",
        column: |r| r.sequences,
        text: include_str!("../../reference/oeis/A350561.txt"),
    },
    Sequence {
        id: "A350998",
        what: "dead ends",
        column: |r| r.dead_ends.into(),
        text: include_str!("../../reference/oeis/A350998.txt"),
    },
    Sequence {
        id: "A351286",
        what: "still winnable",
        column: |r| r.winnable.into(),
        text: include_str!("../../reference/oeis/A351286.txt"),
    },
    Sequence {
        id: "A112738",
        what: "winnable up to symmetry",
        column: |r| r.winnable_up_to_symmetry.into(),
        text: include_str!("../../reference/oeis/A112738.txt"),
    },
];

/// The outcome of checking one sequence.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SequenceCheck {
    /// A-number.
    pub id: &'static str,
    /// The ledger column it checks.
    pub what: &'static str,
    /// Terms compared.
    pub terms: usize,
    /// `(n, published, computed)` for every term that differs.
    pub mismatches: Vec<(usize, u128, u128)>,
}

fn terms(text: &str) -> Vec<(usize, u128)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
        })
        .collect()
}

/// Compares the ledger with every term of the six sequences (a level past
/// the ledger's last counts as zero, which is what the sequences say).
pub fn check(ledger: &Ledger) -> Vec<SequenceCheck> {
    SEQUENCES
        .iter()
        .map(|s| {
            let published = terms(s.text);
            let mismatches = published
                .iter()
                .filter_map(|&(n, want)| {
                    let got = ledger.levels.get(n).map_or(0, s.column);
                    (got != want).then_some((n, want, got))
                })
                .collect();
            SequenceCheck { id: s.id, what: s.what, terms: published.len(), mismatches }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_sequence_file_parses_with_its_terms() {
        for s in &super::SEQUENCES {
            let t = super::terms(s.text);
            let expected = if s.id == "A350561" { 23 } else { 32 };
            assert!(t.len() >= expected, "{} has {} terms", s.id, t.len());
            assert!(t.iter().enumerate().all(|(i, &(n, _))| i == n), "{} terms out of order", s.id);
        }
    }
}
