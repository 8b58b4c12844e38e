//! The star of order n: cells, corners, lanes, neighbours and the 120-degree rotation.
//!
//! Cells are numbered: the centre hexagon first (`0..H`), then the six corners of
//! `K` cells each in the order A start, A goal, B start, B goal, C start, C goal.
//! So player `p`'s corner cells (start then goal) are the contiguous range
//! `H + 2Kp .. H + 2K(p+1)`, which is what the ranker relies on.

use crate::jumps::{JumpTable, jump_table};

/// Cube coordinates of a cell, `x + y + z = 0`.
pub type Cube = (i32, i32, i32);

/// The six hex directions in cube coordinates.
pub const DIRECTIONS: [Cube; 6] = [(1, -1, 0), (1, 0, -1), (0, 1, -1), (-1, 1, 0), (-1, 0, 1), (0, -1, 1)];

/// Names of the three players, in turn order.
pub const PLAYER_NAMES: [char; 3] = ['A', 'B', 'C'];

/// Marks a missing neighbour in the tables.
pub const NONE: u8 = u8::MAX;

/// Board geometry of the star of order `n` (1..=4), with lookup tables built once.
#[derive(Clone, Debug)]
pub struct Star {
    /// Order of the star.
    pub n: u32,
    /// Cells per corner, which is also the number of pieces each player has.
    pub k: usize,
    /// Cells in the centre hexagon.
    pub h: usize,
    /// Cube coordinates of every cell, by cell index.
    pub cubes: Vec<Cube>,
    /// `neighbour[c][d]`: the cell one step from `c` in direction `d`, or `NONE` (255).
    pub neighbour: Vec<[u8; 6]>,
    /// Human names of cells (row letter from A's goal side, then column number).
    pub names: Vec<String>,
    /// Bitboard of each player's start corner.
    pub start_mask: [u128; 3],
    /// Bitboard of each player's goal corner.
    pub goal_mask: [u128; 3],
    /// Bitboard of the cells each player may ever occupy (centre, own start, own goal).
    pub lane_mask: [u128; 3],
    /// Bitboard of the centre hexagon.
    pub centre_mask: u128,
    /// `rotate[c]`: the image of cell `c` under `(x, y, z) -> (z, x, y)`.
    pub rotate: Vec<u8>,
    /// `step_mask[c]`: bitboard of the cells adjacent to `c`.
    pub step_mask: Vec<u128>,
    /// `jumps[c]`: every `(over, land)` pair of a jump from `c` (both on the board).
    pub jumps: Vec<Vec<(u8, u8)>>,
    /// [`Star::jumps`] as a branch-free table, on stars of at most 64 cells
    /// (orders 1 and 2; empty on larger ones), where a bitboard fits a u64.
    pub(super) narrow_jumps: JumpTable,
}

/// Which region a cell belongs to: the centre or one of the six corners.
fn region(n: i32, (x, y, z): Cube) -> Option<usize> {
    // Corner order: A start (x > n), A goal (x < -n), B start, B goal, C start, C goal.
    if x > n {
        Some(1)
    } else if x < -n {
        Some(2)
    } else if y > n {
        Some(3)
    } else if y < -n {
        Some(4)
    } else if z > n {
        Some(5)
    } else if z < -n {
        Some(6)
    } else {
        None
    }
}

