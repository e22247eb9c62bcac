//! The plan an agent keeps with `todo_write`: the whole list, replaced at each call.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where one item of the plan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

impl PlanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Pending => "pending",
            PlanStatus::InProgress => "in_progress",
            PlanStatus::Completed => "completed",
        }
    }
}

/// One item of an agent's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanItem {
    /// What is to be done, in the imperative ("Run the tests").
    pub content: String,
    pub status: PlanStatus,
    /// The item while it is being done, in the present continuous ("Running the tests").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}

/// `getPlan`'s answer: the agent's plan (empty when it never wrote one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub agent_id: String,
    pub items: Vec<PlanItem>,
    /// Unix ms of the last `todo_write`; absent when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn items_are_camel_case_with_snake_case_status() {
        let item = PlanItem {
            content: "Run the tests".into(),
            status: PlanStatus::InProgress,
            active_form: Some("Running the tests".into()),
        };
        let wire = json!({"content": "Run the tests", "status": "in_progress",
            "activeForm": "Running the tests"});
        assert_eq!(serde_json::to_value(&item).unwrap(), wire);
        assert_eq!(serde_json::from_value::<PlanItem>(wire).unwrap(), item);
        assert_eq!(PlanStatus::InProgress.as_str(), "in_progress");
    }
}
