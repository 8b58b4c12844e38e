//! `coordinator board`: the star with every cell's name, and the start.

use retro_games::cc3::Cc3;

/// Prints the board of star order `order`.
pub fn run(order: u32) -> Result<(), String> {
    let g = Cc3::new(order).map_err(|e| e.to_string())?;
    print!("{}", g.board_picture(None));
    println!("start: {}", g.format(&g.start()));
    print!("{}", g.board_picture(Some(&g.start())));
    Ok(())
}
