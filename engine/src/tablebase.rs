//! Compressed 2-bit tablebase files: one file per solved layer.
//!
//! Every position has a 2-bit value ([`VALUE_DRAW`], [`VALUE_WIN`], [`VALUE_LOSS`],
//! [`VALUE_ILLEGAL`]). Position `i` of a block is stored in byte `i / 4`, bits
//! `2*(i%4) .. 2*(i%4)+2` (least significant bits first).
//!
//! File layout (all integers little-endian):
//!
//! ```text
//! header : b"RETROTB1" | u32 format_version | u32 json_len | json bytes | u32 crc32(json)
//! blocks : one zstd frame per block (packed 2-bit values of that block)
//! index  : per block: u64 offset | u32 compressed_len | u32 crc32(compressed) | u32 crc32(raw)
//! footer : u64 index_offset | u64 block_count | u32 crc32(index) | u32 crc32(header+blocks+index) | b"RETROEND"
//! ```
//!
//! Block `b` covers positions `[b*block_positions, min(N, (b+1)*block_positions))`.
//! Files are written to `<path>.tmp`, fsynced, and renamed into place, so a file at
//! the final path is always complete.

use crate::durable::{fsync_parent_dir, tmp_path};
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Value of a drawn position.
pub const VALUE_DRAW: u8 = 0;
/// Value of a position from which the layer's MAX side forces its objective.
pub const VALUE_WIN: u8 = 1;
/// Value of a position from which the other side forces a terminal without the objective.
pub const VALUE_LOSS: u8 = 2;
/// Value of an index that does not correspond to a legal position.
pub const VALUE_ILLEGAL: u8 = 3;

/// Magic bytes at the start of every tablebase file.
pub const TABLEBASE_MAGIC: &[u8; 8] = b"RETROTB1";
/// Magic bytes at the very end of every tablebase file.
pub const TABLEBASE_END_MAGIC: &[u8; 8] = b"RETROEND";
/// The (only) format version this build reads and writes.
pub const TABLEBASE_FORMAT_VERSION: u32 = 1;
/// The value encoding string stored in (and required of) every value file's header.
pub const VALUE_ENCODING: &str = "2bit:draw,win,loss,illegal";
/// The encoding of a layer's depth file (the same container, one byte per
/// position, `<layer>.depth` beside `<layer>.tb`): the plies from the position
/// to the end under best play (the round it was decided in), 254 where the
/// layer decided the position but did not keep its round, 255 for a DRAW or an
/// illegal placement ([`crate::values::Codes::depth`]).
pub const DEPTH_ENCODING: &str = "u8:plies,254=unknown,255=none";
/// zstd level used for blocks.
pub const BLOCK_ZSTD_LEVEL: i32 = 3;
/// Largest `block_positions` accepted (bounds the memory of one decoded block: 1 GiB).
pub const MAX_BLOCK_POSITIONS: u64 = 1 << 32;

/// Fixed prefix: magic, format version, header JSON length.
const PREFIX_LEN: u64 = 16;
/// Upper bound on the header JSON (guards against absurd allocations).
const MAX_HEADER_JSON: u64 = 1 << 20;
/// Bytes per index entry.
const INDEX_ENTRY_LEN: u64 = 20;
/// Bytes of the footer.
const FOOTER_LEN: u64 = 32;
/// Chunk size used when streaming the file for whole-file checks.
const STREAM_CHUNK: usize = 1 << 20;

/// Metadata stored as JSON at the start of a tablebase file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TablebaseHeader {
    /// Format version; must equal [`TABLEBASE_FORMAT_VERSION`].
    pub format_version: u32,
    /// Name of the game.
    pub game: String,
    /// Game parameters, e.g. `{"order": 1}`.
    pub params: serde_json::Value,
    /// Name of the layer, e.g. `"solo(A)"`.
    pub layer: String,
    /// Number of positions (N) in the layer.
    pub positions: u64,
    /// Number of positions per block (last block may be shorter).
    pub block_positions: u64,
    /// Value encoding; must equal [`VALUE_ENCODING`].
    pub value_encoding: String,
    /// Hash of the solving plan that produced this file.
    pub plan_hash: String,
}

impl TablebaseHeader {
    /// Builds a header with the current format version and value encoding filled in.
    pub fn new(
        game: impl Into<String>,
        params: serde_json::Value,
        layer: impl Into<String>,
        positions: u64,
        block_positions: u64,
        plan_hash: impl Into<String>,
    ) -> Self {
        Self {
            format_version: TABLEBASE_FORMAT_VERSION,
            game: game.into(),
            params,
            layer: layer.into(),
            positions,
            block_positions,
            value_encoding: VALUE_ENCODING.to_string(),
            plan_hash: plan_hash.into(),
        }
    }

    /// The same layer's header for its depth file ([`DEPTH_ENCODING`]).
    pub fn for_depth(&self) -> TablebaseHeader {
        TablebaseHeader { value_encoding: DEPTH_ENCODING.to_string(), ..self.clone() }
    }

    /// Whether this is a depth file's header.
    pub fn is_depth(&self) -> bool {
        self.value_encoding == DEPTH_ENCODING
    }

    /// Bytes of block `block` uncompressed: packed 2-bit values, or a byte per
    /// position in a depth file.
    pub fn raw_block_len(&self, block: u64) -> u64 {
        let n = self.block_len(block);
        if self.is_depth() { n } else { packed_len(n) }
    }

    /// Number of blocks: `ceil(positions / block_positions)` (0 if `block_positions` is 0).
    pub fn block_count(&self) -> u64 {
        block_count(self.positions, self.block_positions)
    }

    /// Number of positions in block `block` (0 past the end).
    pub fn block_len(&self, block: u64) -> u64 {
        let start = block.saturating_mul(self.block_positions);
        let end = start.saturating_add(self.block_positions).min(self.positions);
        end.saturating_sub(start)
    }

