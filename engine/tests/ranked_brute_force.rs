//! A second method for the ranked game (issue 54, docs/RANKED.md): a solver
//! of stage 1's ranked game written from RULES.md section 1 and the ranked
//! rules alone. Its own cells (cube coordinates in its own order), lanes,
//! steps and jump chains, explicit states in a hash map, and plain fixpoint
//! iteration; the only thing it takes from the engine is each cell's cube
//! coordinate, to name the engine's positions in its own terms. For every
//! objective, top2(X) must read the same value from both on every position.

mod brute;

use brute::{Node, Value, engine_plies, engine_value, placements, plies_by_sweeps};
use std::collections::HashMap;

use retro_engine::layout::Layout;
use retro_engine::memsolve::solve;
use retro_engine::tablebase::{VALUE_LOSS, VALUE_WIN};
use retro_engine::values::tablebase_value;
use retro_games::cc3::Ranked;
use retro_games::{Question, RetroGame};

type Cube = (i32, i32, i32);

/// A state: each player's cells as bits of this file's cell order, and the
/// player to move (for two full goals: the second finisher).
type State = ([u32; 3], usize);

/// What the ranked rules make of a state.
enum Step {
    /// A placement the game never reaches.
    Illegal,
    /// The game is over: the first and second finishers.
    Over { first: usize, second: usize },
    /// The game goes on: the children (one move each, or the pass).
    Live(Vec<State>),
}

/// The star of order `n` in this file's terms.
struct Star {
    cells: Vec<Cube>,
    /// Each player's lane: the centre, its start and its goal.
    lane: [u32; 3],
    goal: [u32; 3],
    start: [u32; 3],
}

impl Star {
    fn new(n: i32) -> Star {
        let mut cells = Vec::new();
        for x in -2 * n..=2 * n {
            for y in -2 * n..=2 * n {
                let z = -x - y;
                if x.max(y).max(z) <= n || x.min(y).min(z) >= -n {
                    cells.push((x, y, z));
                }
            }
        }
        let set = |f: &dyn Fn(Cube) -> bool| -> u32 {
            cells.iter().enumerate().filter(|(_, c)| f(**c)).fold(0, |acc, (i, _)| acc | 1 << i)
        };
        let coordinate = |c: Cube, p: usize| [c.0, c.1, c.2][p];
        let start = [0, 1, 2].map(|p| set(&|c| coordinate(c, p) > n));
        let goal = [0, 1, 2].map(|p| set(&|c| coordinate(c, p) < -n));
        let centre = set(&|c| c.0.abs().max(c.1.abs()).max(c.2.abs()) <= n);
        let lane = [0, 1, 2].map(|p| centre | start[p] | goal[p]);
        Star { cells, lane, goal, start }
    }

    fn at(&self, c: Cube) -> Option<usize> {
        self.cells.iter().position(|&d| d == c)
    }

    /// The cells a piece of `player` on `from` can end a move on.
    fn ends(&self, player: usize, occupied: u32, from: usize) -> u32 {
        const DIRECTIONS: [Cube; 6] = [(1, -1, 0), (1, 0, -1), (0, 1, -1), (-1, 1, 0), (-1, 0, 1), (0, -1, 1)];
        let occupied = occupied & !(1 << from);
        let open = |c: usize| self.lane[player] & (1 << c) != 0 && occupied & (1 << c) == 0;
        let plus = |a: Cube, d: Cube, k: i32| (a.0 + k * d.0, a.1 + k * d.1, a.2 + k * d.2);
        let origin = self.cells[from];
        let mut ends = 0;
        for d in DIRECTIONS {
            if let Some(c) = self.at(plus(origin, d, 1)).filter(|&c| open(c)) {
                ends |= 1 << c;
            }
        }
        let mut seen = 1u32 << from;
        let mut stack = vec![from];
        while let Some(c) = stack.pop() {
            for d in DIRECTIONS {
                let (Some(over), Some(land)) = (self.at(plus(self.cells[c], d, 1)), self.at(plus(self.cells[c], d, 2)))
                else {
                    continue;
                };
                if occupied & (1 << over) != 0 && open(land) && seen & (1 << land) == 0 {
                    seen |= 1 << land;
                    stack.push(land);
                }
            }
        }
        (ends | seen) & !(1 << from)
    }

