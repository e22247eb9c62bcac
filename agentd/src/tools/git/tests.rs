//! The probe against real repositories in temp folders, with the real git. Repositories
//! that would run a program from their configuration prove first (with a plain `git
//! status`) that the trap works, then that the probe does not spring it.

use std::process::Command;

use super::*;

/// Git, which these tests need (`.ci/run` installs it).
fn git() -> PathBuf {
    find_git().unwrap_or_else(|| {
        panic!(
            "git is not installed (looked for {}): install it (apt-get install git) to run \
             these tests",
            GIT_PATHS.join(", ")
        )
    })
}

/// Runs git as a user would (with a name for commits), outside the probe.
fn sh_git(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(git())
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A repository on branch `main` with one commit of `a.txt` ("aaa").
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    sh_git(dir.path(), &["init", "-q", "-b", "main", "."]);
    std::fs::write(dir.path().join("a.txt"), "aaa\n").unwrap();
    sh_git(dir.path(), &["add", "a.txt"]);
    sh_git(dir.path(), &["commit", "-q", "-m", "first"]);
    dir
}

fn probe() -> GitProbe {
    GitProbe::new(Some(git()), Arc::new(ProcessLauncher::for_tests()))
}

fn on(head: &str, dirty: Dirty) -> Git {
    Git::Repository {
        head: Head::Branch(head.into()),
        dirty,
    }
}

#[tokio::test]
async fn repositories_clean_dirty_detached_or_none() {
    let plain = tempfile::tempdir().unwrap();
    assert!(
        find_repository(plain.path()).is_none(),
        "the temp folder {} is inside a repository: these tests need one that is not",
        plain.path().display()
    );
    assert_eq!(probe().probe(plain.path()).await, Git::NotARepository);

    let clean = repo();
    assert_eq!(probe().probe(clean.path()).await, on("main", Dirty::Clean));
    // From a folder inside it, too.
    std::fs::create_dir(clean.path().join("sub")).unwrap();
    assert_eq!(
        probe().probe(&clean.path().join("sub")).await,
        on("main", Dirty::Clean)
    );

    let changed = repo();
    std::fs::write(changed.path().join("a.txt"), "changed\n").unwrap();
    assert_eq!(
        probe().probe(changed.path()).await,
        on("main", Dirty::Dirty)
    );

    let untracked = repo();
    std::fs::write(untracked.path().join("new.txt"), "x").unwrap();
    assert_eq!(
        probe().probe(untracked.path()).await,
        on("main", Dirty::Dirty)
    );

    let branch = repo();
    sh_git(branch.path(), &["checkout", "-q", "-b", "feature/x-1"]);
    assert_eq!(
        probe().probe(branch.path()).await,
        on("feature/x-1", Dirty::Clean)
    );

    let detached = repo();
    sh_git(detached.path(), &["checkout", "-q", "--detach"]);
    let commit = String::from_utf8(sh_git(detached.path(), &["rev-parse", "HEAD"]).stdout)
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(
        probe().probe(detached.path()).await,
        Git::Repository {
            head: Head::Detached(commit[..12].to_owned()),
            dirty: Dirty::Clean
        }
    );

    // A linked work tree: `.git` is a file naming its git dir.
    let main = repo();
    let linked = tempfile::tempdir().unwrap();
    let linked_path = linked.path().join("wt");
    sh_git(
        main.path(),
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            linked_path.to_str().unwrap(),
        ],
    );
    assert!(linked_path.join(".git").is_file());
    assert_eq!(probe().probe(&linked_path).await, on("side", Dirty::Clean));
}

#[tokio::test]
async fn without_git_the_branch_comes_from_head_and_changes_are_unknown() {
    let dir = repo();
    std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();
    let probe = GitProbe::new(None, Arc::new(ProcessLauncher::for_tests()));
    assert_eq!(probe.probe(dir.path()).await, on("main", Dirty::Unknown));
}

