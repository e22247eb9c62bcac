use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::*;

struct World {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    cp: Checkpoints,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(root.join("data/sessions/me")).unwrap();
    let sandbox = Sandbox::new(&ws, &root.join("data"), "me").unwrap();
    World {
        _dir: dir,
        cp: Checkpoints::new(&sandbox),
        ws,
    }
}

fn write(ws: &Path, rel: &str, text: &str) {
    let p = ws.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(ws: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(ws.join(rel)).ok()
}

#[test]
fn an_unchanged_tree_reuses_its_snapshot_and_a_change_makes_a_new_one() {
    let w = world();
    write(&w.ws, "a.txt", "one\n");
    let first = w.cp.take(None).unwrap();
    assert_eq!(w.cp.take(Some(&first)).unwrap(), first);
    write(&w.ws, "a.txt", "two\n");
    let second = w.cp.take(Some(&first)).unwrap();
    assert_ne!(second, first);
    let changes =
        w.cp.diff(&w.cp.load(&first).unwrap(), &w.cp.load(&second).unwrap())
            .unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].status, ChangeStatus::Modified);
    assert!(
        changes[0].diff.contains("-one\n+two\n"),
        "{}",
        changes[0].diff
    );
    assert!(changes[0].diff.contains("--- a/a.txt\n+++ b/a.txt"));
}

#[test]
fn ignored_files_and_git_are_not_tracked() {
    let w = world();
    write(&w.ws, ".gitignore", "target/\n*.log\n");
    write(&w.ws, "target/big", "x");
    write(&w.ws, "x.log", "x");
    write(&w.ws, ".git/HEAD", "ref: refs/heads/main\n");
    write(&w.ws, ".hidden", "h");
    let m = w.cp.scan(None).unwrap();
    let paths: Vec<&str> = m.entries.keys().map(String::as_str).collect();
    assert_eq!(paths, [".gitignore", ".hidden"]);
}