    fn finished(&self, pieces: &[u32; 3]) -> Vec<usize> {
        (0..3).filter(|&p| pieces[p] & self.goal[p] == self.goal[p]).collect()
    }

    /// The stage rules, forward: the first to fill its goal wins, and the
    /// game ends (`Over` with `second` unused).
    fn first_winner_step(&self, (pieces, mover): State) -> Step {
        let done = self.finished(&pieces);
        match done.len() {
            0 => {}
            1 => return Step::Over { first: done[0], second: done[0] },
            _ => return Step::Illegal,
        }
        let next = (mover + 1) % 3;
        let mut children: Vec<State> = self.moves(pieces, mover).into_iter().map(|after| (after, next)).collect();
        if children.is_empty() {
            children.push((pieces, next));
        }
        Step::Live(children)
    }

    /// The placements after each move of `mover`'s (none: it must pass).
    fn moves(&self, pieces: [u32; 3], mover: usize) -> Vec<[u32; 3]> {
        let occupied = pieces[0] | pieces[1] | pieces[2];
        let mut out = Vec::new();
        for from in (0..self.cells.len()).filter(|&c| pieces[mover] & (1 << c) != 0) {
            let mut ends = self.ends(mover, occupied, from);
            while ends != 0 {
                let to = ends.trailing_zeros() as usize;
                ends &= ends - 1;
                let mut after = pieces;
                after[mover] = after[mover] & !(1 << from) | 1 << to;
                out.push(after);
            }
        }
        out
    }

    /// The ranked rules, forward.
    fn step(&self, (pieces, mover): State) -> Step {
        let done = self.finished(&pieces);
        match done.len() {
            0 => {}
            1 if done[0] != mover => {}
            2 if done.contains(&mover) => {
                let first = if done[0] == mover { done[1] } else { done[0] };
                return Step::Over { first, second: mover };
            }
            _ => return Step::Illegal,
        }
        // The next to move: the next in turn order who has not finished.
        let mut next = (mover + 1) % 3;
        if done.contains(&next) {
            next = (next + 1) % 3;
        }
        let mut children: Vec<State> = self
            .moves(pieces, mover)
            .into_iter()
            .map(|after| {
                // Second place ends the game, the finisher named to move.
                let second = !done.is_empty() && after[mover] & self.goal[mover] == self.goal[mover];
                (after, if second { mover } else { next })
            })
            .collect();
        if children.is_empty() {
            children.push((pieces, next));
        }
        Step::Live(children)
    }
}

/// Every state of the star: each player's placements on its lanes, each
/// player to move.
fn all_states(star: &Star) -> Vec<State> {
    // Each player has as many pieces as its start corner has cells.
    let k = star.start[0].count_ones();
    let mut states = Vec::new();
    for a in placements(star.lane[0], k) {
        for b in placements(star.lane[1] & !a, k) {
            for c in placements(star.lane[2] & !a & !b, k) {
                for turn in 0..3 {
                    states.push(([a, b, c], turn));
                }
            }
        }
    }
    states
}

