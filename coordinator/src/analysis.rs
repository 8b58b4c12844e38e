//! The three-player analysis: the 12 forcing answers of a position from the
//! three computed layers (by rotation), the category of a position, and the
//! counts over the whole space, over the positions reachable from the start and
//! per breadth-first depth from the start.

use retro_engine::tablebase::{VALUE_DRAW, VALUE_ILLEGAL, VALUE_LOSS, VALUE_WIN, unpack_value};
use retro_games::cc3::{Cc3, Outcome, PLAYER_NAMES, Position, children};
use serde::Serialize;
use std::collections::BTreeMap;

/// The three computed layers, in this order; rotation gives the other nine.
pub const COMPUTED_LAYERS: [&str; 3] = ["solo(A)", "enable(A>B)", "enable(A>C)"];

/// Names of the six enable questions, as `X>Y`.
pub const ENABLE_NAMES: [&str; 6] = ["A>B", "A>C", "B>A", "B>C", "C>A", "C>B"];

/// The six (X, Y) pairs of [`ENABLE_NAMES`].
pub const ENABLE_PAIRS: [(usize, usize); 6] = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)];

/// Packed 2-bit values of the three computed layers over the whole rank space.
pub struct Layers {
    /// `packed[i]` holds layer i (see [`COMPUTED_LAYERS`]).
    pub packed: [Vec<u8>; 3],
}

/// All 12 answers at one position (pairout(X) is solo(X) == LOSS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answers {
    /// solo(A), solo(B), solo(C) as tablebase values (DRAW/WIN/LOSS/ILLEGAL).
    pub solo: [u8; 3],
    /// enable(X>Y) forced, indexed `[X][Y]` (diagonal unused).
    pub enable: [[bool; 3]; 3],
}

/// Category of a position (the first that applies).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Someone has won (illegal placements are counted here too).
    Terminal,
    /// Some player can force its own win.
    SoloWin,
    /// Some player can force at least a draw on its own and nobody wins.
    SpoilerDraw,
    /// Some pair can hand the win to one of them, who cannot force it alone.
    Kingmaker,
    /// None of the above (expected never).
    Other,
}

impl Category {
    /// The name used in summary.json.
    pub fn key(self) -> &'static str {
        match self {
            Category::Terminal => "terminal",
            Category::SoloWin => "solo_win",
            Category::SpoilerDraw => "spoiler_draw",
            Category::Kingmaker => "kingmaker",
            Category::Other => "other",
        }
    }
}

/// A word for a tablebase value.
pub fn value_word(v: u8) -> &'static str {
    match v {
        VALUE_WIN => "win",
        VALUE_LOSS => "loss",
        VALUE_DRAW => "draw",
        _ => "illegal",
    }
}

/// Ranks of `pos`, `R(pos)` and `R^2(pos)` (R the 120-degree rotation).
fn rotation_ranks(game: &Cc3, pos: &Position) -> [u64; 3] {
    let r1 = pos.rotated(&game.star);
    let r2 = r1.rotated(&game.star);
    [game.rank(pos), game.rank(&r1), game.rank(&r2)]
}

/// The 12 answers at `pos`, reading layer values through `value(layer, rank)`.
/// solo(B)(P) = solo(A)(R^2 P), solo(C)(P) = solo(A)(R P); enable(B>C) and
/// enable(C>A) come from enable(A>B) the same way, enable(B>A) and enable(C>B)
/// from enable(A>C).
pub fn answers_with<E>(
    game: &Cc3,
    pos: &Position,
    mut value: impl FnMut(usize, u64) -> Result<u8, E>,
) -> Result<Answers, E> {
    let [r0, r1, r2] = rotation_ranks(game, pos);
    let solo = [value(0, r0)?, value(0, r2)?, value(0, r1)?];
    let mut enable = [[false; 3]; 3];
    enable[0][1] = value(1, r0)? == VALUE_WIN;
    enable[1][2] = value(1, r2)? == VALUE_WIN;
    enable[2][0] = value(1, r1)? == VALUE_WIN;
    enable[0][2] = value(2, r0)? == VALUE_WIN;
    enable[1][0] = value(2, r2)? == VALUE_WIN;
    enable[2][1] = value(2, r1)? == VALUE_WIN;
    Ok(Answers { solo, enable })
}

