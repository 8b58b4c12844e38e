//! The three computed layers held compressed in memory, for an analysis that
//! must not need them resident (11.1 GB of 2-bit values at order 2).
//!
//! Each layer's packed values are cut into chunks of [`CHUNK_POSITIONS`]
//! positions and each chunk is one zstd frame. The analysis reads in block
//! order (see [`crate::cc3::analysis::count_orbits`] and the breadth-first
//! scan): a position's three rotated ranks fall in one rank-space block per
//! player to move, and consecutive positions stay in the same three blocks.
//! So a reader keeps, per layer and per player to move, the last two chunks
//! it decoded, and almost every value is a load from a decoded chunk.

use crate::ResultsError;
use crate::cc3::analysis::{LayerReader, LayerValues};
use retro_engine::tablebase::{TablebaseReader, unpack_value};

/// Positions per compressed chunk (a power of two, a multiple of 4: 2 KB of
/// packed values). A block of the order-2 rank space (at most C(31, 3) = 4,495
/// positions) spans at most two chunks; smaller chunks decode faster and
/// compress worse.
pub const CHUNK_POSITIONS: u64 = 1 << 13;

/// zstd level of the chunks: decoding speed barely depends on it.
const CHUNK_ZSTD_LEVEL: i32 = 3;

/// One layer's compressed chunks.
struct Chunks {
    /// The frames, one after another.
    data: Vec<u8>,
    /// `ends[c]`: where chunk `c`'s frame ends in `data`.
    ends: Vec<u64>,
    /// Positions in the layer.
    positions: u64,
}

impl Chunks {
    fn frame(&self, chunk: u64) -> &[u8] {
        let c = chunk as usize;
        let start = if c == 0 { 0 } else { self.ends[c - 1] as usize };
        &self.data[start..self.ends[c] as usize]
    }
}

/// Cuts a stream of packed values into chunks and compresses each.
struct ChunkWriter {
    chunk_bytes: usize,
    pending: Vec<u8>,
    out: Chunks,
    compressor: zstd::bulk::Compressor<'static>,
}

impl ChunkWriter {
    fn new(chunk_positions: u64, positions: u64) -> Result<ChunkWriter, ResultsError> {
        let compressor = zstd::bulk::Compressor::new(CHUNK_ZSTD_LEVEL).map_err(compress_error)?;
        Ok(ChunkWriter {
            chunk_bytes: (chunk_positions / 4) as usize,
            pending: Vec::new(),
            out: Chunks { data: Vec::new(), ends: Vec::new(), positions },
            compressor,
        })
    }

