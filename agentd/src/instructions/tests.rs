use std::fs;

use super::*;

/// A temp tree: `root/.git`, `root/mid/ws`, and `top` above the root.
struct Tree {
    _dir: tempfile::TempDir,
    top: PathBuf,
    root: PathBuf,
    mid: PathBuf,
    ws: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let top = fs::canonicalize(dir.path()).unwrap();
    let root = top.join("repo");
    let mid = root.join("mid");
    let ws = mid.join("ws");
    fs::create_dir_all(&ws).unwrap();
    fs::create_dir(root.join(".git")).unwrap();
    Tree {
        _dir: dir,
        top,
        root,
        mid,
        ws,
    }
}

/// Each file found as `name: text` (its path relative to `base`).
fn found(base: &Path, files: &[Found]) -> Vec<String> {
    files
        .iter()
        .map(|f| {
            let path = f.path.strip_prefix(base).unwrap_or(&f.path);
            format!("{}: {}", path.display(), f.text.trim_end())
        })
        .collect()
}

#[test]
fn folders_run_from_the_repository_root_down_to_the_workspace() {
    let t = tree();
    assert_eq!(
        folders(&t.ws),
        [t.root.clone(), t.mid.clone(), t.ws.clone()]
    );
    assert_eq!(folders(&t.root), std::slice::from_ref(&t.root));
    // A `.git` file (a worktree) marks a root too.
    fs::write(t.mid.join(".git"), "gitdir: elsewhere\n").unwrap();
    assert_eq!(folders(&t.ws), [t.mid.clone(), t.ws.clone()]);
    // Outside a repository: the workspace alone.
    let other = tempfile::tempdir().unwrap();
    assert_eq!(folders(other.path()), [other.path().to_owned()]);
}

#[test]
fn the_users_file_comes_first_then_each_folder_agents_md_else_claude_md() {
    let t = tree();
    let user = t.top.join("user-AGENTS.md");
    fs::write(&user, "user rules").unwrap();
    fs::write(t.top.join("AGENTS.md"), "above the root: never read").unwrap();
    fs::write(t.root.join("AGENTS.md"), "root agents").unwrap();
    fs::write(t.root.join("CLAUDE.md"), "root claude: shadowed").unwrap();
    fs::write(t.mid.join("CLAUDE.md"), "mid claude").unwrap();
    fs::write(t.ws.join("AGENTS.md"), "ws agents").unwrap();
    assert_eq!(
        found(&t.top, &discover(&t.ws, Some(&user))),
        [
            "user-AGENTS.md: user rules",
            "repo/AGENTS.md: root agents",
            "repo/mid/CLAUDE.md: mid claude",
            "repo/mid/ws/AGENTS.md: ws agents",
        ]
    );
    assert!(discover(&t.ws, Some(&t.top.join("missing.md"))).len() == 3);
    let section = render(&discover(&t.ws, Some(&user))).unwrap();
    assert!(section.starts_with(SECTION_HEADING), "{section}");
    let heading = format!("## {}\nroot agents\n", t.root.join("AGENTS.md").display());
    assert!(section.contains(&heading), "{section}");
    assert!(render(&[]).is_none());
}

#[test]
fn a_link_is_never_followed_in_a_repository_but_the_users_file_may_be_one() {
    let t = tree();
    let outside = t.top.join("secret.txt");
    fs::write(&outside, "outside the workspace").unwrap();
    std::os::unix::fs::symlink(&outside, t.ws.join("AGENTS.md")).unwrap();
    // The folder's link is skipped: its CLAUDE.md is read as if it had no AGENTS.md.
    fs::write(t.ws.join("CLAUDE.md"), "ws claude").unwrap();
    std::os::unix::fs::symlink(&outside, t.root.join("AGENTS.md")).unwrap();
    let user = t.top.join("user-link.md");
    std::os::unix::fs::symlink(t.top.join("dotfiles.md"), &user).unwrap();
    fs::write(t.top.join("dotfiles.md"), "user via a link").unwrap();
    assert_eq!(
        found(&t.top, &discover(&t.ws, Some(&user))),
        [
            "user-link.md: user via a link",
            "repo/mid/ws/CLAUDE.md: ws claude"
        ]
    );
}

#[test]
fn a_fifo_or_a_folder_named_agents_md_is_not_read() {
    let t = tree();
    nix::unistd::mkfifo(&t.ws.join("AGENTS.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    fs::create_dir(t.mid.join("AGENTS.md")).unwrap();
    fs::write(t.mid.join("CLAUDE.md"), "mid").unwrap();
    assert_eq!(
        found(&t.top, &discover(&t.ws, None)),
        ["repo/mid/CLAUDE.md: mid"]
    );
}

#[test]
fn files_are_capped_one_by_one_and_in_all_with_a_marker() {
    let t = tree();
    // 40 KiB with a two-byte character across the 32 KiB cut.
    let mut big = "a".repeat(MAX_FILE_BYTES - 1);
    big.push('é');
    big.push_str(&"b".repeat(8 * 1024));
    fs::write(t.root.join("AGENTS.md"), &big).unwrap();
    let files = discover(&t.ws, None);
    assert_eq!(
        files[0].text,
        "a".repeat(MAX_FILE_BYTES - 1),
        "cut before the character"
    );
    assert!(files[0].cut);
    let section = render(&files).unwrap();
    assert!(
        section.contains("only its first 32 KiB are included"),
        "{section}"
    );

    fs::write(t.mid.join("AGENTS.md"), "m".repeat(30 * 1024)).unwrap();
    fs::write(t.ws.join("AGENTS.md"), "w".repeat(30 * 1024)).unwrap();
    let user = t.top.join("user.md");
    fs::write(&user, "u".repeat(30 * 1024)).unwrap();
    let section = render(&discover(&t.ws, Some(&user))).unwrap();
    let kept: usize = section.bytes().filter(|b| b"uamw".contains(b)).count();
    assert!(kept <= MAX_TOTAL_BYTES + 200, "{kept}");
    assert!(section.contains("capped at 64 KiB in all"), "{section}");
    let left = format!(
        "left out, past the 64 KiB cap: {}",
        t.ws.join("AGENTS.md").display()
    );
    assert!(section.contains(&left), "{section}");
    assert!(!section.contains("ww"), "nothing of what is left out");
}

#[test]
fn a_workspace_is_read_again_only_after_the_cache_time() {
    let t = tree();
    fs::write(t.ws.join("AGENTS.md"), "first").unwrap();
    let instructions = Instructions::new(None);
    let first = instructions.section_blocking(&t.ws).unwrap();
    fs::write(t.ws.join("AGENTS.md"), "second").unwrap();
    assert_eq!(instructions.section_blocking(&t.ws).unwrap(), first, "kept");
    // Older than the cache time: read again.
    instructions
        .cache
        .lock()
        .unwrap()
        .values_mut()
        .for_each(|(at, _)| *at -= CACHE_TTL);
    assert!(
        instructions
            .section_blocking(&t.ws)
            .unwrap()
            .contains("second")
    );
}
