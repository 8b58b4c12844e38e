//! The coordinator: plans, scheduling, merge, analysis, probe and explore.
pub mod analysis;