#[tokio::test]
async fn a_config_that_could_run_a_program_is_not_given_to_git_status() {
    let marker_dir = tempfile::tempdir().unwrap();
    // (name, what is added to .git/config, what else the trap needs)
    type Trap = (&'static str, String, Box<dyn Fn(&Path)>);
    let traps: Vec<Trap> = vec![
        (
            "fsmonitor",
            "[core]\n\tfsmonitor = \"touch MARKER; false\"\n".to_owned(),
            Box::new(|_| {}),
        ),
        (
            "filter",
            "[filter \"evil\"]\n\tclean = \"touch MARKER; cat\"\n".to_owned(),
            Box::new(|dir: &Path| {
                std::fs::write(dir.join(".gitattributes"), "*.txt filter=evil\n").unwrap();
                // Same size, new time: status must read (and so clean) the content.
                std::fs::write(dir.join("a.txt"), "bbb\n").unwrap();
                let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
                std::fs::File::options()
                    .write(true)
                    .open(dir.join("a.txt"))
                    .unwrap()
                    .set_modified(old)
                    .unwrap();
            }),
        ),
        (
            "include",
            "[include]\n\tpath = INCLUDED\n".to_owned(),
            Box::new(|_| {}),
        ),
    ];
    for (name, config, prepare) in traps {
        let marker = marker_dir.path().join(name);
        let dir = repo();
        let included = dir.path().join("included.cfg");
        std::fs::write(
            &included,
            format!(
                "[core]\n\tfsmonitor = \"touch {}; false\"\n",
                marker.display()
            ),
        )
        .unwrap();
        let config = config
            .replace("MARKER", &marker.display().to_string())
            .replace("INCLUDED", &included.display().to_string());
        let mut file = std::fs::File::options()
            .append(true)
            .open(dir.path().join(".git/config"))
            .unwrap();
        std::io::Write::write_all(&mut file, config.as_bytes()).unwrap();
        prepare(dir.path());
        // The trap works: a plain `git status` runs the program.
        sh_git(dir.path(), &["status", "--porcelain"]);
        assert!(
            marker.exists(),
            "{name}: the trap did not spring for plain git"
        );
        std::fs::remove_file(&marker).unwrap();
        if name == "filter" {
            // Plain git refreshed the index; make the content racy again.
            prepare(dir.path());
        }
        let got = probe().probe(dir.path()).await;
        assert_eq!(got, on("main", Dirty::Unknown), "{name}");
        assert!(
            !marker.exists(),
            "{name}: the probe ran the repository's program"
        );
    }
}

#[tokio::test]
async fn a_fifo_for_head_neither_hangs_nor_counts() {
    let dir = repo();
    let head = dir.path().join(".git/HEAD");
    std::fs::remove_file(&head).unwrap();
    nix::unistd::mkfifo(&head, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), probe().probe(dir.path()))
        .await
        .expect("the probe hung on a FIFO");
    assert_eq!(
        got,
        Git::Repository {
            head: Head::Unknown,
            dirty: Dirty::Unknown
        }
    );
}

#[test]
fn config_listings_pass_only_safe_keys_of_the_repository() {
    let listing = |entries: &[(&str, &str)]| {
        let mut out = Vec::new();
        for (scope, entry) in entries {
            out.extend_from_slice(scope.as_bytes());
            out.push(0);
            out.extend_from_slice(entry.as_bytes());
            out.push(0);
        }
        out
    };
    let cases: Vec<(Vec<u8>, Result<(), &str>)> = vec![
        (Vec::new(), Ok(())),
        (
            listing(&[
                ("local", "core.repositoryformatversion\n0"),
                ("local", "core.filemode\ntrue"),
                ("local", "core.bare"),
                ("local", "remote.origin.url\nhttps://example.com/x.git"),
                (
                    "local",
                    "remote.my.fork.fetch\n+refs/heads/*:refs/remotes/my.fork/*",
                ),
                ("local", "branch.feat/x.merge\nrefs/heads/feat/x"),
                ("worktree", "user.email\na@b"),
            ]),
            Ok(()),
        ),
        (
            listing(&[("local", "core.fsmonitor\ntrue")]),
            Err("core.fsmonitor"),
        ),
        (
            listing(&[
                ("local", "core.bare\nfalse"),
                ("local", "filter.lfs.clean\ngit-lfs clean -- %f"),
            ]),
            Err("filter.lfs.clean"),
        ),
        (
            listing(&[("local", "include.path\n/x")]),
            Err("include.path"),
        ),
        (
            listing(&[("local", "includeif.onbranch:main.path\n/x")]),
            Err("includeif.onbranch:main.path"),
        ),
        (
            listing(&[("local", "core.sshcommand\nssh -i k")]),
            Err("core.sshcommand"),
        ),
        (
            listing(&[("local", "remote.origin.uploadpack\nx")]),
            Err("remote.origin.uploadpack"),
        ),
        (listing(&[("local", "remote..url\nx")]), Err("remote..url")),
        (
            listing(&[("global", "user.name\nx")]),
            Err("user.name from global configuration"),
        ),
        (
            listing(&[("command", "core.bare\nfalse")]),
            Err("core.bare from command configuration"),
        ),
        (b"local".to_vec(), Err("an entry without a key")),
    ];
    for (listing, expected) in cases {
        let got = config_is_safe(&listing);
        assert_eq!(
            got,
            expected.map_err(str::to_owned),
            "{:?}",
            String::from_utf8_lossy(&listing)
        );
    }
}

#[test]
fn head_files_name_a_branch_a_commit_or_nothing_shown() {
    let sha1 = "0123456789abcdef0123456789abcdef01234567";
    let sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let cases = [
        ("ref: refs/heads/main\n", Head::Branch("main".into())),
        ("ref:refs/heads/feat/x\n", Head::Branch("feat/x".into())),
        (sha1, Head::Detached("0123456789ab".into())),
        (sha256, Head::Detached("0123456789ab".into())),
        ("ref: refs/remotes/origin/main", Head::Unknown),
        ("ref: refs/heads/", Head::Unknown),
        ("ref: refs/heads/a b", Head::Unknown),
        ("ref: refs/heads/a\u{7}b", Head::Unknown),
        ("0123", Head::Unknown),
        ("", Head::Unknown),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", Head::Unknown),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_head(text), expected, "{text:?}");
    }
    let long = format!("ref: refs/heads/{}", "x".repeat(201));
    assert_eq!(parse_head(&long), Head::Unknown);
}
