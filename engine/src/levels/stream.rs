//! Sorted `(key, weight)` streams on disk: the shard files of a level that
//! does not fit in memory, and the spill runs it is merged from.
//!
//! A stream holds strictly increasing keys, each with its weight, and is
//! written and read front to back, one frame at a time, so neither side ever
//! holds more than a frame (about [`FRAME_BYTES`] decoded). The layout:
//!
//! - the magic `RETROLS1`;
//! - frames, each a header of four little-endian `u32` (decoded length,
//!   packed length, entries, CRC-32 of the packed bytes) and the decoded
//!   bytes compressed by zstd (the CRC covers what lies on disk, so every
//!   damaged byte is caught, even one zstd would decode past); decoded, an entry is its key's difference from
//!   the previous key of the stream (the first from 0) and its weight, both as
//!   LEB128 varints, so a dense sorted shard costs a few bytes a key;
//! - a trailer: the marker `END!`, the entry count (`u64`) and a CRC-32 over
//!   every frame's CRC and the count, so a truncated or spliced file is refused.
//!
//! The bytes depend only on the entries, never on how they were produced, so
//! a level merged from any number of spills is byte-identical to the same
//! level written from memory.

use super::LevelError;
use crate::durable::{fsync_parent_dir, io_err, tmp_path};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"RETROLS1";
const END: &[u8; 4] = b"END!";

/// Decoded bytes per frame before it is compressed and written.
pub const FRAME_BYTES: usize = 1 << 20;

/// Most decoded bytes a frame may claim: bounds what a damaged header can
/// make the reader allocate (a frame is cut just past [`FRAME_BYTES`]).
const MAX_FRAME_BYTES: usize = FRAME_BYTES + 64;

#[inline]
fn put_varint(out: &mut Vec<u8>, x: u128) {
    // Keys and most weights fit 64 bits, where the shifts are one instruction.
    if let Ok(mut x) = u64::try_from(x) {
        while x >= 0x80 {
            out.push(x as u8 | 0x80);
            x >>= 7;
        }
        out.push(x as u8);
        return;
    }
    let mut x = x;
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Reads a varint at `*at`, or `None` when it runs off the end or past 128 bits.
#[inline]
fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u128> {
    // The first 9 bytes (63 bits) in 64-bit arithmetic, the rare rest in 128.
    let mut small = 0u64;
    for shift in (0..63).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        small |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(u128::from(small));
        }
    }
    let mut x = u128::from(small);
    for shift in (63..128).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        let bits = u128::from(b & 0x7f);
        if shift == 126 && bits > 0b11 {
            return None;
        }
        x |= bits << shift;
        if b & 0x80 == 0 {
            return Some(x);
        }
    }
    None
}

/// When a stream's bytes are made durable, and under which name it is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Durability {
    /// Written as `path.tmp`, fsynced and renamed into place by `finish`:
    /// a file that stands on its own.
    Own,
    /// Written as `path.tmp` and renamed into place, never fsynced: scratch
    /// that a killed run makes again from its sources.
    Scratch,
    /// Written under its own name and fsynced later by the caller with its
    /// sibling files ([`sync_files`]): the shard files of one level, which
    /// only the level's marker, written after that sync, vouches for.
    WithSiblings,
}

/// Writes a stream to `path.tmp`, renamed into place (and fsynced) by
/// [`StreamWriter::finish`]: a stream on disk under its own name is complete
/// (except one made by [`StreamWriter::create_with_siblings`]).
pub struct StreamWriter {
    path: PathBuf,
    out: BufWriter<File>,
    raw: Vec<u8>,
    frame_entries: u32,
    entries: u64,
    last: Option<u64>,
    crcs: crc32fast::Hasher,
    written: u64,
    durability: Durability,
}

impl StreamWriter {
    /// Starts a stream that will be named `path`, fsynced when finished (a
    /// level file, which a checkpoint marker will vouch for).
    pub fn create(path: &Path) -> Result<StreamWriter, LevelError> {
        Self::open(path, Durability::Own)
    }

    /// Starts a scratch stream (a spill run, pieces received for a merge):
    /// renamed into place when finished but not fsynced, since a run killed
    /// before its level's marker makes it again from its sources.
    pub fn create_scratch(path: &Path) -> Result<StreamWriter, LevelError> {
        Self::open(path, Durability::Scratch)
    }

