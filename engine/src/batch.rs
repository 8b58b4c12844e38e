//! Update batches that cross shards, and the inbox files that persist them.
//!
//! An update is an opaque `u64` key. A batch holds the keys destined for one
//! shard, sorted ascending (duplicates allowed and preserved). Its payload is a
//! zstd frame (level 1, with content size and content checksum) of:
//!
//! ```text
//! LEB128 varint count | count x LEB128 varint delta   (first delta from 0)
//! ```
//!
//! An inbox file holds everything one source sent a receiver in one round:
//!
//! ```text
//! record  : u32 dest_shard | u64 count | u32 payload_len | u32 crc32(payload) | payload
//! ...
//! trailer : b"INBOXRT3" | u64 total_count | u32 crc32(all previous bytes)
//! ```
//!
//! All integers are little-endian. The trailer has a fixed size and is found at
//! the end of the file; records fill the rest exactly.

use crate::durable::{fsync_parent_dir, tmp_path};
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// zstd level used for batch payloads.
pub const BATCH_ZSTD_LEVEL: i32 = 1;
/// Magic at the start of an inbox file's trailer: its keys are routed
/// records (`crate::routed`) made by `RetroGame::frontier_record`.
pub const INBOX_END_MAGIC: &[u8; 8] = b"INBOXRT3";
/// Trailer magics of earlier inbox formats, refused by name (read as this
/// format's records they would name other positions), with what their keys
/// were: before records were routed by predecessor block, and before a
/// record was the game's frontier record.
const EARLIER_INBOX_FORMATS: [(&[u8; 8], &str); 2] =
    [(b"INBOXEND", "one key per predecessor"), (b"INBOXRT2", "records were ranks, not frontier records")];

/// Bytes of an inbox record header.
const RECORD_HEADER_LEN: usize = 20;
/// Bytes of the inbox trailer.
const TRAILER_LEN: usize = 20;
/// Longest LEB128 encoding of a u64.
const MAX_VARINT_LEN: usize = 10;
/// Most keys preallocated up front when decoding (the rest grow on demand).
const MAX_PREALLOC_KEYS: u64 = 1 << 16;

