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
        // Each message staged as it comes (one block held, not the upload),
        // off the runtime's threads.
        let mut stager = crate::merge::UploadStager::default();
        while let Some(b) = blocks.recv().await {
            let scheduler = self.scheduler.clone();
            let (back, taken) = crate::offload::blocking(move || {
                let taken = stager.take(&scheduler, b);
                (stager, taken)
            })
            .await;
            stager = back;
            if let Some(n) = taken.map_err(|e| LinkError::Rejected(e.to_string()))? {
                return Ok(UploadReply { blocks: n });
            }
        }
        Err(LinkError::Rejected("upload ended without its final message".into()))
    }
}
