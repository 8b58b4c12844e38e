//! The in-process link: an embedded worker calls the scheduler directly, so
//! the embedded run and the cluster run share every line of scheduling code.

use crate::scheduler::Scheduler;
use retro_proto::{BlockUpload, JoinReply, JoinRequest, PullReply, PullRequest, UploadReply};
use retro_worker::link::{CoordinatorLink, LinkError};
use std::sync::Arc;
use tokio::sync::mpsc;

/// A [`CoordinatorLink`] without a socket.
pub struct InProcessLink {
    /// The scheduler.
    pub scheduler: Arc<Scheduler>,
}

impl CoordinatorLink for InProcessLink {
    async fn join(&self, req: JoinRequest) -> Result<JoinReply, LinkError> {
        crate::service::check_join(&req, &self.scheduler.spec.plan_hash)
            .map_err(|e| LinkError::Rejected(e.message().to_string()))?;
        let scheduler = self.scheduler.clone();
        crate::offload::blocking(move || scheduler.join(req)).await.map_err(|e| LinkError::Rejected(e.to_string()))
    }

    async fn pull(&self, req: PullRequest) -> Result<PullReply, LinkError> {
        Ok(self.scheduler.pull(req).await)
    }

    async fn upload(&self, mut blocks: mpsc::Receiver<BlockUpload>) -> Result<UploadReply, LinkError> {
        let mut got = Vec::new();
        while let Some(b) = blocks.recv().await {
            if b.last {
                if b.blocks_sent != got.len() as u64 {
                    return Err(LinkError::Rejected("upload ended early".into()));
                }
                let head = BlockUpload { compressed: Vec::new(), depth_compressed: Vec::new(), ..b };
                let scheduler = self.scheduler.clone();
                let n = crate::offload::blocking(move || scheduler.accept_upload(&head, got))
                    .await
                    .map_err(|e| LinkError::Rejected(e.to_string()))?;
                return Ok(UploadReply { blocks: n });
            }
            got.push(b);
        }
        Err(LinkError::Rejected("upload ended without its final message".into()))
    }
}