/// A two-sided question solved by fixpoint iteration over `step`'s graph:
/// the players of `max` (bits) play for the terminals `won` accepts, the
/// others against; what is decided neither way is a draw.
fn fixpoint(
    star: &Star,
    step: &dyn Fn(State) -> Step,
    max: u8,
    won: &dyn Fn(usize, usize) -> bool,
) -> HashMap<State, Value> {
    let mut value: HashMap<State, Value> = HashMap::new();
    let mut live = Vec::new();
    for s in all_states(star) {
        match step(s) {
            Step::Illegal => {
                value.insert(s, Value::Illegal);
            }
            Step::Over { first, second } => {
                value.insert(s, if won(first, second) { Value::Win } else { Value::Loss });
            }
            Step::Live(children) => live.push((s, children)),
        }
    }
    loop {
        let mut changed = false;
        for (s, children) in &live {
            if value.contains_key(s) {
                continue;
            }
            let of = |c: &State| value.get(c).copied();
            let settled = if max & (1 << s.1) != 0 {
                if children.iter().any(|c| of(c) == Some(Value::Win)) {
                    Some(Value::Win)
                } else if children.iter().all(|c| of(c) == Some(Value::Loss)) {
                    Some(Value::Loss)
                } else {
                    None
                }
            } else if children.iter().any(|c| of(c) == Some(Value::Loss)) {
                Some(Value::Loss)
            } else if children.iter().all(|c| of(c) == Some(Value::Win)) {
                Some(Value::Win)
            } else {
                None
            };
            if let Some(v) = settled {
                value.insert(*s, v);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (s, _) in &live {
        value.entry(*s).or_insert(Value::Draw);
    }
    value
}

/// The engine's cell set of `g` as this file's, cell by cell through their
/// coordinates.
fn to_brute_cells(g: &Ranked, star: &Star) -> impl Fn(u128) -> u32 {
    let to_brute: Vec<u32> = g.cc3.star.cubes.iter().map(|&c| 1 << star.at(c).expect("the same star")).collect();
    move |mut bits: u128| {
        let mut out = 0;
        while bits != 0 {
            out |= to_brute[bits.trailing_zeros() as usize];
            bits &= bits - 1;
        }
        out
    }
}

/// top2(`x`) for every state: `x` wins by finishing first or second; the
/// other two play against it. `x`'s question is settled when `x` fills its
/// goal, whatever the other two play after.
fn top2(star: &Star, x: usize) -> HashMap<State, Value> {
    let settled = |s: State| match star.step(s) {
        Step::Live(_) if star.finished(&s.0).contains(&x) => Step::Over { first: x, second: x },
        other => other,
    };
    fixpoint(star, &settled, 1 << x, &|first, second| x == first || x == second)
}

#[test]
fn stage_one_ranked_agrees_with_a_brute_force_solver_on_every_position() {
    let star = Star::new(1);
    for x in 0..3u8 {
        let brute = top2(&star, x as usize);
        let g = Ranked::new(1, x).unwrap();
        assert_eq!(g.position_count(), brute.len() as u64);
        let solved = solve(&g, Question::solo(x), &Layout::new(g.position_count(), 3, 64, 4096), 2).unwrap();
        let convert = to_brute_cells(&g, &star);
        let mut tally: HashMap<Value, u64> = HashMap::new();
        for rank in 0..g.position_count() {
            let pos = g.cc3.unrank(rank);
            let state = (pos.pieces.map(&convert), pos.turn as usize);
            let engine = engine_value(solved.bytes[rank as usize], &format!("rank {rank}"));
            assert_eq!(engine, brute[&state], "top2({x}) at {}", g.cc3.format(&pos));
            *tally.entry(engine).or_insert(0) += 1;
        }
        // Not a test that holds for any answer: each value occurs (stage 1's
        // ranked game has no draw: every position is decided).
        for v in [Value::Win, Value::Loss, Value::Illegal] {
            assert!(tally.get(&v).copied().unwrap_or(0) > 0, "top2({x}): no {v:?} at all ({tally:?})");
        }
    }
}

/// Properties of the engine's ranked layers on stage 1: rotation maps
/// top2(A) onto top2(B) and top2(C); and after a first finisher the race for
/// second is zero-sum, so the two racers' top2 values are each other's
/// complement (WIN against LOSS, DRAW against DRAW).
#[test]
fn stage_one_ranked_layers_rotate_and_the_race_is_zero_sum() {
    let layers: Vec<(Ranked, Vec<u8>)> = (0..3u8)
        .map(|x| {
            let g = Ranked::new(1, x).unwrap();
            let solved = solve(&g, Question::solo(x), &Layout::new(g.position_count(), 3, 64, 4096), 2).unwrap();
            let values = solved.bytes.iter().map(|&b| tablebase_value(b)).collect();
            (g, values)
        })
        .collect();
    let g = &layers[0].0;
    let mut races = 0;
    for rank in 0..g.position_count() {
        let rotated = g.rotate_rank(rank) as usize;
        for x in 0..3 {
            assert_eq!(layers[x].1[rank as usize], layers[(x + 1) % 3].1[rotated], "top2 rotated, rank {rank}");
        }
        let pos = g.cc3.unrank(rank);
        let done = g.finished(&pos);
        if done.count_ones() != 1 || done & (1 << pos.turn) != 0 {
            continue;
        }
        let first = done.trailing_zeros() as usize;
        let (x, y) = ((first + 1) % 3, (first + 2) % 3);
        let complement = match layers[x].1[rank as usize] {
            VALUE_WIN => VALUE_LOSS,
            VALUE_LOSS => VALUE_WIN,
            v => v,
        };
        assert_eq!(layers[y].1[rank as usize], complement, "race at {}", g.cc3.format(&pos));
        races += 1;
    }
    assert!(races > 100, "{races} race positions");
}

/// The counts of the ranked summary (results::cc3::ranked), computed here
/// from this file's own states, values and search, by the names of
/// summary.json's fields: what coordinator/tests/reference/stage1-ranked.tsv
/// holds, and the coordinator's stage-1 ranked run must print.
fn brute_summary(star: &Star) -> std::collections::BTreeMap<String, String> {
    let values: Vec<HashMap<State, Value>> = (0..3).map(|x| top2(star, x)).collect();
    let word = |v: Value| match v {
        Value::Win => "win",
        Value::Loss => "loss",
        Value::Draw => "draw",
        Value::Illegal => "illegal",
    };
    let mut table = std::collections::BTreeMap::new();
    let add = |table: &mut std::collections::BTreeMap<String, String>, key: String| {
        let n: u64 = table.get(&key).map_or(0, |v: &String| v.parse().unwrap());
        table.insert(key, (n + 1).to_string());
    };
    // One scope's counts of one state.
    let count = |table: &mut std::collections::BTreeMap<String, String>, scope: &str, s: State| {
        let (pieces, mover) = s;
        if values[0][&s] == Value::Illegal {
            return;
        }
        add(table, format!("{scope}.positions"));
        let done = star.finished(&pieces);
        if done.len() == 2 {
            add(table, format!("{scope}.terminal"));
            return;
        }
        // Each player's top2 while it still plays (once it has finished it
        // has placed, and its top2 is settled).
        for (x, name) in ["A", "B", "C"].iter().enumerate() {
            if !done.contains(&x) {
                add(table, format!("{scope}.top2.{name}.{}", word(values[x][&s])));
            }
        }
        if done.is_empty() {
            add(table, format!("{scope}.live_before_a_finish"));
        } else {
            add(table, format!("{scope}.live_after_a_finish"));
            let split = if done[0] == (mover + 1) % 3 { "finisher_next" } else { "finisher_previous" };
            let v = word(values[mover][&s]);
            add(table, format!("{scope}.race.all.{v}"));
            add(table, format!("{scope}.race.{split}.{v}"));
        }
    };
    for s in values[0].keys() {
        count(&mut table, "all", *s);
    }
    // The search from the start, breadth first over this file's moves.
    let start: State = (star.start, 0);
    let mut seen = std::collections::HashSet::from([start]);
    let mut frontier = vec![start];
    let mut depth = 0;
    let mut first_forced = None;
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for &s in &frontier {
            count(&mut table, "reachable", s);
            let live = matches!(star.step(s), Step::Live(_));
            let done = star.finished(&s.0);
            if live && (0..3).any(|x| !done.contains(&x) && values[x][&s] == Value::Win) {
                first_forced.get_or_insert(depth);
            }
            if let Step::Live(children) = star.step(s) {
                for c in children {
                    if seen.insert(c) {
                        next.push(c);
                    }
                }
            }
        }
        table.insert(format!("bfs_from_start.depths.{depth}.new"), frontier.len().to_string());
        frontier = next;
        depth += 1;
    }
    table.insert("bfs_from_start.first_forced_top2_depth".into(), first_forced.expect("some forced top2").to_string());
    for (x, name) in ["A", "B", "C"].iter().enumerate() {
        table.insert(format!("start.top2.{name}"), word(values[x][&start]).into());
    }
    table
}

/// The counts of `coordinator kingmaking` (results::cc3::kingmaking, whose
/// module docs and docs/RANKED.md define them), from this file's own
/// first-winner and ranked values, by the names of its JSON fields under
/// `kingmaking.`.
fn brute_kingmaking(star: &Star) -> std::collections::BTreeMap<String, String> {
    let rules = |s| star.first_winner_step(s);
    let solo: Vec<HashMap<State, Value>> =
        (0..3).map(|x| fixpoint(star, &rules, 1 << x, &|first, _| first == x)).collect();
    // enable[x][y]: x and y together for y's win (the diagonal stays empty).
    let enable: Vec<Vec<HashMap<State, Value>>> = (0..3)
        .map(|x| {
            (0..3)
                .map(|y| {
                    if x == y {
                        HashMap::new()
                    } else {
                        fixpoint(star, &rules, 1 << x | 1 << y, &|first, _| first == y)
                    }
                })
                .collect()
        })
        .collect();
    let top2: Vec<HashMap<State, Value>> = (0..3).map(|x| top2(star, x)).collect();
    let enables = |x: usize, y: usize, s: &State| enable[x][y][s] == Value::Win;
    let children = |s: State| match rules(s) {
        Step::Live(children) => Some(children),
        _ => None,
    };
    let mut table = std::collections::BTreeMap::new();
    let bump = |table: &mut std::collections::BTreeMap<String, String>, key: String| {
        let n: u64 = table.get(&key).map_or(0, |v: &String| v.parse().unwrap());
        table.insert(key, (n + 1).to_string());
    };
    let count = |table: &mut std::collections::BTreeMap<String, String>, scope: &str, s: State| {
        let Some(moves) = children(s) else { return };
        let k = s.1;
        let (y, z) = ((k + 1) % 3, (k + 2) % 3);
        let any_solo = |v: Value| (0..3).any(|p| solo[p][&s] == v);
        let key = |what: &str| format!("kingmaking.{scope}.{what}");
        if any_solo(Value::Win) {
            return;
        }
        let word = |v: Value| match v {
            Value::Win => "top2_win",
            Value::Draw => "top2_draw",
            _ => "top2_loss",
        };
        if any_solo(Value::Draw) {
            bump(table, key("spoiler_draw_positions"));
            if solo[k][&s] != Value::Draw {
                return;
            }
            bump(table, key("spoiler.positions"));
            let here = top2[k][&s];
            bump(table, key(&format!("spoiler.{}", word(here))));
            let keeps = moves.iter().any(|c| (here == Value::Loss || top2[k][c] == here) && solo[k][c] == Value::Draw);
            if keeps {
                bump(table, key("spoiler.keeps_draw"));
            } else {
                bump(table, key("spoiler.loses_draw"));
                if here == Value::Win {
                    bump(table, key("spoiler.loses_draw_top2_win"));
                }
            }
            return;
        }
        let some_pair = (0..3).any(|a| (0..3).any(|b| a != b && enables(a, b, &s) && solo[b][&s] != Value::Win));
        if !some_pair {
            return;
        }
        bump(table, key("kingmaker_positions"));
        match (enables(k, y, &s), enables(k, z, &s)) {
            (true, true) => {}
            (false, false) => return,
            _ => {
                bump(table, key("kingmaker.mover_enables_one"));
                return;
            }
        }
        bump(table, key("kingmaker.positions"));
        let here = top2[k][&s];
        bump(table, key(&format!("kingmaker.{}", word(here))));
        if here == Value::Win {
            let best = moves
                .iter()
                .filter(|c| top2[k][*c] == Value::Win)
                .map(|c| usize::from(enables(k, y, c)) + usize::from(enables(k, z, c)))
                .max();
            let class = match best {
                Some(2) => "both",
                Some(1) => "one",
                _ => "neither",
            };
            bump(table, key(&format!("kingmaker.keeps_top2_and_{class}")));
        }
        let playing = moves.iter().filter(|c| here == Value::Loss || top2[k][*c] == here);
        let (mut to_y, mut to_z) = (false, false);
        for c in playing {
            to_y |= enables(k, y, c);
            to_z |= enables(k, z, c);
        }
        let class = match (to_y, to_z) {
            (true, true) => "ranked_two_winners",
            (false, false) => "ranked_no_winner",
            _ => "ranked_decided",
        };
        bump(table, key(&format!("kingmaker.{class}")));
    };
    for s in all_states(star) {
        count(&mut table, "all", s);
    }
    // The first-winner game's reachable positions.
    let start: State = (star.start, 0);
    let mut seen = std::collections::HashSet::from([start]);
    let mut frontier = vec![start];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for &s in &frontier {
            count(&mut table, "reachable", s);
            for c in children(s).unwrap_or_default() {
                if seen.insert(c) {
                    next.push(c);
                }
            }
        }
        frontier = next;
    }
    table
}

/// The reference table of the ranked stage-1 summary.
fn reference_table() -> std::collections::BTreeMap<String, String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../coordinator/tests/reference/stage1-ranked.tsv");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap_or_else(|| panic!("{path}: {l:?} is not key<TAB>value"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// This solver's counts are the reference table's, which the coordinator's
/// run of plans/stage1-ranked.toml and its `kingmaking` command must
/// reproduce (coordinator/tests/ranked.rs):
/// two independent computations that meet in one file. `RETRO_PRINT_TABLE=1`
/// prints this solver's table.
#[test]
fn stage_one_ranked_counts_are_the_reference_table() {
    let star = Star::new(1);
    let mut table = brute_summary(&star);
    table.extend(brute_kingmaking(&star));
    if std::env::var_os("RETRO_PRINT_TABLE").is_some() {
        for (k, v) in &table {
            println!("{k}\t{v}");
        }
    }
    assert_eq!(table, reference_table());
}

/// The ranked layers' depth (the round each position was decided in) is the
/// plies to the end under best play: on every stage-1 position it equals
/// what synchronous sweeps over this file's own states give
/// ([`brute::plies_by_sweeps`]).
#[test]
fn stage_one_ranked_depths_agree_with_synchronous_sweeps() {
    let star = Star::new(1);
    let states = all_states(&star);
    let index: HashMap<State, usize> = states.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    for x in 0..3usize {
        let nodes: Vec<Node> = states
            .iter()
            .map(|&s| match star.step(s) {
                Step::Illegal => Node::Illegal,
                // x's question is settled when x fills its goal.
                Step::Live(_) if star.finished(&s.0).contains(&x) => Node::Finished { max_won: true },
                Step::Over { first, second } => Node::Finished { max_won: x == first || x == second },
                Step::Live(children) => {
                    Node::Live { max_moves: s.1 == x, children: children.iter().map(|c| index[c]).collect() }
                }
            })
            .collect();
        let swept = plies_by_sweeps(&nodes);
        let g = Ranked::new(1, x as u8).unwrap();
        let solved = solve(&g, Question::solo(x as u8), &Layout::new(g.position_count(), 3, 64, 4096), 2).unwrap();
        let convert = to_brute_cells(&g, &star);
        let mut deepest = 0;
        for rank in 0..g.position_count() {
            let pos = g.cc3.unrank(rank);
            let (value, plies) = swept[index[&(pos.pieces.map(&convert), pos.turn as usize)]];
            let what = format!("top2({x}) at {}", g.cc3.format(&pos));
            assert_eq!(engine_value(solved.bytes[rank as usize], &what), value, "{what}");
            assert_eq!(engine_plies(solved.depth[rank as usize], &what), plies, "{what}");
            deepest = deepest.max(plies.unwrap_or(0));
        }
        assert_eq!(deepest as usize, solved.rounds.len(), "top2({x}): the deepest position");
    }
}
