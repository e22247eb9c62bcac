use serde_json::{Value, json};

use super::*;
use crate::tools::BuiltinTool;
use crate::tools::builtin::testing::{call, world};

#[tokio::test]
async fn read_file_pages_and_says_what_was_cut() {
    let w = world();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    std::fs::write(w.ws.join("ten.txt"), &text).unwrap();
    std::fs::write(
        w.ws.join("long.txt"),
        format!("{}\nshort\n", "x".repeat(2500)),
    )
    .unwrap();
    std::fs::write(w.ws.join("bin"), b"ab\0cd").unwrap();
    std::fs::write(w.ws.join("empty"), b"").unwrap();
    let cases: Vec<(Value, bool, &str)> = vec![
        (
            json!({"path": "ten.txt", "limit": 3}),
            false,
            "     1\tline 1\n     2\tline 2\n     3\tline 3\n[lines 1-3 of 10; continue with offset=4]",
        ),
        (
            json!({"path": "ten.txt", "offset": 9}),
            false,
            "     9\tline 9\n    10\tline 10\n[lines 9-10 of 10]",
        ),
        (
            json!({"path": "ten.txt", "offset": 11}),
            true,
            "offset 11 is past the end",
        ),
        (json!({"path": "bin"}), true, "binary file"),
        (
            json!({"path": "."}),
            true,
            "is a directory; use list_directory",
        ),
        (json!({"path": "missing"}), true, "cannot read"),
        (json!({"path": "empty"}), false, "is empty"),
    ];
    for (args, is_error, expected) in cases {
        let out = call(&ReadFile, &w.ctx, args.clone()).await;
        assert_eq!(out.is_error, is_error, "{args}: {}", out.content);
        assert!(out.content.contains(expected), "{args}: {}", out.content);
    }
    let out = call(&ReadFile, &w.ctx, json!({"path": "long.txt"})).await;
    assert!(out.content.contains("... [line cut: 2500 chars]"));
    assert!(
        out.content.contains("1 long lines cut at 2000 chars"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn read_file_caps_total_output() {
    let w = world();
    let line = "y".repeat(1000);
    let text: String = (0..600).map(|_| format!("{line}\n")).collect();
    std::fs::write(w.ws.join("big.txt"), text).unwrap();
    let out = call(&ReadFile, &w.ctx, json!({"path": "big.txt"})).await;
    assert!(
        out.content.len() <= MAX_READ_BYTES + 200,
        "{}",
        out.content.len()
    );
    assert!(
        out.content
            .contains("output cut at 256 KiB, continue with offset="),
        "{}",
        &out.content[out.content.len() - 200..]
    );
}

#[tokio::test]
async fn write_and_edit() {
    let w = world();
    let out = call(
        &WriteFile,
        &w.ctx,
        json!({"path": "src/a.txt", "content": "one\ntwo\ntwo\n"}),
    )
    .await;
    assert_eq!(
        out,
        ToolOutput::ok(format!(
            "created {} (12 bytes)",
            w.ws.join("src/a.txt").display()
        ))
    );
    let out = call(
        &WriteFile,
        &w.ctx,
        json!({"path": "src/a.txt", "content": "one\ntwo\ntwo\n"}),
    )
    .await;
    assert!(out.content.starts_with("overwrote"));

    let edits: Vec<(Value, bool, &str)> = vec![
        (
            json!({"path": "src/a.txt", "old_string": "zzz", "new_string": "q"}),
            true,
            "was not found",
        ),
        (
            json!({"path": "src/a.txt", "old_string": "two", "new_string": "2"}),
            true,
            "occurs 2 times",
        ),
        (
            json!({"path": "src/a.txt", "old_string": "", "new_string": "2"}),
            true,
            "old_string is empty",
        ),
        (
            json!({"path": "src/a.txt", "old_string": "one", "new_string": "1"}),
            false,
            "-one\n+1\n",
        ),
        (
            json!({"path": "src/a.txt", "old_string": "two", "new_string": "2", "replace_all": true}),
            false,
            "(2 replacements)",
        ),
    ];
    for (args, is_error, expected) in edits {
        let out = call(&EditFile, &w.ctx, args.clone()).await;
        assert_eq!(out.is_error, is_error, "{args}: {}", out.content);
        assert!(out.content.contains(expected), "{args}: {}", out.content);
    }
    assert_eq!(
        std::fs::read_to_string(w.ws.join("src/a.txt")).unwrap(),
        "1\n2\n2\n"
    );
    let out = call(
        &EditFile,
        &w.ctx,
        json!({"path": "src/a.txt", "old_string": "1\n", "new_string": "uno\n"}),
    )
    .await;
    let name = w.ws.join("src/a.txt").display().to_string();
    assert!(
        out.content.contains(&format!(
            "--- a/{name}\n+++ b/{name}\n@@ -1,3 +1,3 @@\n-1\n+uno\n 2\n 2\n"
        )),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn listing_and_trees() {
    let w = world();
    for dir in ["a/b/c/d", ".git/objects", "e"] {
        std::fs::create_dir_all(w.ws.join(dir)).unwrap();
    }
    std::fs::write(w.ws.join("a/f.txt"), "x").unwrap();
    std::fs::write(w.ws.join("a/b/c/d/deep.txt"), "x").unwrap();
    std::os::unix::fs::symlink("a/f.txt", w.ws.join("link")).unwrap();
    let out = call(&ListDirectory, &w.ctx, json!({})).await;
    assert_eq!(out.content, ".git/\na/\ne/\nlink -> a/f.txt");
    let cases: Vec<(u64, &str)> = vec![
        (0, ""),
        (1, "├── a/\n├── e/\n└── link -> a/f.txt"),
        (
            2,
            "├── a/\n│   ├── b/\n│   └── f.txt\n├── e/\n└── link -> a/f.txt",
        ),
        (
            3,
            "├── a/\n│   ├── b/\n│   │   └── c/\n│   └── f.txt\n├── e/\n└── link -> a/f.txt",
        ),
    ];
    for (depth, expected) in cases {
        let out = call(&DirectoryTree, &w.ctx, json!({"depth": depth})).await;
        let body: String = out.content.lines().skip(1).collect::<Vec<_>>().join("\n");
        assert_eq!(body, expected, "depth {depth}");
    }
    let out = call(&DirectoryTree, &w.ctx, json!({"depth": 4})).await;
    assert!(out.content.contains("│   │   └── c/\n"), "{}", out.content);
    // (the first line names the temp root, whose random name may hold "d/")
    let body: String = out.content.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert!(!body.contains("d/"), "clamped to 3: {}", out.content);
    assert!(
        out.content
            .contains("[depth 4 is over the maximum; showing depth 3]")
    );
    let out = call(&ListDirectory, &w.ctx, json!({"path": "a/f.txt"})).await;
    assert!(out.is_error);
}

#[tokio::test]
async fn writes_fail_when_the_checked_path_changed() {
    let w = world();
    let root = w.ws.parent().unwrap().to_owned();
    let outside = root.join("outside.txt");
    std::fs::write(&outside, "old").unwrap();
    let target = w.ws.join("f.txt");
    let calls: Vec<(&dyn BuiltinTool, Value)> = vec![
        (&WriteFile, json!({"path": "f.txt", "content": "new"})),
        (
            &EditFile,
            json!({"path": "f.txt", "old_string": "old", "new_string": "new"}),
        ),
        (&ReadFile, json!({"path": "f.txt"})),
    ];
    for (tool, args) in calls {
        let _ = std::fs::remove_file(&target);
        std::fs::write(&target, "old").unwrap();
        let mut ctx = w.ctx.clone();
        let Ok(Access::Paths { paths, .. }) = tool.access(&args, &ctx) else {
            panic!("{} has paths", tool.name());
        };
        assert_eq!(paths[0].path, target);
        ctx.checked.paths = paths;
        // Swapped for a link out of the workspace between the check and the use.
        std::fs::remove_file(&target).unwrap();
        std::os::unix::fs::symlink(&outside, &target).unwrap();
        let out = tool.run(args, &ctx).await;
        assert!(
            out.is_error && out.content.contains("is a symbolic link"),
            "{}: {}",
            tool.name(),
            out.content
        );
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "old");
    }
    // A tool run without a checked path refuses rather than resolving on its own.
    let out = BuiltinTool::run(&WriteFile, json!({"path": "g.txt", "content": "x"}), &w.ctx).await;
    assert!(
        out.is_error && out.content.contains("not checked"),
        "{}",
        out.content
    );
    assert!(!w.ws.join("g.txt").exists());
}

#[test]
fn access_resolves_paths() {
    let w = world();
    let access = BuiltinTool::access(&ReadFile, &json!({"path": "../x"}), &w.ctx).unwrap();
    match access {
        Access::Paths { level, paths } => {
            assert_eq!(level, PermissionLevel::Read);
            assert_eq!(paths[0].path, w.ws.parent().unwrap().join("x"));
            assert_eq!(paths[0].zone, crate::tools::sandbox::Zone::Outside);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        BuiltinTool::access(&WriteFile, &json!({"path": "x", "content": ""}), &w.ctx),
        Ok(Access::Paths {
            level: PermissionLevel::Write,
            ..
        })
    ));
    let _ = w.dir.path();
}
