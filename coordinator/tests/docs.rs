//! The documents cannot drift from the code: every repository path the
//! README and docs/ name exists, and every `coordinator` / `worker`
//! subcommand and flag their command lines use is one the binary's help
//! lists.

use crate::common::{coordinator, repo, worker};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

/// Paths the documents name that a reader creates (they say so beside them).
const CREATED_BY_THE_READER: [&str; 1] = ["docs/results/cc2-m6p6-summary.json"];

/// Top-level folders whose paths the documents name.
const ROOTS: [&str; 9] =
    ["plans/", "scripts/", "docs/", "deploy/", "proto/", "coordinator/", "worker/", "engine/", "games/"];

/// The README and every Markdown file under docs/, with their text.
fn documents() -> Vec<(PathBuf, String)> {
    let mut files = vec![repo().join("README.md")];
    let mut dirs = vec![repo().join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    files.sort();
    files.into_iter().map(|p| (p.clone(), std::fs::read_to_string(&p).unwrap())).collect()
}

/// The repository paths named in `text`: a root folder, then path characters.
fn named_paths(text: &str) -> BTreeSet<String> {
    let is_path = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut out = BTreeSet::new();
    for (i, _) in text.char_indices() {
        // A path starts a word: not inside another path or a URL.
        if text[..i].chars().next_back().is_some_and(|c| is_path(c) || c == ':') {
            continue;
        }
        let Some(root) = ROOTS.iter().find(|r| text[i..].starts_with(*r)) else { continue };
        let rest = &text[i + root.len()..];
        let len = rest.find(|c: char| !is_path(c)).unwrap_or(rest.len());
        let path = format!("{root}{}", &rest[..len]).trim_end_matches(['.', '-']).to_string();
        // Patterns (`plans/*.toml`, `docs/results/<name>`) name no one file.
        let next = rest[len..].chars().next();
        if path.len() > root.len() && !matches!(next, Some('*' | '<' | '{' | '$')) {
            out.insert(path);
        }
    }
    out
}

#[test]
fn every_path_the_documents_name_exists() {
    let mut missing = Vec::new();
    let mut checked = 0;
    for (file, text) in documents() {
        for path in named_paths(&text) {
            checked += 1;
            if !repo().join(&path).exists() && !CREATED_BY_THE_READER.contains(&path.as_str()) {
                missing.push(format!("{}: {path}", file.strip_prefix(repo()).unwrap().display()));
            }
        }
    }
    assert!(checked > 100, "only {checked} paths found: the scan is broken");
    assert!(missing.is_empty(), "named in the documents but not in the repository:\n{}", missing.join("\n"));
}

/// The subcommands a binary's `--help` lists (nested ones as `peg solve`),
/// and each one's flags (the key "" holds the top level's).
fn help_of(binary: &PathBuf) -> BTreeMap<String, BTreeSet<String>> {
    let help = |args: &[&str]| {
        let out = Command::new(binary).args(args).arg("--help").output().unwrap();
        assert!(out.status.success(), "{} {args:?} --help failed", binary.display());
        String::from_utf8(out.stdout).unwrap()
    };
    let flags = |text: &str| -> BTreeSet<String> {
        text.split(|c: char| c.is_whitespace() || c == ',' || c == '=' || c == '[' || c == ']')
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_string())
            .collect()
    };
    let commands = |text: &str| -> Vec<String> {
        let Some(list) = text.split("Commands:").nth(1) else { return Vec::new() };
        let list = list.split("Options:").next().unwrap_or(list);
        list.lines().filter_map(|l| l.split_whitespace().next()).filter(|n| *n != "help").map(String::from).collect()
    };
    let mut out = BTreeMap::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        for c in commands(&text) {
            let mut sub = path.clone();
            sub.push(c);
            todo.push(sub);
        }
        out.insert(path.join(" "), flags(&text));
    }
    out
}

/// Checks one command line of a document against the binary's help:
/// `binary [subcommand ...] [--flag ...]`; returns what is not there.
fn unknown_in(line: &str, name: &str, help: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    for (at, _) in words.iter().enumerate().filter(|(_, w)| **w == name || w.ends_with(&format!("/{name}"))) {
        let mut sub = String::new();
        let mut rest = &words[at + 1..];
        // The longest run of words that names a subcommand.
        while let Some(first) = rest.first() {
            let longer = if sub.is_empty() { first.to_string() } else { format!("{sub} {first}") };
            if help.contains_key(&longer) {
                sub = longer;
                rest = &rest[1..];
            } else {
                break;
            }
        }
        let subcommands_below = help.keys().any(|k| !k.is_empty() && k.starts_with(&sub) && *k != sub);
        if let Some(first) = rest.first()
            && subcommands_below
            && !first.is_empty()
            && first.chars().all(|c| c.is_ascii_lowercase())
        {
            out.push(format!("{name} {sub} {first}: no such subcommand"));
            continue;
        }
        for w in rest.iter().take_while(|w| !["|", "&&", ";", "#", ">", "2>"].contains(w)) {
            let flag = w.split('=').next().unwrap().trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
            if flag.starts_with("--") && flag.len() > 2 && !help[&sub].contains(flag) && !help[""].contains(flag) {
                out.push(format!("{name} {sub} {flag}: no such flag"));
            }
        }
    }
    out
}

