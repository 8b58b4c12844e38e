//! Shard state files: one byte per position, memory-mapped (memmap2) so a
//! shard larger than RAM pages to disk instead of failing, plus per-chunk
//! CRC-32 checksums and the undo log that makes a round restartable.

use crate::durable::{DurableError, io_err, sync_dir};
use memmap2::{MmapMut, MmapOptions};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// How a shard file's bytes reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// A shared mapping: the kernel writes changed pages back whenever it
    /// likes, and [`ShardFile::flush`] (msync) waits for the rest. A shard
    /// larger than memory pages to disk.
    Shared,
    /// A private (copy-on-write) mapping: changes stay in this process's
    /// memory and reach a file only when written ([`ShardFile::write_to`],
    /// [`ShardFile::flush`]). The state must fit in memory, and nothing is
    /// written between checkpoints: at stage 2 a heavy round changes the whole 14.8 GB state,
    /// and with a shared mapping the kernel wrote it back about once a round
    /// (2.1 TB over a run) and held the round's stores behind its dirty-page
    /// limit (docs/benchmarks/log.md, 2026-12-05).
    Private,
}

/// A memory-mapped shard file.
pub struct ShardFile {
    path: PathBuf,
    file: File,
    map: MmapMut,
    mapping: Mapping,
}

impl ShardFile {
    /// Creates (or truncates) the file at `len` bytes and maps it shared.
    pub fn create(path: &Path, len: u64) -> Result<ShardFile, DurableError> {
        Self::create_mapped(path, len, Mapping::Shared)
    }

    /// Creates (or truncates) the file at `len` bytes and maps it as asked.
    pub fn create_mapped(path: &Path, len: u64, mapping: Mapping) -> Result<ShardFile, DurableError> {
        let f =
            OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path).map_err(io_err(path))?;
        f.set_len(len).map_err(io_err(path))?;
        reserve(path, &f, len)?;
        Self::map(path, f, mapping)
    }

    /// Opens an existing file, which must be exactly `len` bytes, mapped shared.
    pub fn open(path: &Path, len: u64) -> Result<ShardFile, DurableError> {
        Self::open_mapped(path, len, Mapping::Shared)
    }

    /// Opens an existing file, which must be exactly `len` bytes, mapped as asked.
    pub fn open_mapped(path: &Path, len: u64, mapping: Mapping) -> Result<ShardFile, DurableError> {
        let f = OpenOptions::new().read(true).write(true).open(path).map_err(io_err(path))?;
        let actual = f.metadata().map_err(io_err(path))?.len();
        if actual != len {
            return Err(DurableError::Corrupt {
                path: path.to_path_buf(),
                why: format!("shard file is {actual} bytes, expected {len} (truncated or from another plan)"),
            });
        }
        // A file left sparse (by an older build, or copied with holes) gets
        // its blocks now, for the same reason as in `create`.
        reserve(path, &f, len)?;
        Self::map(path, f, mapping)
    }

    fn map(path: &Path, f: File, mapping: Mapping) -> Result<ShardFile, DurableError> {
        let path = path.to_path_buf();
        if f.metadata().map_err(io_err(&path))?.len() == 0 {
            let map = MmapMut::map_anon(0).map_err(io_err(&path))?;
            return Ok(ShardFile { path, file: f, map, mapping });
        }
        // SAFETY: the file is private to this worker's data directory; no other
        // process maps or truncates it while we hold the map.
        let map = match mapping {
            Mapping::Shared => unsafe { MmapMut::map_mut(&f) },
            Mapping::Private => unsafe { MmapOptions::new().map_copy(&f) },
        }
        .map_err(io_err(&path))?;
        Ok(ShardFile { path, file: f, map, mapping })
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }

    /// Makes every write durable: msync of a shared mapping; a private one
    /// writes all its bytes to its own file.
    pub fn flush(&self) -> Result<(), DurableError> {
        match self.mapping {
            Mapping::Shared => self.map.flush().map_err(io_err(&self.path)),
            Mapping::Private => {
                write_synced(&self.file, &self.path, &self.map, std::slice::from_ref(&(0..self.map.len())))
            }
        }
    }

    /// Writes the bytes in `runs` (all of them: `None`), durably, to the file
    /// at `path`: a private mapping's checkpoint into its second file. A file
    /// that is missing or empty is created, and must then be written whole;
    /// an existing one must have this shard's length. `path` may be the mapped
    /// file itself: a page this mapping has not changed shows that file's
    /// bytes, so it is written with the bytes it already holds.
    pub fn write_to(&self, path: &Path, runs: Option<&[Range<usize>]>) -> Result<(), DurableError> {
        let f =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(io_err(path))?;
        let len = self.map.len() as u64;
        let actual = f.metadata().map_err(io_err(path))?.len();
        if actual != len {
            if actual != 0 || runs.is_some() {
                return Err(DurableError::Corrupt {
                    path: path.to_path_buf(),
                    why: format!(
                        "shard file is {actual} bytes, expected {len} (truncated, removed, or from another plan)"
                    ),
                });
            }
            f.set_len(len).map_err(io_err(path))?;
            sync_dir(path.parent().unwrap_or(Path::new(".")))?;
        }
        reserve(path, &f, len)?;
        let whole = 0..self.map.len();
        write_synced(&f, path, &self.map, runs.unwrap_or(std::slice::from_ref(&whole)))
    }
}

