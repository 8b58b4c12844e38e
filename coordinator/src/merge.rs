//! The merge: workers upload the compressed blocks of their shards; the
//! coordinator stages them durably and, when every worker has uploaded, writes
//! the layer's tablebase file in block order.

use crate::CoordinatorError;
use crate::manifest::TablebaseEntry;
use crate::scheduler::{Scheduler, entry, tablebase_file_name};
use retro_engine::tablebase::{TablebaseHeader, TablebaseWriter, depth_file_name};
use retro_proto::BlockUpload;
use std::path::PathBuf;

/// Staging directory of a layer's uploads.
pub fn staging_dir(s: &Scheduler, layer: u32) -> PathBuf {
    s.staging.join(format!("layer-{layer}"))
}

/// One worker's upload of a layer, staged as it arrives: each block goes to
/// the staging files at once, so the coordinator holds one block of an upload,
/// not all of it (gigabytes at stage 2, with the depth bytes); the last
/// message checks the count and puts the values in `<worker>.blocks` and the
/// depth bytes in `<worker>.depth-blocks`, each atomically, replacing an
/// earlier attempt's.
#[derive(Default)]
pub struct UploadStager {
    open: Option<OpenUpload>,
    blocks: u64,
    done: bool,
}

/// An upload under way: its first message without the block, and its files.
struct OpenUpload {
    head: BlockUpload,
    values: StagingFile,
    depth: StagingFile,
}

impl UploadStager {
    /// Takes the upload's next message: `Some(blocks)` when it was the last
    /// and the upload is in place. The first is checked against the job (a
    /// current worker, the layer being exported), and so is the last, for
    /// the phase may move on during a long upload.
    pub fn take(&mut self, s: &Scheduler, msg: BlockUpload) -> Result<Option<u64>, CoordinatorError> {
        if self.done {
            return Err(CoordinatorError::Mismatch("a message after the upload's last".into()));
        }
        if self.open.is_none() {
            s.check_upload(&msg)?;
            let dir = staging_dir(s, msg.layer);
            std::fs::create_dir_all(&dir).map_err(|source| CoordinatorError::File { path: dir.clone(), source })?;
            let named = |ext: &str| dir.join(format!("{}.{ext}", msg.worker_id));
            let (values, depth) =
                (StagingFile::create(named(VALUE_BLOCKS))?, StagingFile::create(named(DEPTH_BLOCKS))?);
            let head = BlockUpload { compressed: Vec::new(), depth_compressed: Vec::new(), ..msg.clone() };
            self.open = Some(OpenUpload { head, values, depth });
        }
        let open = self.open.as_mut().expect("opened above");
        let h = &open.head;
        if (&msg.job, &msg.worker_id, msg.epoch, msg.layer) != (&h.job, &h.worker_id, h.epoch, h.layer) {
            return Err(CoordinatorError::Mismatch(
                "an upload's messages name one job, worker, epoch and layer".into(),
            ));
        }
        if !msg.last {
            open.values.push(msg.block_index, msg.raw_crc32, &msg.compressed)?;
            open.depth.push(msg.block_index, msg.depth_raw_crc32, &msg.depth_compressed)?;
            self.blocks += 1;
            return Ok(None);
        }
        if msg.blocks_sent != self.blocks {
            return Err(CoordinatorError::Mismatch(format!(
                "upload ended early: {} blocks announced, {} received",
                msg.blocks_sent, self.blocks
            )));
        }
        let open = self.open.take().expect("opened above");
        s.check_upload(&open.head)?;
        open.values.commit()?;
        open.depth.commit()?;
        self.done = true;
        Ok(Some(self.blocks))
    }
}

/// A staged file being written: each block its index, the crc32 of its raw
/// bytes, its compressed length and the compressed bytes; written under a
/// temporary name until [`StagingFile::commit`].
struct StagingFile {
    path: PathBuf,
    tmp: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

impl StagingFile {
    fn create(path: PathBuf) -> Result<StagingFile, CoordinatorError> {
        let tmp = retro_engine::durable::tmp_path(&path);
        let file =
            std::fs::File::create(&tmp).map_err(|source| CoordinatorError::File { path: tmp.clone(), source })?;
        Ok(StagingFile { path, tmp, out: std::io::BufWriter::with_capacity(1 << 20, file) })
    }

    fn push(&mut self, index: u64, crc: u32, compressed: &[u8]) -> Result<(), CoordinatorError> {
        use std::io::Write;
        let mut head = [0u8; 20];
        head[0..8].copy_from_slice(&index.to_le_bytes());
        head[8..12].copy_from_slice(&crc.to_le_bytes());
        head[12..20].copy_from_slice(&(compressed.len() as u64).to_le_bytes());
        let written = self.out.write_all(&head).and_then(|()| self.out.write_all(compressed));
        written.map_err(|source| CoordinatorError::File { path: self.tmp.clone(), source })
    }