#[test]
fn every_command_line_in_the_documents_runs_a_real_subcommand_and_flags() {
    let helps = [("coordinator", help_of(&coordinator())), ("worker", help_of(&worker()))];
    assert!(helps[0].1.len() > 10, "{:?}", helps[0].1.keys());
    let mut wrong = Vec::new();
    let mut lines = 0;
    for (file, text) in documents() {
        let mut in_code = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
                continue;
            }
            // Command lines: code blocks, and `...` spans in the text.
            let spans: Vec<&str> = if in_code { vec![line] } else { line.split('`').skip(1).step_by(2).collect() };
            for span in spans {
                for (name, help) in &helps {
                    let first = span.split_whitespace().next().unwrap_or("");
                    let starts = first == *name || first.ends_with(&format!("/{name}")) || first == "$";
                    if starts {
                        lines += 1;
                        for w in unknown_in(span, name, help) {
                            wrong.push(format!("{}: `{span}`: {w}", file.strip_prefix(repo()).unwrap().display()));
                        }
                    }
                }
            }
        }
    }
    assert!(lines > 30, "only {lines} command lines found: the scan is broken");
    assert!(wrong.is_empty(), "command lines the binaries do not accept:\n{}", wrong.join("\n"));
}

/// The checker finds what it is for: a made-up subcommand and flag, and a
/// path that is not there.
#[test]
fn the_checks_can_fail() {
    let help = help_of(&coordinator());
    assert!(unknown_in("coordinator --plan plans/stage1.toml", "coordinator", &help).is_empty());
    assert!(unknown_in("coordinator probe --tablebase tb --json", "coordinator", &help).is_empty());
    assert_eq!(unknown_in("coordinator frobnicate --x", "coordinator", &help).len(), 1);
    assert_eq!(unknown_in("coordinator probe --no-such-flag", "coordinator", &help).len(), 1);
    assert!(unknown_in("coordinator peg solve --board european --start d3", "coordinator", &help).is_empty());
    assert_eq!(unknown_in("coordinator peg frobnicate", "coordinator", &help).len(), 1);
    let paths = named_paths("see plans/stage1.toml, plans/*.toml and https://x/plans/y.toml");
    assert_eq!(paths, BTreeSet::from(["plans/stage1.toml".to_string()]));
}

/// The environment variables the Rust files under `dirs` read: the names in
/// `env::var("...")` and clap's `env = "..."`, and `RETRO_<SECTION>__<KEY>`
/// where a plan takes overrides from the environment (`with_prefix("RETRO")`).
fn variables_read(dirs: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo: Vec<PathBuf> = dirs.iter().map(|d| repo().join(d)).collect();
    while let Some(path) = todo.pop() {
        if path.is_dir() {
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for opener in ["env::var(\"", "env::var_os(\"", "env = \""] {
            for piece in text.split(opener).skip(1) {
                let name: String = piece.chars().take_while(|c| c.is_ascii_uppercase() || *c == '_').collect();
                if !name.is_empty() && piece[name.len()..].starts_with('"') {
                    out.insert(name);
                }
            }
        }
        if text.contains("with_prefix(\"RETRO\")") {
            out.insert("RETRO_<SECTION>__<KEY>".to_string());
        }
    }
    out
}

/// `--help` names every environment variable the binary's code reads, so a
/// new one cannot be added without saying so.
#[test]
fn help_names_every_environment_variable() {
    for (binary, dirs) in
        [(coordinator(), &["coordinator/src", "node/src"][..]), (worker(), &["worker/src", "node/src"][..])]
    {
        let out = Command::new(&binary).arg("--help").output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        let read = variables_read(dirs);
        assert!(read.contains("RETRO_TOKEN") && read.contains("RETRO_FAULT"), "the scan finds nothing: {read:?}");
        for name in read.iter().chain(&["RUST_LOG".to_string()]) {
            assert!(help.contains(name.as_str()), "{} --help does not name {name}:\n{help}", binary.display());
        }
    }
}