/// The bytes of `runs` written to `f` at their own offsets and synced; the
/// file's cached pages are then let go: a private mapping holds its own copy
/// of every page it changed, so the cache would hold them twice.
fn write_synced(f: &File, path: &Path, bytes: &[u8], runs: &[Range<usize>]) -> Result<(), DurableError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    for run in runs {
        f.write_all_at(&bytes[run.clone()], run.start as u64).map_err(io_err(path))?;
    }
    f.sync_data().map_err(io_err(path))?;
    // SAFETY: a plain advisory call on a descriptor we hold open. Pages a
    // mapping still reads from the cache stay (the kernel drops only unmapped
    // clean pages), so nothing a mapping shows changes.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(())
}

/// Allocates every block of the file's first `len` bytes on disk. The shard
/// is written through its memory map, and a write to a hole of a sparse file
/// on a full disk cannot return an error: the kernel kills the process with
/// SIGBUS, with no message and mid-round. Reserved up front, a full disk is
/// an error here that names the file and the size, and the job resumes from
/// its last checkpoint once space is freed.
fn reserve(path: &Path, f: &File, len: u64) -> Result<(), DurableError> {
    use std::os::fd::AsRawFd;
    let Ok(len) = libc::off_t::try_from(len) else {
        return Err(DurableError::Io { path: path.to_path_buf(), source: std::io::Error::other("file too large") });
    };
    if len == 0 {
        return Ok(());
    }
    // SAFETY: the descriptor is open for writing for the duration of the call.
    let rc = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, len) };
    match rc {
        0 => Ok(()),
        // Filesystems without fallocate (glibc then writes the blocks itself,
        // so this is rare): nothing can be reserved; keep the old behaviour.
        libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        code => {
            let source = std::io::Error::from_raw_os_error(code);
            let why = if code == libc::ENOSPC {
                format!(
                    "cannot reserve {len} bytes for this shard file: {source}; free space on its filesystem (or \
                     give the worker another --data directory) and run the same command again: the job resumes \
                     from its last checkpoint"
                )
            } else {
                format!("cannot reserve {len} bytes for this shard file: {source}")
            };
            Err(DurableError::Io { path: path.to_path_buf(), source: std::io::Error::new(source.kind(), why) })
        }
    }
}

/// CRC-32 of each `chunk_len` chunk of `bytes` (computed on every core).
pub fn chunk_crcs(bytes: &[u8], chunk_len: u64) -> Vec<u32> {
    let all: Vec<u64> = (0..bytes.len().div_ceil(chunk_len.max(1) as usize) as u64).collect();
    let mut crcs = vec![0u32; all.len()];
    update_chunk_crcs(&mut crcs, bytes, chunk_len.max(1), &all);
    crcs
}

