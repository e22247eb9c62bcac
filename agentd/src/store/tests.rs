//! Store tests against a real SQLite file.

use agent_proto::{
    Agent, AgentMode, AgentSettings, Block, ListOrder, Message, MessageStatus, Role, Usage,
};

use super::*;

impl Store {
    /// The stored seq mark of an agent (see the `last_seq` column), `None` if no such agent.
    pub(crate) async fn agent_last_seq(&self, id: &str) -> Result<Option<u64>, StoreError> {
        Ok(self.session_row(id).await?.map(|row| row.last_seq))
    }
}

/// Where a test's store lives: a SQLite file in a temp folder, or a database of its own on
/// the test PostgreSQL cluster.
enum Place {
    File(tempfile::TempDir),
    Postgres(String),
}

impl Place {
    /// Another store on the same database (it keeps nothing yet).
    async fn reopen(&self) -> Store {
        match self {
            Place::File(dir) => Store::open(&dir.path().join("sub/agentd.db")).await,
            Place::Postgres(url) => Store::connect(url).await,
        }
        .unwrap()
    }
}

async fn open(backend: Backend) -> (Place, Store) {
    let place = match backend {
        Backend::Sqlite => Place::File(tempfile::tempdir().unwrap()),
        Backend::Postgres => Place::Postgres(
            agentd_testkit::postgres::cluster("the store's tests")
                .expect("checked by `on_both!`")
                .database()
                .await,
        ),
    };
    let store = place.reopen().await;
    (place, store)
}

/// Runs each named test (an `async fn(Backend)`) on SQLite and on PostgreSQL: as
/// `NAME::sqlite` and `NAME::postgres`.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[tokio::test]
            async fn sqlite() {
                super::$name(Backend::Sqlite).await;
            }

            #[tokio::test]
            async fn postgres() {
                if agentd_testkit::postgres::cluster(concat!("store::tests::", stringify!($name)))
                    .is_some()
                {
                    super::$name(Backend::Postgres).await;
                }
            }
        }
    )*};
}

/// Makes the database refuse (with an error) updates of `table` (of its `column` only,
/// with `Some`) where `when` holds, with a trigger; [`allow`] drops it.
async fn refuse(store: &Store, table: &str, column: Option<&str>, when: Option<&str>) {
    let of = column.map(|c| format!(" OF {c}")).unwrap_or_default();
    let statements = match store.backend() {
        Backend::Sqlite => vec![format!(
            "CREATE TRIGGER refuse BEFORE UPDATE{of} ON {table} {} \
             BEGIN SELECT RAISE(ABORT, 'refused for the test'); END",
            when.map(|w| format!("WHEN {w}")).unwrap_or_default()
        )],
        Backend::Postgres => vec![
            "CREATE OR REPLACE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'refused for the test'; END $$"
                .to_owned(),
            format!(
                "CREATE TRIGGER refuse BEFORE UPDATE{of} ON {table} FOR EACH ROW {} \
                 EXECUTE FUNCTION refuse()",
                when.map(|w| format!("WHEN ({w})")).unwrap_or_default()
            ),
        ],
    };
    for sql in statements {
        store
            .query(sqlx::AssertSqlSafe(sql))
            .execute(&mut *store.write.acquire().await.unwrap())
            .await
            .unwrap();
    }
}

/// Drops the trigger of [`refuse`] on `table`.
async fn allow(store: &Store, table: &str) {
    let sql = match store.backend() {
        Backend::Sqlite => "DROP TRIGGER refuse".to_owned(),
        Backend::Postgres => format!("DROP TRIGGER refuse ON {table}"),
    };
    store
        .query(sqlx::AssertSqlSafe(sql))
        .execute(&mut *store.write.acquire().await.unwrap())
        .await
        .unwrap();
}

/// Agent `id`'s history and row as a second store on the database of [`open`] reads them:
/// it has nothing kept, so this is what the database holds.
async fn in_database(place: &Place, id: &str) -> (Arc<Vec<Message>>, Agent) {
    let other = place.reopen().await;
    let history = other.history(id).await.unwrap();
    let agent = other.get_agent(id).await.unwrap().unwrap();
    other.close().await;
    (history, agent)
}

/// A chat agent on the demo provider (shared by the store's and the event log's tests).
pub(crate) fn new_agent(id: &str, title: &str, created_at: i64) -> NewAgent {
    NewAgent {
        id: id.into(),
        title: title.into(),
        mode: AgentMode::Chat,
        provider: "demo".into(),
        model: "echo".into(),
        system_prompt: None,
        workspace: None,
        profile: None,
        settings: AgentSettings::default(),
        acp: None,
        created_at,
    }
}

/// Run `n` of agent "a": user message `u{n}` and a pending answer `m{n}`.
fn new_run(n: impl std::fmt::Display) -> RunMessages {
    RunMessages {
        user: message(&format!("u{n}"), "a", Role::User, "q", MessageStatus::Done),
        assistant: message(
            &format!("m{n}"),
            "a",
            Role::Assistant,
            "",
            MessageStatus::Pending,
        ),
        client_request_id: None,
    }
}

fn message(id: &str, agent: &str, role: Role, text: &str, status: MessageStatus) -> Message {
    Message {
        id: id.into(),
        agent_id: agent.into(),
        role,
        blocks: if text.is_empty() {
            vec![]
        } else {
            vec![Block::Text { text: text.into() }]
        },
        status,
        created_at: 1,
        updated_at: 1,
        usage: None,
        variant_of: None,
        superseded: false,
        turn: None,
        structured_output: None,
    }
}

