//! The Peer service: receives one round's update batches from another worker
//! and persists them (fsync, rename) before acknowledging, so a sender may
//! move on as soon as it has the acknowledgement.
//!
//! Two processes may send as one worker for a while: a worker frozen (not
//! dead) while a copy of its data directory joined in its place. The
//! coordinator refuses the stale one at its next join; until then its
//! streams are refused here by their generation (a newer one from the same
//! worker id has been seen), and the streams of one inbox file are written
//! one after the other, never into the same temporary file at once.

use crate::steps::Watermark;
use crate::store;
use retro_engine::batch::{InboxWriter, batch_crc};
use retro_proto::peer_server::Peer;
use retro_proto::{UpdateAck, UpdateBatch};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tonic::{Request, Response, Status, Streaming};

/// The Peer service of one worker.
pub struct PeerService {
    /// The worker's data directory.
    pub data: PathBuf,
    /// The job name batches must carry.
    pub job: String,
    /// The watermark, to drop batches of rounds already committed here.
    pub progress: Arc<Mutex<Watermark>>,
    /// The newest generation seen from each sender, and one lock per inbox
    /// file being written.
    pub fence: SenderFence,
}

/// What the Peer service knows of its senders across streams.
#[derive(Default)]
pub struct SenderFence {
    newest: Mutex<HashMap<String, u64>>,
    writing: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

impl SenderFence {
    /// Records `generation` of `sender`; an error when a newer one was seen.
    fn admit(&self, sender: &str, generation: u64) -> Result<(), Status> {
        let mut newest = self.newest.lock().expect("fence lock");
        let seen = newest.entry(sender.to_string()).or_insert(generation);
        if generation < *seen {
            return Err(Status::failed_precondition(format!(
                "updates from worker {sender} of generation {generation}, but generation {} of it already sent \
                 here: this sender is a stale copy of that worker and is refused",
                *seen
            )));
        }
        *seen = generation;
        Ok(())
    }

    /// The lock of the inbox file at `path` (one writer at a time).
    fn file_lock(&self, path: &std::path::Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut writing = self.writing.lock().expect("fence lock");
        // Locks nobody holds or waits for are dropped as they are passed.
        writing.retain(|_, l| Arc::strong_count(l) > 1);
        writing.entry(path.to_path_buf()).or_default().clone()
    }
}

#[tonic::async_trait]
impl Peer for PeerService {
    async fn send_updates(&self, request: Request<Streaming<UpdateBatch>>) -> Result<Response<UpdateAck>, Status> {
        let mut stream = request.into_inner();
        // Declared before the writer, so that on an early return the writer
        // (and its temporary file) goes before the file's lock is released.
        let mut file_guard = None;
        // The writer, its layer and round, and whether the batch is stale (for a
        // round this worker has committed already: read to the end, not kept).
        let mut writer: Option<(InboxWriter, u32, u32, bool)> = None;
        let mut sender: Option<(String, u64)> = None;
        let mut received = 0u64;
        while let Some(msg) = stream.message().await? {
            if msg.job != self.job {
                return Err(Status::failed_precondition(format!(
                    "batch for job {:?}, this worker runs {:?}",
                    msg.job, self.job
                )));
            }
            if writer.is_none() {
                self.fence.admit(&msg.source_worker, msg.source_generation)?;
                sender = Some((msg.source_worker.clone(), msg.source_generation));
                let path = store::inbox_path(&self.data, msg.layer, msg.round, &msg.source_worker);
                file_guard = Some(self.fence.file_lock(&path).lock_owned().await);
                let p = *self.progress.lock().expect("progress lock");
                let stale = p.layer.is_some_and(|l| {
                    l > msg.layer || (l == msg.layer && (p.attempt > msg.attempt || p.committed >= msg.round))
                });
                let dir = store::inbox_dir(&self.data, msg.layer);
                std::fs::create_dir_all(&dir).map_err(|e| Status::internal(format!("{}: {e}", dir.display())))?;
                let w = InboxWriter::create(&path).map_err(|e| Status::internal(e.to_string()))?;
                writer = Some((w, msg.layer, msg.round, stale));
            }
            let (w, layer, round, _) = writer.as_mut().expect("created above");
            if msg.layer != *layer || msg.round != *round {
                return Err(Status::invalid_argument("one stream carries one layer and round"));
            }
            if msg.last {
                if msg.total != received {
                    return Err(Status::data_loss(format!("stream ended with {received} of {} updates", msg.total)));
                }
                break;
            }
            if batch_crc(&msg.payload) != msg.crc32 {
                return Err(Status::data_loss(format!("batch for shard {} fails its checksum", msg.shard)));
            }
            w.append(msg.shard, msg.count, &msg.payload).map_err(|e| Status::internal(e.to_string()))?;
            received += msg.count;
        }
        // Taken out here so that a writer not finished (a stale batch) is
        // dropped, removing its temporary file, before the file's lock goes.
        if let Some((w, _, _, stale)) = writer.take()
            && !stale
        {
            // A newer copy of the sender may have spoken while this
            // stream ran: its file wins.
            if let Some((from, generation)) = &sender {
                self.fence.admit(from, *generation)?;
            }
            // The fsync and rename off the runtime's threads, which serve
            // every other stream meanwhile.
            tokio::task::spawn_blocking(move || w.finish())
                .await
                .map_err(|e| Status::internal(format!("the inbox writer's thread failed: {e}")))?
                .map_err(|e| Status::internal(e.to_string()))?;
        }
        drop(file_guard);
        Ok(Response::new(UpdateAck { received }))
    }
}
