//! `todo_write`: the model keeps its plan. It sends the whole list each time; the daemon
//! stores it per agent and tells the clients (`planUpdated`).

use agent_proto::{PermissionLevel, PlanItem, PlanStatus};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::TypedTool;
use crate::tools::{Access, ToolContext, ToolOutput};

/// Items one plan may have.
const MAX_ITEMS: usize = 100;

#[derive(Debug)]
pub(super) struct TodoWrite;

/// `todo_write`'s arguments: the whole plan.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct TodoWriteArgs {
    #[schemars(length(max = MAX_ITEMS))]
    todos: Vec<Todo>,
}

// One item of the plan as the model writes it (an `agent_proto::PlanItem`). No doc comment:
// it would become the items' description.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Todo {
    #[schemars(length(min = 1))]
    content: String,
    #[schemars(transform = super::args::without_description)]
    status: PlanStatus,
    active_form: Option<String>,
}

impl From<Todo> for PlanItem {
    fn from(todo: Todo) -> PlanItem {
        PlanItem {
            content: todo.content,
            status: todo.status,
            active_form: todo.active_form,
        }
    }
}

/// The plan in the arguments (of a call, or of an export), checked as `todo_write` checks
/// it. `Err` is the result text for the model.
pub fn parse_plan(args: &Value) -> Result<Vec<PlanItem>, String> {
    let todos = args
        .get("todos")
        .ok_or("todos is required: the whole list, every item with its status")?;
    let todos: Vec<Todo> = super::args::parse(todos)
        .map_err(|e| format!("todos is not a list of {{content, status, activeForm?}}: {e}"))?;
    check_plan(todos)
}

/// The plan, checked: at most [`MAX_ITEMS`], none empty, at most one in progress. `Err` is
/// the result text for the model.
fn check_plan(todos: Vec<Todo>) -> Result<Vec<PlanItem>, String> {
    let items: Vec<PlanItem> = todos.into_iter().map(PlanItem::from).collect();
    if items.len() > MAX_ITEMS {
        return Err(format!(
            "the plan has {} items; at most {MAX_ITEMS}: merge small steps",
            items.len()
        ));
    }
    if let Some(i) = items.iter().position(|i| i.content.trim().is_empty()) {
        return Err(format!("item {} has no content", i + 1));
    }
    let doing = items
        .iter()
        .filter(|i| i.status == PlanStatus::InProgress)
        .count();
    if doing > 1 {
        return Err(format!(
            "{doing} items are in_progress; at most one may be: finish one (completed) before starting the next"
        ));
    }
    Ok(items)
}

impl TypedTool for TodoWrite {
    type Args = TodoWriteArgs;

    fn name(&self) -> &'static str {
        "todo_write"
    }

    fn description(&self) -> &'static str {
        "Write your plan for the current task as a checklist the user sees live. Send the whole list every time (it replaces the previous one): each item's content in the imperative (\"Run the tests\"), its status (pending, in_progress, completed) and optionally activeForm (\"Running the tests\"). Keep exactly one item in_progress while you work, mark items completed as soon as they are done, and add items you discover. Use it for work of three steps or more; skip it for a single quick action."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Read
    }

    fn access(&self, args: &TodoWriteArgs, _ctx: &ToolContext) -> Result<Access, String> {
        check_plan(args.todos.clone())?;
        Ok(Access::Agent)
    }

    fn run<'a>(&'a self, args: TodoWriteArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let items = match check_plan(args.todos) {
                Ok(items) => items,
                Err(e) => return ToolOutput::error(e),
            };
            let Some(host) = &ctx.host else {
                return ToolOutput::error("the plan cannot be kept here (no agent layer)");
            };
            let summary = summarize(&items);
            match host.set_plan(ctx, items).await {
                Ok(()) => ToolOutput::ok(summary),
                Err(e) => ToolOutput::error(format!("the plan was not saved: {e}")),
            }
        })
    }
}

/// What the model reads back: the counts, and the item in progress.
fn summarize(items: &[PlanItem]) -> String {
    let count = |s: PlanStatus| items.iter().filter(|i| i.status == s).count();
    let mut out = format!(
        "Plan saved: {} items ({} completed, {} in progress, {} pending).",
        items.len(),
        count(PlanStatus::Completed),
        count(PlanStatus::InProgress),
        count(PlanStatus::Pending)
    );
    if let Some(doing) = items.iter().find(|i| i.status == PlanStatus::InProgress) {
        out.push_str(&format!(" In progress: {}", doing.content));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn plans_are_checked() {
        let ok = json!({"todos": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
            {"content": "Run the tests", "status": "pending"}
        ]});
        let items = parse_plan(&ok).unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].active_form.as_deref(), Some("Fixing the bug"));
        assert_eq!(
            summarize(&items),
            "Plan saved: 3 items (1 completed, 1 in progress, 1 pending). In progress: Fix the bug"
        );
        let cases = [
            (json!({}), "todos is required"),
            (json!({"todos": "x"}), "todos is not a list"),
            (
                json!({"todos": [{"content": "a", "status": "done"}]}),
                "todos is not a list",
            ),
            (
                json!({"todos": [{"content": " ", "status": "pending"}]}),
                "item 1 has no content",
            ),
            (
                json!({"todos": [
                    {"content": "a", "status": "in_progress"},
                    {"content": "b", "status": "in_progress"}
                ]}),
                "2 items are in_progress",
            ),
        ];
        for (args, start) in cases {
            let e = parse_plan(&args).unwrap_err();
            assert!(e.starts_with(start), "{args}: {e}");
        }
        let many: Vec<Value> = (0..101)
            .map(|i| json!({"content": format!("step {i}"), "status": "pending"}))
            .collect();
        assert!(
            parse_plan(&json!({"todos": many}))
                .unwrap_err()
                .contains("at most 100")
        );
        assert!(parse_plan(&json!({"todos": []})).unwrap().is_empty());
    }
}
