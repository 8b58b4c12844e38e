//! docs/FORMAT.md is the contract for other programs reading our tablebases:
//! its test vectors (position text -> rank -> value) hold for the files this
//! build writes, and `scripts/tbread.py`, an independent reader written from
//! that document alone, reads every value of those files exactly as the Rust
//! reader does, and refuses a damaged one by name.

use crate::common::*;
use retro_engine::tablebase::{DepthReader, TablebaseReader, depth_file_name, unpack_value};
use retro_engine::values::{DEPTH_NONE, DEPTH_UNKNOWN};
use retro_probe::Tablebases;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

/// One row of the table under "## Test vectors".
struct Vector {
    game: String,
    plan: String,
    layer: String,
    position: String,
    rank: u64,
    value: String,
}

/// The rows of the table of six columns under `title` in docs/FORMAT.md,
/// up to the next section, as their cells.
fn table_rows(title: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(repo().join("docs/FORMAT.md")).unwrap();
    let start = text.find(&format!("\n{title}\n")).unwrap_or_else(|| panic!("docs/FORMAT.md has a section {title}"));
    let section = &text[start + title.len() + 2..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .lines()
        .filter(|l| l.starts_with("| cc"))
        .map(|l| {
            let f: Vec<String> = l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect();
            assert_eq!(f.len(), 6, "{l}");
            f
        })
        .collect()
}

fn vectors() -> Vec<Vector> {
    let rows: Vec<Vector> = table_rows("## Test vectors")
        .into_iter()
        .map(|f| {
            let l = f.join(" | ");
            Vector {
                game: f[0].clone(),
                plan: f[1].clone(),
                layer: f[2].clone(),
                position: f[3].clone(),
                rank: f[4].parse().unwrap_or_else(|e| panic!("{l}: rank: {e}")),
                value: f[5].clone(),
            }
        })
        .collect();
    assert!(rows.len() >= 12, "the document promises at least 12 vectors");
    rows
}

#[test]
fn the_documents_test_vectors_hold() {
    let dir = TempDir::new("format-vectors");
    let mut solved: BTreeMap<String, PathBuf> = BTreeMap::new();
    let vectors = vectors();
    for v in &vectors {
        let n = solved.len();
        let tb = solved.entry(v.plan.clone()).or_insert_with(|| solve_plan(&dir, &v.plan, &format!("tb{n}"))).clone();
        let row = format!("{} {} {:?}", v.plan, v.layer, v.position);
        match retro_probe::open(&tb).unwrap() {
            Tablebases::ThreePlayer(p) => {
                assert_eq!(v.game, "cc3", "{row}");
                let pos = p.parse(&v.position).unwrap();
                assert_eq!(p.game.rank(&pos), v.rank, "{row}: rank");
                assert_eq!(p.game.format(&p.position_of(v.rank).unwrap()), v.position, "{row}: unrank");
                let layer = retro_probe::cc3::COMPUTED_LAYERS.iter().position(|l| *l == v.layer).unwrap();
                let value = p.layer_value(layer, v.rank).unwrap().word();
                assert_eq!(value, v.value, "{row}: value");
            }
            Tablebases::Ranked(p) => {
                assert_eq!((v.game.as_str(), v.layer.as_str()), ("cc3", "top2(A)"), "{row}");
                let pos = p.parse(&v.position).unwrap();
                assert_eq!(p.game.cc3.rank(&pos), v.rank, "{row}: rank");
                assert_eq!(p.top2(&pos).unwrap()[0].word(), v.value, "{row}: value");
            }
            Tablebases::TwoPlayer(p) => {
                assert_eq!((v.game.as_str(), v.layer.as_str()), ("cc2", retro_probe::cc2::LAYER), "{row}");
                let pos = p.parse(&v.position).unwrap();
                assert_eq!(p.game.rank_of(&pos).0, v.rank, "{row}: rank");
                let value = p.value_at_rank(v.rank).unwrap().word();
                assert_eq!(value, v.value, "{row}: value");
            }
        }
    }
    assert!(solved.len() >= 2, "vectors for both games");
}

/// The depth vectors: each row's position has that rank and, in its
/// layer's depth file, those plies (`none`: a draw or illegal; `unknown`:
/// not kept), read by the engine's depth reader and by the probe library
/// the explorer and the Python package use.
#[test]
fn the_documents_depth_vectors_hold() {
    let dir = TempDir::new("format-depth-vectors");
    let mut solved: BTreeMap<String, PathBuf> = BTreeMap::new();
    let rows = table_rows("## Depth test vectors");
    assert!(rows.len() >= 8, "the document promises at least 8 depth vectors");
    for f in &rows {
        let (plan, layer, position, want) = (&f[1], &f[2], &f[3], &f[5]);
        let rank: u64 = f[4].parse().unwrap();
        let n = solved.len();
        let tb = solved.entry(plan.clone()).or_insert_with(|| solve_plan(&dir, plan, &format!("tb{n}"))).clone();
        let row = format!("{plan} {layer} {position:?}");
        let mut reader = DepthReader::open(&tb.join(depth_file_name(layer))).unwrap();
        let got = match reader.probe(rank).unwrap() {
            DEPTH_NONE => "none".to_string(),
            DEPTH_UNKNOWN => "unknown".to_string(),
            d => d.to_string(),
        };
        assert_eq!(&got, want, "{row}: plies");
        let probed = match retro_probe::open(&tb).unwrap() {
            Tablebases::ThreePlayer(p) => {
                let pos = p.parse(position).unwrap();
                assert_eq!(p.game.rank(&pos), rank, "{row}: rank");
                let l = retro_probe::cc3::COMPUTED_LAYERS.iter().position(|q| q == layer).unwrap();
                p.layer_plies(l, rank).unwrap()
            }
            Tablebases::Ranked(p) => {
                let pos = p.parse(position).unwrap();
                assert_eq!(p.game.cc3.rank(&pos), rank, "{row}: rank");
                match p.top2_plies(&pos).unwrap()[0] {
                    Some(d) => retro_probe::Plies::Known(d),
                    None => retro_probe::Plies::None,
                }
            }
            Tablebases::TwoPlayer(p) => {
                let pos = p.parse(position).unwrap();
                assert_eq!(p.game.rank_of(&pos).0, rank, "{row}: rank");
                p.plies(&pos).unwrap()
            }
        };
        if let Ok(d) = want.parse::<u32>() {
            assert_eq!(probed, retro_probe::Plies::Known(d), "{row}: the probe library's plies");
        }
    }
    assert!(solved.len() >= 2, "depth vectors of more than one plan");
}

fn tbread(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let mut c = Command::new("python3");
    c.arg(repo().join("scripts/tbread.py")).args(args);
    run(c, LIMIT)
}

/// Every value of `file` as one line of digits, read by the Rust reader.
fn digits(file: &Path) -> String {
    let mut r = TablebaseReader::open(file).unwrap();
    let n = r.header().positions;
    let packed = r.read_all().unwrap();
    (0..n).map(|i| char::from(b'0' + unpack_value(&packed, i))).collect()
}

#[test]
fn the_python_reader_reads_what_we_write_and_refuses_damage() {
    let dir = TempDir::new("format-python");
    let mut files = Vec::new();
    for (plan, name) in [("plans/stage1.toml", "s1"), ("plans/cc2-m7p1.toml", "c2")] {
        let tb = solve_plan(&dir, plan, name);
        for e in std::fs::read_dir(&tb).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "tb") {
                files.push(e.path());
            }
        }
    }
    assert_eq!(files.len(), 4, "three stage-1 layers and one two-player layer");
    for f in &files {
        let out = tbread(&[f.as_os_str(), "--all".as_ref()]);
        assert!(out.status.success(), "{}: {}", f.display(), String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), digits(f), "{}", f.display());
    }
    let solo = files.iter().find(|f| f.ends_with("solo_A.tb")).unwrap();
    let out = tbread(&[solo.as_os_str(), "0".as_ref(), "1".as_ref()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0 loss\n1 win\n");

    // A flipped byte in the first block: named, with the file, non-zero exit.
    let bad = dir.join("damaged.tb");
    let mut bytes = std::fs::read(solo).unwrap();
    let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    bytes[16 + json_len + 4 + 2] ^= 0x40;
    std::fs::write(&bad, bytes).unwrap();
    let out = tbread(&[bad.as_os_str(), "--all".as_ref()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("damaged.tb") && err.contains("checksum"), "{err}");
}
