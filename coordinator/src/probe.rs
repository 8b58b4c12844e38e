//! `coordinator probe`: the 12 answers for one position and for the child of
//! each legal move. The prober itself is the probe library's
//! ([`retro_probe::cc3`]); this module names it where the coordinator's other
//! modules (witnesses, the explorer) look for it.

pub use retro_probe::cc3::{MoveReport, PositionReport, Probe, Prober, answers_line, move_line, text};
