//! The committed schema (`agent-proto/schema/`) is what the types generate, and every
//! frame docs/protocol.md shows fits it: the doc, the schema and the code cannot drift
//! apart.
//!
//! Regenerate the committed files after changing a wire type:
//! `UPDATE_SCHEMA=1 cargo test -p agent-proto --test schema`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_proto::ErrorKind;
use agent_proto::schema::{event_schema, methods, openrpc};
use serde_json::{Value, json};

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schema")
}

/// `value` with every object's keys in order: the same text whether or not serde_json keeps
/// insertion order (its `preserve_order` feature, which another crate of the workspace may
/// turn on for every build that includes it).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(&sorted(value)).unwrap();
    text.push('\n');
    text
}

#[test]
fn committed_schema_is_what_the_types_generate() {
    let files = [
        ("openrpc.json", pretty(&openrpc())),
        ("event.schema.json", pretty(&event_schema())),
    ];
    let update = std::env::var_os("UPDATE_SCHEMA").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, generated) in files {
        let path = schema_dir().join(name);
        if update {
            std::fs::create_dir_all(schema_dir()).unwrap();
            std::fs::write(&path, &generated).unwrap();
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != generated {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "agent-proto/schema/{stale:?} differ from what the wire types generate; run \
         `UPDATE_SCHEMA=1 cargo test -p agent-proto --test schema` and commit the result"
    );
}

#[test]
fn the_schemas_are_valid_json_schema() {
    let doc = openrpc();
    for method in methods() {
        jsonschema::validator_for(&method.params)
            .unwrap_or_else(|e| panic!("params of {}: {e}", method.name));
        jsonschema::validator_for(&with_components(&method.result, &doc))
            .unwrap_or_else(|e| panic!("result of {}: {e}", method.name));
    }
    let events = jsonschema::validator_for(&event_schema()).unwrap();
    // The schema tells events apart: a known type with its fields fits, anything else not.
    let event = |rest: Value| {
        let mut e = json!({"seq": 1, "agentId": "a", "at": 5});
        e.as_object_mut()
            .unwrap()
            .extend(rest.as_object().unwrap().clone());
        e
    };
    assert!(events.is_valid(&event(
        json!({"type": "textDelta", "messageId": "m", "delta": "x"})
    )));
    assert!(!events.is_valid(&event(json!({"type": "textDelta", "messageId": "m"}))));
    assert!(!events.is_valid(&event(json!({"type": "noSuchEvent"}))));
    assert!(!events.is_valid(&json!({"type": "agentDeleted", "agentId": "a", "at": 5})));
    // Every method names its errors by a kind there is.
    for method in doc["methods"].as_array().unwrap() {
        for error in method["errors"].as_array().unwrap() {
            let target = error["$ref"].as_str().unwrap();
            let kind = target.rsplit('/').next().unwrap();
            assert!(doc["components"]["errors"][kind].is_object(), "{target}");
        }
    }
    assert_eq!(
        doc["components"]["errors"].as_object().unwrap().len(),
        ErrorKind::ALL.len()
    );
}

/// `schema` with the document's definitions beside it, so its `$ref`s resolve.
fn with_components(schema: &Value, doc: &Value) -> Value {
    json!({
        "allOf": [schema],
        "components": {"schemas": doc["components"]["schemas"]},
    })
}

/// A frame of the doc: the line it is on and its JSON.
struct Frame {
    line: usize,
    sent: bool,
    value: Value,
}

/// Frames the doc prints that are not JSON on purpose.
const NOT_JSON: &[&str] = &["{not json", "(EOF)", "(no reply)"];

fn doc_frames() -> (Vec<Frame>, usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/protocol.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut frames = Vec::new();
    let mut skipped = 0;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let (sent, rest) = if let Some(rest) = trimmed.strip_prefix(">> ") {
            (true, rest)
        } else if let Some(rest) = trimmed.strip_prefix("<< ") {
            (false, rest)
        } else {
            continue;
        };
        let rest = rest.trim();
        // Cut frames (…), the bytes of Content-Length framing ('...'), and comments after
        // a frame are not checked; the rest must parse.
        let json = rest
            .split_once("   (")
            .map_or(rest, |(frame, _)| frame)
            .trim();
        if json.contains('…') || json.starts_with('\'') || NOT_JSON.contains(&json) {
            skipped += 1;
            continue;
        }
        match serde_json::from_str::<Value>(json) {
            Ok(value) => frames.push(Frame {
                line: i + 1,
                sent,
                value,
            }),
            Err(e) => panic!("docs/protocol.md:{}: not JSON ({e}): {json}", i + 1),
        }
    }
    (frames, skipped)
}