    fn push(&mut self, mut bytes: &[u8]) -> Result<(), ResultsError> {
        while !bytes.is_empty() {
            let take = (self.chunk_bytes - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() == self.chunk_bytes {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ResultsError> {
        let frame = self.compressor.compress(&self.pending).map_err(compress_error)?;
        self.out.data.extend_from_slice(&frame);
        self.out.ends.push(self.out.data.len() as u64);
        self.pending.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<Chunks, ResultsError> {
        if !self.pending.is_empty() {
            self.flush()?;
        }
        self.out.data.shrink_to_fit();
        self.out.ends.shrink_to_fit();
        Ok(self.out)
    }
}

fn compress_error(e: std::io::Error) -> ResultsError {
    ResultsError::Inconsistent(format!("compressing a layer in memory: {e}"))
}

/// The three computed layers (see [`crate::cc3::analysis::COMPUTED_LAYERS`]),
/// compressed chunk by chunk.
pub struct CompressedLayers {
    layers: [Chunks; 3],
    chunk_positions: u64,
    /// Positions per player to move (a third of the rank space).
    third: u64,
}

impl CompressedLayers {
    /// Reads the three layers' tablebase files (every block verified) and
    /// compresses them in chunks of `chunk_positions` positions, one thread per
    /// layer. `third` is the number of positions per player to move.
    pub fn from_tablebases(
        readers: [TablebaseReader; 3],
        third: u64,
        chunk_positions: u64,
    ) -> Result<CompressedLayers, ResultsError> {
        CompressedLayers::from_some_tablebases(readers.map(Some), third, chunk_positions)
    }

    /// [`CompressedLayers::from_tablebases`] for the layers given: a pass
    /// that reads only some (as the known losses of solo(A), from the two
    /// enable layers) does not need the others, and must never read them
    /// (reading an absent layer panics).
    pub fn from_some_tablebases(
        readers: [Option<TablebaseReader>; 3],
        third: u64,
        chunk_positions: u64,
    ) -> Result<CompressedLayers, ResultsError> {
        if !chunk_positions.is_power_of_two() || chunk_positions < 4 {
            return Err(ResultsError::Unsupported(format!(
                "chunks of {chunk_positions} positions: a power of two of at least 4 is needed"
            )));
        }
        let build = |reader: TablebaseReader| -> Result<Chunks, ResultsError> {
            let started = std::time::Instant::now();
            let mut writer = ChunkWriter::new(chunk_positions, reader.header().positions)?;
            reader.for_each_packed(|bytes| writer.push(bytes))?;
            let chunks = writer.finish()?;
            tracing::info!(
                "loaded {}: {} positions in {} chunks, {} bytes compressed in memory, in {:.1}s",
                reader.path().display(),
                chunks.positions,
                chunks.ends.len(),
                chunks.data.len(),
                started.elapsed().as_secs_f64()
            );
            Ok(chunks)
        };
        let absent = || Ok(Chunks { data: Vec::new(), ends: Vec::new(), positions: 3 * third });
        let built: Vec<Result<Chunks, ResultsError>> = std::thread::scope(|s| {
            let handles: Vec<_> = readers
                .into_iter()
                .map(|r| s.spawn(move || if let Some(r) = r { build(r) } else { absent() }))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(ResultsError::Inconsistent("a layer loader panicked".into()))))
                .collect()
        });
        let built = built.into_iter().collect::<Result<Vec<_>, _>>()?;
        let layers: [Chunks; 3] =
            built.try_into().map_err(|_| ResultsError::Inconsistent("three layers expected".to_string()))?;
        if layers.iter().any(|l| l.positions != 3 * third) {
            return Err(ResultsError::Inconsistent(format!(
                "layers of {} positions, expected {}",
                layers.iter().map(|l| l.positions.to_string()).collect::<Vec<_>>().join(", "),
                3 * third
            )));
        }
        Ok(CompressedLayers { layers, chunk_positions, third })
    }

    /// Bytes held: the frames and their index.
    pub fn bytes(&self) -> u64 {
        self.layers.iter().map(|l| (l.data.len() + 8 * l.ends.len()) as u64).sum()
    }
}

impl LayerValues for CompressedLayers {
    type Reader<'a> = ChunkReader<'a>;

    fn reader(&self) -> ChunkReader<'_> {
        ChunkReader {
            store: self,
            shift: self.chunk_positions.trailing_zeros(),
            slots: std::array::from_fn(|_| Slot {
                chunk: u64::MAX,
                values: vec![0; self.chunk_positions as usize / 4],
            }),
            newest: [0; SETS],
            decoder: zstd::bulk::Decompressor::new().expect("a zstd decoding context"),
        }
    }
}

/// Chunk sets of a reader: one per layer and player to move.
const SETS: usize = 9;
/// Chunks kept per set.
const WAYS: usize = 2;

/// A decoded chunk.
struct Slot {
    /// Its index in the layer (`u64::MAX`: none yet).
    chunk: u64,
    /// Its packed values.
    values: Vec<u8>,
}

/// One thread's reader of [`CompressedLayers`], with its decoded chunks.
pub struct ChunkReader<'a> {
    store: &'a CompressedLayers,
    shift: u32,
    /// `slots[set * WAYS + way]`.
    slots: [Slot; SETS * WAYS],
    /// Per set, the way used last (the other one is replaced on a miss).
    newest: [u8; SETS],
    decoder: zstd::bulk::Decompressor<'static>,
}

impl LayerReader for ChunkReader<'_> {
    #[inline]
    fn value(&mut self, layer: usize, rank: u64) -> u8 {
        let chunk = rank >> self.shift;
        let third = self.store.third;
        let mover = (rank >= third) as usize + (rank >= 2 * third) as usize;
        let set = layer * 3 + mover;
        let at = rank & (self.store.chunk_positions - 1);
        let newest = self.newest[set] as usize;
        for way in [newest, 1 - newest] {
            let slot = &self.slots[set * WAYS + way];
            if slot.chunk == chunk {
                self.newest[set] = way as u8;
                return unpack_value(&slot.values, at);
            }
        }
        self.decode(layer, set, chunk, at)
    }
}