/// Errors from encoding, decoding and persisting batches.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// `encode_batch` was given keys out of order.
    #[error("batch keys not sorted: key {index} ({key}) is smaller than the key before it ({previous})")]
    Unsorted {
        /// Index of the offending key.
        index: usize,
        /// The offending key.
        key: u64,
        /// The key before it.
        previous: u64,
    },
    /// zstd compression failed.
    #[error("batch compression failed: {0}")]
    Compress(#[source] io::Error),
    /// The payload is not a valid zstd frame (garbage, corrupt or truncated).
    #[error("batch payload is not valid zstd data (corrupt or truncated): {0}")]
    Decompress(#[source] io::Error),
    /// The payload declares more keys than the caller allows.
    #[error("batch declares {count} keys, more than the allowed maximum {max}")]
    TooManyKeys {
        /// Keys declared.
        count: u64,
        /// Maximum allowed.
        max: u64,
    },
    /// The decompressed data ends before all declared keys were read.
    #[error("batch payload truncated: declares {expected} keys but ends after {got}")]
    Truncated {
        /// Keys declared.
        expected: u64,
        /// Keys fully read.
        got: u64,
    },
    /// The decompressed data ends before the key count.
    #[error("batch payload truncated: no key count")]
    MissingCount,
    /// A varint is longer than a u64 allows.
    #[error("batch payload corrupt: varint overflows u64")]
    VarintOverflow,
    /// The sum of deltas exceeds `u64::MAX`.
    #[error("batch payload corrupt: key {index} overflows u64")]
    KeyOverflow {
        /// Index of the key.
        index: u64,
    },
    /// Extra data follows the declared keys.
    #[error("batch payload corrupt: trailing bytes after {count} keys")]
    TrailingBytes {
        /// Keys declared.
        count: u64,
    },
    /// A payload is too large for an inbox record.
    #[error("batch payload of {0} bytes too large for an inbox record")]
    PayloadTooLarge(usize),
    /// An operating-system I/O error on an inbox file.
    #[error("inbox {}: {what}: {source}", .path.display())]
    InboxIo {
        /// File concerned.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// Underlying error.
        #[source]
        source: io::Error,
    },
    /// An inbox file ends early (no trailer, or a record cut short).
    #[error("inbox {}: truncated ({detail})", .path.display())]
    InboxTruncated {
        /// File concerned.
        path: PathBuf,
        /// What is missing.
        detail: String,
    },
    /// An inbox file is inconsistent.
    #[error("inbox {}: {detail} (file corrupt)", .path.display())]
    InboxCorrupt {
        /// File concerned.
        path: PathBuf,
        /// Description of the inconsistency.
        detail: String,
    },
    /// A record of an inbox file holds a bad batch.
    #[error("inbox {}: record {record} (shard {shard}): {source}", .path.display())]
    InboxRecord {
        /// File concerned.
        path: PathBuf,
        /// Record number (0-based).
        record: usize,
        /// Destination shard of the record.
        shard: u32,
        /// What is wrong with its batch.
        #[source]
        source: Box<BatchError>,
    },
    /// The caller's key limit is lower than the inbox file's total.
    #[error("inbox {}: holds {total} keys, more than the allowed maximum {max}", .path.display())]
    InboxTooManyKeys {
        /// File concerned.
        path: PathBuf,
        /// Total keys in the file.
        total: u64,
        /// Maximum allowed.
        max: u64,
    },
}

/// Appends the LEB128 encoding of `v`.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Encodes sorted keys into a batch payload (deterministic bytes).
/// Fails if the keys are not sorted ascending.
pub fn encode_batch(sorted_keys: &[u64]) -> Result<Vec<u8>, BatchError> {
    if let Some(i) = sorted_keys.windows(2).position(|w| w[1] < w[0]) {
        return Err(BatchError::Unsorted { index: i + 1, key: sorted_keys[i + 1], previous: sorted_keys[i] });
    }
    let mut raw = Vec::with_capacity(MAX_VARINT_LEN + sorted_keys.len() * 2);
    put_varint(&mut raw, sorted_keys.len() as u64);
    let mut prev = 0u64;
    for &k in sorted_keys {
        put_varint(&mut raw, k - prev);
        prev = k;
    }
    let mut compressor = zstd::bulk::Compressor::new(BATCH_ZSTD_LEVEL).map_err(BatchError::Compress)?;
    compressor.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true)).map_err(BatchError::Compress)?;
    compressor.compress(&raw).map_err(BatchError::Compress)
}

/// Byte-at-a-time reader over a decompressing stream, with its own buffer.
struct ByteSource<R: Read> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
}

impl<R: Read> ByteSource<R> {
    fn new(inner: R) -> Self {
        Self { inner, buf: vec![0u8; 64 * 1024], pos: 0, len: 0 }
    }

