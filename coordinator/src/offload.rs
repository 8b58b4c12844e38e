//! Work that may block (a job's lock held across a manifest write, file
//! I/O, fsync) runs on the runtime's blocking threads, never on the threads
//! that drive every connection: a slow disk must not stall the other
//! workers' calls, their heartbeats or `/status`.

/// Runs `work` on a blocking thread and returns its result; a panic in it
/// goes on in the caller, as if `work` had run there.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    rejoin(tokio::task::spawn_blocking(work).await)
}

/// The result of a blocking task; its panic goes on in the caller. (Blocking
/// tasks are never cancelled, so a join error is a panic.)
fn rejoin<T>(joined: Result<T, tokio::task::JoinError>) -> T {
    joined.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// Hands the messages of a client stream, in order, to `sink` on a blocking
/// thread (a few messages ahead of it), until the stream ends or `sink`
/// fails; returns how many `sink` took. An error of `sink` comes first, then
/// one of the stream.
pub async fn drain<T: Send + 'static>(
    mut stream: tonic::Streaming<T>,
    mut sink: impl FnMut(T) -> Result<(), tonic::Status> + Send + 'static,
) -> Result<u64, tonic::Status> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<T>(4);
    let taken = tokio::task::spawn_blocking(move || {
        let mut n = 0;
        while let Some(message) = rx.blocking_recv() {
            sink(message)?;
            n += 1;
        }
        Ok::<u64, tonic::Status>(n)
    });
    let read = async {
        while let Some(message) = stream.message().await? {
            if tx.send(message).await.is_err() {
                break; // the sink failed: its error is the answer
            }
        }
        Ok::<(), tonic::Status>(())
    }
    .await;
    drop(tx);
    // Spawned at once, not through `blocking` (lazy until polled): the sink
    // must run while the stream is read, or the channel fills and stalls.
    let n = rejoin(taken.await)?;
    read?;
    Ok(n)
}
