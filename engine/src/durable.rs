//! Small durable-file helpers: atomic replace (temp file, fsync, rename, fsync
//! the directory) and self-checking JSON documents (a CRC-32 trailer line).

use serde::{Serialize, de::DeserializeOwned};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Errors reading or writing a checked file.
#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    /// An I/O error, with the path.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The content fails its checksum or does not parse.
    #[error("{path}: {why} (the file is corrupt or was edited; restore it or remove the run's state to start over)")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// Attaches the path to an I/O error.
pub fn io_err(path: &Path) -> impl FnOnce(io::Error) -> DurableError + '_ {
    move |source| DurableError::Io { path: path.to_path_buf(), source }
}

/// `path` with `.tmp` appended to its file name (where a file is written before
/// it is renamed into place).
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Fsyncs the directory containing `path`, so a rename into it is durable.
pub fn fsync_parent_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// Fsyncs a directory so a rename inside it is durable.
pub fn sync_dir(dir: &Path) -> Result<(), DurableError> {
    File::open(dir).and_then(|f| f.sync_all()).map_err(io_err(dir))
}

/// Writes `bytes` to `path` atomically: a crash leaves either the old or the new file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DurableError> {
    let tmp = tmp_path(path);
    {
        let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
        f.write_all(bytes).map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
    }
    fs::rename(&tmp, path).map_err(io_err(path))?;
    fsync_parent_dir(path).map_err(io_err(path))
}

const TRAILER: &str = "\n#crc32:";

/// Writes a JSON document with a CRC-32 trailer, atomically.
pub fn write_checked_json<T: Serialize>(path: &Path, value: &T) -> Result<(), DurableError> {
    let body = serde_json::to_string_pretty(value)
        .map_err(|e| DurableError::Corrupt { path: path.to_path_buf(), why: e.to_string() })?;
    let crc = crc32fast::hash(body.as_bytes());
    write_atomic(path, format!("{body}{TRAILER}{crc:08x}\n").as_bytes())
}

/// Largest document [`read_checked_json`] reads.
pub const MAX_CHECKED_JSON_BYTES: u64 = 256 << 20;

/// Reads a document written by [`write_checked_json`]; `Ok(None)` when absent.
pub fn read_checked_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, DurableError> {
    use std::io::Read;
    let corrupt = |why: &str| DurableError::Corrupt { path: path.to_path_buf(), why: why.to_string() };
    let io_err = |e| DurableError::Io { path: path.to_path_buf(), source: e };
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(e)),
    };
    // A manifest, identity or row file is kilobytes: something far larger
    // under the name (or a device) is not one, and is not read whole.
    let mut bytes = Vec::new();
    file.take(MAX_CHECKED_JSON_BYTES + 1).read_to_end(&mut bytes).map_err(io_err)?;
    if bytes.len() as u64 > MAX_CHECKED_JSON_BYTES {
        return Err(corrupt(&format!("more than {MAX_CHECKED_JSON_BYTES} bytes, not a checkpoint document")));
    }
    let text = String::from_utf8(bytes).map_err(|_| corrupt("not UTF-8 text"))?;
    let (body, trailer) = text.rsplit_once(TRAILER).ok_or_else(|| corrupt("checksum trailer missing (truncated?)"))?;
    let crc = u32::from_str_radix(trailer.trim_end(), 16).map_err(|_| corrupt("checksum trailer unreadable"))?;
    if crc32fast::hash(body.as_bytes()) != crc {
        return Err(corrupt("checksum mismatch"));
    }
    serde_json::from_str(body).map(Some).map_err(|e| corrupt(&format!("unreadable content: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_json_detects_edits_and_truncation() {
        let dir = crate::testutil::TestDir::new("durable");
        let p = dir.path("m.json");
        write_checked_json(&p, &vec![1u32, 2, 3]).unwrap();
        assert_eq!(read_checked_json::<Vec<u32>>(&p).unwrap(), Some(vec![1, 2, 3]));
        let text = fs::read_to_string(&p).unwrap();
        fs::write(&p, text.replace('2', "7")).unwrap();
        assert!(matches!(read_checked_json::<Vec<u32>>(&p), Err(DurableError::Corrupt { .. })));
        fs::write(&p, &text[..text.len() / 2]).unwrap();
        assert!(matches!(read_checked_json::<Vec<u32>>(&p), Err(DurableError::Corrupt { .. })));
        assert!(read_checked_json::<Vec<u32>>(&dir.path("absent.json")).unwrap().is_none());
    }
}
