use super::scan::{Found, Scan};
use super::*;

fn found(name: &str, dir: &str) -> Found {
    Found {
        name: name.into(),
        description: format!("{name} in {dir}"),
        dir: PathBuf::from(dir),
    }
}

fn scan_of(skills: &[(&str, &str)], problems: &[&str]) -> Arc<Scan> {
    Arc::new(Scan {
        skills: skills.iter().map(|(n, d)| found(n, d)).collect(),
        problems: problems
            .iter()
            .map(|p| SkillProblem {
                path: (*p).into(),
                reason: "bad".into(),
            })
            .collect(),
    })
}

#[test]
fn the_first_source_of_a_name_wins() {
    use SkillSource::{Config, User, Workspace};
    // (scans in precedence order, expected "name@dir:source", expected problem paths)
    type Case = (
        Vec<(SkillSource, Arc<Scan>)>,
        Vec<&'static str>,
        Vec<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (Vec::new(), vec![], vec![]),
        (
            vec![
                (Workspace, scan_of(&[("lint", "/ws/lint")], &[])),
                (
                    Config,
                    scan_of(&[("lint", "/c1/lint"), ("pdf", "/c1/pdf")], &[]),
                ),
                (
                    Config,
                    scan_of(&[("pdf", "/c2/pdf"), ("deploy", "/c2/d")], &["/c2/x"]),
                ),
                (
                    User,
                    scan_of(
                        &[("deploy", "/u/d"), ("lint", "/u/l"), ("notes", "/u/n")],
                        &["/u/y"],
                    ),
                ),
            ],
            vec![
                "lint@/ws/lint:workspace",
                "pdf@/c1/pdf:config",
                "deploy@/c2/d:config",
                "notes@/u/n:user",
            ],
            vec!["/c2/x", "/u/y"],
        ),
        (
            vec![
                (Workspace, scan_of(&[], &["/ws/broken/SKILL.md"])),
                (User, scan_of(&[("broken", "/u/broken")], &[])),
            ],
            // A malformed workspace skill does not hide the user's one of its name.
            vec!["broken@/u/broken:user"],
            vec!["/ws/broken/SKILL.md"],
        ),
    ];
    for (scans, skills, problems) in cases {
        let catalog = merge(&scans);
        let got: Vec<String> = catalog
            .skills
            .iter()
            .map(|s| {
                let source = serde_json::to_value(s.source).unwrap();
                format!("{}@{}:{}", s.name, s.path, source.as_str().unwrap())
            })
            .collect();
        assert_eq!(got, skills);
        let paths: Vec<&str> = catalog.problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, problems);
    }
}

#[test]
fn the_section_lists_names_and_descriptions_up_to_a_cap() {
    assert_eq!(Catalog::default().section(), None);
    let info = |i: usize| SkillInfo {
        name: format!("s{i}"),
        description: format!("does {i}"),
        path: format!("/s/{i}"),
        source: SkillSource::User,
    };
    let two = Catalog {
        skills: vec![info(1), info(2)],
        problems: Vec::new(),
    };
    let section = two.section().unwrap();
    assert!(
        section.starts_with("# Skills\nSkills are instructions"),
        "{section}"
    );
    assert!(
        section.contains("load the skill with the skill tool"),
        "{section}"
    );
    assert!(
        section.ends_with("\n- s1: does 1\n- s2: does 2"),
        "{section}"
    );
    let many = Catalog {
        skills: (0..MAX_LISTED + 3).map(info).collect(),
        problems: Vec::new(),
    };
    let section = many.section().unwrap();
    assert_eq!(section.matches("\n- s").count(), MAX_LISTED);
    assert!(section.contains(&format!("- s{}: ", MAX_LISTED - 1)));
    assert!(!section.contains(&format!("- s{MAX_LISTED}: ")));
    assert!(section.ends_with("- (3 more skills are not listed here; the skill tool names them all when asked for one that does not exist)"), "{section}");
}

fn write_skill(root: &Path, folder: &str, name: &str, body: &str) {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {name} from {folder}\n---\n{body}"),
    )
    .unwrap();
}

#[tokio::test]
async fn an_agent_gets_its_workspaces_skills_then_the_configs_then_the_users() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (ws, config, user) = (root.join("ws"), root.join("config"), root.join("user"));
    write_skill(&ws.join(".agentd/skills"), "w", "shared", "workspace body");
    write_skill(&config, "c", "shared", "config body");
    write_skill(&config, "c2", "only-config", "config only");
    write_skill(&user, "u", "shared", "user body");
    write_skill(&user, "u2", "only-user", "user only");
    std::fs::write(user.join("u2/notes.txt"), "n").unwrap();
    let skills = Arc::new(Skills::new(vec![config.clone()], Some(user.clone())));
    let catalog = skills.catalog(ws.clone()).await;
    let got: Vec<(&str, SkillSource)> = catalog
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.source))
        .collect();
    assert_eq!(
        got,
        [
            ("shared", SkillSource::Workspace),
            ("only-config", SkillSource::Config),
            ("only-user", SkillSource::User),
        ]
    );
    let loaded = skills.load(ws.clone(), "shared".into()).await.unwrap();
    assert_eq!(loaded.body, "workspace body");
    assert_eq!(
        loaded.info.path,
        ws.join(".agentd/skills/w").display().to_string()
    );
    let loaded = skills.load(ws.clone(), "only-user".into()).await.unwrap();
    assert_eq!(
        (loaded.files, loaded.more_files),
        (vec!["notes.txt".to_owned()], 0)
    );
    assert_eq!(
        skills.load(ws.clone(), "nope".into()).await.unwrap_err(),
        "unknown skill \"nope\"; the skills are: shared, only-config, only-user"
    );
    // Another workspace has none of its own; an agent without skills gets an honest no.
    let other = root.join("other");
    let catalog = skills.catalog(other).await;
    assert_eq!(catalog.skills[0].source, SkillSource::Config);
    let none = Arc::new(Skills::default());
    assert_eq!(
        none.load(ws.join("x"), "a".into()).await.unwrap_err(),
        "unknown skill \"a\"; there are no skills"
    );
}

#[test]
fn config_folders_must_be_absolute_existing_folders() {
    let dir = tempfile::tempdir().unwrap();
    let ok = SkillsConfig {
        folders: vec![dir.path().to_owned()],
    };
    assert_eq!(ok.validate(), Ok(()));
    let relative = SkillsConfig {
        folders: vec![dir.path().to_owned(), PathBuf::from("skills")],
    };
    assert_eq!(
        relative.validate().unwrap_err(),
        "skills.folders[1] \"skills\" must be an absolute path"
    );
    let missing = SkillsConfig {
        folders: vec![dir.path().join("none")],
    };
    assert!(
        missing
            .validate()
            .unwrap_err()
            .ends_with("is not an existing folder")
    );
}