    /// Starts one of several streams that become durable together: written
    /// under its own name (no rename) and not fsynced when finished; the
    /// caller passes all of them to [`sync_files`] before writing the marker
    /// that vouches for them. A level of many small shards pays one journal
    /// commit for the lot instead of two per file (the English ledger's 36
    /// levels of 64 shards spent seconds in fsync).
    pub fn create_with_siblings(path: &Path) -> Result<StreamWriter, LevelError> {
        Self::open(path, Durability::WithSiblings)
    }

    fn open(path: &Path, durability: Durability) -> Result<StreamWriter, LevelError> {
        let tmp = writing_path(path, durability);
        let file = File::create(&tmp).map_err(|e| LevelError::Io(io_err(&tmp)(e)))?;
        // A small write buffer (a frame goes out in one write_all, which
        // bypasses a buffer this size, so more buys nothing) and a frame buffer
        // that grows with the stream: a level of many small shards (the English
        // board's 64 per level) would otherwise map and fault in two fresh
        // megabytes per shard.
        let mut out = BufWriter::with_capacity(1 << 16, file);
        out.write_all(MAGIC).map_err(|e| LevelError::Io(io_err(&tmp)(e)))?;
        Ok(StreamWriter {
            path: path.to_path_buf(),
            out,
            raw: Vec::new(),
            frame_entries: 0,
            entries: 0,
            last: None,
            crcs: crc32fast::Hasher::new(),
            written: MAGIC.len() as u64,
            durability,
        })
    }

    /// Appends an entry; keys must be strictly increasing.
    pub fn push(&mut self, key: u64, weight: u128) -> Result<(), LevelError> {
        let delta = match self.last {
            Some(last) if key <= last => {
                return Err(LevelError::Corrupt {
                    path: self.path.clone(),
                    problem: format!("key {key:#x} written after {last:#x} (keys must increase)"),
                });
            }
            Some(last) => key - last,
            None => key,
        };
        put_varint(&mut self.raw, u128::from(delta));
        put_varint(&mut self.raw, weight);
        self.last = Some(key);
        self.frame_entries += 1;
        self.entries += 1;
        if self.raw.len() >= FRAME_BYTES {
            self.flush_frame()?;
        }
        Ok(())
    }

    /// Entries pushed so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    fn flush_frame(&mut self) -> Result<(), LevelError> {
        if self.raw.is_empty() {
            return Ok(());
        }
        let (crc, packed_len) = with_compressor(|compressor, packed| {
            packed.clear();
            packed.reserve(zstd::zstd_safe::compress_bound(self.raw.len()));
            compressor.compress_to_buffer(&self.raw, packed).map_err(|e| LevelError::Io(io_err(&self.path)(e)))?;
            let crc = crc32fast::hash(packed);
            let mut header = [0u8; 16];
            header[0..4].copy_from_slice(&(self.raw.len() as u32).to_le_bytes());
            header[4..8].copy_from_slice(&(packed.len() as u32).to_le_bytes());
            header[8..12].copy_from_slice(&self.frame_entries.to_le_bytes());
            header[12..16].copy_from_slice(&crc.to_le_bytes());
            let tmp = writing_path(&self.path, self.durability);
            self.out
                .write_all(&header)
                .and_then(|_| self.out.write_all(packed))
                .map_err(|e| LevelError::Io(io_err(&tmp)(e)))?;
            Ok((crc, packed.len()))
        })?;
        self.crcs.update(&crc.to_le_bytes());
        self.written += (16 + packed_len) as u64;
        self.raw.clear();
        self.frame_entries = 0;
        Ok(())
    }

    /// Writes the last frame and the trailer, fsyncs (a stream of its own),
    /// and renames the stream into place (unless written with siblings).
    /// Returns its size in bytes.
    pub fn finish(mut self) -> Result<u64, LevelError> {
        self.flush_frame()?;
        let tmp = writing_path(&self.path, self.durability);
        let io = |e| LevelError::Io(io_err(&tmp)(e));
        self.crcs.update(&self.entries.to_le_bytes());
        let crc = self.crcs.clone().finalize();
        self.out.write_all(END).map_err(io)?;
        self.out.write_all(&self.entries.to_le_bytes()).map_err(io)?;
        self.out.write_all(&crc.to_le_bytes()).map_err(io)?;
        let file = self.out.into_inner().map_err(|e| LevelError::Io(io_err(&tmp)(e.into_error())))?;
        if self.durability == Durability::Own {
            file.sync_all().map_err(io)?;
        }
        drop(file);
        if self.durability != Durability::WithSiblings {
            std::fs::rename(&tmp, &self.path).map_err(|e| LevelError::Io(io_err(&self.path)(e)))?;
        }
        if self.durability == Durability::Own {
            fsync_parent_dir(&self.path).map_err(|e| LevelError::Io(io_err(&self.path)(e)))?;
        }
        Ok(self.written + 16)
    }
}

