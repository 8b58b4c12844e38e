//! The workers of a distributed job as the coordinator sees them: who joined,
//! with which epoch, when each was last heard from, and who is presumed lost.
//! Retrograde, level and task jobs keep their workers in one [`Roster`], so a
//! join, a heartbeat and a lost worker mean the same in every kind of job, and
//! `/status` reports them the same way.
//!
//! The roster is plain data behind the job's own lock: it decides nothing
//! about shards or units. A job asks it [`Roster::sweep`] which workers fell
//! silent and then does what its kind does with a lost worker (wait for it,
//! hand its unit to another, let `--replace` take its place).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often the log repeats that a job waits for a lost worker.
pub const LOST_REMINDER: Duration = Duration::from_secs(300);

/// One worker.
#[derive(Clone, Debug)]
pub struct Member {
    /// Changes at every join, so a message from an earlier process of the
    /// same worker is recognised.
    pub epoch: u64,
    /// When it was last heard from.
    pub last_seen: Instant,
    /// Silent for longer than the heartbeat timeout (until heard from again).
    pub lost: bool,
    /// When the log last said that the job waits for it (while lost).
    last_warned: Instant,
}

/// What a call from a worker tells the roster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heard {
    /// A current member: its last-seen time is updated.
    Current,
    /// A current member that had been presumed lost and is back.
    Back,
    /// A known id with another epoch (a message from an earlier process).
    Stale,
    /// An id this roster does not know (the coordinator restarted, or the
    /// worker never joined): it must join again.
    Unknown,
}

/// What [`Roster::sweep`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Workers that have just passed the heartbeat timeout.
    pub newly_lost: Vec<String>,
    /// Workers lost for a while, with how long they have been silent, due a
    /// reminder in the log (every [`LOST_REMINDER`]).
    pub still_lost: Vec<(String, Duration)>,
}

/// One worker as `/status` shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MemberView {
    /// Worker id.
    pub id: String,
    /// Seconds since it was last heard from.
    pub seconds_since_seen: f64,
    /// Presumed lost.
    pub lost: bool,
}

/// The workers of one job.
#[derive(Debug)]
pub struct Roster {
    members: BTreeMap<String, Member>,
    timeout: Duration,
    next_epoch: u64,
    joins: u64,
    losses: u64,
}

impl Roster {
    /// An empty roster whose workers count as lost after `timeout` of silence.
    pub fn new(timeout: Duration) -> Roster {
        Roster { members: BTreeMap::new(), timeout, next_epoch: 1, joins: 0, losses: 0 }
    }

    /// The heartbeat timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How often a worker should call when it has nothing else to say: three
    /// calls per timeout, between 100 ms and a minute.
    pub fn heartbeat_interval(&self) -> Duration {
        (self.timeout / 3).clamp(Duration::from_millis(100), Duration::from_secs(60))
    }

    /// Admits `id` (new, or back after a restart of either side) with a fresh
    /// epoch, which it returns.
    pub fn admit(&mut self, id: &str) -> u64 {
        let epoch = self.next_epoch;
        self.next_epoch += 1;
        self.joins += 1;
        let now = Instant::now();
        self.members.insert(id.to_string(), Member { epoch, last_seen: now, lost: false, last_warned: now });
        epoch
    }

    /// Records a call from `id`; with `epoch`, only a call of its current
    /// epoch counts.
    pub fn heard(&mut self, id: &str, epoch: Option<u64>) -> Heard {
        let Some(m) = self.members.get_mut(id) else { return Heard::Unknown };
        if epoch.is_some_and(|e| e != m.epoch) {
            return Heard::Stale;
        }
        m.last_seen = Instant::now();
        if std::mem::take(&mut m.lost) { Heard::Back } else { Heard::Current }
    }

    /// Marks workers silent for longer than the timeout as lost, and says
    /// which have just been lost and which are due a reminder.
    pub fn sweep(&mut self) -> Sweep {
        let mut out = Sweep::default();
        for (id, m) in &mut self.members {
            let silent = m.last_seen.elapsed();
            if !m.lost && silent > self.timeout {
                m.lost = true;
                m.last_warned = Instant::now();
                self.losses += 1;
                out.newly_lost.push(id.clone());
            } else if m.lost && m.last_warned.elapsed() > LOST_REMINDER {
                m.last_warned = Instant::now();
                out.still_lost.push((id.clone(), silent));
            }
        }
        out
    }