fn errors_of(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn every_frame_in_the_protocol_doc_fits_the_schema() {
    let doc = openrpc();
    let mut params = HashMap::new();
    let mut results = HashMap::new();
    for m in methods() {
        params.insert(m.name, jsonschema::validator_for(&m.params).unwrap());
        results.insert(
            m.name,
            jsonschema::validator_for(&with_components(&m.result, &doc)).unwrap(),
        );
    }
    let events = jsonschema::validator_for(&event_schema()).unwrap();
    let (frames, skipped) = doc_frames();

    // Batches are checked entry by entry.
    let items: Vec<(usize, bool, &Value)> = frames
        .iter()
        .flat_map(|f| match &f.value {
            Value::Array(entries) => entries.iter().map(|v| (f.line, f.sent, v)).collect(),
            other => vec![(f.line, f.sent, other)],
        })
        .collect();
    // Each request of the doc, and the response that answers it (the next one with its id).
    let mut requests: Vec<(usize, &Value)> = Vec::new();
    let mut answered: HashMap<usize, &Value> = HashMap::new();
    let mut open: HashMap<String, usize> = HashMap::new();
    let mut responses = Vec::new();
    for &(line, sent, item) in &items {
        if sent {
            if item.get("method").is_some() {
                if let Some(id) = item.get("id") {
                    open.insert(id.to_string(), requests.len());
                }
                requests.push((line, item));
            }
        } else if item.get("method").is_none() {
            if let Some(index) = item.get("id").and_then(|id| open.remove(&id.to_string())) {
                answered.insert(index, item);
            }
            responses.push((line, item));
        }
    }

    let mut failures = Vec::new();
    let mut checked = 0;
    for (index, (line, request)) in requests.iter().enumerate() {
        let Some(method) = request["method"].as_str() else {
            continue;
        };
        let Some(validator) = params.get(method) else {
            continue; // an unknown method, shown for its error
        };
        let response = answered.get(&index);
        if response.is_some_and(|r| r.get("error").is_some()) {
            continue; // a request the doc shows refused
        }
        let value = request.get("params").cloned().unwrap_or(json!({}));
        let value = if value.is_null() { json!({}) } else { value };
        checked += 1;
        let errors = errors_of(validator, &value);
        if !errors.is_empty() {
            failures.push(format!("line {line}: {method} params: {errors:?}"));
        }
        if let Some(result) = response.and_then(|r| r.get("result")) {
            checked += 1;
            let errors = errors_of(&results[method], result);
            if !errors.is_empty() {
                failures.push(format!("line {line}: {method} result: {errors:?}"));
            }
        }
    }
    for (line, response) in &responses {
        if let Some(error) = response.get("error") {
            checked += 1;
            let kind = error["data"]["kind"]
                .as_str()
                .and_then(ErrorKind::from_name);
            match kind {
                Some(kind) if Some(i64::from(kind.code())) == error["code"].as_i64() => {}
                _ => failures.push(format!(
                    "line {line}: error without a matching kind: {error}"
                )),
            }
            if !error["message"].is_string() {
                failures.push(format!("line {line}: error without a message"));
            }
        }
    }
    for frame in frames.iter().filter(|f| !f.sent) {
        if frame.value["method"] == "event" {
            checked += 1;
            let errors = errors_of(&events, &frame.value["params"]["result"]);
            if !errors.is_empty() {
                failures.push(format!("line {}: event: {errors:?}", frame.line));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} frames of docs/protocol.md do not fit the schema:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The doc shows far more than this; a parser that found nothing checks nothing.
    assert!(
        checked > 300,
        "only {checked} frames checked ({skipped} cut)"
    );
    eprintln!("checked {checked} frames of docs/protocol.md ({skipped} cut or raw)");
}

/// The params column of a row of docs/protocol.md's method table: each backticked name
/// (`agentId`), optional when a `?` follows it inside or right after the backticks.
fn documented_params(cell: &str) -> Vec<(String, bool)> {
    let mut params = Vec::new();
    let mut rest = cell;
    while let Some(start) = rest.find('`') {
        let Some(len) = rest[start + 1..].find('`') else {
            break;
        };
        let word = &rest[start + 1..start + 1 + len];
        rest = &rest[start + len + 2..];
        let name = word.strip_suffix('?').unwrap_or(word);
        let is_name = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && name.chars().all(|c| c.is_ascii_alphanumeric());
        if is_name {
            params.push((
                name.to_owned(),
                word.ends_with('?') || rest.starts_with('?'),
            ));
        }
    }
    params
}

/// docs/protocol.md's method table (section 3.1) names every method of the table in
/// agent-proto's `rpc.rs` and no other, each with its params, optional ones marked `?`.
#[test]
fn the_protocol_doc_lists_the_method_table() {
    use agent_proto::rpc::{METHODS, Presence};

    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/protocol.md"))
            .unwrap();
    let table = doc
        .split("### 3.1 Method table")
        .nth(1)
        .and_then(|rest| rest.split("\n### ").next())
        .expect("docs/protocol.md has section 3.1, the method table");
    let mut rows = HashMap::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let name = cells[0]
            .trim_start_matches("| ")
            .trim_matches('`')
            .to_owned();
        rows.insert(name, documented_params(cells[1]));
    }
    let mut problems = Vec::new();
    for method in METHODS {
        let Some(documented) = rows.remove(method.name) else {
            problems.push(format!("{}: not in the table", method.name));
            continue;
        };
        let declared: Vec<(String, bool)> = method
            .params
            .iter()
            .map(|p| (p.name.to_owned(), p.presence == Presence::Optional))
            .collect();
        let mut sorted_doc = documented.clone();
        sorted_doc.sort();
        let mut sorted_declared = declared.clone();
        sorted_declared.sort();
        if sorted_doc != sorted_declared {
            problems.push(format!(
                "{}: the doc says {documented:?}, the table declares {declared:?}",
                method.name
            ));
        }
    }
    for name in rows.keys() {
        problems.push(format!("{name}: in the doc, not a method"));
    }
    assert!(
        problems.is_empty(),
        "docs/protocol.md's method table (3.1) differs from agent-proto's (name, optional?):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_doc_table_reader_reads_names_and_marks() {
    assert_eq!(
        documented_params(
            "`agentId`, `messageId?`, `workspace`?, `mode` `\"chat\"`\\|`\"agent\"`, `[id]`"
        ),
        [
            ("agentId".to_owned(), false),
            ("messageId".to_owned(), true),
            ("workspace".to_owned(), true),
            ("mode".to_owned(), false),
        ]
    );
}