    /// Next byte, or `None` at the end of the stream.
    fn next_byte(&mut self) -> Result<Option<u8>, BatchError> {
        if self.pos == self.len {
            self.pos = 0;
            self.len = loop {
                match self.inner.read(&mut self.buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(BatchError::Decompress(e)),
                }
            };
            if self.len == 0 {
                return Ok(None);
            }
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(Some(b))
    }

    /// Next varint; [`Varint::End`] if the stream ends before or inside it.
    fn next_varint(&mut self) -> Result<Varint, BatchError> {
        let mut v = 0u64;
        for i in 0..MAX_VARINT_LEN {
            let Some(b) = self.next_byte()? else {
                return Ok(Varint::End);
            };
            let bits = u64::from(b & 0x7f);
            if i == MAX_VARINT_LEN - 1 && bits > 1 {
                return Err(BatchError::VarintOverflow);
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Ok(Varint::Value(v));
            }
        }
        Err(BatchError::VarintOverflow)
    }
}

/// Result of reading a varint.
enum Varint {
    Value(u64),
    /// The stream ended before or inside the varint.
    End,
}

/// Decodes a batch payload. Refuses payloads declaring more than `max_keys`
/// keys (memory use is bounded by what is actually decoded, so a small corrupt
/// payload cannot force a large allocation). Errors on garbage, truncation,
/// trailing bytes and overflow.
pub fn decode_batch(payload: &[u8], max_keys: u64) -> Result<Vec<u64>, BatchError> {
    let decoder = zstd::stream::read::Decoder::with_buffer(payload).map_err(BatchError::Decompress)?.single_frame();
    let mut src = ByteSource::new(decoder);
    let count = match src.next_varint()? {
        Varint::Value(c) => c,
        Varint::End => return Err(BatchError::MissingCount),
    };
    if count > max_keys {
        return Err(BatchError::TooManyKeys { count, max: max_keys });
    }
    let mut keys = Vec::with_capacity(count.min(MAX_PREALLOC_KEYS) as usize);
    let mut prev = 0u64;
    for index in 0..count {
        let delta = match src.next_varint()? {
            Varint::Value(d) => d,
            Varint::End => {
                return Err(BatchError::Truncated { expected: count, got: index });
            }
        };
        prev = prev.checked_add(delta).ok_or(BatchError::KeyOverflow { index })?;
        keys.push(prev);
    }
    if src.next_byte()?.is_some() {
        return Err(BatchError::TrailingBytes { count });
    }
    // With `single_frame`, the decoder stops after one frame; anything after it
    // in the payload is garbage.
    if !src.inner.finish().is_empty() {
        return Err(BatchError::TrailingBytes { count });
    }
    Ok(keys)
}

/// crc32 of a batch payload.
pub fn batch_crc(payload: &[u8]) -> u32 {
    crc32fast::hash(payload)
}

/// Information about a finished inbox file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxFileInfo {
    /// Final path of the file.
    pub path: PathBuf,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// Number of records.
    pub records: u64,
    /// Sum of the records' key counts.
    pub total: u64,
}

/// Writes an inbox file: records, then a trailer. The file is written to
/// `<path>.tmp` and renamed into place by [`InboxWriter::finish`]; dropping an
/// unfinished writer removes the temporary file.
pub struct InboxWriter {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
    crc: crc32fast::Hasher,
    written: u64,
    records: u64,
    total: u64,
    finished: bool,
}

