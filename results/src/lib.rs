//! Game results and queries, by game, outside the control plane: what a
//! solved job's tablebases and level files mean, computed and checked.
//!
//! - [`cc3`]: three-player Chinese checkers: the analysis over the whole
//!   space (categories, counts, breadth-first depths from the start), witnesses
//!   of each category, and the check against every published number.
//! - [`peg`]: peg solitaire: the ledger over breadth-first levels, its check
//!   against the OEIS, and the single-vacancy problem table.
//!
//! Every failure is a [`ResultsError`].

mod error;
pub use error::ResultsError;

pub mod cc3 {
    //! Three-player Chinese checkers.
    pub mod analysis;
    pub mod check;
    pub mod witness;
}

pub mod peg {
    //! Peg solitaire.
    pub mod ledger;
    pub mod oeis;
    pub mod problems;
}
