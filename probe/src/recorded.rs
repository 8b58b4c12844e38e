//! A tablebase file as the job that wrote it recorded it (name, size,
//! SHA-256), and the check that a file on disk is that very file.

use crate::{ProbeError, check_rank_order};
use retro_engine::tablebase::{DepthReader, TablebaseError, TablebaseReader, sha256_file};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A finished tablebase file, as its job recorded it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TablebaseEntry {
    /// File name inside the output directory.
    pub file: String,
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256 of the file (as `sha256sum` prints it).
    pub sha256: String,
}

impl TablebaseEntry {
    /// Opens the file this entry names in `dir` and proves it is the very file
    /// the job wrote for `question`: its size and SHA-256 are the recorded ones,
    /// its header names this layer, this plan and `rank_order`, and every
    /// checksum holds. Each file is self-consistent on its own, so without the
    /// recorded digest a valid tablebase of another layer (or job) copied over
    /// this name would be read as this layer and give a wrong answer silently.
    pub fn open_checked(
        &self,
        dir: &Path,
        question: &str,
        plan_hash: &str,
        rank_order: u32,
    ) -> Result<TablebaseReader, ProbeError> {
        let path = dir.join(&self.file);
        let shown = path.display();
        let restore = "restore the file the job wrote, or solve the plan again into a fresh checkpoint directory";
        // Structure first: a damaged file says what is damaged.
        let reader = TablebaseReader::open(&path)?;
        let header = reader.header();
        if header.layer != question {
            return Err(ProbeError::Mismatch(format!(
                "tablebase {shown} holds layer {}, but the job wrote layer {question} under this name; {restore}",
                header.layer
            )));
        }
        if header.plan_hash != plan_hash {
            return Err(ProbeError::Mismatch(format!(
                "tablebase {shown} was written by a job with plan {}, not this job (plan {plan_hash}); {restore}",
                header.plan_hash
            )));
        }
        check_rank_order(&reader, rank_order)?;
        let io = |what: &'static str| {
            let path = path.clone();
            move |source| TablebaseError::Io { path, what, source }
        };
        let len = std::fs::metadata(&path).map_err(io("size"))?.len();
        if len != self.bytes {
            return Err(ProbeError::Mismatch(format!(
                "tablebase {shown} holds {len} bytes, but the job wrote {} bytes for layer {question}: it is not \
                 the job's file; {restore}",
                self.bytes
            )));
        }
        // The same digest means the same bytes as the file the writer made,
        // so every block and whole-file checksum holds without a second pass.
        let sha = sha256_file(&path).map_err(io("sha256"))?;
        if sha != self.sha256 {
            return Err(ProbeError::Mismatch(format!(
                "tablebase {shown} has sha256 {sha}, but the job recorded {} for layer {question}: the file was \
                 changed after the job wrote it; {restore}",
                self.sha256
            )));
        }
        Ok(reader)
    }

    /// Opens the depth file this entry names in `dir` and proves it is the
    /// one the job wrote for `question`: header (layer, plan), size and
    /// SHA-256 as recorded.
    pub fn open_checked_depth(&self, dir: &Path, question: &str, plan_hash: &str) -> Result<DepthReader, ProbeError> {
        let path = dir.join(&self.file);
        let shown = path.display();
        let restore = "restore the file the job wrote, or solve the plan again into a fresh checkpoint directory";
        let reader = DepthReader::open(&path)?;
        let header = reader.header();
        if header.layer != question || header.plan_hash != plan_hash {
            return Err(ProbeError::Mismatch(format!(
                "depth file {shown} holds layer {} of plan {}, the job wrote layer {question} of plan {plan_hash} \
                 under this name; {restore}",
                header.layer, header.plan_hash
            )));
        }
        let io = |what: &'static str| {
            let path = path.clone();
            move |source| TablebaseError::Io { path, what, source }
        };
        let len = std::fs::metadata(&path).map_err(io("size"))?.len();
        let sha = if len == self.bytes { sha256_file(&path).map_err(io("sha256"))? } else { String::new() };
        if sha != self.sha256 {
            return Err(ProbeError::Mismatch(format!(
                "depth file {shown} ({len} bytes) is not the file the job wrote for layer {question} ({} bytes, \
                 sha256 {}); {restore}",
                self.bytes, self.sha256
            )));
        }
        Ok(reader)
    }
}
