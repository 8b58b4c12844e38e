//! Positions with gcd > 1: infinitely many nameable numbers, so no exhaustive
//! search. A position is P when theory says so ([`known_p`]: Hutchings's
//! theorem, Sicherman's list); it is N when some nameable `x` up to a bound
//! leaves a P-position: a finite one solved exactly, or a known infinite one.
//! A finite successor that is an ender with `t > 1` is N (strategy stealing)
//! and is skipped unsolved; a coprime reply to a single number `{n}` always
//! leaves such an ender (Hutchings), so those replies cost nothing.

use super::{ClassSolver, SolveError, check_cap};
use retro_games::sylver::theory::{coprime_reply_is_ender, known_p, set_text};
use retro_games::sylver::{Apery, MAX_NUMBER};

/// The largest reply bound: no number above [`MAX_NUMBER`] can be named.
pub const MAX_BOUND: u64 = MAX_NUMBER;

/// What is known about a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The player to move loses; why.
    P(String),
    /// The player to move wins with these moves (all winning moves when the
    /// position is finite; those found up to the bound otherwise); why.
    N(Vec<u64>, String),
    /// Neither shown within the bound.
    Open(String),
}

/// A winning reply: the number and why the position it leaves is P.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The number named.
    pub x: u64,
    /// Why the position after `x` is P.
    pub reason: String,
}

/// How far the reply search goes.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest number tried as a reply (the search stops at [`MAX_BOUND`]
    /// whatever it says).
    pub bound: u64,
    /// Position cap of each exact solve of a finite successor.
    pub cap: u64,
}

impl Limits {
    /// Checks both figures: `bound <= `[`MAX_BOUND`], `cap` in
    /// `1..=`[`super::MAX_CAP`].
    pub fn check(self) -> Result<Limits, SolveError> {
        if self.bound > MAX_BOUND {
            return Err(SolveError::BadBound { bound: self.bound });
        }
        check_cap(self.cap)?;
        Ok(self)
    }

    /// The largest reply actually tried.
    fn reply_bound(self) -> u64 {
        self.bound.min(MAX_BOUND)
    }
}

/// The result of a reply search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replies {
    /// Winning replies found, ascending.
    pub winning: Vec<Reply>,
    /// Replies skipped because they leave an ender with `t > 1` (N).
    pub enders: u64,
    /// Replies whose successor could not be decided (infinite and not known
    /// P, or a finite solve that hit the cap).
    pub undecided: Vec<u64>,
}

/// Why a finite position is P or N, solved exactly.
fn solve_finite(a: &Apery, cap: u64) -> Result<(bool, u64), SolveError> {
    let mut solver = ClassSolver::for_position(a)?;
    solver.set_cap(cap);
    let v = solver.value(a)?;
    Ok((v, solver.positions()))
}

/// Every nameable `x <= bound` (other than 1) that leaves a P-position.
pub fn winning_replies(a: &Apery, limits: Limits) -> Replies {
    let mut out = Replies::default();
    let single = match a.minimal_generators()[..] {
        [n] => Some(n),
        _ => None,
    };
    for x in a.nameable_iter(limits.reply_bound()).filter(|&x| x != 1) {
        if let Some(n) = single
            && coprime_reply_is_ender(n, x)
        {
            out.enders += 1;
            continue;
        }
        let child = a.named(x);
        if child.is_finite() {
            if child.is_ender() && child.frobenius().is_some_and(|t| t > 1) {
                out.enders += 1;
                continue;
            }
            match solve_finite(&child, limits.cap) {
                Ok((false, positions)) => out.winning.push(Reply {
                    x,
                    reason: format!(
                        "{} is P (solved exactly, {positions} positions)",
                        set_text(&child.minimal_generators())
                    ),
                }),
                Ok((true, _)) => {}
                Err(_) => out.undecided.push(x),
            }
        } else if let Some(why) = known_p(&child) {
            out.winning.push(Reply { x, reason: why.to_string() });
        } else {
            out.undecided.push(x);
        }
    }
    out
}

/// What is known about `a`: exact for a finite position (within the cap),
/// from theory and a reply search otherwise.
pub fn verdict(a: &Apery, limits: Limits) -> Verdict {
    if a.is_finite() {
        let mut solver = match ClassSolver::for_position(a) {
            Ok(s) => s,
            Err(e) => return Verdict::Open(e.to_string()),
        };
        solver.set_cap(limits.cap);
        return match solver.winning_moves(a) {
            Ok(w) if w.is_empty() => Verdict::P("finite, solved exactly: no winning move".into()),
            Ok(w) => Verdict::N(w, "finite, solved exactly".into()),
            Err(e) => Verdict::Open(e.to_string()),
        };
    }
    if let Some(why) = known_p(a) {
        return Verdict::P(why.to_string());
    }
    let replies = winning_replies(a, limits);
    if let Some(first) = replies.winning.first() {
        let moves = replies.winning.iter().map(|r| r.x).collect();
        return Verdict::N(moves, format!("naming {} leaves a P-position: {}", first.x, first.reason));
    }
    Verdict::Open(format!(
        "gcd {}: not a known P-position, and no winning reply up to {} ({} replies leave enders, {} undecided)",
        a.gcd(),
        limits.reply_bound(),
        replies.enders,
        replies.undecided.len()
    ))
}

/// The outcome of naming `n` as the first move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opening {
    /// Naming `n` wins: `{n}` is P.
    Wins(String),
    /// Naming `n` loses: the opponent has a winning reply.
    Loses(String),
    /// Not decided here.
    Open(String),
}

/// Whether the first move `n` wins, loses or is open, with the reason.
pub fn opening(n: u64, limits: Limits) -> Opening {
    if n == 1 {
        return Opening::Loses("whoever names 1 loses".into());
    }
    let a = match Apery::single(n) {
        Ok(a) => a,
        Err(e) => return Opening::Open(e.to_string()),
    };
    match verdict(&a, limits) {
        Verdict::P(why) => Opening::Wins(why),
        Verdict::N(moves, why) => Opening::Loses(format!("reply {} wins: {why}", moves[0])),
        Verdict::Open(why) => {
            let form = if is_2a3b(n) { format!("{n} is of the form 2^a 3^b; ") } else { String::new() };
            Opening::Open(format!("{form}{why}"))
        }
    }
}

/// True for `2^a 3^b`.
fn is_2a3b(mut n: u64) -> bool {
    for p in [2, 3] {
        while n.is_multiple_of(p) {
            n /= p;
        }
    }
    n == 1
}
