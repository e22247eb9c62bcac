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

/// Longest a function of the daemon may be without saying why.
const LONG_FUNCTION: usize = 100;

/// How many long functions there may be: a handful.
const MOST_LONG_FUNCTIONS: usize = 5;

/// What a long function's doc comment says to be one.
const LONG_ON_PURPOSE: &str = "Long on purpose";

/// `source` with its comments, strings and character literals blanked (newlines kept),
/// so that braces and `fn` are code wherever they are found.
fn code_only(source: &str) -> Vec<char> {
    let s: Vec<char> = source.chars().collect();
    let mut out = s.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in &mut out[from..to.min(s.len())] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < s.len() {
        let start = i;
        match s[i] {
            '/' if s.get(i + 1) == Some(&'/') => {
                while i < s.len() && s[i] != '\n' {
                    i += 1;
                }
            }
            '/' if s.get(i + 1) == Some(&'*') => {
                let mut depth = 0;
                while i < s.len() {
                    if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            'r' if (i == 0 || !ident(s[i - 1]) || s[i - 1] == 'b')
                && matches!(s.get(i + 1), Some('"' | '#')) =>
            {
                let hashes = s[i + 1..].iter().take_while(|&&c| c == '#').count();
                if s.get(i + 1 + hashes) != Some(&'"') {
                    i += 1;
                    continue;
                }
                i += hashes + 2;
                while i < s.len() {
                    if s[i] == '"'
                        && s[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&c| c == '#')
                            .count()
                            == hashes
                    {
                        i += hashes + 1;
                        break;
                    }
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < s.len() && s[i] != '"' {
                    i += if s[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
            '\'' if s.get(i + 1) == Some(&'\\') => {
                i += 3;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
            }
            '\'' if s.get(i + 2) == Some(&'\'') => i += 3,
            _ => {
                i += 1;
                continue;
            }
        }
        blank(&mut out, start, i);
    }
    out
}

/// The functions of `source` outside its tests (from `#[cfg(test)]` on), with the line
/// each starts on (from 1), how many lines it spans and its doc comment.
fn functions(source: &str) -> Vec<(String, usize, usize, String)> {
    let source = source.split("#[cfg(test)]").next().unwrap_or("");
    let code = code_only(source);
    let lines: Vec<&str> = source.lines().collect();
    let line_of = |at: usize| code[..at].iter().filter(|&&c| c == '\n').count();
    let mut found = Vec::new();
    let mut i = 0;
    while i + 3 < code.len() {
        let is_fn = code[i..i + 3] == ['f', 'n', ' ']
            && (i == 0 || !(code[i - 1].is_alphanumeric() || code[i - 1] == '_'));
        if !is_fn {
            i += 1;
            continue;
        }
        let name: String = code[i + 3..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect();
        let Some(open) = code[i..]
            .iter()
            .position(|&c| c == '{' || c == ';')
            .map(|p| i + p)
            .filter(|&p| code[p] == '{')
        else {
            i += 3;
            continue;
        };
        let mut depth = 0;
        let mut end = open;
        for (k, &c) in code.iter().enumerate().skip(open) {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => continue,
            }
            if depth == 0 {
                end = k;
                break;
            }
        }
        let first = line_of(i);
        let doc: Vec<&str> = lines[..first]
            .iter()
            .rev()
            .map(|l| l.trim())
            .take_while(|l| l.starts_with("///") || l.starts_with("#["))
            .collect();
        found.push((
            name,
            first + 1,
            line_of(end) - first + 1,
            doc.into_iter().rev().collect::<Vec<_>>().join("\n"),
        ));
        // Nested functions are looked at too.
        i = open + 1;
    }
    found
}

#[test]
fn long_functions_are_few_and_say_why() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    all.sort();
    let mut long = Vec::new();
    let mut unexplained = Vec::new();
    for path in &all {
        let relative = path.strip_prefix(&src).unwrap();
        let name = relative.file_name().unwrap().to_str().unwrap();
        if name.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        for (function, line, length, doc) in functions(&text) {
            if length <= LONG_FUNCTION {
                continue;
            }
            let at = format!("{}:{line} {function} ({length} lines)", relative.display());
            if !doc.contains(LONG_ON_PURPOSE) {
                unexplained.push(at.clone());
            }
            long.push(at);
        }
    }
    assert!(
        unexplained.is_empty(),
        "functions over {LONG_FUNCTION} lines whose doc comment does not say why \
         (\"{LONG_ON_PURPOSE}: ...\"); split them by phase or say why not:\n{}",
        unexplained.join("\n")
    );
    assert!(
        long.len() <= MOST_LONG_FUNCTIONS,
        "more than {MOST_LONG_FUNCTIONS} functions over {LONG_FUNCTION} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_rule_reads_code_only() {
    let source = "/// Doc.\nfn a() {\n    let s = \"}{\";\n    let c = '{';\n    // }\n    \
                  let r = r#\"{\"#;\n}\n\nfn b<'x>(v: &'x str);\n\n#[inline]\nfn c() { fn d() {} }\n";
    let found = functions(source);
    let names: Vec<(&str, usize, usize)> = found
        .iter()
        .map(|(n, line, len, _)| (n.as_str(), *line, *len))
        .collect();
    assert_eq!(names, [("a", 2, 6), ("c", 12, 1), ("d", 12, 1)]);
    assert_eq!(found[0].3, "/// Doc.");
    assert_eq!(found[1].3, "#[inline]");
}

/// The invariant "`store/` is the only module that runs SQL" read from the code: no file
/// outside `store/` names `sqlx` (a store failure elsewhere is a `StoreError` of the
/// store's own, never a database error made up by the caller).
#[test]
fn only_the_store_names_sqlx() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    all.sort();
    let mut outside = Vec::new();
    for path in &all {
        let relative = path.strip_prefix(&src).unwrap();
        if relative.starts_with("store") {
            continue;
        }
        let code: String = code_only(&std::fs::read_to_string(path).unwrap())
            .into_iter()
            .collect();
        for (number, line) in code.lines().enumerate() {
            let named = line
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|word| word == "sqlx");
            if named {
                outside.push(format!("{}:{}", relative.display(), number + 1));
            }
        }
    }
    assert!(
        outside.is_empty(),
        "sqlx named outside store/ (add what is needed to the store's API or StoreError):\n{}",
        outside.join("\n")
    );
}

/// The test code outside the kit: the e2e scenarios, agentctl's and the kit's own tests,
/// and the daemon's unit tests (its `agentd/src`).
fn test_code_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for dir in ["src", "../tests/e2e", "../tests/agentctl", "../tests/tests"] {
        files(&root.join(dir), &mut all);
    }
    all.sort();
    all
}

/// Each `assert…!(…)` of `code` (comments and strings blanked), whole.
fn asserts(code: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("assert") {
        let tail = &rest[at..];
        let Some(open) = tail.find('(') else { break };
        let mut depth = 0;
        let mut end = tail.len();
        for (i, c) in tail[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        found.push(&tail[..end]);
        rest = &tail[open + 1..];
    }
    found
}

/// The tests wait the kit's way and time nothing: a condition nothing announces is awaited
/// with `agentd_testkit::wait::eventually` (or a helper built on it), never a hand-written
/// deadline loop; and no assert compares an elapsed time (speed is the bench's, and on a
/// shared 2-core machine a timing assert is a flake, not a finding).
#[test]
fn tests_wait_with_the_kit_and_time_nothing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for path in test_code_files() {
        let code: String = code_only(&std::fs::read_to_string(&path).unwrap())
            .into_iter()
            .collect();
        let shown = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let in_tests = !shown.starts_with("src") || code.contains("#[cfg(test)]");
        if !in_tests {
            continue;
        }
        let test_part = match shown.starts_with("src") {
            // A source file's tests follow its `#[cfg(test)]`.
            true => &code[code.find("#[cfg(test)]").unwrap()..],
            false => &code[..],
        };
        if test_part.contains("let deadline") {
            found.push(format!("{shown}: a hand-written deadline loop"));
        }
        for assert in asserts(test_part) {
            if assert.contains(".elapsed()") {
                found.push(format!(
                    "{shown}: {}",
                    assert.split_whitespace().collect::<Vec<_>>().join(" ")
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "wait with eventually() and leave timing to the bench:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_wait_rule_reads_whole_asserts() {
    let code =
        "assert!(\n    started.elapsed() < LIMIT,\n    \"{:?}\", f(x)\n);\nassert_eq!(a, b);";
    assert_eq!(
        asserts(code),
        [
            "assert!(\n    started.elapsed() < LIMIT,\n    \"{:?}\", f(x)\n)",
            "assert_eq!(a, b)"
        ]
    );
}
