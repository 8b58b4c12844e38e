//! Helpers shared by the crate's unit tests.

use std::path::{Path, PathBuf};

/// A directory of its own under the system's temporary one, created empty
/// and removed on drop.
pub(crate) struct TestDir(PathBuf);

impl TestDir {
    /// Creates `retro-results-<name>-<pid>`.
    pub(crate) fn new(name: &str) -> TestDir {
        let dir = std::env::temp_dir().join(format!("retro-results-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a test directory");
        TestDir(dir)
    }

    /// The directory itself.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