    /// Checks the fields that the format constrains; returns a description of the problem.
    fn check(&self) -> Result<(), String> {
        if self.format_version != TABLEBASE_FORMAT_VERSION {
            return Err(format!(
                "header format_version {} not supported (this build reads {})",
                self.format_version, TABLEBASE_FORMAT_VERSION
            ));
        }
        if self.value_encoding != VALUE_ENCODING && self.value_encoding != DEPTH_ENCODING {
            return Err(format!(
                "value encoding {:?} not supported (expected {:?} or {:?})",
                self.value_encoding, VALUE_ENCODING, DEPTH_ENCODING
            ));
        }
        if self.block_positions == 0 || self.block_positions > MAX_BLOCK_POSITIONS {
            return Err(format!("block_positions {} out of range (1..={})", self.block_positions, MAX_BLOCK_POSITIONS));
        }
        Ok(())
    }
}

/// `ceil(positions / block_positions)`, 0 if `block_positions` is 0.
fn block_count(positions: u64, block_positions: u64) -> u64 {
    if block_positions == 0 { 0 } else { positions.div_ceil(block_positions) }
}

/// Bytes needed to pack `n` 2-bit values.
fn packed_len(n: u64) -> u64 {
    n.div_ceil(4)
}

/// Errors from reading or writing tablebase files.
#[derive(Debug, thiserror::Error)]
pub enum TablebaseError {
    /// An operating-system I/O error.
    #[error("tablebase {}: {what}: {source}", .path.display())]
    Io {
        /// File concerned.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// Underlying error.
        #[source]
        source: io::Error,
    },
    /// The file does not start with the tablebase magic.
    #[error("tablebase {}: not a tablebase (bad magic)", .path.display())]
    BadMagic {
        /// File concerned.
        path: PathBuf,
    },
    /// The file's format version is not the one this build reads.
    #[error("tablebase {}: format version {version} not supported (this build reads {})", .path.display(), TABLEBASE_FORMAT_VERSION)]
    UnsupportedVersion {
        /// File concerned.
        path: PathBuf,
        /// Version found in the file.
        version: u32,
    },
    /// The file ends before a structure it must contain.
    #[error("tablebase {}: truncated (expected {expected})", .path.display())]
    Truncated {
        /// File concerned.
        path: PathBuf,
        /// What was expected but missing.
        expected: &'static str,
    },
    /// A block's compressed or raw checksum does not match, or it does not decompress.
    #[error("tablebase {}: block {block} checksum mismatch (file corrupt)", .path.display())]
    BlockChecksum {
        /// File concerned.
        path: PathBuf,
        /// Block index.
        block: u64,
    },
    /// Some other inconsistency in the file.
    #[error("tablebase {}: {detail} (file corrupt)", .path.display())]
    Corrupt {
        /// File concerned.
        path: PathBuf,
        /// Description of the inconsistency.
        detail: String,
    },
    /// The header is well-formed but describes something this build cannot handle.
    #[error("tablebase {}: invalid header: {detail}", .path.display())]
    InvalidHeader {
        /// File concerned.
        path: PathBuf,
        /// Description of the problem.
        detail: String,
    },
    /// A probe asked for a position outside the layer.
    #[error("tablebase {}: position {position} out of range (layer has {positions} positions)", .path.display())]
    PositionOutOfRange {
        /// File concerned.
        path: PathBuf,
        /// Requested position.
        position: u64,
        /// Number of positions in the layer.
        positions: u64,
    },
    /// The writer was used incorrectly (wrong block order, lengths, values, count).
    #[error("tablebase {}: {detail}", .path.display())]
    Usage {
        /// File concerned.
        path: PathBuf,
        /// Description of the misuse.
        detail: String,
    },
    /// Compressing a block failed.
    #[error("tablebase block compression failed: {0}")]
    Compress(#[source] io::Error),
    /// Not enough memory for a buffer the file requires.
    #[error("tablebase {}: cannot allocate {bytes} bytes", .path.display())]
    OutOfMemory {
        /// File concerned.
        path: PathBuf,
        /// Bytes requested.
        bytes: u64,
    },
}

/// Packs values (each `0..=3`; higher bits are ignored) into bytes, 4 per byte,
/// least significant bits first. The result has `ceil(values.len() / 4)` bytes;
/// unused bits of the last byte are zero.
pub fn pack_values(values: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len().div_ceil(4));
    for chunk in values.chunks(4) {
        let mut byte = 0u8;
        for (j, &v) in chunk.iter().enumerate() {
            byte |= (v & 3) << (2 * j);
        }
        out.push(byte);
    }
    out
}

/// Returns the 2-bit value of position `i` in a packed array.
/// Returns [`VALUE_ILLEGAL`] if `i` lies beyond the array.
pub fn unpack_value(packed: &[u8], i: u64) -> u8 {
    match usize::try_from(i / 4).ok().and_then(|b| packed.get(b)) {
        Some(byte) => (byte >> (2 * (i % 4))) & 3,
        None => VALUE_ILLEGAL,
    }
}

/// Sets position `i` of a packed array to `value & 3`; does nothing if `i` is beyond it.
fn set_packed(packed: &mut [u8], i: u64, value: u8) {
    if let Some(byte) = usize::try_from(i / 4).ok().and_then(|b| packed.get_mut(b)) {
        let shift = 2 * (i % 4);
        *byte = (*byte & !(3 << shift)) | ((value & 3) << shift);
    }
}

/// Compresses one block of packed values as a single zstd frame (level 3).
/// The output is deterministic for a given input.
pub fn compress_block(packed: &[u8]) -> Result<Vec<u8>, TablebaseError> {
    zstd::bulk::compress(packed, BLOCK_ZSTD_LEVEL).map_err(TablebaseError::Compress)
}