impl ChunkReader<'_> {
    #[cold]
    fn decode(&mut self, layer: usize, set: usize, chunk: u64, at: u64) -> u8 {
        let way = 1 - self.newest[set] as usize;
        let chunks = &self.store.layers[layer];
        let slot = &mut self.slots[set * WAYS + way];
        slot.values.resize((self.store.chunk_positions / 4) as usize, 0);
        // The frames were made in this process from verified blocks: failing
        // to decode one is a bug, not bad input.
        let n = self
            .decoder
            .decompress_to_buffer(chunks.frame(chunk), &mut slot.values)
            .expect("a chunk compressed in memory decodes");
        slot.values.truncate(n);
        slot.chunk = chunk;
        self.newest[set] = way as u8;
        unpack_value(&slot.values, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc3::analysis::{self, LayerReader};
    use crate::testutil::TestDir;
    use retro_engine::tablebase::{TablebaseHeader, TablebaseWriter};
    use retro_games::cc3::Cc3;
    use retro_games::sample::XorShift;
    use std::path::Path;

    /// Writes `values` as a tablebase of `block_positions` per block.
    fn write(path: &Path, values: &[u8], block_positions: u64) {
        let header =
            TablebaseHeader::new("cc3", serde_json::json!({}), "test", values.len() as u64, block_positions, "x");
        let mut w = TablebaseWriter::create(path, header).unwrap();
        for block in values.chunks(block_positions as usize) {
            w.push_values(block).unwrap();
        }
        w.finish().unwrap();
    }

    /// Three layers of random values (runs of one value, as real layers
    /// have, and single random ones) written as tablebases.
    fn layers(dir: &Path, positions: usize, block_positions: u64, seed: u64) -> [Vec<u8>; 3] {
        let mut rng = XorShift(seed);
        std::array::from_fn(|layer| {
            let mut values = Vec::with_capacity(positions);
            while values.len() < positions {
                let v = (rng.next_u64() % 4) as u8;
                let run = if rng.next_u64().is_multiple_of(2) { 1 } else { (rng.next_u64() % 200) as usize };
                values.extend(std::iter::repeat_n(v, run.min(positions - values.len())));
            }
            write(&dir.join(format!("{layer}.tb")), &values, block_positions);
            values
        })
    }

    fn open(dir: &Path) -> [TablebaseReader; 3] {
        std::array::from_fn(|layer| TablebaseReader::open(&dir.join(format!("{layer}.tb"))).unwrap())
    }

    /// Flat values behind the analysis's traits, for comparison.
    struct Flat<'a>(&'a [Vec<u8>; 3]);
    impl LayerValues for Flat<'_> {
        type Reader<'a>
            = Flat<'a>
        where
            Self: 'a;
        fn reader(&self) -> Flat<'_> {
            Flat(self.0)
        }
    }
    impl LayerReader for Flat<'_> {
        fn value(&mut self, layer: usize, rank: u64) -> u8 {
            self.0[layer][rank as usize]
        }
    }

    #[test]
    fn every_value_reads_back_in_any_order() {
        let dir = TestDir::new("compressed-layers");
        let dir = dir.path();
        // Block lengths that are and are not multiples of 4 and of the chunk.
        for (third, block_positions, chunk) in
            [(1000u64, 64u64, 64u64), (999, 7, 16), (4000, 1 << 20, 4), (3, 64, 4096)]
        {
            let values = layers(dir, 3 * third as usize, block_positions, third ^ block_positions);
            let store = CompressedLayers::from_tablebases(open(dir), third, chunk).unwrap();
            let mut reader = store.reader();
            // In order, then at random (chunk changes in every set).
            for (layer, values) in values.iter().enumerate() {
                for (rank, &v) in values.iter().enumerate() {
                    assert_eq!(reader.value(layer, rank as u64), v, "{third} {chunk} {rank}");
                }
            }
            let mut rng = XorShift(7);
            for _ in 0..20_000 {
                let (layer, rank) = ((rng.next_u64() % 3) as usize, rng.next_u64() % (3 * third));
                assert_eq!(reader.value(layer, rank), values[layer][rank as usize]);
            }
        }
        let values = layers(dir, 30, 64, 1);
        assert!(CompressedLayers::from_tablebases(open(dir), 11, 64).is_err(), "3 x 11 is not 30");
        assert!(CompressedLayers::from_tablebases(open(dir), 10, 24).is_err(), "24 is not a power of two");
        assert_eq!(values[0].len(), 30);
    }

    #[test]
    fn the_analysis_counts_the_same_from_compressed_layers() {
        let dir = TestDir::new("compressed-analysis");
        let dir = dir.path();
        let g = Cc3::new(1).unwrap();
        let third = g.ranker.placements() as u64;
        let values = layers(dir, 3 * third as usize, 100, 5);
        let flat = Flat(&values);
        let store = CompressedLayers::from_tablebases(open(dir), third, 16).unwrap();
        assert_eq!(analysis::count_all(&g, &store, 2), analysis::count_all(&g, &flat, 2));
        let a = analysis::explore(&g, Some(&store), None, 2, None).unwrap();
        let b = analysis::explore(&g, Some(&flat), None, 2, None).unwrap();
        assert_eq!(a.depths, b.depths);
        assert_eq!(a.reachable, b.reachable);
        assert!(a.reachable.is_some_and(|r| r.positions > 0));
    }
}
