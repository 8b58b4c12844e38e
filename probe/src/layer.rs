//! One layer's tablebase file, shared by many threads: each lookup takes
//! `&self`, and the last block read is kept, so a caller walking nearby
//! positions (a depth search, a line of play) decodes each block once.

use crate::{ProbeError, Value};
use retro_engine::tablebase::{TablebaseReader, unpack_value};
use std::sync::{Arc, Mutex};

/// A tablebase file with a one-block cache behind a short lock (held only to
/// look at or replace the cached block, never while a block is read).
pub struct Layer {
    reader: TablebaseReader,
    last: Mutex<Option<(u64, Arc<Vec<u8>>)>>,
}

impl Layer {
    /// Wraps an opened file.
    pub fn new(reader: TablebaseReader) -> Layer {
        Layer { reader, last: Mutex::new(None) }
    }

    /// The file.
    pub fn reader(&self) -> &TablebaseReader {
        &self.reader
    }

    /// The value at `rank`.
    pub fn value(&self, rank: u64) -> Result<Value, ProbeError> {
        let (block, at) = self.reader.locate(rank)?;
        let cached = {
            let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            last.as_ref().filter(|(b, _)| *b == block).map(|(_, packed)| Arc::clone(packed))
        };
        let packed = match cached {
            Some(p) => p,
            None => {
                let p = Arc::new(self.reader.read_block(block)?);
                *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((block, Arc::clone(&p)));
                p
            }
        };
        Ok(Value::from_code(unpack_value(&packed, at)))
    }
}