#[test]
fn a_revert_restores_what_the_runs_changed_and_leaves_what_others_changed() {
    let w = world();
    write(&w.ws, "kept.txt", "keep\n");
    write(&w.ws, "edited.txt", "before\n");
    write(&w.ws, "deleted/deep.txt", "gone soon\n");
    write(&w.ws, "theirs.txt", "v1\n");
    std::fs::set_permissions(
        w.ws.join("kept.txt"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    symlink("kept.txt", w.ws.join("link")).unwrap();
    let before = w.cp.take(None).unwrap();
    // the runs
    write(&w.ws, "edited.txt", "after\n");
    std::fs::remove_dir_all(w.ws.join("deleted")).unwrap();
    write(&w.ws, "created/new.txt", "new\n");
    write(&w.ws, "theirs.txt", "v2\n");
    std::fs::remove_file(w.ws.join("link")).unwrap();
    symlink("edited.txt", w.ws.join("link")).unwrap();
    let after = w.cp.take(Some(&before)).unwrap();
    // someone else, after the runs
    write(&w.ws, "theirs.txt", "v3 by hand\n");
    let done =
        w.cp.revert(&w.cp.turn_changes(&[(before, Some(after))]).unwrap())
            .unwrap();
    assert_eq!(
        done.restored,
        [
            "created",
            "created/new.txt",
            "deleted",
            "deleted/deep.txt",
            "edited.txt",
            "link"
        ]
    );
    assert_eq!(done.conflicts.len(), 1, "{:?}", done.conflicts);
    assert_eq!(done.conflicts[0].path, "theirs.txt");
    assert_eq!(read(&w.ws, "edited.txt").as_deref(), Some("before\n"));
    assert_eq!(
        read(&w.ws, "deleted/deep.txt").as_deref(),
        Some("gone soon\n")
    );
    assert!(!w.ws.join("created").exists());
    assert_eq!(read(&w.ws, "theirs.txt").as_deref(), Some("v3 by hand\n"));
    assert_eq!(
        std::fs::read_link(w.ws.join("link")).unwrap(),
        PathBuf::from("kept.txt")
    );
    let mode = std::fs::metadata(w.ws.join("kept.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[test]
fn an_edit_by_hand_between_two_turns_is_a_conflict_and_untouched_paths_stay() {
    let w = world();
    write(&w.ws, "a.txt", "a0\n");
    write(&w.ws, "b.txt", "b0\n");
    write(&w.ws, "c.txt", "c0\n");
    let b1 = w.cp.take(None).unwrap();
    write(&w.ws, "a.txt", "a1 by turn one\n");
    let a1 = w.cp.take(Some(&b1)).unwrap();
    // by hand between the turns: one the first turn changed, one no turn changes
    write(&w.ws, "a.txt", "a2 by hand\n");
    write(&w.ws, "c.txt", "c2 by hand\n");
    let b2 = w.cp.take(Some(&a1)).unwrap();
    write(&w.ws, "b.txt", "b1 by turn two\n");
    let a2 = w.cp.take(Some(&b2)).unwrap();
    let changes =
        w.cp.turn_changes(&[(b1, Some(a1)), (b2, Some(a2))])
            .unwrap();
    let done = w.cp.revert(&changes).unwrap();
    assert_eq!(done.restored, ["b.txt"]);
    assert_eq!(done.conflicts.len(), 1, "{done:?}");
    assert_eq!(done.conflicts[0].path, "a.txt");
    assert_eq!(read(&w.ws, "a.txt").as_deref(), Some("a2 by hand\n"));
    assert_eq!(read(&w.ws, "b.txt").as_deref(), Some("b0\n"));
    assert_eq!(read(&w.ws, "c.txt").as_deref(), Some("c2 by hand\n"));
}

#[test]
fn a_revert_never_writes_through_a_link_swapped_in() {
    let w = world();
    let outside = w.ws.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    write(&w.ws, "dir/f.txt", "before\n");
    let before = w.cp.take(None).unwrap();
    write(&w.ws, "dir/f.txt", "after\n");
    let after = w.cp.take(Some(&before)).unwrap();
    // the folder is swapped for a link out of the workspace
    std::fs::remove_dir_all(w.ws.join("dir")).unwrap();
    symlink(&outside, w.ws.join("dir")).unwrap();
    let done =
        w.cp.revert(&w.cp.turn_changes(&[(before, Some(after))]).unwrap())
            .unwrap();
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    assert!(!done.conflicts.is_empty(), "{done:?}");
}

#[test]
fn a_folder_swapped_for_a_link_mid_walk_is_not_read_through() {
    let w = world();
    let outside = w.ws.parent().unwrap().join("secrets");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("key"), "secret").unwrap();
    // The walk saw `dir/key` in a real folder; the folder is now a link out.
    symlink(&outside, w.ws.join("dir")).unwrap();
    let entry =
        w.cp.entry(&w.ws.join("dir/key"), None, true)
            .unwrap()
            .unwrap();
    assert_eq!(entry.hash, None);
    assert!(entry.not_kept.unwrap().starts_with("unreadable"));
    assert!(!w.cp.root.join("blobs").exists());
}

#[test]
fn a_file_too_big_is_named_not_restored() {
    let w = world();
    let big = "x".repeat(usize::try_from(MAX_FILE_BYTES).unwrap() + 1);
    write(&w.ws, "big.bin", &big);
    let before = w.cp.take(None).unwrap();
    write(&w.ws, "big.bin", "small now");
    let after = w.cp.take(Some(&before)).unwrap();
    let done =
        w.cp.revert(&w.cp.turn_changes(&[(before, Some(after))]).unwrap())
            .unwrap();
    assert_eq!(done.conflicts[0].path, "big.bin");
    assert!(done.conflicts[0].reason.contains("not kept"), "{done:?}");
    assert_eq!(read(&w.ws, "big.bin").as_deref(), Some("small now"));
}

#[test]
fn past_the_storage_bound_the_oldest_snapshots_go_first_with_their_contents() {
    let mut w = world();
    w.cp.max_store_bytes = 8 * 1024;
    let mut ids = Vec::new();
    for i in 0..8 {
        write(&w.ws, "data.txt", &format!("{i}").repeat(3000));
        ids.push(w.cp.take(ids.last().map(String::as_str)).unwrap());
    }
    assert!(
        dir_bytes(&w.cp.root) <= 8 * 1024,
        "{}",
        dir_bytes(&w.cp.root)
    );
    assert!(matches!(
        w.cp.load(&ids[0]),
        Err(CheckpointError::Dropped(_))
    ));
    let newest = w.cp.load(ids.last().unwrap()).unwrap();
    let hash = newest.entries["data.txt"].hash.clone().unwrap();
    assert_eq!(w.cp.blob(&hash).unwrap(), "7".repeat(3000).into_bytes());
    let blobs = std::fs::read_dir(w.cp.root.join("blobs"))
        .unwrap()
        .flatten()
        .map(|shard| std::fs::read_dir(shard.path()).unwrap().count())
        .sum::<usize>();
    assert!(
        blobs < 8,
        "the dropped snapshots' contents went too: {blobs}"
    );
}

#[test]
fn a_dropped_snapshot_answers_why() {
    let w = world();
    assert!(matches!(
        w.cp.load("0190aaaa-0000-7000-8000-000000000000"),
        Err(CheckpointError::Dropped(_))
    ));
    assert!(w.cp.load("../x").is_err());
}

/// A measurement, not a test: snapshots of this repository's sources (first, then
/// unchanged). `cargo test -p agentd --lib checkpoint::tests::measure -- --ignored --nocapture`
#[test]
#[ignore = "a measurement"]
fn measure_a_tree_of_thousands_of_files() {
    let w = world();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    // Copies of the repository's tracked sources until the tree holds 5,000 files.
    let mut n = 0;
    let mut copy = 0;
    while n < 5000 {
        for e in ignore::WalkBuilder::new(repo).build().flatten() {
            if !e.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let rel = e.path().strip_prefix(repo).unwrap();
            let to = w.ws.join(format!("copy{copy}")).join(rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(e.path(), to).unwrap();
            n += 1;
        }
        copy += 1;
    }
    let bytes: u64 = ignore::WalkBuilder::new(&w.ws)
        .build()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .sum();
    let t = std::time::Instant::now();
    let first = w.cp.take(None).unwrap();
    let first_ms = t.elapsed().as_millis();
    let t = std::time::Instant::now();
    let second = w.cp.take(Some(&first)).unwrap();
    let second_ms = t.elapsed().as_millis();
    assert_eq!(first, second);
    let t = std::time::Instant::now();
    let manifest = w.cp.load(&first).unwrap();
    let load_ms = t.elapsed().as_millis();
    let t = std::time::Instant::now();
    w.cp.scan(Some(&manifest)).unwrap();
    let scan_ms = t.elapsed().as_millis();
    let t = std::time::Instant::now();
    let stored = dir_bytes(&w.cp.root);
    let usage_ms = t.elapsed().as_millis();
    println!(
        "of which: manifest parse {load_ms} ms, walk {scan_ms} ms; store size walk {usage_ms} ms"
    );
    println!(
        "{n} files ({bytes} bytes): first snapshot {first_ms} ms, unchanged second {second_ms} ms; store {stored} bytes"
    );
}
