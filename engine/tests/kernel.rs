//! The wavefront kernel against independent facts: rotation symmetry of the
//! rules, and independence from how the space is cut into shards and threads.

use retro_engine::layout::Layout;
use retro_engine::memsolve::solve;
use retro_engine::values;
use retro_games::cc3::Cc3;
use retro_games::sample::XorShift;
use retro_games::{Question, RetroGame};

fn solo(p: u8) -> Question {
    Question::solo(p)
}

#[test]
fn solo_b_solved_directly_equals_solo_a_rotated() {
    let g = Cc3::new(1).unwrap();
    let layout = Layout::new(g.position_count(), 4, 64, 64);
    let a = solve(&g, solo(0), &layout, 2).unwrap();
    let b = solve(&g, solo(1), &layout, 2).unwrap();
    let c = solve(&g, solo(2), &layout, 2).unwrap();
    for r in 0..g.position_count() {
        let p = g.unrank(r);
        let rot = p.rotated(&g.star);
        let rot2 = rot.rotated(&g.star);
        // solo(B) at P is solo(A) at the rotation that makes B play A's part.
        assert_eq!(
            values::tablebase_value(b.bytes[r as usize]),
            values::tablebase_value(a.bytes[g.rank(&rot2) as usize]),
            "solo(B) at rank {r}"
        );
        assert_eq!(
            values::tablebase_value(c.bytes[r as usize]),
            values::tablebase_value(a.bytes[g.rank(&rot) as usize]),
            "solo(C) at rank {r}"
        );
    }
    assert_eq!(a.rounds.len(), b.rounds.len());
}

#[test]
fn shards_and_threads_do_not_change_the_result() {
    let g = Cc3::new(1).unwrap();
    let n = g.position_count();
    let reference = solve(&g, solo(0), &Layout::new(n, 1, 1 << 20, 1 << 20), 1).unwrap();
    for (shards, block, chunk, threads) in [(6, 64, 64, 2), (26, 64, 16, 3), (2, 1024, 100, 1)] {
        let s = solve(&g, solo(0), &Layout::new(n, shards, block, chunk), threads).unwrap();
        assert_eq!(s.bytes, reference.bytes, "{shards} shards, {threads} threads");
        assert_eq!(s.rounds, reference.rounds);
    }
}

#[test]
fn every_undecided_position_is_a_draw_with_an_undecided_child() {
    // At the fixpoint, a position left undecided (DRAW) must have a child that
    // is not bad for its mover and no child that is good for it.
    let g = Cc3::new(1).unwrap();
    let q = Question { max_side: 0b011, target: 1, three_valued: true };
    let s = solve(&g, q, &Layout::new(g.position_count(), 3, 64, 64), 2).unwrap();
    for r in 0..g.position_count() {
        let v = values::tablebase_value(s.bytes[r as usize]);
        let mover_max = q.is_max(g.side_to_move(r));
        let mut kids = Vec::new();
        g.for_each_child(r, &mut |c| kids.push(values::tablebase_value(s.bytes[c as usize])));
        let (win, loss) = (1, 2);
        match v {
            1 if !kids.is_empty() => assert!(
                if mover_max { kids.contains(&win) } else { kids.iter().all(|&k| k == win) },
                "WIN at {r} is justified"
            ),
            2 if !kids.is_empty() => assert!(
                if mover_max { kids.iter().all(|&k| k == loss) } else { kids.contains(&loss) },
                "LOSS at {r} is justified"
            ),
            0 => assert!(kids.contains(&0) && !kids.contains(if mover_max { &win } else { &loss }), "DRAW at {r}"),
            _ => {}
        }
    }
}

#[test]
fn two_valued_enable_forces_the_same_positions_as_three_valued() {
    let g = Cc3::new(1).unwrap();
    let layout = Layout::new(g.position_count(), 5, 64, 64);
    for (x, y) in [(0, 1), (0, 2), (1, 2)] {
        let two = Question::enable(x, y);
        let three = Question { three_valued: true, ..two };
        let a = solve(&g, two, &layout, 2).unwrap();
        let b = solve(&g, three, &layout, 2).unwrap();
        let mut forced = 0;
        for r in 0..g.position_count() as usize {
            let (va, vb) = (values::tablebase_value(a.bytes[r]), values::tablebase_value(b.bytes[r]));
            assert_eq!(va == 1, vb == 1, "enable({x}>{y}) at rank {r}");
            forced += (va == 1) as u32;
        }
        assert!(forced > 0);
        // Only WIN propagates: the two-valued layer decides nothing but WIN in its rounds.
        assert!(a.rounds.iter().all(|d| d.loss == 0));
    }
}

/// An update for a rank outside the receiving shard (a confused or hostile
/// peer) is refused before anything is written: the shard is unchanged.
#[test]
fn updates_outside_the_shard_are_refused_untouched() {
    let g = Cc3::new(1).unwrap();
    let q = solo(0);
    let n = g.position_count();
    let mut bytes = vec![0u8; n as usize];
    retro_engine::kernel::init_shard(&g, q, 0, &mut bytes, 1).unwrap();
    let (base, len) = (64u64, 64usize);
    let mut shard = bytes[base as usize..base as usize + len].to_vec();
    let before = shard.clone();
    for bad in [0u64, base - 1, base + len as u64, u64::MAX >> 1] {
        // One good update first, then the foreign one: nothing may be applied.
        let updates = [base << 1, bad << 1];
        let err = retro_engine::kernel::apply_updates(
            &g,
            q,
            retro_engine::values::Codes::of(&g, false),
            1,
            base,
            &mut shard,
            &[&updates[..]],
            2,
        );
        assert!(err.is_err(), "rank {bad} accepted");
        assert!(err.unwrap_err().to_string().contains(&bad.to_string()));
        assert_eq!(shard, before);
    }
}

