//! The Peer service: receives one round's update batches from another worker
//! and persists them (fsync, rename) before acknowledging, so a sender may
//! move on as soon as it has the acknowledgement.

use crate::core::Progress;
use crate::store;
use retro_engine::batch::{InboxWriter, batch_crc};
use retro_proto::peer_server::Peer;
use retro_proto::{UpdateAck, UpdateBatch};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tonic::{Request, Response, Status, Streaming};

/// The Peer service of one worker.
pub struct PeerService {
    /// The worker's data directory.
    pub data: PathBuf,
    /// The job name batches must carry.
    pub job: String,
    /// Progress, to drop batches of rounds already committed here.
    pub progress: Arc<Mutex<Progress>>,
}

#[tonic::async_trait]
impl Peer for PeerService {
    async fn send_updates(&self, request: Request<Streaming<UpdateBatch>>) -> Result<Response<UpdateAck>, Status> {
        let mut stream = request.into_inner();
        let mut writer: Option<(InboxWriter, u32, u32, String)> = None;
        let mut received = 0u64;
        while let Some(msg) = stream.message().await? {
            if msg.job != self.job {
                return Err(Status::failed_precondition(format!(
                    "batch for job {:?}, this worker runs {:?}",
                    msg.job, self.job
                )));
            }
            if writer.is_none() {
                let p = *self.progress.lock().expect("progress lock");
                let stale = p.layer.is_some_and(|l| {
                    l > msg.layer || (l == msg.layer && (p.attempt > msg.attempt || p.committed >= msg.round))
                });
                let dir = store::inbox_dir(&self.data, msg.layer);
                std::fs::create_dir_all(&dir).map_err(|e| Status::internal(format!("{}: {e}", dir.display())))?;
                let path = store::inbox_path(&self.data, msg.layer, msg.round, &msg.source_worker);
                let w = InboxWriter::create(&path).map_err(|e| Status::internal(e.to_string()))?;
                writer = Some((w, msg.layer, msg.round, if stale { "stale".into() } else { String::new() }));
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
        match writer {
            Some((w, _, _, stale)) if stale.is_empty() => {
                w.finish().map_err(|e| Status::internal(e.to_string()))?;
            }
            // Dropping an unfinished writer removes its temporary file.
            _ => {}
        }
        Ok(Response::new(UpdateAck { received }))
    }
}