async fn agents_page_newest_first_with_filters(backend: Backend) {
    let (_dir, store) = open(backend).await;
    for i in 0..5 {
        store
            .insert_agent(&new_agent(&format!("a{i}"), &format!("Title {i}"), i))
            .await
            .unwrap();
    }
    let patch = AgentPatch {
        archived: Some(true),
        ..AgentPatch::default()
    };
    store.update_agent("a4", &patch, 10).await.unwrap();

    let mut filter = AgentFilter {
        limit: 2,
        ..AgentFilter::default()
    };
    let mut seen = Vec::new();
    loop {
        let (page, next) = store.list_agents(&filter).await.unwrap();
        seen.extend(page.into_iter().map(|a| a.id));
        match next {
            Some(c) => filter.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen, ["a3", "a2", "a1", "a0"], "archived a4 is hidden");

    let archived = AgentFilter {
        limit: 10,
        archived: true,
        ..AgentFilter::default()
    };
    let (page, next) = store.list_agents(&archived).await.unwrap();
    assert_eq!((page.len(), page[0].id.as_str(), next), (1, "a4", None));

    let search = AgentFilter {
        limit: 10,
        search: Some("title 2".into()),
        ..AgentFilter::default()
    };
    let (page, _) = store.list_agents(&search).await.unwrap();
    assert_eq!(
        page.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        ["a2"]
    );
}

async fn update_changes_only_given_fields(backend: Backend) {
    let (_dir, store) = open(backend).await;
    let mut new = new_agent("a", "Old", 1);
    new.system_prompt = Some("sys".into());
    store.insert_agent(&new).await.unwrap();
    let patch = AgentPatch {
        title: Some("New".into()),
        settings: Some(AgentSettings {
            temperature: Some(0.3),
            ..AgentSettings::default()
        }),
        ..AgentPatch::default()
    };
    let agent = store.update_agent("a", &patch, 5).await.unwrap().unwrap();
    assert_eq!(agent.title, "New");
    assert_eq!(agent.system_prompt.as_deref(), Some("sys"));
    assert_eq!(agent.settings.temperature, Some(0.3));
    assert_eq!(agent.updated_at, 5);
    let clear = AgentPatch {
        system_prompt: Some(None),
        ..AgentPatch::default()
    };
    let agent = store.update_agent("a", &clear, 6).await.unwrap().unwrap();
    assert_eq!((agent.system_prompt, agent.title.as_str()), (None, "New"));
    assert!(
        store
            .update_agent("ghost", &clear, 6)
            .await
            .unwrap()
            .is_none()
    );
}

async fn messages_order_page_and_cascade(backend: Backend) {
    let (_dir, store) = open(backend).await;
    store.insert_agent(&new_agent("a", "A", 1)).await.unwrap();
    for i in 0..3 {
        store
            .insert_run_messages(&RunMessages {
                client_request_id: Some(format!("req{i}")),
                ..new_run(i)
            })
            .await
            .unwrap();
    }
    let ids = |page: &MessagePage| {
        page.messages
            .iter()
            .map(|m| m.id.clone())
            .collect::<Vec<_>>()
    };
    let first = store
        .list_messages("a", None, 4, ListOrder::Asc)
        .await
        .unwrap();
    assert_eq!(ids(&first), ["u0", "m0", "u1", "m1"]);
    let cursor = first.next_cursor.as_deref().unwrap().parse().unwrap();
    let second = store
        .list_messages("a", Some(cursor), 4, ListOrder::Asc)
        .await
        .unwrap();
    assert_eq!(
        (ids(&second), second.next_cursor),
        (vec!["u2".into(), "m2".into()], None)
    );
    let desc = store
        .list_messages("a", None, 3, ListOrder::Desc)
        .await
        .unwrap();
    assert_eq!(ids(&desc), ["m2", "u2", "m1"]);

    assert_eq!(
        store.find_client_request("a", "req1").await.unwrap(),
        Some(("u1".into(), "m1".into()))
    );
    assert_eq!(store.find_client_request("a", "nope").await.unwrap(), None);

    let mut m = store.get_message("m2").await.unwrap().unwrap();
    m.blocks = vec![Block::Text {
        text: "answer".into(),
    }];
    m.status = MessageStatus::Done;
    m.usage = Some(Usage {
        input_tokens: 3,
        output_tokens: 4,
    });
    store.update_message(&m).await.unwrap();
    assert_eq!(store.get_message("m2").await.unwrap().unwrap(), m);

    assert!(store.delete_agent("a").await.unwrap());
    assert!(
        store.history("a").await.unwrap().is_empty(),
        "messages cascade"
    );
    assert!(!store.delete_agent("a").await.unwrap());
}

async fn unfinished_messages_become_interrupted_keeping_text(backend: Backend) {
    let (_dir, store) = open(backend).await;
    store.insert_agent(&new_agent("a", "A", 1)).await.unwrap();
    store.insert_run_messages(&new_run("")).await.unwrap();
    let mut m = store.get_message("m").await.unwrap().unwrap();
    m.blocks = vec![Block::Text {
        text: "half an ans".into(),
    }];
    m.status = MessageStatus::Streaming;
    store.update_message(&m).await.unwrap();

    let fixed = store.interrupt_unfinished(99, None).await.unwrap();
    assert_eq!(fixed, vec![("a".to_owned(), "m".to_owned())]);
    let m = store.get_message("m").await.unwrap().unwrap();
    assert_eq!(m.status, MessageStatus::Interrupted);
    assert_eq!(m.text(), "half an ans");
    assert!(
        store
            .interrupt_unfinished(100, None)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn seq_marks_only_rise_when_reserving(backend: Backend) {
    let (_dir, store) = open(backend).await;
    store.insert_agent(&new_agent("a", "A", 1)).await.unwrap();
    assert_eq!(store.agent_last_seq("a").await.unwrap(), Some(0));
    assert!(store.reserve_seq("a", 1000).await.unwrap());
    assert!(store.reserve_seq("a", 500).await.unwrap());
    assert_eq!(store.agent_last_seq("a").await.unwrap(), Some(1000));
    store.set_last_seq("a", 42).await.unwrap();
    assert_eq!(store.agent_last_seq("a").await.unwrap(), Some(42));
    assert!(!store.reserve_seq("ghost", 1).await.unwrap());
    assert_eq!(store.agent_last_seq("ghost").await.unwrap(), None);
    if backend == Backend::Sqlite {
        let (integrity,): (String,) = store
            .query_as("PRAGMA integrity_check")
            .fetch_one(&store.read)
            .await
            .unwrap();
        assert_eq!(integrity, "ok");
    }
}

async fn kept_histories_match_the_database_after_every_kind_of_write(backend: Backend) {
    let (dir, store) = open(backend).await;
    store.insert_agent(&new_agent("a", "t", 1)).await.unwrap();
    let fresh = || async { in_database(&dir, "a").await.0 };
    assert!(store.history("a").await.unwrap().is_empty());
    store.insert_run_messages(&new_run(1)).await.unwrap();
    assert_eq!(store.history("a").await.unwrap(), fresh().await);

    let mut answer = store.get_message("m1").await.unwrap().unwrap();
    answer.blocks = vec![Block::Text {
        text: "answer".into(),
    }];
    answer.status = MessageStatus::Done;
    answer.usage = Some(Usage {
        input_tokens: 3,
        output_tokens: 4,
    });
    answer.updated_at = 9;
    store.update_message(&answer).await.unwrap();
    assert_eq!(store.history("a").await.unwrap(), fresh().await);
    assert_eq!(
        store.last_assistant_message("a").await.unwrap().unwrap(),
        answer
    );

    store.insert_run_messages(&new_run(2)).await.unwrap();
    let old = store.get_message("m2").await.unwrap().unwrap();
    let mut variant = message("v2", "a", Role::Assistant, "again", MessageStatus::Done);
    variant.variant_of = Some("m2".into());
    store.insert_variant(&old, &variant).await.unwrap();
    let history = store.history("a").await.unwrap();
    assert_eq!(history, fresh().await);
    assert!(history.iter().any(|m| m.id == "m2" && m.superseded));

    store.insert_run_messages(&new_run(3)).await.unwrap();
    // m2 (superseded, never answered) and m3 were left pending.
    assert_eq!(store.interrupt_unfinished(11, None).await.unwrap().len(), 2);
    assert_eq!(store.history("a").await.unwrap(), fresh().await);

    store.delete_agent("a").await.unwrap();
    assert!(store.history("a").await.unwrap().is_empty());
}

/// The migrator as it was built by hand before `sqlx::migrate!` (agentd 0.1 up to issue 13):
/// what every existing user database was migrated with.
fn hand_kept_migrator() -> Migrator {
    use sqlx::SqlSafeStr;
    use sqlx::migrate::{Migration, MigrationType};
    let files: [(i64, &'static str, &'static str); 11] = [
        (
            1,
            "init",
            include_str!("../../../migrations/sqlite/0001_init.sql"),
        ),
        (
            2,
            "tools",
            include_str!("../../../migrations/sqlite/0002_tools.sql"),
        ),
        (
            3,
            "context",
            include_str!("../../../migrations/sqlite/0003_context.sql"),
        ),
        (
            4,
            "mcp",
            include_str!("../../../migrations/sqlite/0004_mcp.sql"),
        ),
        (
            5,
            "subagents",
            include_str!("../../../migrations/sqlite/0005_subagents.sql"),
        ),
        (
            6,
            "acp",
            include_str!("../../../migrations/sqlite/0006_acp.sql"),
        ),
        (
            7,
            "usage",
            include_str!("../../../migrations/sqlite/0007_usage.sql"),
        ),
        (
            8,
            "queue",
            include_str!("../../../migrations/sqlite/0008_queue.sql"),
        ),
        (
            9,
            "checkpoints",
            include_str!("../../../migrations/sqlite/0009_checkpoints.sql"),
        ),
        (
            10,
            "turn options",
            include_str!("../../../migrations/sqlite/0010_turn_options.sql"),
        ),
        (
            11,
            "host label",
            include_str!("../../../migrations/sqlite/0011_host_label.sql"),
        ),
    ];
    let migrations = files
        .into_iter()
        .map(|(version, name, sql)| {
            Migration::new(
                version,
                std::borrow::Cow::Borrowed(name),
                MigrationType::Simple,
                sql.into_sql_str(),
                false,
            )
        })
        .collect();
    Migrator::with_migrations(migrations)
}

/// Hex of each migration's checksum (SHA-384 of the file), as recorded in user databases.
fn checksums(migrator: &Migrator) -> Vec<(i64, String, String)> {
    migrator
        .iter()
        .map(|m| {
            let hex: String = m.checksum.iter().map(|b| format!("{b:02x}")).collect();
            (m.version, m.description.to_string(), hex)
        })
        .collect()
}

#[test]
fn released_migrations_keep_their_versions_names_and_checksums() {
    // A released migration file is never edited: databases it migrated record this checksum
    // and refuse to open with another. A new migration is a new row here.
    let released = [
        (
            1,
            "init",
            "8a955d14017910b6db7f5a3b656d65b34d0c3dac6e04ad24a11b5b6cda5b79073b618c10e98e302f430954b7f0a10a82",
        ),
        (
            2,
            "tools",
            "9fdc39e2cd03009f167c2a6077e5a4456b637fdd78290f324449a363c4ee0707c4139cd5be4e0417e09e94565996a146",
        ),
        (
            3,
            "context",
            "d93bb6e8ba94e120878832a6f817a707088a203d88ee649b24a4680f7cdeaaeb4734517abb44f86e278ff25e5d0d6ee9",
        ),
        (
            4,
            "mcp",
            "f0ee03c60b619361eb7efc1b7be72043c6774f5d1422d6be3fff23c4b7247af255942b125ea6aebfed354b4d4c5a2e39",
        ),
        (
            5,
            "subagents",
            "7f1384b75a95ddd6ef692d788a94dd4fef7d49459b13d2b6a56e83b284c62e688950b4e05af9bc94a84b24c0ac39f54c",
        ),
        (
            6,
            "acp",
            "f7bfb21244d23118048a225e0d83483ab4b3f8c05b0527aa9fa71d1179fd83dc8f7878b5e052ecff2c95c3c3ba436df3",
        ),
        (
            7,
            "usage",
            "2d0452946a5db5fadc4cf6d0df8b4f0c73526772202a58338f6e65ff6fe71852c58c2cd316f733c553cf25262f8c53c4",
        ),
        (
            8,
            "queue",
            "fbf7ae73e070b13a332cb8a8ab7fffa31760871f4d49c938dd93846f471a04487007d37fc139561a1ea3a29f03037d32",
        ),
        (
            9,
            "checkpoints",
            "4d6e6942610f960d0bd9eba0adf4943cd7d5f18bcfaee60ba1ca2cfd13c333fb46f7856bb2bb65a8bcfd4e43f89757d0",
        ),
        (
            10,
            "turn options",
            "24ee565c71aa1d0a50828a2267b33a1371c1e9d72bc57a5991f4a9cd27b108050cfef20e883963597524cd9373018b3b",
        ),
        (
            11,
            "host label",
            "1c9f2e01b50275fc9727ce1594bc6fa70acc9147f4c87906d3ef97d73253704f84203cbff4047d93e101564989175033",
        ),
    ]
    .map(|(v, name, hex)| (v, name.to_string(), hex.to_string()));
    assert_eq!(checksums(&SQLITE_MIGRATOR), released);
    assert_eq!(checksums(&hand_kept_migrator()), released);
    for m in SQLITE_MIGRATOR.iter() {
        assert!(
            !m.no_tx,
            "migration {} runs outside a transaction",
            m.version
        );
        assert_eq!(m.migration_type, sqlx::migrate::MigrationType::Simple);
    }
}

#[test]
fn every_file_in_the_migrations_folder_is_embedded() {
    // The hand-kept list silently skipped a file it did not name; the macro reads the folder.
    // Nothing sits in `migrations/` itself: each backend has its folder.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    let sql_files = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".sql"))
            .collect();
        names.sort();
        names
    };
    assert!(sql_files(&root).is_empty());
    for (folder, migrator) in [
        ("sqlite", &SQLITE_MIGRATOR),
        ("postgres", &POSTGRES_MIGRATOR),
    ] {
        let embedded: Vec<String> = migrator
            .iter()
            .map(|m| format!("{:04}_{}.sql", m.version, m.description.replace(' ', "_")))
            .collect();
        assert_eq!(embedded, sql_files(&root.join(folder)), "{folder}");
    }
}

#[tokio::test]
async fn a_database_migrated_by_the_hand_kept_list_opens_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agentd.db");
    {
        let options = SqliteConnectOptions::from_str("sqlite:")
            .unwrap()
            .filename(&path)
            .create_if_missing(true)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .unwrap();
        hand_kept_migrator().run(&pool).await.unwrap();
        sqlx::query(
            "INSERT INTO agents (id, title, mode, provider, model, settings, created_at, updated_at)
             VALUES ('old', 'From before', 'chat', 'demo', 'echo', '{}', 1, 1)",
        )
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }
    let store = Store::open(&path).await.unwrap();
    assert_eq!(
        store.get_agent("old").await.unwrap().unwrap().title,
        "From before"
    );
    let applied: Vec<(i64, Vec<u8>)> = store
        .query_as("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&store.read)
        .await
        .unwrap();
    let embedded: Vec<(i64, Vec<u8>)> = SQLITE_MIGRATOR
        .iter()
        .map(|m| (m.version, m.checksum.to_vec()))
        .collect();
    assert_eq!(applied, embedded);
    store.close().await;
}

async fn kept_rows_match_the_database_after_every_kind_of_write(backend: Backend) {
    use agent_proto::{LoopFinishReason, PermissionLevel, SessionStatus};
    let (dir, store) = open(backend).await;
    // A second store on the same database keeps nothing: what it reads is the database.
    let fresh = || async {
        let other = dir.reopen().await;
        let rows = (
            other.get_agent("a").await.unwrap(),
            other.summaries("a").await.unwrap(),
            other.grants_for("a").await.unwrap(),
            other.grants_for("b").await.unwrap(),
            other.undelivered_background_results("a").await.unwrap(),
        );
        other.close().await;
        rows
    };
    let kept = || async {
        (
            store.get_agent("a").await.unwrap(),
            store.summaries("a").await.unwrap(),
            store.grants_for("a").await.unwrap(),
            store.grants_for("b").await.unwrap(),
            store.undelivered_background_results("a").await.unwrap(),
        )
    };
    store.insert_agent(&new_agent("a", "t", 1)).await.unwrap();
    store.insert_agent(&new_agent("b", "t", 1)).await.unwrap();
    assert_eq!(kept().await, fresh().await);
    // Read twice: the second read comes from memory.
    assert_eq!(kept().await, fresh().await);

    let patch = AgentPatch {
        title: Some("renamed".into()),
        ..AgentPatch::default()
    };
    store.update_agent("a", &patch, 2).await.unwrap();
    assert_eq!(kept().await, fresh().await);
    store
        .update_agent_merging::<StoreError>(
            "a",
            &AgentPatch::default(),
            |settings| {
                let mut settings = settings.clone();
                settings.max_steps = Some(3);
                Ok(settings)
            },
            3,
        )
        .await
        .unwrap();
    assert_eq!(kept().await, fresh().await);
    store
        .set_session_status("a", SessionStatus::Generating)
        .await
        .unwrap();
    assert_eq!(kept().await, fresh().await);
    assert_eq!(
        kept().await.0.unwrap().status,
        SessionStatus::Generating,
        "the kept row was edited, not only dropped"
    );
    assert_eq!(
        store.agents_left_busy(None).await.unwrap(),
        vec!["a".to_owned()]
    );
    store
        .set_session_status("a", SessionStatus::Idle)
        .await
        .unwrap();
    assert_eq!(kept().await, fresh().await);
    assert!(store.agents_left_busy(None).await.unwrap().is_empty());

    store.insert_run_messages(&new_run(1)).await.unwrap();
    store.set_context_edge("a", Some("u1"), 4).await.unwrap();
    assert_eq!(kept().await, fresh().await);
    // A run's last save: its message and the session status in one round trip.
    store
        .set_session_status("a", SessionStatus::Generating)
        .await
        .unwrap();
    let mut answer = message("m1", "a", Role::Assistant, "yes, done", MessageStatus::Done);
    answer.updated_at = 9;
    store
        .update_message_and_status(&answer, SessionStatus::Idle)
        .await
        .unwrap();
    assert_eq!(kept().await, fresh().await);
    assert_eq!(kept().await.0.unwrap().status, SessionStatus::Idle);
    assert_eq!(
        store.get_message("m1").await.unwrap().unwrap().text(),
        "yes, done"
    );
    store
        .insert_summary(&Summary {
            agent_id: "a".into(),
            through_message_id: "m1".into(),
            text: "they said hi".into(),
            summarized_messages: 2,
            before_tokens: 10,
            after_tokens: 3,
            created_at: 5,
        })
        .await
        .unwrap();
    assert_eq!(kept().await, fresh().await);

    let grant = |scope, key: &str| Grant {
        scope,
        level: PermissionLevel::Execute,
        key: key.into(),
    };
    store
        .add_grant("a", &grant(GrantScope::Session, "ls"))
        .await
        .unwrap();
    assert_eq!(kept().await, fresh().await);
    store
        .add_grant("b", &grant(GrantScope::Always, "cat"))
        .await
        .unwrap();
    let (.., a_grants, b_grants, _) = kept().await;
    assert_eq!(a_grants.len(), 2, "an always grant reaches every agent");
    assert_eq!(b_grants.len(), 1);
    assert_eq!(kept().await, fresh().await);

    let task = BackgroundTask {
        child_agent_id: "child".into(),
        parent_agent_id: "a".into(),
        tool_call_id: "call_1".into(),
        description: "look around".into(),
        status: None,
        result: None,
    };
    store.insert_background_task(&task, 6).await.unwrap();
    assert_eq!(kept().await, fresh().await);
    assert!(
        store
            .finish_background_task("child", LoopFinishReason::Completed, "found it", 7)
            .await
            .unwrap()
    );
    assert_eq!(kept().await.4.len(), 1);
    assert_eq!(kept().await, fresh().await);
    store.mark_background_delivered(&["child"]).await.unwrap();
    assert!(kept().await.4.is_empty());
    assert_eq!(kept().await, fresh().await);

    assert!(store.delete_agent("a").await.unwrap());
    assert_eq!(kept().await, fresh().await);
    assert_eq!(kept().await.0, None);
}

/// A `tool_executions` row: call id, tool, status, output, duration.
type Execution = (String, String, String, Option<String>, Option<i64>);

async fn a_message_saved_with_a_tool_record_writes_both(backend: Backend) {
    let (dir, store) = open(backend).await;
    store.insert_agent(&new_agent("a", "t", 1)).await.unwrap();
    store.insert_run_messages(&new_run(1)).await.unwrap();
    let executions = || async {
        let rows: Vec<Execution> = store
            .query_as(
                "SELECT tool_call_id, tool_name, status, output, duration_ms FROM tool_executions \
             WHERE message_id = 'm1' ORDER BY tool_call_id",
            )
            .fetch_all(&store.read)
            .await
            .unwrap();
        rows
    };
    let start = |call: &str| ToolExecution {
        agent_id: "a".into(),
        message_id: "m1".into(),
        tool_call_id: call.into(),
        tool_name: "read_file".into(),
        input: "{}".into(),
        started_at: 2,
    };
    let end = ToolExecutionEnd {
        status: "success",
        output: "the text".into(),
        offload_path: None,
        finished_at: 3,
        duration_ms: 1,
    };
    let mut answer = message(
        "m1",
        "a",
        Role::Assistant,
        "calling",
        MessageStatus::Streaming,
    );
    store
        .update_message_and_tool(&answer, ToolRecord::Start(&start("c1")))
        .await
        .unwrap();
    assert_eq!(
        executions().await,
        [(
            "c1".into(),
            "read_file".into(),
            "running".into(),
            None,
            None
        )]
    );
    answer.blocks.push(Block::Text {
        text: " and done".into(),
    });
    store
        .update_message_and_tool(
            &answer,
            ToolRecord::End {
                tool_call_id: "c1",
                start: None,
                end: &end,
            },
        )
        .await
        .unwrap();
    // A call settled without running: its start and end in one save.
    let denied = ToolExecutionEnd {
        status: "denied",
        output: "denied: no".into(),
        ..end.clone()
    };
    store
        .update_message_and_tool(
            &answer,
            ToolRecord::End {
                tool_call_id: "c2",
                start: Some(&start("c2")),
                end: &denied,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        executions().await,
        [
            (
                "c1".into(),
                "read_file".into(),
                "success".into(),
                Some("the text".into()),
                Some(1)
            ),
            (
                "c2".into(),
                "read_file".into(),
                "denied".into(),
                Some("denied: no".into()),
                Some(1)
            ),
        ]
    );
    let other = dir.reopen().await;
    let saved = other.get_message("m1").await.unwrap().unwrap();
    assert_eq!(saved.blocks, answer.blocks);
    assert_eq!(
        store.history("a").await.unwrap(),
        other.history("a").await.unwrap()
    );
}

/// A `sendMessage`'s messages and the session status `generating` land together, and
/// neither lands when SQLite refuses one of them; the write connection is usable after.
async fn run_messages_and_the_generating_status_land_together_or_not_at_all(backend: Backend) {
    use agent_proto::SessionStatus;
    let (dir, store) = open(backend).await;
    store.insert_agent(&new_agent("a", "t", 1)).await.unwrap();
    let saved = || async {
        let (history, agent) = in_database(&dir, "a").await;
        (history, agent.status)
    };
    // Read once, so the kept row must be edited (not only read again).
    assert_eq!(
        store.get_agent("a").await.unwrap().unwrap().status,
        SessionStatus::Idle
    );
    store.insert_run_messages(&new_run(1)).await.unwrap();
    let (history, status) = saved().await;
    assert_eq!(history.len(), 2);
    assert_eq!(status, SessionStatus::Generating);
    assert_eq!(store.history("a").await.unwrap(), history);
    assert_eq!(
        store.get_agent("a").await.unwrap().unwrap().status,
        SessionStatus::Generating
    );
    store
        .set_session_status("a", SessionStatus::Idle)
        .await
        .unwrap();

    // The status statement is refused after the insert ran: the insert goes too.
    refuse(
        &store,
        "agents",
        Some("session_status"),
        Some("NEW.session_status = 'generating'"),
    )
    .await;
    assert!(store.insert_run_messages(&new_run(2)).await.is_err());
    let (after, status) = saved().await;
    assert_eq!(after, history, "the refused run's messages are not stored");
    assert_eq!(status, SessionStatus::Idle);
    assert_eq!(store.history("a").await.unwrap(), history);
    assert_eq!(
        store.get_agent("a").await.unwrap().unwrap().status,
        SessionStatus::Idle
    );
    // No transaction was left open: the next writes land and are seen by others.
    allow(&store, "agents").await;
    store.insert_run_messages(&new_run(3)).await.unwrap();
    let (history, status) = saved().await;
    assert_eq!(history.len(), 4);
    assert_eq!(status, SessionStatus::Generating);
    assert_eq!(store.history("a").await.unwrap(), history);
}

/// A status the kept row says the database holds is not written again (a `sendMessage`
/// saves `generating` with its messages, and its run sets it again); one it does not hold
/// is written, and a refused write leaves nothing kept.
async fn a_status_the_database_already_holds_is_not_written_again(backend: Backend) {
    use agent_proto::SessionStatus;
    let (dir, store) = open(backend).await;
    store.insert_agent(&new_agent("a", "t", 1)).await.unwrap();
    store.insert_run_messages(&new_run(1)).await.unwrap();
    assert_eq!(
        store.get_agent("a").await.unwrap().unwrap().status,
        SessionStatus::Generating
    );
    // Every status write is refused from here on: only a skipped one succeeds.
    refuse(&store, "agents", Some("session_status"), None).await;
    store
        .set_session_status("a", SessionStatus::Generating)
        .await
        .unwrap();
    assert!(
        store
            .set_session_status("a", SessionStatus::Idle)
            .await
            .is_err()
    );
    // Nothing is kept after the refusal: the same status is written (and refused) again.
    assert!(
        store
            .set_session_status("a", SessionStatus::Generating)
            .await
            .is_err()
    );
    assert_eq!(
        in_database(&dir, "a").await.1.status,
        SessionStatus::Generating
    );
}

async fn timed_saves_queued_together_land_together_and_a_failed_batch_one_by_one(backend: Backend) {
    let (dir, store) = open(backend).await;
    store.insert_agent(&new_agent("a", "t", 1)).await.unwrap();
    for n in 0..5 {
        store.insert_run_messages(&new_run(n)).await.unwrap();
    }
    // Warm the kept history, so the saves must keep it in step.
    store.history("a").await.unwrap();
    let streaming = |n: usize, text: &str| {
        message(
            &format!("m{n}"),
            "a",
            Role::Assistant,
            text,
            MessageStatus::Streaming,
        )
    };
    // Queued before the writing task first runs: one batch.
    let waiting: Vec<SaveDone> = (0..5)
        .map(|n| store.save_soon(streaming(n, &format!("part {n}"))))
        .collect();
    for done in waiting {
        done.await.unwrap().unwrap();
    }
    let other = dir.reopen().await;
    assert_eq!(
        store.history("a").await.unwrap(),
        other.history("a").await.unwrap()
    );
    assert_eq!(
        other.get_message("m3").await.unwrap().unwrap().text(),
        "part 3"
    );

    // A batch SQLite refuses (one of its messages is refused) is written again one by
    // one: the others land, and only the refused one's caller hears of it.
    refuse(&store, "messages", None, Some("NEW.id = 'm2'")).await;
    let waiting: Vec<SaveDone> = (0..5)
        .map(|n| store.save_soon(streaming(n, &format!("again {n}"))))
        .collect();
    let outcomes: Vec<bool> = futures::future::join_all(waiting)
        .await
        .into_iter()
        .map(|done| done.unwrap().is_ok())
        .collect();
    assert_eq!(outcomes, [true, true, false, true, true]);
    assert_eq!(
        other.get_message("m4").await.unwrap().unwrap().text(),
        "again 4"
    );
    assert_eq!(
        other.get_message("m2").await.unwrap().unwrap().text(),
        "part 2"
    );
    // A store of its own again: `other` keeps the history it read above.
    let fresh = dir.reopen().await;
    assert_eq!(
        store.history("a").await.unwrap(),
        fresh.history("a").await.unwrap()
    );
}

async fn a_write_waiting_for_the_connection_lands_and_a_closed_store_refuses_writes(
    backend: Backend,
) {
    let (dir, store) = open(backend).await;
    store.insert_agent(&new_agent("a", "A", 1)).await.unwrap();
    // A write that waits while another holds the connection lands once it is let go.
    let held = store.write.acquire().await.unwrap();
    let waiting = tokio::spawn({
        let store = store.clone();
        async move { store.set_last_seq("a", 7).await }
    });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished(), "the write waits for the connection");
    drop(held);
    waiting.await.unwrap().unwrap();
    assert_eq!(store.agent_last_seq("a").await.unwrap(), Some(7));
    // Closing waits for the writer in progress; every write after it fails, none hangs.
    store.close().await;
    let refused = store.set_last_seq("a", 8).await.unwrap_err();
    assert!(
        matches!(&refused, StoreError::Database(sqlx::Error::PoolClosed)),
        "{refused}"
    );
    let other = dir.reopen().await;
    assert_eq!(other.agent_last_seq("a").await.unwrap(), Some(7));
    other.close().await;
}

async fn a_history_cut_takes_its_summaries_edge_and_checkpoints_and_keeps_what_is_kept_true(
    backend: Backend,
) {
    use super::Summary;
    let (dir, store) = open(backend).await;
    store.insert_agent(&new_agent("a", "t", 1)).await.unwrap();
    for n in 1..=3 {
        store.insert_run_messages(&new_run(n)).await.unwrap();
    }
    let summary = |through: &str| Summary {
        agent_id: "a".into(),
        through_message_id: through.into(),
        text: format!("up to {through}"),
        summarized_messages: 2,
        before_tokens: 10,
        after_tokens: 2,
        created_at: 5,
    };
    store.insert_summary(&summary("m1")).await.unwrap();
    store.insert_summary(&summary("m2")).await.unwrap();
    assert!(store.set_context_edge("a", Some("u2"), 6).await.unwrap());
    store
        .begin_checkpoint("a", "m1", Ok("s1"), 7)
        .await
        .unwrap();
    store.end_checkpoint("m1", Ok("s2"), 7).await.unwrap();
    store
        .begin_checkpoint("a", "m2", Ok("s2"), 8)
        .await
        .unwrap();
    // A second "before" of the same answer keeps the first.
    store
        .begin_checkpoint("a", "m2", Ok("s9"), 8)
        .await
        .unwrap();
    store.end_checkpoint("m2", Ok("s3"), 8).await.unwrap();
    assert_eq!(
        store
            .last_checkpoint("a")
            .await
            .unwrap()
            .unwrap()
            .before
            .as_deref(),
        Some("s2")
    );
    // Read once so the history, summaries and row are kept in memory.
    store.history("a").await.unwrap();
    store.summaries("a").await.unwrap();
    store.get_agent("a").await.unwrap();

    let from = store.message_position("u2").await.unwrap().unwrap();
    let cut = store.truncate_history("a", from, 9).await.unwrap();
    assert_eq!(
        cut,
        super::Truncated {
            messages: 4,
            summaries: 1
        }
    );
    let history = store.history("a").await.unwrap();
    let ids: Vec<&str> = history.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["u1", "m1"]);
    let (fresh, agent) = in_database(&dir, "a").await;
    assert_eq!(history, fresh);
    assert_eq!(agent.context_edge, None);
    assert_eq!(
        store.get_agent("a").await.unwrap().unwrap().context_edge,
        None
    );
    let summaries = store.summaries("a").await.unwrap();
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].through_message_id, "m1");
    assert!(store.checkpoint("m2").await.unwrap().is_none());
    assert_eq!(
        store
            .last_checkpoint("a")
            .await
            .unwrap()
            .unwrap()
            .message_id,
        "m1"
    );
}

