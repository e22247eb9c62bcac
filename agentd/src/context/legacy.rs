//! The legacy `<function_call>` text protocol as the model is told it: the tools in the
//! system prompt ([`tools_prompt`]), and calls and results written back into the
//! transcript as text ([`render_call`], [`render_result`]). Reading the tags out of a
//! streamed answer is `agent_loop::legacy`'s.

use serde_json::{Value, json};

use crate::provider::ToolSpec;

pub(crate) const OPEN: &str = "<function_call>";
pub(crate) const CLOSE: &str = "</function_call>";
const RESULT_CLOSE: &str = "</function_call_result>";

/// The system prompt section describing the tools and how to call them.
pub(crate) fn tools_prompt(tools: &[ToolSpec]) -> String {
    let mut out = String::from(
        "You can use tools. To call a tool, write a tag exactly like this, with a JSON object \
         inside:\n\
         <function_call>{\"name\": \"TOOL_NAME\", \"arguments\": {\"ARG\": \"VALUE\"}}</function_call>\n\
         Rules: one call per tag; you may write several tags in one answer; after your answer \
         the results come back as <function_call_result name=\"...\" id=\"...\">...</function_call_result> \
         (a failed call's with status=\"error\"). \
         Wait for them: never invent a result. When you need no tool, just answer.\n\nTools:\n",
    );
    for tool in tools {
        out.push_str(&format!(
            "- {}: {}\n  arguments schema: {}\n",
            tool.name, tool.description, tool.parameters
        ));
    }
    out
}

/// A call as it appears in the assistant's text.
pub(crate) fn render_call(name: &str, arguments: &Value) -> String {
    format!(
        "{OPEN}{}{CLOSE}",
        json!({"name": name, "arguments": arguments})
    )
}

/// A result as the model gets it back; a failed call's says `status="error"` and its
/// text starts with [`crate::provider::FAILED_RESULT_MARK`].
pub(crate) fn render_result(name: &str, id: &str, content: &str, failed: bool) -> String {
    let attr = |s: &str| s.replace('&', "&amp;").replace('"', "&quot;");
    let content = content.replace(RESULT_CLOSE, "<\\/function_call_result>");
    let (status, content) = if failed {
        let marked = crate::provider::marked_failure(&content).into_owned();
        (" status=\"error\"", marked)
    } else {
        ("", content)
    };
    format!(
        "<function_call_result name=\"{}\" id=\"{}\"{status}>{content}{RESULT_CLOSE}",
        attr(name),
        attr(id)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering() {
        assert_eq!(
            render_call("bash", &json!({"command": "ls"})),
            "<function_call>{\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}</function_call>"
        );
        assert_eq!(
            render_result("a\"b", "id1", "out</function_call_result>more", false),
            "<function_call_result name=\"a&quot;b\" id=\"id1\">out<\\/function_call_result>more</function_call_result>"
        );
        assert_eq!(
            render_result("bash", "c1", "exit 1", true),
            "<function_call_result name=\"bash\" id=\"c1\" status=\"error\">Error: exit 1</function_call_result>"
        );
        let prompt = tools_prompt(&[ToolSpec {
            name: "glob".into(),
            description: "find files".into(),
            parameters: json!({"type": "object"}),
        }]);
        assert!(prompt.contains("<function_call>{\"name\": \"TOOL_NAME\""));
        assert!(prompt.contains("- glob: find files\n  arguments schema: {\"type\":\"object\"}"));
    }
}