/// Information about a finished tablebase file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TablebaseFileInfo {
    /// Final path of the file.
    pub path: PathBuf,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// Lowercase hex SHA-256 of the whole file (same as `sha256sum`).
    pub sha256: String,
}

/// One entry of the block index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IndexEntry {
    offset: u64,
    compressed_len: u32,
    compressed_crc: u32,
    raw_crc: u32,
}

impl IndexEntry {
    fn to_bytes(self) -> [u8; INDEX_ENTRY_LEN as usize] {
        let mut b = [0u8; INDEX_ENTRY_LEN as usize];
        b[0..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..12].copy_from_slice(&self.compressed_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.compressed_crc.to_le_bytes());
        b[16..20].copy_from_slice(&self.raw_crc.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> Self {
        Self {
            offset: le_u64(b, 0),
            compressed_len: le_u32(b, 8),
            compressed_crc: le_u32(b, 12),
            raw_crc: le_u32(b, 16),
        }
    }
}

/// Reads a little-endian u32 at `at`; missing bytes read as zero (callers check lengths).
fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        a.copy_from_slice(s);
    }
    u32::from_le_bytes(a)
}

/// Reads a little-endian u64 at `at`; missing bytes read as zero (callers check lengths).
fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        a.copy_from_slice(s);
    }
    u64::from_le_bytes(a)
}

/// Lowercase hex of bytes.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// Writes a tablebase file block by block.
///
/// Blocks must be pushed in order `0, 1, 2, ...`; they may come from different
/// producers (workers) as already-compressed frames via
/// [`TablebaseWriter::push_compressed_block`]. The file is written to `<path>.tmp`
/// and renamed to `path` by [`TablebaseWriter::finish`]; dropping an unfinished
/// writer removes the temporary file.
pub struct TablebaseWriter {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
    header: TablebaseHeader,
    block_count: u64,
    index: Vec<IndexEntry>,
    written: u64,
    crc: crc32fast::Hasher,
    sha: Sha256,
    finished: bool,
}

impl TablebaseWriter {
    /// Creates `<path>.tmp` and writes the header. Fails if the header is invalid.
    pub fn create(path: &Path, header: TablebaseHeader) -> Result<Self, TablebaseError> {
        if let Err(detail) = header.check() {
            return Err(TablebaseError::InvalidHeader { path: path.to_path_buf(), detail });
        }
        let json = serde_json::to_vec(&header).map_err(|e| TablebaseError::InvalidHeader {
            path: path.to_path_buf(),
            detail: format!("cannot serialize header: {e}"),
        })?;
        let json_len =
            u32::try_from(json.len()).ok().filter(|&l| u64::from(l) <= MAX_HEADER_JSON).ok_or_else(|| {
                TablebaseError::InvalidHeader {
                    path: path.to_path_buf(),
                    detail: format!("header JSON too large ({} bytes)", json.len()),
                }
            })?;
        let tmp = tmp_path(path);
        let file = File::create(&tmp).map_err(|source| TablebaseError::Io {
            path: tmp.clone(),
            what: "cannot create temporary file",
            source,
        })?;
        let mut w = Self {
            path: path.to_path_buf(),
            tmp,
            out: Some(BufWriter::with_capacity(1 << 20, file)),
            block_count: header.block_count(),
            header,
            index: Vec::new(),
            written: 0,
            crc: crc32fast::Hasher::new(),
            sha: Sha256::new(),
            finished: false,
        };
        w.write(TABLEBASE_MAGIC)?;
        w.write(&TABLEBASE_FORMAT_VERSION.to_le_bytes())?;
        w.write(&json_len.to_le_bytes())?;
        w.write(&json)?;
        w.write(&crc32fast::hash(&json).to_le_bytes())?;
        Ok(w)
    }

    /// The header being written.
    pub fn header(&self) -> &TablebaseHeader {
        &self.header
    }

    /// Index of the next block expected.
    pub fn next_block(&self) -> u64 {
        self.index.len() as u64
    }