impl Star {
    /// Builds the star of order `n`; panics only for an order outside 1..=4,
    /// which callers validate first (plans report it as a field error).
    pub fn new(n: u32) -> Star {
        assert!((1..=4).contains(&n), "star order must be 1..=4");
        let ni = n as i32;
        let mut groups: Vec<Vec<Cube>> = vec![Vec::new(); 7];
        for x in -2 * ni..=2 * ni {
            for y in -2 * ni..=2 * ni {
                let z = -x - y;
                let max = x.max(y).max(z);
                let min = x.min(y).min(z);
                if max <= ni || min >= -ni {
                    let g = region(ni, (x, y, z)).unwrap_or(0);
                    groups[g].push((x, y, z));
                }
            }
        }
        // Sort each group so that rotation maps group order to group order:
        // sort by a key that rotation transforms consistently (the coordinates
        // relabelled to the group's own player frame).
        for (g, cells) in groups.iter_mut().enumerate() {
            let player = if g == 0 { 0 } else { (g - 1) / 2 };
            cells.sort_by_key(|&c| frame(c, player));
        }
        let cubes: Vec<Cube> = groups.concat();
        let count = cubes.len();
        let h = groups[0].len();
        let k = groups[1].len();
        let index = |c: Cube| cubes.iter().position(|&d| d == c);
        let mut neighbour = vec![[NONE; 6]; count];
        for (i, &(x, y, z)) in cubes.iter().enumerate() {
            for (d, &(dx, dy, dz)) in DIRECTIONS.iter().enumerate() {
                if let Some(j) = index((x + dx, y + dy, z + dz)) {
                    neighbour[i][d] = j as u8;
                }
            }
        }
        let centre_mask = mask_range(0, h);
        let mut start_mask = [0u128; 3];
        let mut goal_mask = [0u128; 3];
        let mut lane_mask = [0u128; 3];
        for p in 0..3 {
            start_mask[p] = mask_range(h + 2 * k * p, k);
            goal_mask[p] = mask_range(h + 2 * k * p + k, k);
            lane_mask[p] = centre_mask | start_mask[p] | goal_mask[p];
        }
        let rotate =
            cubes.iter().map(|&(x, y, z)| index((z, x, y)).expect("rotation maps the star to itself") as u8).collect();
        let names = cell_names(&cubes, ni);
        let step_mask = neighbour
            .iter()
            .map(|row| row.iter().filter(|&&m| m != NONE).fold(0u128, |acc, &m| acc | 1u128 << m))
            .collect();
        let jumps: Vec<Vec<(u8, u8)>> = neighbour
            .iter()
            .map(|row| {
                (0..6)
                    .filter_map(|d| {
                        let over = row[d];
                        if over == NONE {
                            return None;
                        }
                        let land = neighbour[over as usize][d];
                        (land != NONE).then_some((over, land))
                    })
                    .collect()
            })
            .collect();
        let narrow_jumps = if count <= 64 { jump_table(&jumps) } else { JumpTable::default() };
        Star {
            n,
            k,
            h,
            cubes,
            neighbour,
            names,
            start_mask,
            goal_mask,
            lane_mask,
            centre_mask,
            rotate,
            step_mask,
            jumps,
            narrow_jumps,
        }
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.cubes.len()
    }

    /// Applies the cell permutation of the 120-degree rotation to a bitboard.
    pub fn rotate_bits(&self, bits: u128) -> u128 {
        let mut out = 0u128;
        let mut b = bits;
        while b != 0 {
            let c = b.trailing_zeros() as usize;
            out |= 1u128 << self.rotate[c];
            b &= b - 1;
        }
        out
    }

    /// Cell index of a name such as `e3`.
    pub fn cell_by_name(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}

/// Coordinates seen from player `p`'s frame: rotation by 120 degrees maps player
/// p's frame to player p+1's, so sorting by this key keeps rotation order-preserving.
fn frame((x, y, z): Cube, p: usize) -> (i32, i32) {
    match p {
        0 => (x, y),
        1 => (y, z),
        _ => (z, x),
    }
}

fn mask_range(start: usize, len: usize) -> u128 {
    if len == 0 { 0 } else { (u128::MAX >> (128 - len)) << start }
}

/// Rows run from A's goal (x = -2n, row `a`) to A's start (x = 2n); columns count
/// from 1 left to right in the picture (by `y - z`).
fn cell_names(cubes: &[Cube], n: i32) -> Vec<String> {
    cubes
        .iter()
        .map(|&(x, y, z)| {
            let row = (x + 2 * n) as u8;
            let col = cubes.iter().filter(|&&(x2, y2, z2)| x2 == x && (y2 - z2) < (y - z)).count() + 1;
            format!("{}{}", (b'a' + row) as char, col)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_counts_match_the_rules_table() {
        for (n, cells, h, k) in [(1, 13, 7, 1), (2, 37, 19, 3), (3, 73, 37, 6), (4, 121, 61, 10)] {
            let s = Star::new(n);
            assert_eq!((s.cells(), s.h, s.k), (cells, h, k), "order {n}");
        }
    }

    #[test]
    fn rotation_maps_regions_to_regions_in_order() {
        for n in 1..=4 {
            let s = Star::new(n);
            for p in 0..3 {
                assert_eq!(s.rotate_bits(s.start_mask[p]), s.start_mask[(p + 1) % 3]);
                assert_eq!(s.rotate_bits(s.goal_mask[p]), s.goal_mask[(p + 1) % 3]);
            }
            assert_eq!(s.rotate_bits(s.centre_mask), s.centre_mask);
            // Three rotations are the identity.
            for c in 0..s.cells() {
                let r = s.rotate[s.rotate[s.rotate[c] as usize] as usize] as usize;
                assert_eq!(r, c);
            }
        }
    }

    #[test]
    fn names_are_unique_and_neighbours_symmetric() {
        let s = Star::new(2);
        let mut names = s.names.clone();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), s.cells());
        for c in 0..s.cells() {
            for d in 0..6 {
                let m = s.neighbour[c][d];
                if m != NONE {
                    assert_eq!(s.neighbour[m as usize][(d + 3) % 6] as usize, c);
                }
            }
        }
    }
}