/// Recomputes the checksums of the listed chunks in place (on every core).
pub fn update_chunk_crcs(crcs: &mut [u32], bytes: &[u8], chunk_len: u64, chunks: &[u64]) {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let per = chunks.len().div_ceil(threads).max(1);
    let results: Vec<Vec<(u64, u32)>> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .chunks(per)
            .map(|group| {
                s.spawn(move || {
                    group
                        .iter()
                        .map(|&c| {
                            let lo = ((c * chunk_len) as usize).min(bytes.len());
                            let hi = (lo + chunk_len as usize).min(bytes.len());
                            (c, crc32fast::hash(&bytes[lo..hi]))
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("checksum thread panicked")).collect()
    });
    for (c, crc) in results.into_iter().flatten() {
        crcs[c as usize] = crc;
    }
}

const UNDO_MAGIC: &[u8; 8] = b"RETROUND";
const UNDO_END: &[u8; 8] = b"UNDO-END";

/// Appends one segment to an undo log: the current (pre-round) bytes of
/// `chunks`, then fsyncs it. Only after this returns may the round modify those
/// chunks. A round appends a segment each time it is about to touch chunks it
/// has not saved yet, so every chunk is saved once, before its first change.
pub fn append_undo(path: &Path, bytes: &[u8], chunk_len: u64, chunks: &[u64]) -> Result<(), DurableError> {
    if chunks.is_empty() {
        return Ok(());
    }
    let new_file = !path.exists();
    let f = OpenOptions::new().create(true).append(true).open(path).map_err(io_err(path))?;
    // Written straight from `bytes` (the buffer only gathers the small headers;
    // a chunk bypasses it): a round saves up to the whole shard, and a copy of it
    // first would be one more pass over the state on the round's critical path.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, f);
    let mut crc = crc32fast::Hasher::new();
    let mut put = |data: &[u8]| {
        crc.update(data);
        out.write_all(data)
    };
    let segment = (|| -> std::io::Result<()> {
        put(UNDO_MAGIC)?;
        put(&chunk_len.to_le_bytes())?;
        put(&(chunks.len() as u64).to_le_bytes())?;
        for &c in chunks {
            let lo = (c * chunk_len) as usize;
            let hi = (lo + chunk_len as usize).min(bytes.len());
            put(&c.to_le_bytes())?;
            put(&((hi - lo) as u64).to_le_bytes())?;
            put(&bytes[lo..hi])?;
        }
        Ok(())
    })();
    segment.map_err(io_err(path))?;
    out.write_all(&crc.finalize().to_le_bytes()).map_err(io_err(path))?;
    out.write_all(UNDO_END).map_err(io_err(path))?;
    let f = out.into_inner().map_err(|e| io_err(path)(e.into_error()))?;
    f.sync_all().map_err(io_err(path))?;
    if new_file {
        sync_dir(path.parent().unwrap_or(Path::new(".")))?;
    }
    Ok(())
}

/// What [`restore_undo`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UndoRestored {
    /// Complete segments restored.
    pub segments: usize,
    /// Bytes at the end of the log that did not form a complete segment and
    /// were ignored (0 for an intact log).
    pub unread_bytes: usize,
}

/// Restores every complete segment of an undo log into `bytes`. A torn last
/// segment was being written when the process died, so the chunks it lists
/// had not been modified: it is ignored, and its bytes are reported as
/// unread. The caller verifies the chunk checksums afterwards: if they fail
/// and bytes were unread, the log itself was damaged, not only torn, and it
/// is the log that must be named.
pub fn restore_undo(path: &Path, bytes: &mut [u8]) -> Result<UndoRestored, DurableError> {
    let mut data = Vec::new();
    File::open(path).and_then(|mut f| f.read_to_end(&mut data)).map_err(io_err(path))?;
    let corrupt = |why: &str| DurableError::Corrupt { path: path.to_path_buf(), why: why.to_string() };
    let read_u64 =
        |at: usize| -> Option<u64> { data.get(at..at + 8).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes"))) };
    let mut at = 0;
    let mut segments = Vec::new();
    // First find the complete segments, then restore them (a damaged middle
    // segment is an error, never a partial restore).
    while at < data.len() {
        let start = at;
        if data.get(at..at + 8) != Some(&UNDO_MAGIC[..]) {
            break;
        }
        let (Some(chunk_len), Some(count)) = (read_u64(at + 8), read_u64(at + 16)) else { break };
        let mut p = at + 24;
        let mut entries = Vec::new();
        let mut torn = false;
        for _ in 0..count {
            let (Some(c), Some(len)) = (read_u64(p), read_u64(p + 8)) else {
                torn = true;
                break;
            };
            let body = p + 16;
            // Checked: lengths come from the file, which may be garbage.
            let Some(end) = usize::try_from(len).ok().and_then(|l| body.checked_add(l)).filter(|&e| e <= data.len())
            else {
                torn = true;
                break;
            };
            entries.push((c, end - body, body));
            p = end;
        }
        if torn || p + 12 > data.len() || &data[p + 4..p + 12] != UNDO_END {
            break;
        }
        let crc = u32::from_le_bytes(data[p..p + 4].try_into().expect("4 bytes"));
        if crc32fast::hash(&data[start..p]) != crc {
            if p + 12 == data.len() {
                break; // the last segment, torn in a way that kept its length
            }
            return Err(corrupt("undo log segment checksum mismatch"));
        }
        segments.push((chunk_len, entries));
        at = p + 12;
    }
    for (chunk_len, entries) in &segments {
        for &(c, len, body) in entries {
            let lo = c
                .checked_mul(*chunk_len)
                .and_then(|lo| usize::try_from(lo).ok())
                .ok_or_else(|| corrupt("undo log does not fit the shard"))?;
            let hi = lo.checked_add(len).ok_or_else(|| corrupt("undo log does not fit the shard"))?;
            let dst = bytes.get_mut(lo..hi).ok_or_else(|| corrupt("undo log does not fit the shard"))?;
            dst.copy_from_slice(&data[body..body + len]);
        }
    }
    Ok(UndoRestored { segments: segments.len(), unread_bytes: data.len() - at })
}

/// Removes a file if it exists.
pub fn remove_if_exists(path: &Path) -> Result<(), DurableError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(DurableError::Io { path: path.to_path_buf(), source: e }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undo_restores_exactly_the_saved_chunks() {
        let dir = crate::testutil::TestDir::new("undo");
        let mut shard = ShardFile::create(&dir.path("s.bin"), 100).unwrap();
        for (i, b) in shard.bytes_mut().iter_mut().enumerate() {
            *b = i as u8;
        }
        let before = shard.bytes().to_vec();
        let undo = dir.path("undo");
        append_undo(&undo, shard.bytes(), 16, &[0, 6]).unwrap();
        shard.bytes_mut()[3] = 200;
        shard.bytes_mut()[97] = 201;
        // A second segment saves a chunk first touched later in the round.
        append_undo(&undo, shard.bytes(), 16, &[2]).unwrap();
        shard.bytes_mut()[40] = 202;
        let two_segments = fs::read(&undo).unwrap();
        assert_eq!(restore_undo(&undo, shard.bytes_mut()).unwrap(), UndoRestored { segments: 2, unread_bytes: 0 });
        assert_eq!(shard.bytes(), &before[..]);
        // A torn last segment is ignored, never applied; earlier ones still are.
        shard.bytes_mut()[3] = 200;
        for cut in 1..40 {
            fs::write(&undo, &two_segments[..two_segments.len() - cut]).unwrap();
            let mut copy = shard.bytes().to_vec();
            let r = restore_undo(&undo, &mut copy).unwrap();
            assert_eq!(r.segments, 1, "cut {cut}");
            assert!(r.unread_bytes > 0, "cut {cut}: the torn tail is reported");
            assert_eq!(copy[3], 3);
        }
        drop(shard);
        assert!(matches!(ShardFile::open(&dir.path("s.bin"), 99), Err(DurableError::Corrupt { .. })));
    }

    /// A damaged undo log is an error or restores whole segments only; random
    /// flips, garbage and absurd lengths never panic or write outside the shard.
    #[test]
    fn damaged_undo_logs_never_panic() {
        let dir = crate::testutil::TestDir::new("undo-fuzz");
        let mut shard = vec![7u8; 100];
        let undo = dir.path("undo");
        append_undo(&undo, &shard, 16, &[0, 6]).unwrap();
        append_undo(&undo, &shard, 16, &[2]).unwrap();
        let good = fs::read(&undo).unwrap();
        let mut rng = crate::testutil::Rng(0x5eed);
        for trial in 0..3_000 {
            let mut bad = good.clone();
            match trial % 3 {
                0 => {
                    let i = rng.below(bad.len() as u64) as usize;
                    bad[i] ^= 1 << rng.below(8);
                }
                1 => {
                    // An absurd length or chunk number where one is stored.
                    let at = [8usize, 16, 24, 32][rng.below(4) as usize];
                    bad[at..at + 8].copy_from_slice(&rng.next().to_le_bytes());
                }
                _ => {
                    let n = rng.below(64) as usize;
                    bad = (0..n).map(|_| rng.next() as u8).collect();
                }
            }
            fs::write(&undo, &bad).unwrap();
            let mut copy = shard.clone();
            if let Ok(r) = restore_undo(&undo, &mut copy) {
                assert!(r.segments <= 2);
                assert!(r.segments == 2 || r.unread_bytes > 0 || bad.is_empty(), "what was not restored is reported");
            }
            assert_eq!(copy.len(), 100);
        }
        shard[0] = 1;
        // The intact log still restores both segments.
        fs::write(&undo, &good).unwrap();
        assert_eq!(restore_undo(&undo, &mut shard).unwrap().segments, 2);
        assert_eq!(shard[0], 7);
    }
}