    /// Forgets `id` (replaced by another worker).
    pub fn remove(&mut self, id: &str) -> Option<Member> {
        self.members.remove(id)
    }

    /// The member `id`.
    pub fn get(&self, id: &str) -> Option<&Member> {
        self.members.get(id)
    }

    /// Whether `id` is a member whose current epoch is `epoch`.
    pub fn is_current(&self, id: &str, epoch: u64) -> bool {
        self.members.get(id).is_some_and(|m| m.epoch == epoch)
    }

    /// Whether `id` is a member not presumed lost.
    pub fn is_alive(&self, id: &str) -> bool {
        self.members.get(id).is_some_and(|m| !m.lost)
    }

    /// Members, by id.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Member)> {
        self.members.iter()
    }

    /// Members in the roster.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// No member yet.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Members not presumed lost.
    pub fn active(&self) -> usize {
        self.members.values().filter(|m| !m.lost).count()
    }

    /// Members presumed lost now.
    pub fn lost(&self) -> usize {
        self.members.values().filter(|m| m.lost).count()
    }

    /// Joins since this process started (restarts and rejoins included).
    pub fn joins(&self) -> u64 {
        self.joins
    }

    /// Times a worker was presumed lost since this process started.
    pub fn losses(&self) -> u64 {
        self.losses
    }

    /// Every member as `/status` shows it.
    pub fn views(&self) -> Vec<MemberView> {
        self.members
            .iter()
            .map(|(id, m)| MemberView {
                id: id.clone(),
                seconds_since_seen: m.last_seen.elapsed().as_secs_f64(),
                lost: m.lost,
            })
            .collect()
    }
}

/// A fresh worker id for a job whose workers keep no id of their own between
/// runs (or for the first join): `prefix`, the join count, and a few random
/// hex digits so ids from two coordinator processes do not collide.
pub fn fresh_id(prefix: &str, n: usize) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("{prefix}{n}-{:08x}", nanos ^ std::process::id().rotate_left(16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_heartbeat_loss_and_return() {
        let mut r = Roster::new(Duration::from_millis(30));
        let e1 = r.admit("w0");
        let e2 = r.admit("w1");
        assert_ne!(e1, e2);
        assert_eq!((r.len(), r.active(), r.lost(), r.joins()), (2, 2, 0, 2));
        assert_eq!(r.heard("w0", Some(e1)), Heard::Current);
        assert_eq!(r.heard("w0", Some(e2)), Heard::Stale);
        assert_eq!(r.heard("w9", None), Heard::Unknown);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(r.heard("w1", None), Heard::Current);
        let s = r.sweep();
        assert_eq!(s.newly_lost, vec!["w0".to_string()]);
        assert!(s.still_lost.is_empty());
        assert_eq!((r.active(), r.lost(), r.losses()), (1, 1, 1));
        assert!(!r.is_alive("w0") && r.is_alive("w1"));
        // A second sweep does not count the same loss again.
        assert!(r.sweep().newly_lost.is_empty());
        assert_eq!(r.heard("w0", Some(e1)), Heard::Back);
        assert_eq!((r.active(), r.lost(), r.losses()), (2, 0, 1));
        // A rejoin gets a new epoch: messages of the old one are stale.
        let e3 = r.admit("w0");
        assert!(e3 > e2 && r.is_current("w0", e3) && !r.is_current("w0", e1));
        assert!(r.remove("w0").is_some());
        assert_eq!(r.heard("w0", None), Heard::Unknown);
        let views = r.views();
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].id, "w1");
    }

    #[test]
    fn workers_call_three_times_a_timeout_within_bounds() {
        let interval = |secs: f64| Roster::new(Duration::from_secs_f64(secs)).heartbeat_interval();
        assert_eq!(interval(30.0), Duration::from_secs(10));
        assert_eq!(interval(0.1), Duration::from_millis(100));
        assert_eq!(interval(600.0), Duration::from_secs(60));
    }

    #[test]
    fn fresh_ids_carry_the_prefix_and_count() {
        let id = fresh_id("t", 3);
        assert!(id.starts_with("t3-") && id.len() == 11, "{id}");
    }
}