    /// Writes bytes, updating the whole-file CRC and SHA-256.
    fn write(&mut self, bytes: &[u8]) -> Result<(), TablebaseError> {
        let out = self.out.as_mut().ok_or_else(|| TablebaseError::Usage {
            path: self.path.clone(),
            detail: "writer already finished".to_string(),
        })?;
        out.write_all(bytes).map_err(|source| TablebaseError::Io {
            path: self.tmp.clone(),
            what: "write failed",
            source,
        })?;
        self.crc.update(bytes);
        self.sha.update(bytes);
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn usage(&self, detail: String) -> TablebaseError {
        TablebaseError::Usage { path: self.path.clone(), detail }
    }

    /// Appends block `block_index`, already compressed with [`compress_block`];
    /// `raw_crc32` is the crc32 of the packed (uncompressed) bytes.
    ///
    /// Checks that blocks arrive in order and that the zstd frame declares the
    /// right decompressed length (full decompression is checked by
    /// [`TablebaseReader::verify`]).
    pub fn push_compressed_block(
        &mut self,
        block_index: u64,
        compressed: &[u8],
        raw_crc32: u32,
    ) -> Result<(), TablebaseError> {
        let expected = self.next_block();
        if block_index != expected {
            return Err(self.usage(format!("block {block_index} pushed out of order (expected block {expected})")));
        }
        if block_index >= self.block_count {
            return Err(
                self.usage(format!("block {block_index} pushed but the layer has only {} blocks", self.block_count))
            );
        }
        let raw_len = self.header.raw_block_len(block_index);
        match zstd::zstd_safe::get_frame_content_size(compressed) {
            Ok(Some(n)) if n == raw_len => {}
            Ok(Some(n)) => {
                return Err(self.usage(format!("block {block_index} decompresses to {n} bytes, expected {raw_len}")));
            }
            _ => {
                return Err(self.usage(format!("block {block_index} is not a zstd frame with a known content size")));
            }
        }
        let compressed_len = u32::try_from(compressed.len()).map_err(|_| {
            self.usage(format!("block {block_index} too large ({} compressed bytes)", compressed.len()))
        })?;
        let entry = IndexEntry {
            offset: self.written,
            compressed_len,
            compressed_crc: crc32fast::hash(compressed),
            raw_crc: raw_crc32,
        };
        self.write(compressed)?;
        self.index.push(entry);
        Ok(())
    }

    /// Convenience: packs, compresses and appends the values (each `0..=3`) of
    /// exactly one block, the next one expected.
    pub fn push_values(&mut self, values: &[u8]) -> Result<(), TablebaseError> {
        if self.header.is_depth() {
            return Err(self.usage("values pushed to a depth file".to_string()));
        }
        let block = self.next_block();
        if block >= self.block_count {
            return Err(self.usage(format!("block {block} pushed but the layer has only {} blocks", self.block_count)));
        }
        let want = self.header.block_len(block);
        if values.len() as u64 != want {
            return Err(self.usage(format!("block {block} has {} values, expected {want}", values.len())));
        }
        if let Some(i) = values.iter().position(|&v| v > 3) {
            return Err(self.usage(format!("block {block} position {i} has value {} (must be 0..=3)", values[i])));
        }
        let packed = pack_values(values);
        let compressed = compress_block(&packed)?;
        self.push_compressed_block(block, &compressed, crc32fast::hash(&packed))
    }

    /// Convenience for a depth file: compresses and appends the depth bytes of
    /// exactly one block, the next one expected.
    pub fn push_depths(&mut self, depths: &[u8]) -> Result<(), TablebaseError> {
        if !self.header.is_depth() {
            return Err(self.usage("depth bytes pushed to a value file".to_string()));
        }
        let block = self.next_block();
        let want = self.header.block_len(block);
        if block >= self.block_count || depths.len() as u64 != want {
            return Err(self.usage(format!("block {block} has {} depth bytes, expected {want}", depths.len())));
        }
        let compressed = compress_block(depths)?;
        self.push_compressed_block(block, &compressed, crc32fast::hash(depths))
    }

    /// Writes the index and footer, fsyncs, renames `<path>.tmp` to `path`, and
    /// fsyncs the directory. Fails if not every block was pushed.
    pub fn finish(mut self) -> Result<TablebaseFileInfo, TablebaseError> {
        let pushed = self.next_block();
        if pushed != self.block_count {
            return Err(self.usage(format!("finished after {pushed} blocks, expected {}", self.block_count)));
        }
        let index_offset = self.written;
        let mut index_bytes = Vec::with_capacity(self.index.len() * INDEX_ENTRY_LEN as usize);
        for e in &self.index {
            index_bytes.extend_from_slice(&e.to_bytes());
        }
        self.write(&index_bytes)?;
        let file_crc = self.crc.clone().finalize();
        let mut footer = Vec::with_capacity(FOOTER_LEN as usize);
        footer.extend_from_slice(&index_offset.to_le_bytes());
        footer.extend_from_slice(&self.block_count.to_le_bytes());
        footer.extend_from_slice(&crc32fast::hash(&index_bytes).to_le_bytes());
        footer.extend_from_slice(&file_crc.to_le_bytes());
        footer.extend_from_slice(TABLEBASE_END_MAGIC);
        self.write(&footer)?;

        let out = self.out.take().ok_or_else(|| self.usage("writer already finished".to_string()))?;
        let file = out.into_inner().map_err(|e| TablebaseError::Io {
            path: self.tmp.clone(),
            what: "flush failed",
            source: e.into_error(),
        })?;
        file.sync_all().map_err(|source| TablebaseError::Io {
            path: self.tmp.clone(),
            what: "fsync failed",
            source,
        })?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path).map_err(|source| TablebaseError::Io {
            path: self.path.clone(),
            what: "cannot rename temporary file into place",
            source,
        })?;
        self.finished = true;
        fsync_parent_dir(&self.path).map_err(|source| TablebaseError::Io {
            path: self.path.clone(),
            what: "cannot fsync parent directory",
            source,
        })?;
        let digest = std::mem::take(&mut self.sha).finalize();
        Ok(TablebaseFileInfo { path: self.path.clone(), bytes: self.written, sha256: hex(&digest) })
    }
}

