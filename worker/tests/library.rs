//! The worker library's parts, tested from outside: a unit-test build of the
//! crate (compiled a second time with `cfg(test)`) cost about 50 s of the test
//! command's build for these three tests.

use retro_engine::layout::Layout;
use retro_engine::shardfile::{self, Mapping};
use retro_worker::link::check_host_port;
use retro_worker::steps::chunk_runs;
use retro_worker::store::{LayerState, LayerStore, RoundRecord, STATE_FORMAT_VERSION, layer_shard_path, undo_path};
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

#[test]
fn chunk_runs_merge_neighbours_and_stop_at_the_shard_end() {
    // Chunks of 10 positions in a shard of 45: chunk 4 is the short last one.
    assert_eq!(chunk_runs(&[0, 1, 3, 4], 10, 45), vec![0..20, 30..45]);
    assert_eq!(chunk_runs(&[2], 10, 45), vec![20..30]);
    assert_eq!(chunk_runs(&[], 10, 45), Vec::<std::ops::Range<usize>>::new());
    // A chunk past the end (none should be listed) adds nothing.
    assert_eq!(chunk_runs(&[4, 5], 10, 45), vec![40..45]);
}

#[test]
fn accepts_host_port_and_refuses_the_usual_slips() {
    for ok in ["127.0.0.1:50051", "coord.internal:1", "[::1]:50051", "http://10.0.0.2:50051"] {
        assert_eq!(check_host_port(ok).ok().as_deref(), Some(ok), "{ok}");
    }
    for (bad, why) in [
        ("127.0.0.1", "no port"),
        ("coord", "no port"),
        (":50051", "no host"),
        ("127.0.0.1:0", "port 0"),
        ("127.0.0.1:http", "not a number"),
        ("127.0.0.1:70000", "not a number"),
        ("::1:50051", "brackets"),
        ("not a uri", "no port"),
    ] {
        let e = check_host_port(bad).unwrap_err().to_string();
        assert!(e.contains(why) && e.contains("HOST:PORT") && e.contains(bad), "{bad}: {e}");
    }
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("retro-store-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    TempDir(d)
}

fn record(round: u32) -> RoundRecord {
    RoundRecord { round, win: round as u64, ..Default::default() }
}

/// What the worker does before changing a chunk: saves it to the undo
/// log once since the checkpoint (with a shared mapping), then writes.
fn change(st: &mut LayerStore, s: u32, chunk: u64, value: u8) {
    let chunk_len = st.layout.chunk_len;
    if !st.saved_mut(s)[chunk as usize] {
        if st.keeps_undo_logs() {
            let path = undo_path(&st.dir, st.undo_round(), s);
            shardfile::append_undo(&path, st.shards[&s].bytes(), chunk_len, &[chunk]).unwrap();
        }
        st.saved_mut(s)[chunk as usize] = true;
    }
    let bytes = st.shards.get_mut(&s).unwrap().bytes_mut();
    bytes[(chunk * chunk_len) as usize..((chunk + 1) * chunk_len) as usize].fill(value);
}

fn snapshot(st: &LayerStore) -> Vec<Vec<u8>> {
    st.shards.values().map(|f| f.bytes().to_vec()).collect()
}

/// Rounds committed without a checkpoint live in memory: a crash (the
/// store dropped without a checkpoint, the files as they are) rolls every
/// shard back to the checkpoint's bytes, however many rounds touched a
/// chunk since; a checkpoint makes them durable and removes the undo logs.
#[test]
fn a_crash_between_checkpoints_rolls_back_to_the_checkpoint() {
    crash_between_checkpoints(Mapping::Shared);
}

/// The same with the shards mapped privately (an embedded run): no undo
/// logs, nothing reaches the files between checkpoints, and a crash while a
/// checkpoint writes the other file (half of it new) leaves the last one.
#[test]
fn a_crash_between_private_checkpoints_rolls_back_to_the_checkpoint() {
    crash_between_checkpoints(Mapping::Private);
}

fn crash_between_checkpoints(mapping: Mapping) {
    let tmp = temp_dir(&format!("epoch-{mapping:?}"));
    let dir = tmp.0.join("layer-0");
    let layout = Layout::new(4096, 2, 64, 256);
    let state = LayerState {
        format_version: STATE_FORMAT_VERSION,
        plan_hash: "p".into(),
        layer: 0,
        shards: vec![0, 1],
        committed_round: 0,
        init: Default::default(),
        rounds: Vec::new(),
        chunk_crcs: BTreeMap::new(),
        attempt: 0,
        seeded: false,
        checkpoint_file: 0,
    };
    let private = mapping == Mapping::Private;
    let on_disk = |st: &LayerStore, s: u32| fs::read(layer_shard_path(&dir, s, st.state.checkpoint_file)).unwrap();
    let mut st = LayerStore::create(&dir, layout, state, mapping).unwrap();
    st.commit(record(0), true).unwrap();
    change(&mut st, 0, 0, 1);
    st.commit(record(1), true).unwrap();
    let at_checkpoint = snapshot(&st);
    change(&mut st, 0, 1, 2);
    change(&mut st, 1, 0, 2);
    st.commit(record(2), false).unwrap();
    change(&mut st, 0, 1, 3);
    change(&mut st, 1, 2, 3);
    st.commit(record(3), false).unwrap();
    assert_eq!(st.live_round(), 3);
    assert_eq!(st.record(2), Some(&record(2)));
    change(&mut st, 0, 3, 4); // round 4, half done
    let logs = undo_path(&dir, 2, 0).exists() && undo_path(&dir, 2, 1).exists();
    assert_eq!(logs, !private, "undo logs with a shared mapping only");
    if private {
        assert!(on_disk(&st, 0) == at_checkpoint[0], "nothing written between checkpoints");
        // Then a checkpoint starts writing the other file (chunk 1 new,
        // chunk 3 half) and the process dies.
        let mut torn = at_checkpoint[0].clone();
        let c = layout.chunk_len as usize;
        torn[c..2 * c].fill(3);
        torn[3 * c..3 * c + c / 2].fill(4);
        fs::write(layer_shard_path(&dir, 0, 1 - st.state.checkpoint_file), &torn).unwrap();
    }
    drop(st);

    let mut st = LayerStore::open(&dir, layout, "p", 0, &[0, 1], mapping).unwrap().unwrap();
    assert_eq!((st.state.committed_round, st.live_round()), (1, 1));
    assert!(snapshot(&st) == at_checkpoint, "rolled back to round 1's bytes");
    assert!(!undo_path(&dir, 2, 0).exists(), "the logs went once the checksums held");

    // Replayed, then a checkpoint: durable, and the next start finds it.
    change(&mut st, 0, 1, 2);
    st.commit(record(2), false).unwrap();
    change(&mut st, 1, 3, 5);
    st.commit(record(3), true).unwrap();
    let at_three = snapshot(&st);
    assert!(!undo_path(&dir, 2, 0).exists() && !undo_path(&dir, 2, 1).exists());
    assert!(on_disk(&st, 0) == at_three[0] && on_disk(&st, 1) == at_three[1], "the checkpoint is on disk");
    // More checkpoints: the files alternate, and from the second after an
    // open each gets only the chunks changed since it was last written.
    for round in 4..=7 {
        change(&mut st, round % 2, round as u64 % 4, round as u8);
        st.commit(record(round), round % 3 != 0).unwrap();
        if round % 3 != 0 {
            let now = snapshot(&st);
            assert!(on_disk(&st, 0) == now[0] && on_disk(&st, 1) == now[1], "round {round}'s checkpoint is on disk");
        }
    }
    let at_seven = snapshot(&st);
    drop(st);
    let st = LayerStore::open(&dir, layout, "p", 0, &[0, 1], mapping).unwrap().unwrap();
    assert_eq!(st.state.committed_round, 7);
    assert_eq!(st.state.rounds, (0..=7).map(record).collect::<Vec<_>>());
    assert!(snapshot(&st) == at_seven);
}

/// `worker --status`: the figures add up by kind and outcome, in the conventions.
#[test]
fn worker_metrics_add_up_by_kind_and_outcome() {
    use retro_proto::{RoundReport, TaskKind};
    use retro_worker::metrics::WorkerMetrics;
    let m = WorkerMetrics::new(std::env::temp_dir().join("no-such-worker-dir"));
    m.joined("stage1", "w1");
    let report = |kind: TaskKind, ok, sent| RoundReport {
        kind: kind as i32,
        ok,
        layer: 1,
        round: 3,
        seconds: 0.2,
        records_sent: sent,
        ..Default::default()
    };
    m.reported(&report(TaskKind::Generate, true, 10));
    m.reported(&report(TaskKind::Generate, true, 5));
    m.reported(&report(TaskKind::Apply, false, 0));
    let text = m.text();
    for line in [
        "retro_worker_tasks_total{retro_job=\"stage1\",retro_worker=\"w1\",kind=\"generate\",outcome=\"ok\"} 2",
        "retro_worker_tasks_total{retro_job=\"stage1\",retro_worker=\"w1\",kind=\"apply\",outcome=\"failed\"} 1",
        "retro_worker_records_sent_total{retro_job=\"stage1\",retro_worker=\"w1\"} 15",
        "retro_worker_task_duration_seconds_count{retro_job=\"stage1\",retro_worker=\"w1\",kind=\"generate\"} 2",
        "retro_worker_round{retro_job=\"stage1\",retro_worker=\"w1\"} 3",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
    }
    // A failed task has no duration.
    assert!(!text.contains("kind=\"apply\",le="), "{text}");
}
