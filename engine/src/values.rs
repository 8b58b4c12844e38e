//! The one-byte cell state of a position while a layer is being solved.
//!
//! `0..=COUNTER_MAX`: undecided, holding the number of children not yet known
//! to be bad for the player to move. Decided positions carry WIN or LOSS (for
//! the MAX side); a position decided in round `r` first carries the "new" code
//! of parity `r % 2`, which is how the next round finds its frontier without a
//! separate list; the next round's apply pass settles it. What is undecided at
//! the fixpoint is a DRAW.

/// Largest move count a counter can hold.
pub const COUNTER_MAX: u8 = 248;
/// WIN decided in an even round, not yet propagated.
pub const WIN_NEW_EVEN: u8 = 249;
/// WIN decided in an odd round, not yet propagated.
pub const WIN_NEW_ODD: u8 = 250;
/// LOSS decided in an even round, not yet propagated.
pub const LOSS_NEW_EVEN: u8 = 251;
/// LOSS decided in an odd round, not yet propagated.
pub const LOSS_NEW_ODD: u8 = 252;
/// WIN, already propagated.
pub const WIN: u8 = 253;
/// LOSS, already propagated.
pub const LOSS: u8 = 254;
/// A placement that cannot arise in play.
pub const ILLEGAL: u8 = 255;

/// The "new WIN" code for round `round`.
#[inline]
pub fn win_new(round: u32) -> u8 {
    if round.is_multiple_of(2) { WIN_NEW_EVEN } else { WIN_NEW_ODD }
}

/// The "new LOSS" code for round `round`.
#[inline]
pub fn loss_new(round: u32) -> u8 {
    if round.is_multiple_of(2) { LOSS_NEW_EVEN } else { LOSS_NEW_ODD }
}

/// True for codes decided in round `round` (or any round of the same parity)
/// and not yet propagated.
#[inline]
pub fn is_new_of(code: u8, round: u32) -> bool {
    code == win_new(round) || code == loss_new(round)
}

/// True when the position has a WIN or LOSS value (or is illegal).
#[inline]
pub fn is_decided(code: u8) -> bool {
    code > COUNTER_MAX
}

/// The state byte of an undecided position holding `cur` after one child's
/// update, in a round whose "new" codes are `win_new` and `loss_new`: decided
/// at once when the child is good for the player to move (`good`), decided
/// against that player when this was its last open child, else one open
/// child fewer. `is_max`: the player to move is on the MAX side.
#[inline]
pub fn after_update(cur: u8, good: bool, is_max: bool, win_new: u8, loss_new: u8) -> u8 {
    if good {
        if is_max { win_new } else { loss_new }
    } else if cur == 1 {
        if is_max { loss_new } else { win_new }
    } else {
        cur - 1
    }
}

/// Settles a "new" code into plain WIN / LOSS; other codes are unchanged.
#[inline]
pub fn settle(code: u8) -> u8 {
    match code {
        WIN_NEW_EVEN | WIN_NEW_ODD => WIN,
        LOSS_NEW_EVEN | LOSS_NEW_ODD => LOSS,
        c => c,
    }
}

/// The 2-bit tablebase value of a state byte: 0 DRAW, 1 WIN, 2 LOSS, 3 ILLEGAL.
#[inline]
pub fn tablebase_value(code: u8) -> u8 {
    match settle(code) {
        WIN => 1,
        LOSS => 2,
        ILLEGAL => 3,
        _ => 0,
    }
}
