//! The layer rule of ARCHITECTURE.md as a test: every module of `agentd/src` is on one
//! line of the chain there (the ```layers block), and the code of each module names only
//! modules on lines below its own (`crate::module` paths, in `use` lines and anywhere
//! else in the code; comments are left out, tests are not).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The chain: each module's line, top (0) to bottom.
fn levels() -> BTreeMap<String, usize> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"))
            .unwrap();
    let block = doc
        .split("```layers\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("ARCHITECTURE.md has a ```layers block");
    let mut levels = BTreeMap::new();
    for (level, line) in block.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        for module in line.split(',').map(str::trim) {
            assert!(
                levels.insert(module.to_owned(), level).is_none(),
                "{module} is on two lines of the chain"
            );
        }
    }
    levels
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules of the crate: its folders and files, less the crate roots.
fn modules(src: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(src)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            Some(name.strip_suffix(".rs").unwrap_or(&name).to_owned())
        })
        .filter(|n| n != "lib" && n != "main")
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The `crate::NAME` paths of a line's code (before any `//`), as module names.
fn named_modules(line: &str) -> Vec<&str> {
    let code = line.split("//").next().unwrap_or("");
    code.match_indices("crate::")
        .filter(|(at, _)| {
            // Not `agent_crate::` or similar: the path starts here.
            !code[..*at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
        .map(|(at, m)| {
            let rest = &code[at + m.len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

#[test]
fn every_module_is_on_the_chain_and_uses_only_lower_ones() {
    let levels = levels();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    let missing: Vec<&String> = modules
        .iter()
        .filter(|m| !levels.contains_key(*m))
        .collect();
    assert!(
        missing.is_empty(),
        "not on the chain of ARCHITECTURE.md: {missing:?}"
    );
    let gone: Vec<&String> = levels.keys().filter(|m| !modules.contains(m)).collect();
    assert!(
        gone.is_empty(),
        "on the chain but not in agentd/src: {gone:?}"
    );

    let mut all = Vec::new();
    files(&src, &mut all);
    all.sort();
    let mut wrong = Vec::new();
    for path in &all {
        let relative = path.strip_prefix(&src).unwrap();
        let first = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let module = first.strip_suffix(".rs").unwrap_or(first);
        let Some(&own) = levels.get(module) else {
            continue; // lib.rs, main.rs
        };
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in text.lines().enumerate() {
            for used in named_modules(line) {
                if used == module {
                    continue;
                }
                match levels.get(used) {
                    Some(&level) if level > own => {}
                    _ => wrong.push(format!(
                        "{}:{}: {module} uses {used}: {}",
                        relative.display(),
                        n + 1,
                        line.trim()
                    )),
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "modules that reach up or sideways:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_rule_reads_paths_and_skips_comments() {
    assert_eq!(
        named_modules("use crate::store::{Store, Grant};"),
        ["store"]
    );
    assert_eq!(
        named_modules("let x = crate::tools::wall::tmpdir(a, crate::config::X);"),
        ["tools", "config"]
    );
    assert!(named_modules("// see crate::session").is_empty());
    assert!(named_modules("use agent_proto::x; // crate::rpc").is_empty());
    assert!(named_modules("let s = \"my_crate::x\";").is_empty());
}