thread_local! {
    /// zstd contexts and the compressed frame's buffer, kept per thread: each
    /// costs fresh memory (megabytes for a context), and a level of many small
    /// shards (the English board's 64 per level) mapped, faulted in and
    /// unmapped them once per frame (5,686 `munmap`s in one English run).
    static COMPRESSOR: std::cell::RefCell<Option<(zstd::bulk::Compressor<'static>, Vec<u8>)>> =
        const { std::cell::RefCell::new(None) };
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's level-1 compressor and frame buffer.
fn with_compressor<T>(
    f: impl FnOnce(&mut zstd::bulk::Compressor<'static>, &mut Vec<u8>) -> Result<T, LevelError>,
) -> Result<T, LevelError> {
    COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        let (compressor, packed) = match &mut *c {
            Some(kept) => kept,
            empty => empty.insert((zstd::bulk::Compressor::new(1).map_err(LevelError::Compressor)?, Vec::new())),
        };
        f(compressor, packed)
    })
}

/// The name a stream that will be named `path` is written under until it is
/// finished: its own for one written with siblings, else `path.tmp`.
fn writing_path(path: &Path, durability: Durability) -> PathBuf {
    if durability == Durability::WithSiblings { path.to_path_buf() } else { tmp_path(path) }
}

/// Makes streams written by [`StreamWriter::create_with_siblings`] in `dir`
/// durable, with `dir` itself (their names). All of the files' writeback is
/// started before the first wait, so the device sees one batch of writes and
/// the journal commits about once for all of them instead of twice per file.
pub fn sync_files(dir: &Path, files: &[PathBuf]) -> Result<(), LevelError> {
    let opened: Vec<File> =
        files.iter().map(|p| File::open(p).map_err(|e| LevelError::Io(io_err(p)(e)))).collect::<Result<_, _>>()?;
    #[cfg(target_os = "linux")]
    for (file, path) in opened.iter().zip(files) {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain syscall on a descriptor this function owns; it only
        // starts writeback of the file's dirty pages and reads no memory.
        let started = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
        if started != 0 {
            return Err(LevelError::Io(io_err(path)(std::io::Error::last_os_error())));
        }
    }
    for (file, path) in opened.iter().zip(files) {
        file.sync_all().map_err(|e| LevelError::Io(io_err(path)(e)))?;
    }
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| LevelError::Io(io_err(dir)(e)))
}

/// Reads a stream written by [`StreamWriter`], checking every frame as it
/// comes; yields `(key, weight)` in key order, or one error naming the file.
pub struct StreamReader {
    path: PathBuf,
    input: BufReader<File>,
    raw: Vec<u8>,
    packed: Vec<u8>,
    at: usize,
    frame_left: u32,
    entries: u64,
    last: Option<u64>,
    crcs: crc32fast::Hasher,
    done: bool,
}