impl InboxWriter {
    /// Creates `<path>.tmp`.
    pub fn create(path: &Path) -> Result<Self, BatchError> {
        let tmp = tmp_path(path);
        let file = File::create(&tmp).map_err(|source| BatchError::InboxIo {
            path: tmp.clone(),
            what: "cannot create temporary file",
            source,
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            tmp,
            out: Some(BufWriter::with_capacity(1 << 20, file)),
            crc: crc32fast::Hasher::new(),
            written: 0,
            records: 0,
            total: 0,
            finished: false,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), BatchError> {
        let io_err = |source| BatchError::InboxIo { path: self.tmp.clone(), what: "write failed", source };
        match self.out.as_mut() {
            Some(out) => out.write_all(bytes).map_err(io_err)?,
            None => return Err(io_err(io::Error::other("writer already finished"))),
        }
        self.crc.update(bytes);
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Appends a record: a batch `payload` (from [`encode_batch`]) of `count`
    /// keys for `dest_shard`. The count is not checked against the payload here;
    /// [`read_inbox`] checks it.
    pub fn append(&mut self, dest_shard: u32, count: u64, payload: &[u8]) -> Result<(), BatchError> {
        let len = u32::try_from(payload.len()).map_err(|_| BatchError::PayloadTooLarge(payload.len()))?;
        let total = self.total.checked_add(count).ok_or_else(|| BatchError::InboxCorrupt {
            path: self.path.clone(),
            detail: "total key count overflows u64".to_string(),
        })?;
        let mut head = [0u8; RECORD_HEADER_LEN];
        head[0..4].copy_from_slice(&dest_shard.to_le_bytes());
        head[4..12].copy_from_slice(&count.to_le_bytes());
        head[12..16].copy_from_slice(&len.to_le_bytes());
        head[16..20].copy_from_slice(&batch_crc(payload).to_le_bytes());
        self.write(&head)?;
        self.write(payload)?;
        self.total = total;
        self.records += 1;
        Ok(())
    }

    /// Writes the trailer, fsyncs, renames `<path>.tmp` to `path` and fsyncs the
    /// parent directory.
    pub fn finish(mut self) -> Result<InboxFileInfo, BatchError> {
        let crc = self.crc.clone().finalize();
        let mut trailer = [0u8; TRAILER_LEN];
        trailer[0..8].copy_from_slice(INBOX_END_MAGIC);
        trailer[8..16].copy_from_slice(&self.total.to_le_bytes());
        trailer[16..20].copy_from_slice(&crc.to_le_bytes());
        self.write(&trailer)?;
        let io_err =
            |path: &Path, what: &'static str, source| BatchError::InboxIo { path: path.to_path_buf(), what, source };
        let out = match self.out.take() {
            Some(out) => out,
            None => {
                return Err(io_err(&self.tmp, "finish failed", io::Error::other("writer already finished")));
            }
        };
        let file = out.into_inner().map_err(|e| io_err(&self.tmp, "flush failed", e.into_error()))?;
        file.sync_all().map_err(|e| io_err(&self.tmp, "fsync failed", e))?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| io_err(&self.path, "cannot rename temporary file into place", e))?;
        self.finished = true;
        fsync_parent_dir(&self.path).map_err(|e| io_err(&self.path, "cannot fsync parent directory", e))?;
        Ok(InboxFileInfo { path: self.path.clone(), bytes: self.written, records: self.records, total: self.total })
    }
}

impl Drop for InboxWriter {
    fn drop(&mut self) {
        if !self.finished {
            self.out = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// A record located in a validated inbox file.
struct RecordRef {
    shard: u32,
    count: u64,
    start: usize,
    end: usize,
}

/// Reads an inbox file and validates its trailer, whole-file checksum, record
/// structure, payload checksums and total. Returns the bytes, the records and the total.
fn load_inbox(path: &Path) -> Result<(Vec<u8>, Vec<RecordRef>, u64), BatchError> {
    let p = path.to_path_buf();
    let bytes =
        std::fs::read(path).map_err(|source| BatchError::InboxIo { path: p.clone(), what: "cannot read", source })?;
    let truncated = |detail: String| BatchError::InboxTruncated { path: p.clone(), detail };
    let corrupt = |detail: String| BatchError::InboxCorrupt { path: p.clone(), detail };
    if bytes.len() < TRAILER_LEN {
        return Err(truncated(format!("{} bytes, shorter than the trailer", bytes.len())));
    }
    let body_len = bytes.len() - TRAILER_LEN;
    let (body, trailer) = bytes.split_at(body_len);
    if let Some((_, keys)) = EARLIER_INBOX_FORMATS.iter().find(|(magic, _)| trailer[0..8] == magic[..]) {
        return Err(corrupt(format!(
            "written by an older version ({keys}); finish the round with that version, or restart the job's layer"
        )));
    }
    if trailer[0..8] != INBOX_END_MAGIC[..] {
        return Err(truncated("no trailer at end of file".to_string()));
    }
    let total = u64::from_le_bytes(trailer[8..16].try_into().unwrap_or([0; 8]));
    let crc = u32::from_le_bytes(trailer[16..20].try_into().unwrap_or([0; 4]));
    if crc32fast::hash(body) != crc {
        return Err(corrupt("checksum mismatch".to_string()));
    }
    let mut records = Vec::new();
    let mut at = 0usize;
    let mut sum = 0u64;
    while at < body_len {
        let record = records.len();
        let head = body
            .get(at..at + RECORD_HEADER_LEN)
            .ok_or_else(|| truncated(format!("record {record} header cut short")))?;
        let shard = u32::from_le_bytes(head[0..4].try_into().unwrap_or([0; 4]));
        let count = u64::from_le_bytes(head[4..12].try_into().unwrap_or([0; 8]));
        let len = u32::from_le_bytes(head[12..16].try_into().unwrap_or([0; 4])) as usize;
        let payload_crc = u32::from_le_bytes(head[16..20].try_into().unwrap_or([0; 4]));
        let start = at + RECORD_HEADER_LEN;
        let end = start
            .checked_add(len)
            .filter(|&e| e <= body_len)
            .ok_or_else(|| truncated(format!("record {record} payload cut short")))?;
        if batch_crc(&body[start..end]) != payload_crc {
            return Err(corrupt(format!("record {record} payload checksum mismatch")));
        }
        sum = sum.checked_add(count).ok_or_else(|| corrupt("total key count overflows u64".to_string()))?;
        records.push(RecordRef { shard, count, start, end });
        at = end;
    }
    if sum != total {
        return Err(corrupt(format!("records hold {sum} keys but the trailer says {total}")));
    }
    Ok((bytes, records, total))
}

/// Reads and fully validates an inbox file, decoding every batch. Returns
/// `(dest_shard, keys)` per record, in file order. `max_keys` bounds the total
/// number of keys in the file (guards against decompression bombs).
pub fn read_inbox(path: &Path, max_keys: u64) -> Result<Vec<(u32, Vec<u64>)>, BatchError> {
    Inbox::open(path, max_keys)?.groups(u64::MAX).next().unwrap_or(Ok(Vec::new()))
}

/// A validated inbox file whose batches are decoded a group at a time: what
/// APPLY holds is the file's compressed bytes (about a quarter of a byte per
/// key) plus one group of decoded keys (8 bytes each), not every key of the
/// round at once.
pub struct Inbox {
    path: PathBuf,
    bytes: Vec<u8>,
    records: Vec<RecordRef>,
    total: u64,
}

impl Inbox {
    /// Reads and validates the file (trailer, whole-file checksum, records,
    /// payload checksums, total); `max_keys` bounds the total number of keys
    /// (guards against decompression bombs). Batches are not decoded yet.
    pub fn open(path: &Path, max_keys: u64) -> Result<Inbox, BatchError> {
        let (bytes, records, total) = load_inbox(path)?;
        if total > max_keys {
            return Err(BatchError::InboxTooManyKeys { path: path.to_path_buf(), total, max: max_keys });
        }
        Ok(Inbox { path: path.to_path_buf(), bytes, records, total })
    }

    /// Keys in the file.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The destination shard of every record, in file order.
    pub fn shards(&self) -> impl Iterator<Item = u32> + '_ {
        self.records.iter().map(|r| r.shard)
    }

    /// The records decoded in groups of whole records holding at least
    /// `group_keys` keys each (the last may hold fewer), in file order.
    pub fn groups(&self, group_keys: u64) -> impl Iterator<Item = Result<Vec<(u32, Vec<u64>)>, BatchError>> + '_ {
        let mut next = 0usize;
        std::iter::from_fn(move || {
            if next >= self.records.len() {
                return None;
            }
            let mut group = Vec::new();
            let mut keys = 0u64;
            while next < self.records.len() && (group.is_empty() || keys < group_keys) {
                let (i, r) = (next, &self.records[next]);
                next += 1;
                let record_err = |source: BatchError| BatchError::InboxRecord {
                    path: self.path.clone(),
                    record: i,
                    shard: r.shard,
                    source: Box::new(source),
                };
                let decoded = decode_batch(&self.bytes[r.start..r.end], r.count).map_err(record_err).and_then(|k| {
                    if k.len() as u64 == r.count {
                        Ok(k)
                    } else {
                        Err(record_err(BatchError::Truncated { expected: r.count, got: k.len() as u64 }))
                    }
                });
                match decoded {
                    Ok(k) => {
                        keys += k.len() as u64;
                        group.push((r.shard, k));
                    }
                    Err(e) => {
                        next = self.records.len();
                        return Some(Err(e));
                    }
                }
            }
            Some(Ok(group))
        })
    }
}

/// Total key count of an inbox file, after validating its trailer, whole-file
/// checksum, record structure and payload checksums (batches are not decoded).
pub fn inbox_total(path: &Path) -> Result<u64, BatchError> {
    load_inbox(path).map(|(_, _, total)| total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Rng, TestDir};

    fn roundtrip(keys: &[u64]) {
        let payload = encode_batch(keys).expect("encode");
        assert_eq!(decode_batch(&payload, keys.len() as u64).expect("decode"), keys);
        assert_eq!(encode_batch(keys).expect("encode"), payload, "deterministic");
    }

    fn random_sorted(n: usize, seed: u64, spread: u64) -> Vec<u64> {
        let mut rng = Rng(seed);
        let mut keys: Vec<u64> = (0..n).map(|_| rng.next() % spread).collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn roundtrips() {
        roundtrip(&[]);
        roundtrip(&[0]);
        roundtrip(&[42]);
        roundtrip(&[u64::MAX]);
        roundtrip(&[5, 5, 5, 7, 7, 1000]);
        roundtrip(&[0, 0]);
        roundtrip(&[0, u64::MAX]);
        roundtrip(&[0, 1, u64::MAX - 1, u64::MAX, u64::MAX]);
        roundtrip(&[1 << 63, (1 << 63) + 1, u64::MAX]);
        roundtrip(&random_sorted(10_000, 1, 1 << 20));
        roundtrip(&random_sorted(10_000, 2, u64::MAX));
        roundtrip(&random_sorted(200_000, 3, 1_000));
    }

    #[test]
    fn varint_edges() {
        for v in [0u64, 1, 127, 128, 16383, 16384, u64::MAX >> 1, u64::MAX] {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            let mut src = ByteSource::new(&buf[..]);
            assert!(matches!(src.next_varint(), Ok(Varint::Value(x)) if x == v));
        }
        // 10th byte carrying more than one bit overflows.
        let over = [0xffu8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        let mut src = ByteSource::new(&over[..]);
        assert!(matches!(src.next_varint(), Err(BatchError::VarintOverflow)));
        let over = [0x80u8; 11];
        let mut src = ByteSource::new(&over[..]);
        assert!(matches!(src.next_varint(), Err(BatchError::VarintOverflow)));
    }

    fn compress_raw(raw: &[u8]) -> Vec<u8> {
        zstd::bulk::compress(raw, 1).expect("compress")
    }

    #[test]
    fn malformed_raw_contents() {
        // Count larger than max.
        let mut raw = Vec::new();
        put_varint(&mut raw, 5);
        for _ in 0..5 {
            put_varint(&mut raw, 1);
        }
        let p = compress_raw(&raw);
        assert_eq!(decode_batch(&p, 5).expect("ok"), vec![1, 2, 3, 4, 5]);
        assert!(matches!(decode_batch(&p, 4), Err(BatchError::TooManyKeys { count: 5, max: 4 })));
        // Bomb: huge declared count, tiny payload.
        let mut raw = Vec::new();
        put_varint(&mut raw, u64::MAX);
        let p = compress_raw(&raw);
        assert!(matches!(decode_batch(&p, 1000), Err(BatchError::TooManyKeys { .. })));
        assert!(matches!(decode_batch(&p, u64::MAX), Err(BatchError::Truncated { got: 0, .. })));
        // Trailing bytes.
        let mut raw = Vec::new();
        put_varint(&mut raw, 1);
        put_varint(&mut raw, 9);
        raw.push(0);
        let p = compress_raw(&raw);
        assert!(matches!(decode_batch(&p, 10), Err(BatchError::TrailingBytes { .. })));
        // Overflowing sum of deltas.
        let mut raw = Vec::new();
        put_varint(&mut raw, 2);
        put_varint(&mut raw, u64::MAX);
        put_varint(&mut raw, 1);
        let p = compress_raw(&raw);
        assert!(matches!(decode_batch(&p, 10), Err(BatchError::KeyOverflow { index: 1 })));
        // Empty raw contents: no count.
        let p = compress_raw(&[]);
        assert!(matches!(decode_batch(&p, 10), Err(BatchError::MissingCount)));
        // A second frame after the first is garbage.
        let mut p = encode_batch(&[1, 2, 3]).expect("encode");
        let second = p.clone();
        p.extend_from_slice(&second);
        assert!(decode_batch(&p, 10).is_err());
        // Not zstd at all.
        assert!(decode_batch(b"", 10).is_err());
        assert!(decode_batch(b"hello world", 10).is_err());
    }

    #[test]
    fn unsorted_rejected() {
        let e = encode_batch(&[1, 3, 2]).expect_err("unsorted");
        assert!(matches!(e, BatchError::Unsorted { index: 2, key: 2, previous: 3 }));
        assert!(encode_batch(&[u64::MAX, 0]).is_err());
    }

    #[test]
    fn every_truncation_is_an_error() {
        for keys in [vec![], vec![7], vec![1, 1, 2, 300, 70_000, u64::MAX], random_sorted(500, 9, 1 << 40)] {
            let p = encode_batch(&keys).expect("encode");
            for len in 0..p.len() {
                assert!(
                    decode_batch(&p[..len], u64::MAX).is_err(),
                    "truncation to {len} of {} bytes accepted",
                    p.len()
                );
            }
        }
    }

    #[test]
    fn byte_flips_are_errors_or_harmless() {
        let mut rng = Rng(77);
        for keys in [vec![], vec![7], vec![1, 1, 2, 300, 70_000, u64::MAX], random_sorted(300, 10, 1 << 40)] {
            let p = encode_batch(&keys).expect("encode");
            // Every position, every single-bit flip and a full-byte flip. The zstd
            // content checksum catches flips inside the data; a few header flips
            // describe the same content another way (the "unused" header bit,
            // single-segment flag, a 1-byte raw block read as RLE) and may decode,
            // but never to different keys.
            for pos in 0..p.len() {
                for mask in [0x01u8, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff] {
                    let mut q = p.clone();
                    q[pos] ^= mask;
                    if let Ok(decoded) = decode_batch(&q, u64::MAX) {
                        assert_eq!(decoded, keys, "flip {mask:#x} at {pos} changed the keys");
                    }
                }
            }
            // Random multi-byte garbage must never panic.
            for _ in 0..500 {
                let mut q = p.clone();
                for _ in 0..3 {
                    let i = (rng.next() % q.len() as u64) as usize;
                    q[i] = rng.next() as u8;
                }
                let _ = decode_batch(&q, 1 << 20);
            }
        }
        // Random garbage.
        for n in 0..200 {
            let g: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            assert!(decode_batch(&g, 1 << 20).is_err());
        }
    }

    fn write_inbox(path: &Path, batches: &[(u32, Vec<u64>)]) -> InboxFileInfo {
        let mut w = InboxWriter::create(path).expect("create");
        for (shard, keys) in batches {
            let payload = encode_batch(keys).expect("encode");
            w.append(*shard, keys.len() as u64, &payload).expect("append");
        }
        w.finish().expect("finish")
    }

    fn sample_batches() -> Vec<(u32, Vec<u64>)> {
        vec![(3, vec![1, 2, 2, 9]), (0, vec![]), (7, random_sorted(1000, 4, 1 << 30)), (3, vec![u64::MAX])]
    }

    #[test]
    fn inbox_roundtrip() {
        let dir = TestDir::new("inbox");
        let path = dir.path("in.bin");
        let batches = sample_batches();
        let info = write_inbox(&path, &batches);
        assert_eq!(info.total, 1005);
        assert_eq!(info.records, 4);
        assert_eq!(info.bytes, std::fs::metadata(&path).expect("meta").len());
        assert!(!tmp_path(&path).exists());
        assert_eq!(read_inbox(&path, 1005).expect("read"), batches);
        assert_eq!(inbox_total(&path).expect("total"), 1005);
        let e = read_inbox(&path, 1004).expect_err("limit");
        assert!(matches!(e, BatchError::InboxTooManyKeys { .. }), "{e}");

        // Empty inbox.
        let empty = dir.path("empty.bin");
        write_inbox(&empty, &[]);
        assert_eq!(read_inbox(&empty, 0).expect("read"), vec![]);
        assert_eq!(inbox_total(&empty).expect("total"), 0);

        // Dropped writer leaves nothing behind.
        let gone = dir.path("gone.bin");
        let mut w = InboxWriter::create(&gone).expect("create");
        w.append(1, 0, &encode_batch(&[]).expect("encode")).expect("append");
        drop(w);
        assert!(!gone.exists() && !tmp_path(&gone).exists());
    }

    #[test]
    fn inbox_wrong_count_detected() {
        let dir = TestDir::new("count");
        let path = dir.path("c.bin");
        let mut w = InboxWriter::create(&path).expect("create");
        w.append(1, 2, &encode_batch(&[1, 2, 3]).expect("encode")).expect("append");
        w.finish().expect("finish");
        let e = read_inbox(&path, 100).expect_err("count mismatch");
        assert!(e.to_string().contains("c.bin"), "{e}");
        assert!(e.to_string().contains("record 0"), "{e}");
    }

    #[test]
    fn inbox_truncation_and_corruption() {
        let dir = TestDir::new("corrupt");
        let path = dir.path("in.bin");
        let batches = vec![(3, vec![1, 2, 2, 9]), (0, vec![]), (5, random_sorted(50, 4, 1 << 30))];
        write_inbox(&path, &batches);
        let bytes = std::fs::read(&path).expect("read");
        let bad = dir.path("bad.bin");
        for len in 0..bytes.len() {
            std::fs::write(&bad, &bytes[..len]).expect("write");
            let e = read_inbox(&bad, u64::MAX).expect_err("truncated");
            assert!(e.to_string().contains("bad.bin"), "{e}");
            assert!(inbox_total(&bad).is_err());
        }
        for pos in 0..bytes.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[pos] ^= mask;
                std::fs::write(&bad, &b).expect("write");
                assert!(read_inbox(&bad, u64::MAX).is_err(), "flip {mask:#x} at {pos} accepted");
                assert!(inbox_total(&bad).is_err(), "flip {mask:#x} at {pos} accepted");
            }
        }
        let e = read_inbox(&dir.path("missing.bin"), 10).expect_err("missing");
        assert!(e.to_string().contains("missing.bin"), "{e}");
    }

    /// Inboxes of earlier record formats are refused by name, not read as
    /// records of this one.
    #[test]
    fn inboxes_of_earlier_formats_are_refused() {
        let dir = TestDir::new("old-inbox");
        let path = dir.path("in.bin");
        write_inbox(&path, &[(1, vec![4, 8, 15])]);
        let bytes = std::fs::read(&path).expect("read");
        let at = bytes.len() - TRAILER_LEN;
        for (magic, what) in [(b"INBOXEND", "one key per predecessor"), (b"INBOXRT2", "records were ranks")] {
            let mut b = bytes.clone();
            b[at..at + 8].copy_from_slice(magic);
            std::fs::write(&path, &b).expect("write");
            let e = read_inbox(&path, u64::MAX).expect_err("an old inbox");
            assert!(e.to_string().contains("older version") && e.to_string().contains(what), "{e}");
        }
    }

    /// Decoding an inbox in groups gives the same records, in the same order,
    /// as decoding it whole, for any group size; a group never splits a record.
    #[test]
    fn inbox_groups_are_the_whole_inbox_in_order() {
        let dir = TestDir::new("inbox-groups");
        let path = dir.path("in.inbox");
        let mut w = InboxWriter::create(&path).expect("create");
        let mut want = Vec::new();
        for (i, n) in [5usize, 1, 300, 0, 77, 12].into_iter().enumerate() {
            let keys = random_sorted(n, i as u64 + 1, 1 << 40);
            w.append(i as u32 % 3, keys.len() as u64, &encode_batch(&keys).expect("encode")).expect("append");
            want.push((i as u32 % 3, keys));
        }
        w.finish().expect("finish");
        assert_eq!(read_inbox(&path, 1 << 20).expect("whole"), want);
        let inbox = Inbox::open(&path, 1 << 20).expect("open");
        assert_eq!(inbox.total(), 395);
        assert_eq!(inbox.shards().collect::<Vec<_>>(), [0, 1, 2, 0, 1, 2]);
        for group_keys in [0, 1, 6, 100, 301, 10_000] {
            let groups: Vec<_> = inbox.groups(group_keys).map(|g| g.expect("group")).collect();
            for g in &groups[..groups.len() - 1] {
                assert!(g.iter().map(|(_, k)| k.len() as u64).sum::<u64>() >= group_keys);
            }
            assert_eq!(groups.concat(), want, "group size {group_keys}");
        }
        assert!(matches!(Inbox::open(&path, 10), Err(BatchError::InboxTooManyKeys { .. })));
    }
}
