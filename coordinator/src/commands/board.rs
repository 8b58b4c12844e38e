//! `coordinator board`: the star with every cell's name, and the start.

use super::CliError;

use retro_games::cc3::Cc3;

/// Prints the board of star order `order`.
pub fn run(order: u32) -> Result<(), CliError> {
    let g = Cc3::new(order)?;
    print!("{}", g.board_picture(None));
    println!("start: {}", g.format(&g.start()));
    print!("{}", g.board_picture(Some(&g.start())));
    Ok(())
}
