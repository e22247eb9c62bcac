//! Listing a server's tools: `tools/list` page by page, read as plain JSON so that one bad
//! tool is skipped with its reason instead of failing the whole list (rmcp's typed list
//! rejects every tool of a page for one without `inputSchema`). Bounded: at most
//! `max_list_pages` pages and `max_tools_per_server` tools, and a cursor the server gives
//! twice ends the listing with an error rather than looping forever. An empty `nextCursor`
//! ends the list, as a missing one does.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::model::{
    CancelledNotificationParam, ClientRequest, ListToolsRequest, PaginatedRequestParams,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio::time::Instant;

use super::McpLimits;
use super::call::{oversized_answer, token_key};
use super::convert::{self, Skipped, ToolDef};
use super::process::Oversized;

/// A server's tools as listed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Listing {
    pub tools: Vec<ToolDef>,
    pub skipped: Vec<Skipped>,
}

/// What one page says about the next.
#[derive(Debug, PartialEq)]
enum Next {
    End,
    Cursor(String),
}

/// The tools and the next cursor of one `tools/list` result.
fn page(result: &Value) -> Result<(&[Value], Next), String> {
    let tools = match result.get("tools") {
        Some(Value::Array(tools)) => tools.as_slice(),
        _ => {
            return Err(format!(
                "tools/list answered without a list of tools: {}",
                crate::provider::excerpt(&result.to_string(), 200)
            ));
        }
    };
    let next = match result.get("nextCursor") {
        None | Some(Value::Null) => Next::End,
        Some(Value::String(c)) if c.is_empty() => Next::End,
        Some(Value::String(c)) => Next::Cursor(c.clone()),
        Some(other) => {
            return Err(format!(
                "tools/list gave a nextCursor that is not text: {}",
                crate::provider::excerpt(&other.to_string(), 100)
            ));
        }
    };
    Ok((tools, next))
}

/// Pages through `tools/list` with `fetch` (cursor in, the result's JSON out).
async fn list_with<F, Fut>(limits: &McpLimits, mut fetch: F) -> Result<Listing, String>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<Value, String>>,
{
    let mut items: Vec<Value> = Vec::new();
    let mut cursors: HashSet<String> = HashSet::new();
    let mut cursor = None;
    for number in 1..=limits.max_list_pages {
        let result = fetch(cursor.take()).await?;
        let (tools, next) = page(&result)?;
        if items.len() + tools.len() > limits.max_tools_per_server {
            return Err(format!(
                "the server lists more than {} tools (mcp.max_tools_per_server; page {number} \
                 brought the count to {}); the listing was stopped",
                limits.max_tools_per_server,
                items.len() + tools.len()
            ));
        }
        items.extend(tools.iter().cloned());
        match next {
            Next::End => {
                let (tools, skipped) = convert::tool_defs(&items, limits.max_schema_bytes);
                return Ok(Listing { tools, skipped });
            }
            Next::Cursor(next) => {
                if !cursors.insert(next.clone()) {
                    return Err(format!(
                        "tools/list page {number} gave the cursor {:?} again: the list would \
                         never end; the listing was stopped",
                        crate::provider::excerpt(&next, 100)
                    ));
                }
                cursor = Some(next);
            }
        }
    }
    Err(format!(
        "tools/list still had more after {} pages (mcp.max_list_pages); the listing was stopped",
        limits.max_list_pages
    ))
}