/// Another daemon's run lost with it: one agent's unfinished messages, running calls and
/// busy status are settled, and no other agent's (they may be running elsewhere).
async fn one_agents_lost_run_is_settled_without_touching_the_others(backend: Backend) {
    use agent_proto::SessionStatus;
    let (_dir, store) = open(backend).await;
    for agent in ["a", "b"] {
        store
            .insert_agent(&new_agent(agent, agent, 1))
            .await
            .unwrap();
        store
            .insert_run_messages(&RunMessages {
                user: message(
                    &format!("u-{agent}"),
                    agent,
                    Role::User,
                    "q",
                    MessageStatus::Done,
                ),
                assistant: message(
                    &format!("m-{agent}"),
                    agent,
                    Role::Assistant,
                    "",
                    MessageStatus::Pending,
                ),
                client_request_id: None,
            })
            .await
            .unwrap();
        store
            .record_tool_start(&ToolExecution {
                agent_id: agent.into(),
                message_id: format!("m-{agent}"),
                tool_call_id: "call".into(),
                tool_name: "bash".into(),
                input: "{}".into(),
                started_at: 2,
            })
            .await
            .unwrap();
    }
    assert_eq!(store.agents_left_busy(None).await.unwrap(), ["a", "b"]);
    assert_eq!(store.agents_left_busy(Some("b")).await.unwrap(), ["b"]);

    let fixed = store.interrupt_unfinished(5, Some("a")).await.unwrap();
    assert_eq!(fixed, [("a".to_owned(), "m-a".to_owned())]);
    assert_eq!(
        store.interrupt_running_tools(5, Some("a")).await.unwrap(),
        1
    );
    store
        .set_session_status("a", SessionStatus::Idle)
        .await
        .unwrap();
    assert_eq!(store.agents_left_busy(None).await.unwrap(), ["b"]);
    let status = |id: &'static str| {
        let store = &store;
        async move { store.get_message(id).await.unwrap().unwrap().status }
    };
    assert_eq!(status("m-a").await, MessageStatus::Interrupted);
    assert_eq!(status("m-b").await, MessageStatus::Pending);
    assert_eq!(store.ended_tools("m-a").await.unwrap().len(), 1);
    assert!(store.ended_tools("m-b").await.unwrap().is_empty());
    // The rest, as a start-up does.
    assert_eq!(store.interrupt_unfinished(6, None).await.unwrap().len(), 1);
    assert_eq!(store.interrupt_running_tools(6, None).await.unwrap(), 1);
}

