//! What keeps one request from holding up the others.
//!
//! - **Slots.** Each kind of search ([`Work`]: tablebase positions and
//!   witnesses, peg searches, Sylver solves) has its own few slots (the
//!   cores, at most 8). A request waits for one at most [`Limits::queue_wait`]
//!   and is then answered 503 with a JSON message: a flood of one kind is
//!   turned away at once instead of piling up blocking threads, and cannot
//!   take the slots of another kind. `/api/info` and the peg ledger and
//!   problem table take no slot at all (they are answered from memory).
//! - **A deadline.** A search stops after [`Limits::deadline`] of wall time and
//!   answers with what it has, saying so.
//! - **A stop flag.** The handler holds a [`CancelOnDrop`] while it waits for
//!   the search; hyper drops the handler when the client hangs up, and the
//!   flag stops the search at its next check, which frees its slot.
//!
//! A search checks [`Stop::check`] between pieces of work: a Sylver solve every
//! [`super::sylver::CHUNK`] memo positions, a peg search between finishing
//! holes, a depth search every 1024 positions. A witness search and a wait
//! for the tablebase readers' lock have no check; they hold their slot until
//! they end, and the handler answers 503 once the deadline and a grace
//! period have passed.

use super::ApiError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The explorer's limits on work per request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Searches of one [`Work`] kind running at once.
    pub slots: usize,
    /// How long a request waits for a slot before it is answered 503.
    pub queue_wait: Duration,
    /// Wall time one request's search may take; then it stops and answers
    /// with what it has.
    pub deadline: Duration,
}

impl Default for Limits {
    /// One slot per core (at most 8), a second's wait for one, 10 s per search.
    fn default() -> Limits {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Limits { slots: cores.clamp(1, 8), queue_wait: Duration::from_secs(1), deadline: Duration::from_secs(10) }
    }
}

/// A kind of search, with its own slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// `/api/position` and `/api/witness` (tablebase reads and depth searches).
    Tablebase,
    /// `/api/peg/position` (one bounded search per finishing hole).
    Peg,
    /// `/api/sylver/position` (a capped solve).
    Sylver,
}

impl Work {
    fn index(self) -> usize {
        match self {
            Work::Tablebase => 0,
            Work::Peg => 1,
            Work::Sylver => 2,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Work::Tablebase => "tablebase",
            Work::Peg => "peg solitaire",
            Work::Sylver => "Sylver coinage",
        }
    }
}

/// The slots of every [`Work`] kind.
pub struct Slots {
    limits: Limits,
    pools: [Arc<Semaphore>; 3],
}

impl Slots {
    /// Slots as `limits` says (at least one per kind).
    pub fn new(limits: Limits) -> Slots {
        let n = limits.slots.max(1);
        Slots { pools: std::array::from_fn(|_| Arc::new(Semaphore::new(n))), limits }
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Searches of kind `work` running now.
    pub fn busy(&self, work: Work) -> usize {
        self.limits.slots.max(1) - self.pools[work.index()].available_permits()
    }

    /// A slot for `work`, waiting at most the queue wait; 503 when none frees up.
    pub async fn acquire(&self, work: Work) -> Result<OwnedSemaphorePermit, ApiError> {
        let pool = Arc::clone(&self.pools[work.index()]);
        match tokio::time::timeout(self.limits.queue_wait, pool.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(ApiError::busy(format!(
                "busy: {} {} searches are running (the explorer runs at most that many at once); try again shortly",
                self.limits.slots.max(1),
                work.what()
            ))),
        }
    }
}

/// Why a search stopped before it was done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halt {
    /// The client went away (nobody reads the answer).
    Gone,
    /// The request's deadline passed.
    Deadline,
}

/// What a search checks between pieces of work: whether its client went
/// away or its deadline passed.
#[derive(Clone, Debug)]
pub struct Stop {
    gone: Arc<AtomicBool>,
    deadline: Option<Instant>,
    limit: Duration,
}

impl Stop {
    /// A stop signal with a deadline `limit` from now, and the guard that
    /// raises it when dropped.
    pub fn new(limit: Duration) -> (Stop, CancelOnDrop) {
        let gone = Arc::new(AtomicBool::new(false));
        let stop = Stop { gone: Arc::clone(&gone), deadline: Instant::now().checked_add(limit), limit };
        (stop, CancelOnDrop(gone))
    }

    /// A signal that never stops anything (unit tests, callers outside a request).
    pub fn never() -> Stop {
        Stop { gone: Arc::new(AtomicBool::new(false)), deadline: None, limit: Duration::MAX }
    }

    /// Why the search must stop now, if it must.
    pub fn check(&self) -> Option<Halt> {
        if self.gone.load(Ordering::Relaxed) {
            Some(Halt::Gone)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Halt::Deadline)
        } else {
            None
        }
    }

    /// The wall time the request was given.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// `halt` in words, for an answer's reason or note.
    pub fn describe(&self, halt: Halt) -> String {
        match halt {
            Halt::Gone => "stopped: the client went away".into(),
            Halt::Deadline => {
                format!("stopped after {} s, the explorer's time limit per request", self.limit.as_secs_f64())
            }
        }
    }
}

/// Raises its [`Stop`]'s flag when dropped. A handler holds one while it
/// waits for its search; hyper drops the handler when the client hangs up.
pub struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_when_the_guard_drops_or_the_deadline_passes() {
        let (stop, guard) = Stop::new(Duration::from_secs(60));
        assert_eq!(stop.check(), None);
        drop(guard);
        assert_eq!(stop.check(), Some(Halt::Gone));
        let (stop, _guard) = Stop::new(Duration::ZERO);
        assert_eq!(stop.check(), Some(Halt::Deadline));
        assert!(stop.describe(Halt::Deadline).contains("after 0 s"), "{}", stop.describe(Halt::Deadline));
        assert_eq!(Stop::never().check(), None);
        let (stop, _guard) = Stop::new(Duration::from_millis(2500));
        assert!(stop.describe(Halt::Deadline).contains("after 2.5 s"));
    }

    #[tokio::test]
    async fn a_full_kind_answers_busy_and_leaves_the_others_alone() {
        let slots = Slots::new(Limits { slots: 1, queue_wait: Duration::from_millis(50), deadline: Duration::MAX });
        let held = slots.acquire(Work::Sylver).await.unwrap();
        assert_eq!(slots.busy(Work::Sylver), 1);
        let e = slots.acquire(Work::Sylver).await.unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::SERVICE_UNAVAILABLE);
        assert!(e.message.contains("1 Sylver coinage searches"), "{}", e.message);
        let peg = slots.acquire(Work::Peg).await.unwrap();
        drop(held);
        assert_eq!(slots.busy(Work::Sylver), 0);
        let again = slots.acquire(Work::Sylver).await.unwrap();
        drop((again, peg));
    }
}
