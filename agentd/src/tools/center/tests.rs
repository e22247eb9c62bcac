use super::*;
use serde_json::json;

#[test]
fn an_answer_applies_only_to_the_paths_its_prompt_showed() {
    use crate::tools::sandbox::Zone;
    let write = builtin::all()
        .into_iter()
        .find(|t| t.name() == "write_file")
        .unwrap();
    let on = |access: Access| Prepared {
        tool: Callable::Builtin(write.clone()),
        args: json!({}),
        access,
    };
    let paths = |p: &str| Access::Paths {
        level: PermissionLevel::Write,
        paths: vec![ResolvedPath {
            path: PathBuf::from(p),
            zone: Zone::Workspace,
        }],
    };
    let shown = vec!["/ws/f.txt".to_owned()];
    // (access now, paths the prompt showed, Ok or the error's start)
    type Case<'a> = (Access, Option<&'a [String]>, Result<(), &'static str>);
    let cases: Vec<Case> = vec![
        (paths("/ws/f.txt"), Some(&shown), Ok(())),
        (
            paths("/out/secret"),
            Some(&shown),
            Err("/ws/f.txt changed after the permission prompt: it now resolves to /out/secret"),
        ),
        (
            paths("/ws/f.txt"),
            None,
            Err("the permission prompt of this call did not record"),
        ),
        (Access::Host("example.com".into()), None, Ok(())),
        (
            Access::Command(crate::tools::CommandAccess::plain(
                crate::tools::command::analyze("ls", &|_, _| None),
                crate::tools::wall::WallState::Enforced(agent_proto::SandboxMode::WorkspaceWrite),
            )),
            Some(&shown),
            Ok(()),
        ),
    ];
    for (access, shown, expected) in cases {
        let got = on(access.clone()).check_prompted(shown);
        match expected {
            Ok(()) => assert_eq!(got, Ok(()), "{access:?}"),
            Err(start) => {
                let got = got.unwrap_err();
                assert!(got.starts_with(start), "{access:?}: {got}");
            }
        }
    }
    assert_eq!(
        on(paths("/ws/f.txt")).resolved_paths(),
        Some(vec!["/ws/f.txt".to_owned()])
    );
    assert_eq!(on(Access::Host("h".into())).resolved_paths(), None);
}

#[test]
fn arguments_are_parsed_repaired_or_reported() {
    let ok = parse_arguments(r#"{"path": "a"}"#);
    assert_eq!(
        (ok.value, ok.raw, ok.error),
        (json!({"path": "a"}), None, None)
    );
    let empty = parse_arguments("  ");
    assert_eq!(empty.value, json!({}));
    for broken in [
        r#"{'path': 'a'}"#,
        r#"{"path": "a",}"#,
        r#"{path: "a"}"#,
        r#"{"path": "a""#,
    ] {
        let repaired = parse_arguments(broken);
        assert_eq!(repaired.value, json!({"path": "a"}), "{broken}");
        assert_eq!(repaired.raw.as_deref(), Some(broken));
        assert_eq!(repaired.error, None);
    }
    let bad = parse_arguments("definitely not json");
    assert_eq!(bad.value, Value::Null);
    assert!(bad.error.unwrap().contains("definitely not json"));
}