/// The 12 answers at `pos` from layers held in memory.
pub fn answers(game: &Cc3, layers: &Layers, pos: &Position) -> Answers {
    let r: Result<Answers, std::convert::Infallible> =
        answers_with(game, pos, |layer, rank| Ok(unpack_value(&layers.packed[layer], rank)));
    match r {
        Ok(a) => a,
        Err(never) => match never {},
    }
}

/// The category of `pos` given its answers.
pub fn category(game: &Cc3, pos: &Position, a: &Answers) -> Category {
    if pos.outcome(&game.star) != Outcome::Ongoing {
        return Category::Terminal;
    }
    if a.solo.contains(&VALUE_WIN) {
        return Category::SoloWin;
    }
    if a.solo.contains(&VALUE_DRAW) {
        return Category::SpoilerDraw;
    }
    if ENABLE_PAIRS.iter().any(|&(x, y)| a.enable[x][y] && a.solo[y] != VALUE_WIN) {
        return Category::Kingmaker;
    }
    Category::Other
}

/// Counts over a set of positions.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct ScopeCounts {
    /// Positions in the scope (illegal included).
    pub positions: u64,
    /// Illegal placements in the scope.
    pub illegal: u64,
    /// Per player: win / loss / draw of solo(X) (illegal positions excluded).
    pub solo: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per ordered pair `X>Y`: positions where enable(X>Y) is forced.
    pub enable: BTreeMap<String, u64>,
    /// Per category.
    pub categories: BTreeMap<String, u64>,
}

impl ScopeCounts {
    fn new() -> ScopeCounts {
        let mut s = ScopeCounts::default();
        for p in PLAYER_NAMES {
            let m = ["win", "loss", "draw"].iter().map(|k| (k.to_string(), 0)).collect();
            s.solo.insert(p.to_string(), m);
        }
        for e in ENABLE_NAMES {
            s.enable.insert(e.to_string(), 0);
        }
        for c in [Category::Terminal, Category::SoloWin, Category::SpoilerDraw, Category::Kingmaker, Category::Other] {
            s.categories.insert(c.key().to_string(), 0);
        }
        s
    }

    fn add(&mut self, a: &Answers, c: Category) {
        self.positions += 1;
        *self.categories.get_mut(c.key()).expect("known category") += 1;
        if a.solo[0] == VALUE_ILLEGAL {
            self.illegal += 1;
            return;
        }
        for (p, name) in PLAYER_NAMES.iter().enumerate() {
            *self.solo.get_mut(&name.to_string()).expect("player").get_mut(value_word(a.solo[p])).expect("value") += 1;
        }
        for (i, &(x, y)) in ENABLE_PAIRS.iter().enumerate() {
            if a.enable[x][y] {
                *self.enable.get_mut(ENABLE_NAMES[i]).expect("pair") += 1;
            }
        }
    }

    fn merge(&mut self, o: &ScopeCounts) {
        self.positions += o.positions;
        self.illegal += o.illegal;
        for (p, m) in &o.solo {
            for (k, v) in m {
                *self.solo.get_mut(p).expect("player").get_mut(k).expect("value") += v;
            }
        }
        for (k, v) in &o.enable {
            *self.enable.get_mut(k).expect("pair") += v;
        }
        for (k, v) in &o.categories {
            *self.categories.get_mut(k).expect("category") += v;
        }
    }
}