/// An agent with a folder belongs to the host of the store that created it; one without
/// belongs nowhere; a store with no label writes none.
async fn an_agent_with_a_folder_gets_the_creating_hosts_label(backend: Backend) {
    let (dir, store) = open(backend).await;
    let store = store.labelled("box-1");
    let mut with_folder = new_agent("w", "W", 1);
    with_folder.workspace = Some("/srv/work".into());
    store.insert_agent(&with_folder).await.unwrap();
    store.insert_agent(&new_agent("c", "C", 2)).await.unwrap();
    assert_eq!(
        store.host_label_of("w").await.unwrap().as_deref(),
        Some("box-1")
    );
    assert_eq!(store.host_label_of("c").await.unwrap(), None);
    assert_eq!(store.host_label_of("ghost").await.unwrap(), None);
    let unlabelled = dir.reopen().await;
    let mut other = new_agent("u", "U", 3);
    other.workspace = Some("/srv/other".into());
    unlabelled.insert_agent(&other).await.unwrap();
    assert_eq!(unlabelled.host_label_of("u").await.unwrap(), None);
    assert_eq!(
        unlabelled.host_label_of("w").await.unwrap().as_deref(),
        Some("box-1")
    );
}

on_both!(
    an_agent_with_a_folder_gets_the_creating_hosts_label,
    one_agents_lost_run_is_settled_without_touching_the_others,
    agents_page_newest_first_with_filters,
    update_changes_only_given_fields,
    messages_order_page_and_cascade,
    unfinished_messages_become_interrupted_keeping_text,
    seq_marks_only_rise_when_reserving,
    kept_histories_match_the_database_after_every_kind_of_write,
    kept_rows_match_the_database_after_every_kind_of_write,
    a_message_saved_with_a_tool_record_writes_both,
    run_messages_and_the_generating_status_land_together_or_not_at_all,
    a_status_the_database_already_holds_is_not_written_again,
    timed_saves_queued_together_land_together_and_a_failed_batch_one_by_one,
    a_write_waiting_for_the_connection_lands_and_a_closed_store_refuses_writes,
    a_history_cut_takes_its_summaries_edge_and_checkpoints_and_keeps_what_is_kept_true,
);