impl StreamReader {
    /// Opens a stream and checks its magic.
    pub fn open(path: &Path) -> Result<StreamReader, LevelError> {
        let file = File::open(path).map_err(|e| LevelError::Io(io_err(path)(e)))?;
        let mut reader = StreamReader {
            path: path.to_path_buf(),
            input: BufReader::with_capacity(1 << 16, file),
            raw: Vec::new(),
            packed: Vec::new(),
            at: 0,
            frame_left: 0,
            entries: 0,
            last: None,
            crcs: crc32fast::Hasher::new(),
            done: false,
        };
        let mut magic = [0u8; 8];
        reader.read_exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(reader.corrupt("not a level stream (bad magic)"));
        }
        Ok(reader)
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn corrupt(&self, problem: &str) -> LevelError {
        LevelError::Corrupt { path: self.path.clone(), problem: problem.to_string() }
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), LevelError> {
        match self.input.read_exact(buf) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(self.corrupt("truncated")),
            Err(e) => Err(LevelError::Io(io_err(&self.path)(e))),
        }
    }

    /// Loads the next frame, or checks the trailer and returns `false` at the end.
    fn next_frame(&mut self) -> Result<bool, LevelError> {
        let mut header = [0u8; 16];
        self.read_exact(&mut header[..4])?;
        if &header[..4] == END {
            let mut tail = [0u8; 12];
            self.read_exact(&mut tail)?;
            let count = u64::from_le_bytes(tail[..8].try_into().expect("8 bytes"));
            self.crcs.update(&count.to_le_bytes());
            if count != self.entries || self.crcs.clone().finalize().to_le_bytes() != tail[8..12] {
                return Err(self.corrupt("the trailer does not match the frames (truncated or spliced)"));
            }
            let mut extra = [0u8; 1];
            if self.input.read(&mut extra).map_err(|e| LevelError::Io(io_err(&self.path)(e)))? != 0 {
                return Err(self.corrupt("bytes after the trailer"));
            }
            return Ok(false);
        }
        self.read_exact(&mut header[4..])?;
        let word = |i: usize| u32::from_le_bytes(header[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
        let (raw_len, packed_len, entries, crc) = (word(0) as usize, word(1) as usize, word(2), word(3));
        if raw_len == 0 || raw_len > MAX_FRAME_BYTES || packed_len > zstd::zstd_safe::compress_bound(MAX_FRAME_BYTES) {
            return Err(self.corrupt("a frame header is damaged"));
        }
        self.packed.resize(packed_len, 0);
        let mut packed = std::mem::take(&mut self.packed);
        let read = self.read_exact(&mut packed);
        self.packed = packed;
        read?;
        if crc32fast::hash(&self.packed) != crc {
            return Err(self.corrupt("a frame fails its checksum"));
        }
        self.raw.clear();
        self.raw.reserve(raw_len);
        let decoded = DECOMPRESSOR.with(|d| {
            let mut d = d.borrow_mut();
            let d = match &mut *d {
                Some(d) => d,
                empty => empty.insert(zstd::bulk::Decompressor::new()?),
            };
            d.decompress_to_buffer(&self.packed, &mut self.raw)
        });
        if decoded.is_err() {
            return Err(self.corrupt("a frame does not decompress"));
        }
        if self.raw.len() != raw_len {
            return Err(self.corrupt("a frame decodes to the wrong length"));
        }
        self.crcs.update(&crc.to_le_bytes());
        self.at = 0;
        self.frame_left = entries;
        Ok(true)
    }

    fn next_entry(&mut self) -> Result<Option<(u64, u128)>, LevelError> {
        while self.frame_left == 0 {
            if self.at != self.raw.len() {
                return Err(self.corrupt("a frame holds more bytes than its entries"));
            }
            if !self.next_frame()? {
                return Ok(None);
            }
        }
        let mut at = self.at;
        let delta = get_varint(&self.raw, &mut at).ok_or_else(|| self.corrupt("an entry is cut off"))?;
        let weight = get_varint(&self.raw, &mut at).ok_or_else(|| self.corrupt("an entry is cut off"))?;
        self.at = at;
        self.frame_left -= 1;
        let key = match (self.last, u64::try_from(delta)) {
            (_, Err(_)) => None,
            (None, Ok(d)) => Some(d),
            (Some(last), Ok(d)) if d > 0 => last.checked_add(d),
            (Some(_), Ok(_)) => None,
        }
        .ok_or_else(|| self.corrupt("keys are not strictly increasing"))?;
        self.last = Some(key);
        self.entries += 1;
        Ok(Some((key, weight)))
    }
}

impl Iterator for StreamReader {
    type Item = Result<(u64, u128), LevelError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_entry().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

/// Reads every entry of `sources` (whole streams, each taken by the next free
/// thread) on `threads` threads: each thread starts from `init(thread)`,
/// hands every entry to `f`, and ends with `finish` on its own state (its last
/// writes, still in parallel). Returns the threads' states, or the first error.
pub fn over_sources<S: Send>(
    sources: &[PathBuf],
    threads: usize,
    init: impl Fn(usize) -> S + Sync,
    f: impl Fn(&mut S, u64, u128) -> Result<(), LevelError> + Sync,
    finish: impl Fn(&mut S) -> Result<(), LevelError> + Sync,
) -> Result<Vec<S>, LevelError> {
    let cursor = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.clamp(1, sources.len().max(1)))
            .map(|thread| {
                let (cursor, init, f, finish) = (&cursor, &init, &f, &finish);
                scope.spawn(move || {
                    let mut state = init(thread);
                    while let Some(source) = sources.get(cursor.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        for entry in StreamReader::open(source)? {
                            let (key, weight) = entry?;
                            f(&mut state, key, weight)?;
                        }
                    }
                    finish(&mut state)?;
                    Ok(state)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("level thread panicked")).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TestDir;

    fn write(path: &Path, entries: &[(u64, u128)]) -> u64 {
        let mut w = StreamWriter::create(path).unwrap();
        for &(k, v) in entries {
            w.push(k, v).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn streams_round_trip_across_frames() {
        let dir = TestDir::new("level-stream-round");
        let d = dir.root();
        // Enough entries for several frames, with weights up to u128::MAX.
        let entries: Vec<(u64, u128)> = (0..400_000u64)
            .map(|i| (i * 37 + (i % 5), if i % 1000 == 0 { u128::MAX >> (i % 3) } else { u128::from(i) }))
            .collect();
        let size = write(&d.join("a"), &entries);
        assert_eq!(size, std::fs::metadata(d.join("a")).unwrap().len());
        let back: Vec<(u64, u128)> = StreamReader::open(&d.join("a")).unwrap().map(Result::unwrap).collect();
        assert_eq!(back, entries);
        write(&d.join("empty"), &[]);
        assert_eq!(StreamReader::open(&d.join("empty")).unwrap().count(), 0);
        assert!(!tmp_path(&d.join("a")).exists());
    }

    #[test]
    fn varints_round_trip_at_every_width() {
        let mut values = vec![0u128, 1, 127, 128, u128::from(u64::MAX), u128::from(u64::MAX) + 1, u128::MAX];
        values.extend((0..128).map(|b| 1u128 << b));
        values.extend((1..128).map(|b| (1u128 << b) - 1));
        for &v in &values {
            let mut bytes = Vec::new();
            put_varint(&mut bytes, v);
            let mut at = 0;
            assert_eq!(get_varint(&bytes, &mut at), Some(v));
            assert_eq!(at, bytes.len());
            assert_eq!(get_varint(&bytes[..bytes.len() - 1], &mut 0), None, "cut short");
        }
        // 19 bytes of continuation run past 128 bits.
        assert_eq!(get_varint(&[0xff; 19], &mut 0), None);
        assert_eq!(
            get_varint(
                &[
                    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                    0xff, 0xff, 0x04
                ],
                &mut 0
            ),
            None
        );
    }

    #[test]
    fn keys_out_of_order_are_refused_when_written() {
        let dir = TestDir::new("level-stream-order");
        let d = dir.root();
        let mut w = StreamWriter::create(&d.join("a")).unwrap();
        w.push(5, 1).unwrap();
        assert!(matches!(w.push(5, 1), Err(LevelError::Corrupt { .. })));
    }

    #[test]
    fn every_damage_is_named() {
        let dir = TestDir::new("level-stream-damage");
        let d = dir.root();
        let path = d.join("shard");
        let entries: Vec<(u64, u128)> = (1..3000u64).map(|i| (i * i, u128::from(i) << 70)).collect();
        write(&path, &entries);
        let good = std::fs::read(&path).unwrap();
        let read_all = || StreamReader::open(&path).and_then(|r| r.collect::<Result<Vec<_>, _>>());
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x04;
            std::fs::write(&path, &bad).unwrap();
            match read_all() {
                Err(LevelError::Corrupt { path: p, .. }) => assert_eq!(p, path),
                other => panic!("flip at byte {i} not caught: {:?}", other.map(|v| v.len())),
            }
        }
        for cut in [0, 7, 8, 20, good.len() / 2, good.len() - 1] {
            std::fs::write(&path, &good[..cut]).unwrap();
            assert!(matches!(read_all(), Err(LevelError::Corrupt { .. })), "cut at {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        assert!(matches!(read_all(), Err(LevelError::Corrupt { .. })));
    }
}