/// Counts over every position of the space, in parallel.
pub fn count_all(game: &Cc3, layers: &Layers, threads: usize) -> ScopeCounts {
    let n = game.ranker.positions() as u64;
    let threads = threads.max(1) as u64;
    let step = n.div_ceil(threads);
    let parts: Vec<ScopeCounts> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut c = ScopeCounts::new();
                    for r in (t * step)..((t + 1) * step).min(n) {
                        let pos = game.unrank(r);
                        let a = answers(game, layers, &pos);
                        c.add(&a, category(game, &pos, &a));
                    }
                    c
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("count thread panicked")).collect()
    });
    let mut total = ScopeCounts::new();
    for p in &parts {
        total.merge(p);
    }
    total
}

/// One breadth-first depth from the start.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Depth {
    /// Plies from the start.
    pub depth: u32,
    /// Positions first reached at this depth.
    pub new: u64,
    /// Their categories, when the tablebases are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub categories: Option<BTreeMap<String, u64>>,
}

/// Result of the breadth-first pass from the start.
pub struct Reach {
    /// Per depth.
    pub depths: Vec<Depth>,
    /// Counts over every reached position (when the tablebases are known).
    pub reachable: Option<ScopeCounts>,
}

/// Breadth-first search from the start over at most `max_depth` plies (all, if
/// `None`), with a visited bitset over the rank space. With `layers`, each depth
/// gets its category counts and the reached set its full counts.
pub fn explore(game: &Cc3, layers: Option<&Layers>, max_depth: Option<u32>) -> Reach {
    let n = game.ranker.positions() as u64;
    let mut visited = vec![0u64; n.div_ceil(64) as usize];
    let start = game.rank(&game.start());
    visited[(start / 64) as usize] |= 1 << (start % 64);
    let mut frontier = vec![start];
    let mut depths = Vec::new();
    let mut reachable = layers.map(|_| ScopeCounts::new());
    let mut depth = 0;
    while !frontier.is_empty() {
        let mut cats = layers.map(|_| ScopeCounts::new());
        if let (Some(l), Some(c)) = (layers, cats.as_mut()) {
            for &r in &frontier {
                let pos = game.unrank(r);
                let a = answers(game, l, &pos);
                c.add(&a, category(game, &pos, &a));
            }
        }
        if let (Some(total), Some(c)) = (reachable.as_mut(), cats.as_ref()) {
            total.merge(c);
        }
        depths.push(Depth { depth, new: frontier.len() as u64, categories: cats.map(|c| c.categories) });
        if max_depth.is_some_and(|d| depth >= d) {
            break;
        }
        let mut next = Vec::new();
        for &r in &frontier {
            for child in children(&game.star, &game.unrank(r)) {
                let c = game.rank(&child);
                let (w, b) = ((c / 64) as usize, 1u64 << (c % 64));
                if visited[w] & b == 0 {
                    visited[w] |= b;
                    next.push(c);
                }
            }
        }
        next.sort_unstable();
        frontier = next;
        depth += 1;
    }
    Reach { depths, reachable }
}

/// The answers at the start position in summary.json's words.
#[derive(Clone, Debug, Serialize)]
pub struct StartReport {
    /// The start in the text notation.
    pub position: String,
    /// Its category.
    pub category: String,
    /// solo(X) for each player: "win" | "loss" | "draw".
    pub solo: BTreeMap<String, String>,
    /// enable(X>Y) for each ordered pair.
    pub enable: BTreeMap<String, bool>,
}

/// Describes the start position.
pub fn start_report(game: &Cc3, layers: &Layers) -> StartReport {
    let pos = game.start();
    let a = answers(game, layers, &pos);
    StartReport {
        position: game.format(&pos),
        category: category(game, &pos, &a).key().to_string(),
        solo: PLAYER_NAMES
            .iter()
            .enumerate()
            .map(|(p, n)| (n.to_string(), value_word(a.solo[p]).to_string()))
            .collect(),
        enable: ENABLE_PAIRS
            .iter()
            .enumerate()
            .map(|(i, &(x, y))| (ENABLE_NAMES[i].to_string(), a.enable[x][y]))
            .collect(),
    }
}
