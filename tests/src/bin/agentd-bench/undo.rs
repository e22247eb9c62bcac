//! Scenario 14, what undo's snapshots cost a turn (issue 35): `write_file` round trips in a workspace
//! of 5,000 files, each bracketed by two snapshots (the "before" reusing the previous
//! turn's "after" when nothing else changed), against the same turns reading the file
//! (no snapshot).

use std::path::Path;

use agentd_testkit::mock_model::Reply;
use anyhow::bail;
use serde_json::json;

use crate::measure::{median, ms_between, percentile};
use crate::scenarios::{ALLOW_ALL, create_agent, start};
use crate::wire::Conn;
use crate::{Bench, Figure};

/// A tree of `files` small files in folders of 100.
fn fill(root: &Path, files: usize) -> anyhow::Result<()> {
    for i in 0..files {
        let dir = root.join(format!("src/mod{}", i / 100));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join(format!("file{i}.rs")),
            format!("// file {i}\npub fn f{i}() -> usize {{ {i} }}\n").repeat(20),
        )?;
    }
    Ok(())
}

pub(crate) async fn write_turn(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let (mock, daemon) = start(bench, ALLOW_ALL).await?;
    let workspace = tempfile::tempdir()?;
    let files = bench.size(5000, 500);
    fill(workspace.path(), files)?;
    let path = std::fs::canonicalize(workspace.path())?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let id = create_agent(
        &mut conn,
        json!({"mode": "agent", "workspace": path.display().to_string()}),
    )
    .await?;
    conn.subscribe(Some(&id)).await?;
    let turn = async |n: usize, tool: &str, conn: &mut Conn| {
        let args = match tool {
            "write_file" => json!({"path": "notes.txt", "content": format!("turn {n}\n")}),
            _ => json!({"path": "notes.txt"}),
        }
        .to_string();
        mock.push(Reply::openai_tool_calls(
            &[],
            &[(&format!("call_{n}"), tool, &args)],
        ));
        mock.push(Reply::openai_text(&["Done."]));
        conn.turn(&id, "Go").await
    };
    // The first write takes the first snapshot of the whole tree (every file read).
    let first = turn(0, "write_file", &mut conn).await?;
    let first_ms = ms_between(first.finished, first.sent);
    let turns = bench.size(30, 5);
    let mut runs = Vec::new();
    for tool in ["write_file", "read_file"] {
        let mut beyond = Vec::with_capacity(turns);
        for n in 0..turns {
            let before = mock.requests().len();
            let t = turn(1 + n, tool, &mut conn).await?;
            let requests = mock.requests();
            if requests.len() != before + 2 {
                bail!(
                    "expected 2 model requests per turn, the mock got {}",
                    requests.len() - before
                );
            }
            let model: f64 = requests[before..]
                .iter()
                .filter_map(|r| r.finished_at.map(|f| ms_between(f, r.received_at)))
                .sum();
            beyond.push(ms_between(t.finished, t.sent) - model);
        }
        runs.push(beyond);
    }
    bench.keep_log(&daemon, "write-turn");
    let s = "14 write turn";
    Ok(vec![
        Figure::new(
            s,
            format!("first write_file turn, {files} files (whole turn)"),
            first_ms,
            "ms",
        ),
        Figure::new(
            s,
            format!("write_file: wall beyond the 2 model calls, median of {turns}"),
            median(&runs[0]),
            "ms",
        ),
        Figure::new(s, "  p99", percentile(&runs[0], 99.0), "ms"),
        Figure::new(
            s,
            "read_file (no snapshot): the same, median",
            median(&runs[1]),
            "ms",
        ),
    ])
}