/// The frontier scan's word-at-a-time byte search finds exactly what a byte
/// loop finds, at every alignment, density and length.
#[test]
fn for_each_byte_of_finds_what_a_byte_loop_finds() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for len in [0usize, 1, 7, 8, 9, 63, 64, 65, 1000] {
        for density in [0u64, 1, 16, 128, 256] {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Mostly bytes one bit off the codes, sometimes a code.
                    if x % 256 < density {
                        [0x83, 0xc4][(x >> 8) as usize % 2]
                    } else {
                        [0x82, 0x84, 0xc5, 0x03, 0x00][(x >> 8) as usize % 5]
                    }
                })
                .collect();
            for start in 0..len.min(9) {
                let part = &bytes[start..];
                let mut found = Vec::new();
                retro_engine::kernel::for_each_byte_of(part, 0x83, 0xc4, |i, c| found.push((i, c)));
                let expect: Vec<(usize, u8)> =
                    part.iter().copied().enumerate().filter(|&(_, c)| c == 0x83 || c == 0xc4).collect();
                assert_eq!(found, expect, "len {len} density {density} start {start}");
            }
        }
    }
}

/// A set of ranks, as a test gives it.
type KnownSet<'a> = dyn Fn(u64) -> bool + Sync + 'a;

/// A three-valued layer started from any set of positions known to be LOSS
/// (none, about half, all of them, the terminal ones) ends in the same
/// values as the layer started from the move counts alone, and its rounds
/// decide only what the set left open.
#[test]
fn known_losses_seed_the_same_three_valued_layer() {
    let g = Cc3::new(1).unwrap();
    let layout = Layout::new(g.position_count(), 5, 64, 64);
    for x in 0..3u8 {
        let q = solo(x);
        let full = solve(&g, q, &layout, 2).unwrap();
        let value = |r: u64| values::tablebase_value(full.bytes[r as usize]);
        let losses = (0..g.position_count()).filter(|&r| value(r) == 2).count() as u64;
        assert!(losses > 0);
        let terminal = |r: u64| {
            let mut n = 0;
            g.for_each_child(r, &mut |_| n += 1);
            n == 0
        };
        let mut rng = XorShift(u64::from(x) + 11);
        let half: Vec<bool> =
            (0..g.position_count()).map(|r| value(r) == 2 && rng.next_u64().is_multiple_of(2)).collect();
        let subsets: [(&str, Box<KnownSet>); 4] = [
            ("none", Box::new(|_| false)),
            ("half", Box::new(|r| half[r as usize])),
            ("all", Box::new(|r| value(r) == 2)),
            ("terminal", Box::new(|r| value(r) == 2 && terminal(r))),
        ];
        for (name, known) in &subsets {
            let seeded = retro_engine::memsolve::solve_with_known_losses(&g, q, &layout, known, 2).unwrap();
            assert_eq!(seeded.init, full.init, "solo({x}) {name}");
            for r in 0..g.position_count() {
                assert_eq!(values::tablebase_value(seeded.bytes[r as usize]), value(r), "solo({x}) {name}: rank {r}");
            }
            let decided: u64 = seeded.rounds.iter().map(|d| d.loss).sum();
            let known_count = (0..g.position_count()).filter(|&r| known(r)).count() as u64;
            assert!(decided <= losses - known_count, "solo({x}) {name}: {decided} LOSS decided in rounds");
        }
        // A set that claims a terminal win of MAX is refused.
        let win = (0..g.position_count()).find(|&r| value(r) == 1 && terminal(r)).unwrap();
        let err = retro_engine::memsolve::solve_with_known_losses(&g, q, &layout, &|r| r == win, 2);
        assert!(err.is_err_and(|e| e.to_string().contains(&win.to_string())));
    }
}

/// The rounds of every committed result (docs/results) fall within the rounds
/// whose depth the state codes keep for its game ([`values::Codes`], from
/// the game's move bound), so rerunning any of them writes a depth file with
/// every won and lost position's plies. A looser move bound, or a deeper
/// result committed, fails here rather than leaving plies unknown.
#[test]
fn the_codes_keep_the_depth_of_every_committed_results_rounds() {
    use retro_games::cc2::Cc2;
    use retro_games::cc3::Ranked;
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/results");
    let deepest = |file: &str| -> u32 {
        let text = std::fs::read_to_string(results.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
        let rounds = summary["layers"].as_array().unwrap().iter().map(|l| l["rounds"].as_u64().unwrap() as u32);
        rounds.max().unwrap_or_else(|| panic!("{file}: no layers"))
    };
    let kept = |g: &dyn Fn() -> u32| values::Codes::new(g(), false).tagged_rounds;
    let cases: [(&str, &dyn Fn() -> u32); 6] = [
        ("stage2-summary.json", &|| Cc3::new(2).unwrap().max_children()),
        ("stage2-ranked-summary.json", &|| Ranked::new(2, 0).unwrap().max_children()),
        ("cc2-m7p3-summary.json", &|| Cc2::new(7, 3).unwrap().max_children()),
        ("cc2-m7p4-summary.json", &|| Cc2::new(7, 4).unwrap().max_children()),
        ("cc2-m5p6-literal-summary.json", &|| Cc2::new(5, 6).unwrap().max_children()),
        ("cc2-m4p6-literal-summary.json", &|| Cc2::new(4, 6).unwrap().max_children()),
    ];
    for (file, bound) in cases {
        let (rounds, tagged) = (deepest(file), kept(bound));
        eprintln!("{file}: {rounds} rounds, the codes keep {tagged} (move bound {})", bound());
        assert!(rounds < tagged, "{file}: {rounds} rounds, but the codes keep the depth of only {tagged}");
    }
}
