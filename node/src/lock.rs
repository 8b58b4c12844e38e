//! One process per state directory: an exclusive `flock` on `DIR/LOCK`, held
//! for the life of the process. Two processes resuming the same checkpoints
//! (a command started again while the first still runs under nohup, say)
//! would overwrite each other's rounds; the second one stops with a clear
//! error instead. The kernel drops the lock when the process dies, also on
//! SIGKILL, so a crashed run never leaves a stale lock behind.

use crate::NodeError;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// A held directory lock; dropping it (or exiting) releases it.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    /// The lock file.
    pub path: PathBuf,
}

impl DirLock {
    /// Takes the lock of `dir` (created if missing) or says who holds it.
    pub fn acquire(dir: &Path) -> Result<DirLock, NodeError> {
        fn io(doing: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> NodeError {
            let path = path.to_path_buf();
            move |source| NodeError::Io { doing, path, source }
        }
        std::fs::create_dir_all(dir).map_err(io("create", dir))?;
        let path = dir.join("LOCK");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io("open", &path))?;
        // SAFETY: flock on a file descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                NodeError::Locked { dir: dir.to_path_buf(), holder: (!holder.is_empty()).then(|| holder.to_string()) }
            } else {
                io("lock", &path)(err)
            });
        }
        // Record the holder for the message above; the lock is what counts.
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "{}", std::process::id());
        Ok(DirLock { _file: file, path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_the_lock_comes_back() {
        let dir = std::env::temp_dir().join(format!("retro-lock-{}", std::process::id()));
        let first = DirLock::acquire(&dir).unwrap();
        // flock locks belong to the open file description: a second open in the
        // same process conflicts just as another process would.
        let err = DirLock::acquire(&dir).unwrap_err().to_string();
        assert!(err.contains("in use by another process"), "{err}");
        assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
        drop(first);
        let again = DirLock::acquire(&dir);
        assert!(again.is_ok(), "{again:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
