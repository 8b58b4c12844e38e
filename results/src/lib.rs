//! Game results and queries, by game, outside the control plane: what a
//! solved job's tablebases and level files mean, computed and checked.
//!
//! - [`cc3`]: three-player Chinese checkers: the analysis over the whole
//!   space (categories, counts, breadth-first depths from the start), witnesses
//!   of each category, and the check against every published number.
//!   The summary of a solved job (`summary.json`, its table and ledger).
//! - [`cc2`]: two-player Chinese checkers: the summary of a solved job.
//! - [`peg`]: peg solitaire: the ledger over breadth-first levels, its check
//!   against the OEIS, the single-vacancy problem table, and their summaries.
//! - [`sylver`]: Sylver coinage: one position's report, the first-move table,
//!   and a table job's rows against the published values.
//! - [`estimate`]: exact sizes of a Chinese checkers job, any star order.
//! - [`solved`]: what a finished retrograde job hands to its summary (built
//!   by the control plane from its manifest); [`report`]: what every game's
//!   report shares, and the ledger of any summary.json.
//!
//! Every failure is a [`ResultsError`].

mod error;
#[cfg(test)]
mod testutil;
pub use error::ResultsError;

pub mod estimate;
pub mod report;
pub mod solved;

pub mod cc3 {
    //! Three-player Chinese checkers.
    pub mod analysis;
    pub mod check;
    pub mod compressed;
    pub mod depths;
    pub mod kingmaking;
    pub mod ranked;
    pub mod seeds;
    pub mod summary;
    pub mod witness;
}

pub mod cc2 {
    //! Two-player Chinese checkers.
    pub mod summary;
}

pub mod peg {
    //! Peg solitaire.
    pub mod ledger;
    pub mod oeis;
    pub mod problems;
    pub mod summary;
}

pub mod sylver {
    //! Sylver coinage.
    pub mod position;
    pub mod table;
}