    /// Flushes and syncs the file, then renames it into place durably.
    fn commit(self) -> Result<(), CoordinatorError> {
        let StagingFile { path, tmp, out } = self;
        let failed = |source| CoordinatorError::File { path: tmp.clone(), source };
        let file = out.into_inner().map_err(|e| failed(e.into_error()))?;
        file.sync_all().map_err(failed)?;
        std::fs::rename(&tmp, &path).map_err(|source| CoordinatorError::File { path: path.clone(), source })?;
        retro_engine::durable::fsync_parent_dir(&path).map_err(|source| CoordinatorError::File { path, source })
    }
}

/// Extension of a worker's staged value blocks.
const VALUE_BLOCKS: &str = "blocks";
/// Extension of a worker's staged depth blocks.
const DEPTH_BLOCKS: &str = "depth-blocks";

/// Everything the merge of one layer reads, taken from the scheduler under its
/// lock in no time, so that the merge itself (reading every staged upload and
/// writing the tablebase: minutes at stage 2) runs on a thread of its own
/// with no lock held ([`MergeJob::run`]).
#[derive(Debug)]
pub struct MergeJob {
    dir: PathBuf,
    total_blocks: u64,
    header: TablebaseHeader,
    output: PathBuf,
    file: String,
}

impl MergeJob {
    /// The merge of `layer`'s staged uploads into its tablebase file.
    pub fn of(s: &Scheduler, layer: u32) -> MergeJob {
        let question = &s.spec.questions[layer as usize];
        let header = TablebaseHeader::new(
            s.spec.game.to_string(),
            s.spec.params(),
            question.clone(),
            s.layout.positions,
            s.layout.block_positions,
            s.spec.plan_hash.clone(),
        );
        MergeJob {
            dir: staging_dir(s, layer),
            total_blocks: s.layout.blocks(),
            header,
            output: s.output.clone(),
            file: tablebase_file_name(question),
        }
    }

    /// Writes the tablebase from the staged blocks, in block order, then
    /// its depth file from the staged depth blocks.
    pub fn run(self) -> Result<(TablebaseEntry, TablebaseEntry), CoordinatorError> {
        let values = self.write(VALUE_BLOCKS, self.header.clone(), &self.file)?;
        let depth_file = depth_file_name(&self.header.layer);
        let depth = self.write(DEPTH_BLOCKS, self.header.for_depth(), &depth_file)?;
        Ok((values, depth))
    }

    /// Writes the file `file` of `header` from every worker's staged blocks
    /// with extension `ext`: first where each block lies (one pass over the
    /// staged files' heads), then each block read in its turn, so the merge
    /// holds one block, not the layer.
    fn write(&self, ext: &str, header: TablebaseHeader, file: &str) -> Result<TablebaseEntry, CoordinatorError> {
        use std::io::{Read, Seek, SeekFrom};
        let dir = &self.dir;
        let total = self.total_blocks;
        let mut staged: Vec<(PathBuf, std::fs::File)> = Vec::new();
        let mut blocks: Vec<Option<StagedBlock>> = vec![None; total as usize];
        let entries = std::fs::read_dir(dir).map_err(|source| CoordinatorError::File { path: dir.clone(), source })?;
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().and_then(|x| x.to_str()) != Some(ext) {
                continue;
            }
            let io = |source| CoordinatorError::File { path: path.clone(), source };
            let mut f = std::fs::File::open(&path).map_err(io)?;
            let size = f.metadata().map_err(io)?.len();
            let bad = || CoordinatorError::DamagedUpload { path: path.clone() };
            let mut reader = std::io::BufReader::new(&mut f);
            let mut at = 0u64;
            while at < size {
                let mut head = [0u8; 20];
                reader.read_exact(&mut head).map_err(|_| bad())?;
                let idx = u64::from_le_bytes(head[0..8].try_into().expect("8 bytes"));
                let crc = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
                let len = u64::from_le_bytes(head[12..20].try_into().expect("8 bytes"));
                let body = at + 20;
                if len > size - body {
                    return Err(bad());
                }
                let slot = blocks.get_mut(idx as usize).ok_or_else(bad)?;
                if slot.is_some() {
                    return Err(CoordinatorError::BlockTwice { block: idx, path });
                }
                *slot = Some(StagedBlock { file: staged.len(), offset: body, len, crc });
                reader.seek_relative(len as i64).map_err(io)?;
                at = body + len;
            }
            drop(reader);
            staged.push((path, f));
        }
        if let Some(missing) = blocks.iter().position(|b| b.is_none()) {
            return Err(CoordinatorError::BlockMissing { block: missing, total });
        }
        std::fs::create_dir_all(&self.output)
            .map_err(|source| CoordinatorError::File { path: self.output.clone(), source })?;
        let mut w = TablebaseWriter::create(&self.output.join(file), header)?;
        let mut data = Vec::new();
        for (i, b) in blocks.into_iter().enumerate() {
            let b = b.expect("checked above");
            let (path, f) = &mut staged[b.file];
            data.resize(b.len as usize, 0);
            let read = f.seek(SeekFrom::Start(b.offset)).and_then(|_| f.read_exact(&mut data));
            read.map_err(|source| CoordinatorError::File { path: path.clone(), source })?;
            w.push_compressed_block(i as u64, &data, b.crc)?;
        }
        let info = w.finish()?;
        Ok(entry(file.to_string(), info.bytes, info.sha256))
    }
}

/// Where one block lies among a layer's staged files.
#[derive(Clone, Copy)]
struct StagedBlock {
    /// Which staged file.
    file: usize,
    /// Where its compressed bytes start in it.
    offset: u64,
    /// How many there are.
    len: u64,
    /// The crc32 of its raw bytes.
    crc: u32,
}