impl Drop for TablebaseWriter {
    fn drop(&mut self) {
        if !self.finished {
            self.out = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Reads and probes a tablebase file.
///
/// [`TablebaseReader::open`] validates magic, version, header checksum, footer and
/// index checksum without reading the blocks. A probe reads and decompresses one
/// block (checking both its checksums) and caches it.
pub struct TablebaseReader {
    path: PathBuf,
    file: File,
    file_len: u64,
    header: TablebaseHeader,
    index: Vec<IndexEntry>,
    file_crc: u32,
    cache: Option<(u64, Vec<u8>)>,
}

impl TablebaseReader {
    /// Opens and validates a value file's structure (not the block contents);
    /// a depth file is refused ([`DepthReader::open`] reads those).
    pub fn open(path: &Path) -> Result<Self, TablebaseError> {
        Self::open_as(path, false)
    }

    /// Opens a value file (`depth` false) or a depth file (true).
    fn open_as(path: &Path, depth: bool) -> Result<Self, TablebaseError> {
        let p = path.to_path_buf();
        let file =
            File::open(path).map_err(|source| TablebaseError::Io { path: p.clone(), what: "cannot open", source })?;
        let file_len = file
            .metadata()
            .map_err(|source| TablebaseError::Io { path: p.clone(), what: "cannot stat", source })?
            .len();
        let read_at = |buf: &mut [u8], at: u64, what: &'static str| {
            file.read_exact_at(buf, at).map_err(|source| TablebaseError::Io { path: p.clone(), what, source })
        };
        let truncated = |expected: &'static str| TablebaseError::Truncated { path: p.clone(), expected };
        let corrupt = |detail: String| TablebaseError::Corrupt { path: p.clone(), detail };

        // Magic.
        let mut prefix = [0u8; PREFIX_LEN as usize];
        let avail = file_len.min(PREFIX_LEN) as usize;
        read_at(&mut prefix[..avail], 0, "cannot read header")?;
        let magic_avail = avail.min(8);
        if prefix[..magic_avail] != TABLEBASE_MAGIC[..magic_avail] || file_len == 0 {
            return Err(TablebaseError::BadMagic { path: p });
        }
        if avail < PREFIX_LEN as usize {
            return Err(truncated("header"));
        }
        let version = le_u32(&prefix, 8);
        if version != TABLEBASE_FORMAT_VERSION {
            return Err(TablebaseError::UnsupportedVersion { path: p, version });
        }
        let json_len = u64::from(le_u32(&prefix, 12));
        if json_len > MAX_HEADER_JSON {
            return Err(corrupt(format!("header length {json_len} implausible")));
        }
        let data_start = PREFIX_LEN + json_len + 4;
        if file_len < data_start {
            return Err(truncated("header"));
        }
        let mut json = vec![0u8; json_len as usize + 4];
        read_at(&mut json, PREFIX_LEN, "cannot read header")?;
        let stored_crc = le_u32(&json, json_len as usize);
        json.truncate(json_len as usize);
        if crc32fast::hash(&json) != stored_crc {
            return Err(corrupt("header checksum mismatch".to_string()));
        }
        let header: TablebaseHeader =
            serde_json::from_slice(&json).map_err(|e| corrupt(format!("header JSON invalid: {e}")))?;
        if let Err(detail) = header.check() {
            return Err(TablebaseError::InvalidHeader { path: p, detail });
        }
        if header.is_depth() != depth {
            let (is, want) = if depth { ("values", "depth") } else { ("depth", "values") };
            return Err(TablebaseError::InvalidHeader {
                path: p,
                detail: format!("this file holds a layer's {is} ({:?}), {want} were asked for", header.value_encoding),
            });
        }

        // Footer.
        if file_len < data_start + FOOTER_LEN {
            return Err(truncated("footer"));
        }
        let mut footer = [0u8; FOOTER_LEN as usize];
        read_at(&mut footer, file_len - FOOTER_LEN, "cannot read footer")?;
        if footer[24..32] != TABLEBASE_END_MAGIC[..] {
            // An end marker a little before the end means bytes were appended
            // (a botched copy or concatenation), not that the file was cut.
            let tail_len = file_len.min(STREAM_CHUNK as u64);
            let mut tail = vec![0u8; tail_len as usize];
            read_at(&mut tail, file_len - tail_len, "cannot read footer")?;
            if let Some(at) = tail.windows(8).rposition(|w| w == &TABLEBASE_END_MAGIC[..]) {
                let extra = tail_len - at as u64 - 8;
                return Err(corrupt(format!(
                    "{extra} extra byte(s) after the end marker (data appended after the end of the tablebase)"
                )));
            }
            return Err(truncated("footer"));
        }
        let index_offset = le_u64(&footer, 0);
        let stored_blocks = le_u64(&footer, 8);
        let index_crc = le_u32(&footer, 16);
        let file_crc = le_u32(&footer, 20);
        let blocks = header.block_count();
        if stored_blocks != blocks {
            return Err(corrupt(format!("footer says {stored_blocks} blocks, header implies {blocks}")));
        }
        let index_len =
            blocks.checked_mul(INDEX_ENTRY_LEN).ok_or_else(|| corrupt(format!("block count {blocks} implausible")))?;
        let index_end = file_len - FOOTER_LEN;
        if index_offset < data_start || index_offset.checked_add(index_len) != Some(index_end) {
            return Err(corrupt(format!(
                "index at offset {index_offset} with {blocks} entries does not end at the footer"
            )));
        }

        // Index.
        let mut index_bytes = vec![0u8; index_len as usize];
        read_at(&mut index_bytes, index_offset, "cannot read index")?;
        if crc32fast::hash(&index_bytes) != index_crc {
            return Err(corrupt("index checksum mismatch".to_string()));
        }
        let index: Vec<IndexEntry> =
            index_bytes.chunks_exact(INDEX_ENTRY_LEN as usize).map(IndexEntry::from_bytes).collect();
        let mut expect_offset = data_start;
        for (b, e) in index.iter().enumerate() {
            if e.offset != expect_offset || e.compressed_len == 0 {
                return Err(corrupt(format!("index entry for block {b} inconsistent")));
            }
            expect_offset += u64::from(e.compressed_len);
        }
        if expect_offset != index_offset {
            return Err(corrupt("blocks do not end at the index".to_string()));
        }

        Ok(Self { path: p, file, file_len, header, index, file_crc, cache: None })
    }

    /// The file's header.
    pub fn header(&self) -> &TablebaseHeader {
        &self.header
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of blocks in the file.
    pub fn block_count(&self) -> u64 {
        self.index.len() as u64
    }

    /// The block holding `position`, and the position's index inside it;
    /// an error names a position past the end.
    pub fn locate(&self, position: u64) -> Result<(u64, u64), TablebaseError> {
        if position >= self.header.positions {
            return Err(TablebaseError::PositionOutOfRange {
                path: self.path.clone(),
                position,
                positions: self.header.positions,
            });
        }
        let bp = self.header.block_positions;
        Ok((position / bp, position % bp))
    }

    /// The value of `position`, reading and checking its block without any
    /// cache (`&self`: callable from many threads; [`Self::probe`] caches one
    /// block for a caller that probes nearby positions one after another).
    pub fn value(&self, position: u64) -> Result<u8, TablebaseError> {
        let (block, i) = self.locate(position)?;
        Ok(unpack_value(&self.read_block(block)?, i))
    }

    /// Reads, checks and decompresses block `block`: its packed 2-bit values
    /// (value `i` of the block by [`unpack_value`]). Takes `&self` (positioned
    /// reads), so many threads can read one file at once.
    pub fn read_block(&self, block: u64) -> Result<Vec<u8>, TablebaseError> {
        let bad = || TablebaseError::BlockChecksum { path: self.path.clone(), block };
        let entry = usize::try_from(block).ok().and_then(|b| self.index.get(b)).ok_or_else(bad)?;
        let mut compressed = vec![0u8; entry.compressed_len as usize];
        self.file.read_exact_at(&mut compressed, entry.offset).map_err(|source| TablebaseError::Io {
            path: self.path.clone(),
            what: "cannot read block",
            source,
        })?;
        if crc32fast::hash(&compressed) != entry.compressed_crc {
            return Err(bad());
        }
        let raw_len = self.header.raw_block_len(block) as usize;
        let raw = zstd::bulk::decompress(&compressed, raw_len).map_err(|_| bad())?;
        if raw.len() != raw_len || crc32fast::hash(&raw) != entry.raw_crc {
            return Err(bad());
        }
        Ok(raw)
    }

    /// Returns the value of `position`, reading and verifying its block if it is
    /// not the cached one.
    pub fn probe(&mut self, position: u64) -> Result<u8, TablebaseError> {
        let (block, at) = self.locate(position)?;
        let cached = matches!(&self.cache, Some((b, _)) if *b == block);
        if !cached {
            self.cache = None;
            let raw = self.read_block(block)?;
            self.cache = Some((block, raw));
        }
        match &self.cache {
            Some((_, raw)) => Ok(unpack_value(raw, at)),
            None => Err(TablebaseError::BlockChecksum { path: self.path.clone(), block }),
        }
    }

    /// Returns the packed 2-bit values of all positions (`ceil(N/4)` bytes, same
    /// packing as [`pack_values`]). Every block is verified.
    pub fn read_all(&mut self) -> Result<Vec<u8>, TablebaseError> {
        let total = packed_len(self.header.positions);
        let oom = || TablebaseError::OutOfMemory { path: self.path.clone(), bytes: total };
        let total_usize = usize::try_from(total).map_err(|_| oom())?;
        let mut out: Vec<u8> = Vec::new();
        out.try_reserve_exact(total_usize).map_err(|_| oom())?;
        self.for_each_packed(|bytes| {
            out.extend_from_slice(bytes);
            Ok::<(), TablebaseError>(())
        })?;
        Ok(out)
    }

    /// Hands every position's packed 2-bit value to `f` in rank order, a
    /// block at a time: the slices, joined, are [`Self::read_all`]'s bytes,
    /// without holding them all. Every block is verified; the first error,
    /// the file's or `f`'s, stops the reading.
    pub fn for_each_packed<E: From<TablebaseError>>(&self, mut f: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        let bp = self.header.block_positions;
        // Blocks whose length is not a multiple of 4 values end inside a byte:
        // their values are repacked behind the ones before them.
        let mut carry: Vec<u8> = Vec::new();
        let mut carried = 0u64;
        let mut handed = 0u64;
        for block in 0..self.block_count() {
            let raw = self.read_block(block)?;
            if bp.is_multiple_of(4) {
                handed += raw.len() as u64;
                f(&raw)?;
                continue;
            }
            carry.resize(packed_len(carried + self.header.block_len(block)) as usize, 0);
            for i in 0..self.header.block_len(block) {
                set_packed(&mut carry, carried + i, unpack_value(&raw, i));
            }
            carried += self.header.block_len(block);
            // Whole bytes go now; a partial last byte waits for the next block.
            let whole = (carried / 4) as usize;
            handed += whole as u64;
            f(&carry[..whole])?;
            carry.drain(..whole);
            carried %= 4;
        }
        if carried > 0 {
            handed += carry.len() as u64;
            f(&carry)?;
        }
        let total = packed_len(self.header.positions);
        if handed != total {
            return Err(TablebaseError::Corrupt {
                path: self.path.clone(),
                detail: format!("blocks hold {handed} bytes, expected {total}"),
            }
            .into());
        }
        Ok(())
    }

    /// Checks the whole-file checksum and every block's checksums.
    pub fn verify(&mut self) -> Result<(), TablebaseError> {
        let mut hasher = crc32fast::Hasher::new();
        let end = self.file_len - FOOTER_LEN;
        let mut buf = vec![0u8; STREAM_CHUNK];
        let mut at = 0u64;
        while at < end {
            let n = (end - at).min(STREAM_CHUNK as u64) as usize;
            self.file.read_exact_at(&mut buf[..n], at).map_err(|source| TablebaseError::Io {
                path: self.path.clone(),
                what: "cannot read file",
                source,
            })?;
            hasher.update(&buf[..n]);
            at += n as u64;
        }
        if hasher.finalize() != self.file_crc {
            return Err(TablebaseError::Corrupt {
                path: self.path.clone(),
                detail: "whole-file checksum mismatch".to_string(),
            });
        }
        for block in 0..self.block_count() {
            self.read_block(block)?;
        }
        Ok(())
    }
}

/// The file name of a layer's tablebase: the question with each character
/// other than an ASCII letter or digit made `_`, then `_` trimmed from both
/// ends, each `__` made `_` (one pass), and `.tb` appended (`solo(A)` ->
/// `solo_A.tb`, `enable(A>B)` -> `enable_A_B.tb`; docs/FORMAT.md).
pub fn layer_file_name(question: &str) -> String {
    let cleaned: String = question.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect::<String>();
    format!("{}.tb", cleaned.trim_matches('_').replace("__", "_"))
}

/// The file name of a layer's depth file: [`layer_file_name`] with `.depth`
/// for `.tb` (`solo(A)` -> `solo_A.depth`).
pub fn depth_file_name(question: &str) -> String {
    let tb = layer_file_name(question);
    format!("{}.depth", tb.trim_end_matches(".tb"))
}

/// Reads a layer's depth file ([`DEPTH_ENCODING`]): the plies to the end of
/// each position, a block at a time, the last block read kept.
pub struct DepthReader {
    inner: TablebaseReader,
}

impl DepthReader {
    /// Opens and validates a depth file's structure (a value file is refused).
    pub fn open(path: &Path) -> Result<Self, TablebaseError> {
        Ok(DepthReader { inner: TablebaseReader::open_as(path, true)? })
    }

    /// The file's header.
    pub fn header(&self) -> &TablebaseHeader {
        self.inner.header()
    }

    /// The depth byte of `position`, reading and checking its block unless it
    /// is the one read last.
    pub fn probe(&mut self, position: u64) -> Result<u8, TablebaseError> {
        let r = &mut self.inner;
        let (block, at) = r.locate(position)?;
        if !matches!(&r.cache, Some((b, _)) if *b == block) {
            r.cache = None;
            let raw = r.read_block(block)?;
            r.cache = Some((block, raw));
        }
        match &r.cache {
            Some((_, raw)) => Ok(raw[at as usize]),
            None => Err(TablebaseError::BlockChecksum { path: r.path.clone(), block }),
        }
    }

    /// Reads, checks and decompresses block `block`: one depth byte per position.
    pub fn read_block(&self, block: u64) -> Result<Vec<u8>, TablebaseError> {
        self.inner.read_block(block)
    }

    /// Checks the whole-file checksum and every block's checksums.
    pub fn verify(&mut self) -> Result<(), TablebaseError> {
        self.inner.verify()
    }
}

/// Lowercase hex SHA-256 of a file's contents (same as `sha256sum`).
pub fn sha256_file(path: &Path) -> Result<String, io::Error> {
    let mut file = File::open(path)?;
    let mut sha = Sha256::new();
    let mut buf = vec![0u8; STREAM_CHUNK];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        sha.update(&buf[..n]);
    }
    Ok(hex(&sha.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Rng, TestDir};

    fn random_values(n: usize, seed: u64) -> Vec<u8> {
        let mut rng = Rng(seed);
        // Skewed distribution so blocks actually compress.
        (0..n)
            .map(|_| match rng.next() % 8 {
                0..=3 => VALUE_DRAW,
                4 | 5 => VALUE_WIN,
                6 => VALUE_LOSS,
                _ => VALUE_ILLEGAL,
            })
            .collect()
    }

    fn header(n: u64, bp: u64) -> TablebaseHeader {
        TablebaseHeader::new("testgame", serde_json::json!({"order": 1}), "solo(A)", n, bp, "deadbeef")
    }

    fn write_file(path: &Path, values: &[u8], bp: u64) -> TablebaseFileInfo {
        let mut w = TablebaseWriter::create(path, header(values.len() as u64, bp)).expect("create");
        for chunk in values.chunks(bp as usize) {
            w.push_values(chunk).expect("push");
        }
        w.finish().expect("finish")
    }

    #[test]
    fn pack_unpack_roundtrip() {
        let values = random_values(1003, 1);
        let packed = pack_values(&values);
        assert_eq!(packed.len(), 251);
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(unpack_value(&packed, i as u64), v);
        }
        assert_eq!(pack_values(&[1, 2, 3, 0, 2]), vec![0b00_11_10_01, 0b10]);
        assert_eq!(unpack_value(&packed, 1_000_000), VALUE_ILLEGAL);
        assert_eq!(unpack_value(&[], u64::MAX), VALUE_ILLEGAL);
    }

    #[test]
    fn roundtrip_various_sizes() {
        let dir = TestDir::new("roundtrip");
        let cases: &[(usize, u64)] = &[
            (0, 16),
            (1, 16),
            (10, 16),
            (16, 16),
            (17, 16),
            (1000, 64),
            (1001, 64),
            (1001, 7),
            (5000, 1024),
            (4096, 4096),
            (100, 1 << 20),
        ];
        for (k, &(n, bp)) in cases.iter().enumerate() {
            let values = random_values(n, k as u64 + 10);
            let path = dir.path(&format!("t{k}.tb"));
            let info = write_file(&path, &values, bp);
            assert_eq!(info.path, path);
            assert!(!tmp_path(&path).exists());
            assert_eq!(info.bytes, std::fs::metadata(&path).expect("meta").len());
            assert_eq!(info.sha256, sha256_file(&path).expect("sha"));
            assert_eq!(info.sha256.len(), 64);

            let mut r = TablebaseReader::open(&path).expect("open");
            assert_eq!(r.header(), &header(n as u64, bp));
            r.verify().expect("verify");
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(r.probe(i as u64).expect("probe"), v, "n={n} bp={bp} i={i}");
            }
            // Probing backwards exercises the block cache switching.
            for i in (0..n).rev().step_by(13) {
                assert_eq!(r.probe(i as u64).expect("probe"), values[i]);
            }
            assert!(matches!(r.probe(n as u64), Err(TablebaseError::PositionOutOfRange { .. })));
            assert_eq!(r.read_all().expect("read_all"), pack_values(&values));
        }
    }

    #[test]
    fn deterministic_output() {
        let dir = TestDir::new("determ");
        let values = random_values(3000, 5);
        let a = write_file(&dir.path("a.tb"), &values, 256);
        let b = write_file(&dir.path("b.tb"), &values, 256);
        assert_eq!(a.sha256, b.sha256);
        assert_eq!(compress_block(&[1, 2, 3]).ok(), compress_block(&[1, 2, 3]).ok());
    }

    #[test]
    fn precompressed_blocks_from_workers() {
        let dir = TestDir::new("precomp");
        let path = dir.path("p.tb");
        let values = random_values(777, 9);
        let mut w = TablebaseWriter::create(&path, header(777, 100)).expect("create");
        let blocks: Vec<(Vec<u8>, u32)> = values
            .chunks(100)
            .map(|c| {
                let packed = pack_values(c);
                (compress_block(&packed).expect("compress"), crc32fast::hash(&packed))
            })
            .collect();
        // Out of order is rejected.
        assert!(w.push_compressed_block(1, &blocks[1].0, blocks[1].1).is_err());
        // Wrong length is rejected.
        assert!(w.push_compressed_block(0, &blocks[7].0, blocks[7].1).is_err());
        // Garbage is rejected.
        assert!(w.push_compressed_block(0, b"garbage", 0).is_err());
        for (b, (c, crc)) in blocks.iter().enumerate() {
            w.push_compressed_block(b as u64, c, *crc).expect("push");
        }
        assert!(w.push_compressed_block(8, &blocks[7].0, blocks[7].1).is_err());
        w.finish().expect("finish");
        let mut r = TablebaseReader::open(&path).expect("open");
        r.verify().expect("verify");
        assert_eq!(r.read_all().expect("read_all"), pack_values(&values));
    }

    #[test]
    fn writer_misuse() {
        let dir = TestDir::new("misuse");
        let path = dir.path("m.tb");
        // Too few blocks.
        let mut w = TablebaseWriter::create(&path, header(100, 30)).expect("create");
        w.push_values(&[0; 30]).expect("push");
        assert!(w.push_values(&[0; 29]).is_err()); // wrong length
        assert!(w.push_values(&[4; 30]).is_err()); // bad value
        let err = w.finish().expect_err("incomplete");
        assert!(err.to_string().contains("expected 4"), "{err}");
        assert!(!path.exists());
        assert!(!tmp_path(&path).exists());
        // Bad headers.
        assert!(TablebaseWriter::create(&path, header(100, 0)).is_err());
        let mut h = header(100, 10);
        h.value_encoding = "3bit".into();
        assert!(TablebaseWriter::create(&path, h).is_err());
        // Dropped writer cleans up.
        let w = TablebaseWriter::create(&path, header(100, 10)).expect("create");
        assert!(tmp_path(&path).exists());
        drop(w);
        assert!(!tmp_path(&path).exists());
    }

    #[test]
    fn error_messages() {
        let dir = TestDir::new("msgs");
        let path = dir.path("x.tb");
        std::fs::write(&path, b"hello world, this is not a tablebase").expect("write");
        let e = TablebaseReader::open(&path).err().expect("bad magic");
        assert!(e.to_string().ends_with("not a tablebase (bad magic)"), "{e}");
        assert!(e.to_string().contains("x.tb"), "{e}");

        let values = random_values(500, 3);
        write_file(&path, &values, 64);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[8..12].copy_from_slice(&7u32.to_le_bytes());
        std::fs::write(&path, &bytes).expect("write");
        let e = TablebaseReader::open(&path).err().expect("version");
        assert!(e.to_string().ends_with("format version 7 not supported (this build reads 1)"), "{e}");

        write_file(&path, &values, 64);
        let bytes = std::fs::read(&path).expect("read");
        std::fs::write(&path, &bytes[..bytes.len() - 5]).expect("write");
        let e = TablebaseReader::open(&path).err().expect("truncated");
        assert!(e.to_string().ends_with("truncated (expected footer)"), "{e}");

        // One byte appended is not a truncation.
        write_file(&path, &values, 64);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes.push(0);
        std::fs::write(&path, &bytes).expect("write");
        let e = TablebaseReader::open(&path).err().expect("appended");
        assert!(e.to_string().contains("1 extra byte(s) after the end marker"), "{e}");

        // Corrupt block 3's compressed bytes: open succeeds, probing that block fails.
        write_file(&path, &values, 64);
        let r = TablebaseReader::open(&path).expect("open");
        let e3 = r.index[3];
        drop(r);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[e3.offset as usize + e3.compressed_len as usize / 2] ^= 0x40;
        std::fs::write(&path, &bytes).expect("write");
        let mut r = TablebaseReader::open(&path).expect("open");
        assert_eq!(r.probe(0).expect("block 0 fine"), values[0]);
        let e = r.probe(3 * 64 + 1).expect_err("block 3 corrupt");
        assert!(e.to_string().ends_with("block 3 checksum mismatch (file corrupt)"), "{e}");
        assert!(r.read_all().is_err());
        assert!(r.verify().is_err());
    }

    #[test]
    fn truncation_is_an_error() {
        let dir = TestDir::new("trunc");
        let path = dir.path("t.tb");
        let values = random_values(700, 4);
        write_file(&path, &values, 128);
        let bytes = std::fs::read(&path).expect("read");
        let cut = dir.path("cut.tb");
        for len in 0..bytes.len() {
            std::fs::write(&cut, &bytes[..len]).expect("write");
            let res = TablebaseReader::open(&cut).and_then(|mut r| r.verify());
            assert!(res.is_err(), "truncation to {len} bytes not detected");
        }
    }

    #[test]
    fn every_byte_flip_is_detected() {
        let dir = TestDir::new("flip");
        let path = dir.path("f.tb");
        let values = random_values(1000, 6);
        write_file(&path, &values, 256);
        let bytes = std::fs::read(&path).expect("read");
        let bad = dir.path("bad.tb");
        for pos in 0..bytes.len() {
            for mask in [0x01u8, 0x80, 0xFF] {
                let mut b = bytes.clone();
                b[pos] ^= mask;
                std::fs::write(&bad, &b).expect("write");
                let res = TablebaseReader::open(&bad).and_then(|mut r| r.verify());
                assert!(res.is_err(), "flip {mask:#x} at byte {pos} not detected");
                // Probing/reading the file must never panic either.
                if let Ok(mut r) = TablebaseReader::open(&bad) {
                    let _ = r.read_all();
                    for i in (0..1000).step_by(97) {
                        let _ = r.probe(i);
                    }
                }
            }
        }
    }
}
