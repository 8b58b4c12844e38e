//! The merge: workers upload the compressed blocks of their shards; the
//! coordinator stages them durably and, when every worker has uploaded, writes
//! the layer's tablebase file in block order.

use crate::CoordinatorError;
use crate::manifest::TablebaseEntry;
use crate::scheduler::{Scheduler, entry, tablebase_file_name};
use retro_engine::durable::write_atomic;
use retro_engine::tablebase::{TablebaseHeader, TablebaseWriter, depth_file_name};
use retro_proto::BlockUpload;
use std::path::PathBuf;

/// Staging directory of a layer's uploads.
pub fn staging_dir(s: &Scheduler, layer: u32) -> PathBuf {
    s.staging.join(format!("layer-{layer}"))
}

/// Stores one worker's blocks (atomically, replacing an earlier attempt):
/// the values in `<worker>.blocks`, the depth bytes in `<worker>.depth-blocks`.
pub fn stage_blocks(s: &Scheduler, layer: u32, worker: &str, blocks: &[BlockUpload]) -> Result<u64, CoordinatorError> {
    let dir = staging_dir(s, layer);
    std::fs::create_dir_all(&dir).map_err(|source| CoordinatorError::File { path: dir.clone(), source })?;
    let values = blocks.iter().map(|b| (b.block_index, b.raw_crc32, b.compressed.as_slice()));
    write_atomic(&dir.join(format!("{worker}.{VALUE_BLOCKS}")), &staged_bytes(values))?;
    let depth = blocks.iter().map(|b| (b.block_index, b.depth_raw_crc32, b.depth_compressed.as_slice()));
    write_atomic(&dir.join(format!("{worker}.{DEPTH_BLOCKS}")), &staged_bytes(depth))?;
    Ok(blocks.len() as u64)
}

/// Extension of a worker's staged value blocks.
const VALUE_BLOCKS: &str = "blocks";
/// Extension of a worker's staged depth blocks.
const DEPTH_BLOCKS: &str = "depth-blocks";

/// A staged file's bytes: per block its index, the crc32 of its raw bytes,
/// its compressed length and the compressed bytes.
fn staged_bytes<'a>(blocks: impl Iterator<Item = (u64, u32, &'a [u8])>) -> Vec<u8> {
    let mut buf = Vec::new();
    for (index, crc, compressed) in blocks {
        buf.extend_from_slice(&index.to_le_bytes());
        buf.extend_from_slice(&crc.to_le_bytes());
        buf.extend_from_slice(&(compressed.len() as u64).to_le_bytes());
        buf.extend_from_slice(compressed);
    }
    buf
}

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
    /// with extension `ext`.
    fn write(&self, ext: &str, header: TablebaseHeader, file: &str) -> Result<TablebaseEntry, CoordinatorError> {
        let dir = &self.dir;
        let total = self.total_blocks;
        let mut blocks: Vec<Option<(u32, Vec<u8>)>> = vec![None; total as usize];
        let entries = std::fs::read_dir(dir).map_err(|source| CoordinatorError::File { path: dir.clone(), source })?;
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().and_then(|x| x.to_str()) != Some(ext) {
                continue;
            }
            let data = std::fs::read(&path).map_err(|source| CoordinatorError::File { path: path.clone(), source })?;
            let bad = || CoordinatorError::DamagedUpload { path: path.clone() };
            let mut at = 0usize;
            while at < data.len() {
                let head = data.get(at..at + 20).ok_or_else(bad)?;
                let idx = u64::from_le_bytes(head[0..8].try_into().expect("8 bytes"));
                let crc = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
                let len = u64::from_le_bytes(head[12..20].try_into().expect("8 bytes")) as usize;
                let body = data.get(at + 20..at + 20 + len).ok_or_else(bad)?;
                let slot = blocks.get_mut(idx as usize).ok_or_else(bad)?;
                if slot.is_some() {
                    return Err(CoordinatorError::BlockTwice { block: idx, path });
                }
                *slot = Some((crc, body.to_vec()));
                at += 20 + len;
            }
        }
        if let Some(missing) = blocks.iter().position(|b| b.is_none()) {
            return Err(CoordinatorError::BlockMissing { block: missing, total });
        }
        std::fs::create_dir_all(&self.output)
            .map_err(|source| CoordinatorError::File { path: self.output.clone(), source })?;
        let mut w = TablebaseWriter::create(&self.output.join(file), header)?;
        for (i, b) in blocks.into_iter().enumerate() {
            let (crc, data) = b.expect("checked above");
            w.push_compressed_block(i as u64, &data, crc)?;
        }
        let info = w.finish()?;
        Ok(entry(file.to_string(), info.bytes, info.sha256))
    }
}
