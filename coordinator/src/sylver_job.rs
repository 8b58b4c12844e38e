//! stub
use std::path::{Path, PathBuf};
/// stub
pub fn is_sylver_plan(_p: &Path) -> bool { false }
/// stub
pub fn run_cli(_p: &Path, _o: Option<PathBuf>, _c: Option<PathBuf>, _j: bool) -> Result<(), String> { Err("x".into()) }