/// Lists a server's tools, all pages within `limit`; a page not answered by then is
/// cancelled on the server. A page over the transport's size limit fails the listing at
/// once (`oversized`: what the transport reports).
pub(super) async fn list_tools(
    peer: &Peer<RoleClient>,
    limits: &McpLimits,
    oversized: &broadcast::Sender<Oversized>,
    limit: Duration,
) -> Result<Listing, String> {
    let deadline = Instant::now() + limit;
    list_with(limits, |cursor| async move {
        let mut dropped = oversized.subscribe();
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let request_id = handle.id.clone();
        let id = token_key(&request_id);
        let result = tokio::select! {
            biased;
            too_big = oversized_answer(&mut dropped, &id) => {
                return Err(format!("tools/list: {}", too_big.describe()));
            }
            result = tokio::time::timeout_at(deadline, handle.await_response()) => match result {
                Ok(result) => result.map_err(|e| format!("tools/list failed: {e}"))?,
                Err(_) => {
                    let note = CancelledNotificationParam::new(
                        Some(request_id),
                        Some("timed out".into()),
                    );
                    if let Err(e) = peer.notify_cancelled(note).await {
                        tracing::debug!("cannot cancel tools/list: {e}");
                    }
                    return Err(format!(
                        "the server did not answer tools/list within {} s",
                        limit.as_secs()
                    ));
                }
            },
        };
        // Whatever variant rmcp's untagged result took (a page with a bad tool is no
        // `ListToolsResult` to it), its JSON is what the server sent.
        serde_json::to_value(&result).map_err(|e| format!("tools/list: {e}"))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::VecDeque;

    fn limits(pages: usize, tools: usize) -> McpLimits {
        McpLimits {
            max_list_pages: pages,
            max_tools_per_server: tools,
            ..McpLimits::default()
        }
    }

    fn tool(name: &str) -> Value {
        json!({"name": name, "inputSchema": {"type": "object"}})
    }

    /// Runs a listing against scripted pages; returns the outcome and the cursors asked.
    fn run(limits: &McpLimits, pages: Vec<Value>) -> (Result<Vec<String>, String>, Vec<String>) {
        let pages = std::sync::Mutex::new(VecDeque::from(pages));
        let asked = std::sync::Mutex::new(Vec::new());
        let outcome = futures::executor::block_on(list_with(limits, |cursor| {
            asked
                .lock()
                .unwrap()
                .push(cursor.unwrap_or_else(|| "-".into()));
            let page = pages.lock().unwrap().pop_front();
            async move { page.ok_or_else(|| "no more pages scripted".to_owned()) }
        }));
        let names = outcome.map(|l| l.tools.into_iter().map(|t| t.name).collect());
        (names, asked.into_inner().unwrap())
    }

    #[test]
    fn pages_are_followed_and_bounded() {
        let endless: Vec<Value> = (1..=10)
            .map(|i| json!({"tools": [tool(&format!("t{i}"))], "nextCursor": format!("c{i}")}))
            .collect();
        // (limits, pages, the tools or the error's start, the cursors asked)
        type Case<'a> = (
            McpLimits,
            Vec<Value>,
            Result<Vec<&'a str>, &'a str>,
            Vec<&'a str>,
        );
        let cases: Vec<Case> = vec![
            (
                limits(10, 10),
                vec![
                    json!({"tools": [tool("a")], "nextCursor": "p2"}),
                    json!({"tools": [tool("b")]}),
                ],
                Ok(vec!["a", "b"]),
                vec!["-", "p2"],
            ),
            // an empty cursor ends the list (a server that means "no more")
            (
                limits(10, 10),
                vec![json!({"tools": [tool("a")], "nextCursor": ""})],
                Ok(vec!["a"]),
                vec!["-"],
            ),
            (
                limits(10, 10),
                vec![json!({"tools": [tool("a")], "nextCursor": null})],
                Ok(vec!["a"]),
                vec!["-"],
            ),
            // the same cursor again: stopped at once
            (
                limits(10, 10),
                vec![
                    json!({"tools": [tool("a")], "nextCursor": "again"}),
                    json!({"tools": [tool("a")], "nextCursor": "again"}),
                ],
                Err("tools/list page 2 gave the cursor \"again\" again"),
                vec!["-", "again"],
            ),
            // new cursors forever: stopped at the page limit
            (
                limits(3, 100),
                endless.clone(),
                Err("tools/list still had more after 3 pages"),
                vec!["-", "c1", "c2"],
            ),
            // too many tools: stopped at the tool limit
            (
                limits(100, 4),
                endless,
                Err("the server lists more than 4 tools"),
                vec!["-", "c1", "c2", "c3", "c4"],
            ),
            (
                limits(10, 10),
                vec![json!({"tools": "none"})],
                Err("tools/list answered without a list of tools"),
                vec!["-"],
            ),
            (
                limits(10, 10),
                vec![json!({"tools": [], "nextCursor": 5})],
                Err("tools/list gave a nextCursor that is not text: 5"),
                vec!["-"],
            ),
        ];
        for (limits, pages, expected, asked) in cases {
            let (got, got_asked) = run(&limits, pages);
            match expected {
                Ok(names) => assert_eq!(got.unwrap(), names),
                Err(start) => {
                    let e = got.unwrap_err();
                    assert!(e.starts_with(start), "{e}");
                }
            }
            assert_eq!(got_asked, asked);
        }
    }

    #[test]
    fn a_page_rmcp_cannot_type_keeps_its_json() {
        // What rmcp makes of a page with a tool it rejects: its untagged result falls back
        // to a variant that still serializes to the page as sent.
        let sent = json!({
            "tools": [tool("good"), {"name": "no_schema"}, {"description": 42, "inputSchema": {}}],
            "nextCursor": "n"
        });
        let message = json!({"jsonrpc": "2.0", "id": 1, "result": sent});
        let parsed: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(message).unwrap();
        let rmcp::model::JsonRpcMessage::Response(response) = parsed else {
            panic!("not a response: {parsed:?}");
        };
        let back = serde_json::to_value(&response.result).unwrap();
        assert_eq!(back, sent);
    }
}
