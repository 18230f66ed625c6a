//! Answers as served: a scripted response made the request's answer (whole, or the chunks of
//! a stream), through an answer tool when the agent ends its runs through one, and refusals
//! and errors in each provider's shape.

use super::*;

/// OpenAI's answer to a `previous_response_id` it does not know.
pub(super) fn previous_not_found(id: &str) -> HttpAnswer {
    HttpAnswer {
        status: 404,
        headers: Vec::new(),
        body: AnswerBody::Json(serde_json::json!({"error": {
            "message": format!("Previous response with id '{id}' not found."),
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found"
        }})),
    }
}

/// OpenAI's words for a server error (HTTP 500).
pub(super) const OPENAI_SERVER_ERROR: &str =
    "The server had an error while processing your request. Sorry about that!";

/// Why an answer cannot be served under the request's `tool_choice` (a provider never answers
/// in text when a call is required, nor calls another tool than the one named).
pub(super) fn refused_choice(choice: &ToolChoice, r: &ModelResponse) -> Option<String> {
    match choice {
        ToolChoice::Required if r.tool_calls.is_empty() => Some(format!(
            "{}, but the script answers in text here\n  hint: script a tool call for this request, or have the agent leave tool_choice at `auto`",
            crate::vocabulary::TEXT_REFUSED_FOR_TOOL_CHOICE
        )),
        ToolChoice::Named(name) if r.tool_calls.is_empty() || r.tool_calls.iter().any(|c| &c.name != name) => {
            Some(format!(
                "harness serve: the request requires a call of `{name}` (tool_choice), but the script answers otherwise here\n  hint: script a call of `{name}` for this request"
            ))
        }
        ToolChoice::None if !r.tool_calls.is_empty() => Some(
            "harness serve: the request forbids tool calls (tool_choice `none`), but the script calls a tool here".to_owned(),
        ),
        _ => None,
    }
}

/// The engine request a wire request stands for.
pub(super) fn model_request(request: &WireRequest, iteration: u32, call: u32) -> ModelRequest<'_> {
    ModelRequest {
        purpose: Purpose::Turn,
        iteration,
        call,
        messages: &request.messages,
        tools: &request.tools,
        force_text: false,
        lineage: None,
    }
}

/// A scripted response as served: whole (a scripted stream folded), and the chunks to stream
/// when the request asked for a stream (the scripted ones, or the whole answer cut at its
/// parts). A scripted stream that cannot be folded is the error.
pub(super) fn served_answer(
    r: ModelResponse,
    streamed: bool,
) -> Result<(ModelResponse, Option<Vec<Chunk>>), String> {
    let whole = if r.stream.is_empty() {
        r
    } else {
        let a = stream::assemble(&r.stream)
            .map_err(|e| format!("harness serve: the scripted stream cannot be served: {e}"))?;
        let finish = a.finish.unwrap_or(if a.tool_calls.is_empty() {
            Finish::Stop
        } else {
            Finish::ToolUse
        });
        ModelResponse {
            text: a.text,
            tool_calls: a.tool_calls,
            finish,
            stream: r.stream,
            ..r
        }
    };
    if !streamed {
        return Ok((
            ModelResponse {
                stream: Vec::new(),
                chunks: 0,
                ..whole
            },
            None,
        ));
    }
    let chunks = if whole.stream.is_empty() {
        chunks_of(&whole)
    } else {
        whole.stream.clone()
    };
    Ok((
        ModelResponse {
            chunks: chunks.len(),
            stream: Vec::new(),
            ..whole
        },
        Some(chunks),
    ))
}

/// The tools agents end their runs through, by the frameworks' conventions: inspect_ai's
/// `react()` agent ends on `submit`, smolagents' agents on `final_answer`. Such an agent does not
/// take a text answer as final (it nudges the model to call the tool, or refuses text).
pub(super) const ANSWER_TOOLS: [&str; 2] = ["submit", "final_answer"];

/// The answer tool a scripted answer goes out through, and the parameter that carries the
/// text: when the answer is a suite case's final answer (text holding its `answer`, no calls)
/// and the request offers one of [`ANSWER_TOOLS`] that the scenario does not declare itself.
pub(super) fn answer_tool(
    r: &ModelResponse,
    request: &WireRequest,
    scenario: &crate::scenario::Scenario,
) -> Option<(String, String)> {
    let suite = scenario.suite.as_ref()?;
    let text = r.text.as_deref()?;
    if !r.tool_calls.is_empty() || suite.answer.is_empty() || !text.contains(&suite.answer) {
        return None;
    }
    let tool = request.tools.iter().find(|t| {
        ANSWER_TOOLS.contains(&t.name.as_str()) && !scenario.tools.iter().any(|d| d.name == t.name)
    })?;
    let param = tool.schema["required"]
        .as_array()
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .unwrap_or("answer");
    Some((tool.name.clone(), param.to_owned()))
}

/// A whole answer as stream chunks: its text, each call (start, arguments, complete), finish.
pub(super) fn chunks_of(r: &ModelResponse) -> Vec<Chunk> {
    let mut out = Vec::new();
    if let Some(t) = &r.text {
        out.push(Chunk::Text { text: t.clone() });
    }
    for (index, c) in (0u32..).zip(&r.tool_calls) {
        out.push(Chunk::ToolCallStart {
            index,
            id: c.id.clone(),
            name: c.name.clone(),
        });
        let args = c.arguments.text();
        if !args.is_empty() {
            out.push(Chunk::ArgsDelta {
                index,
                text: args.to_owned(),
            });
        }
        out.push(Chunk::ToolCallComplete { index });
    }
    out.push(Chunk::Finish { reason: r.finish });
    out
}

/// The text an answer goes out with when the request asks for JSON ([`TextForm`]) and the
/// script's text is not in that form, as a provider in JSON mode never answers otherwise:
/// for JSON of any shape, `{"text": …}` around the script's words; for a schema, the words
/// as a JSON string where the schema takes one, else a value it accepts (generated from it,
/// its first string field that may hold the words holding them). `None` when the text is in
/// form already, or there is none to shape (an answer with calls, an empty one, one cut by
/// the output limit): those go out as scripted.
pub(super) fn in_form(r: &ModelResponse, form: &TextForm, seed: u64) -> Option<String> {
    let text = r.text.as_deref().unwrap_or_default();
    if !r.tool_calls.is_empty() || text.trim().is_empty() || r.finish == Finish::Length {
        return None;
    }
    let parsed = serde_json::from_str::<Value>(text.trim()).ok();
    match form {
        TextForm::Free => None,
        TextForm::Json => parsed
            .is_none()
            .then(|| serde_json::json!({ "text": text }).to_string()),
        TextForm::Schema(schema) => {
            use crate::scenario::generate;
            if parsed.is_some_and(|v| generate::valid(schema, &v)) {
                return None;
            }
            let words = Value::String(text.to_owned());
            if generate::valid(schema, &words) {
                return Some(words.to_string());
            }
            // The plainest value the schema takes (it steers no check an agent makes of it:
            // a confidence of 0, no item, the first choice); a generated one where that fails.
            let mut value = Some(neutral(schema, schema, 0))
                .filter(|v| generate::valid(schema, v))
                .or_else(|| {
                    match generate::arguments(schema, crate::scenario::Generate::Valid, seed) {
                        crate::llm::Arguments::Parsed(v) => Some(v.into_value()),
                        crate::llm::Arguments::Raw(_) => None,
                    }
                })?;
            let fields: Vec<String> = value
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(_, v)| v.is_string())
                        .map(|(k, _)| k.clone())
                        .collect()
                })
                .unwrap_or_default();
            for field in fields {
                let mut with = value.clone();
                with[&field] = words.clone();
                if generate::valid(schema, &with) {
                    value = with;
                    break;
                }
            }
            Some(crate::json::compact(&value))
        }
    }
}

/// The plainest value `schema` takes, as far as its plain keywords say: a `const` or the first
/// of an `enum`; an object of its required properties only; no items beyond `minItems`; `""`;
/// the lowest number allowed, else 0 for a number and 1 for an integer; `false`; `null`. Local `$ref`s are followed and the first
/// alternative of an `anyOf` / `oneOf` / `allOf` taken; past 8 levels, `null`. The caller checks
/// the value against the schema.
fn neutral(schema: &Value, root: &Value, depth: usize) -> Value {
    use serde_json::json;
    if depth > 8 {
        return Value::Null;
    }
    let Some(o) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(target) = o
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        return neutral(target, root, depth + 1);
    }
    if let Some(c) = o.get("const") {
        return c.clone();
    }
    if let Some(first) = o
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(alts) = o.get(key).and_then(Value::as_array) {
            let pick = alts
                .iter()
                .find(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                .or_else(|| alts.first());
            if let Some(a) = pick {
                return neutral(a, root, depth + 1);
            }
        }
    }
    let kind = match o.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if o.contains_key("properties") => "object",
        _ if o.contains_key("items") => "array",
        _ => "null",
    };
    let bound = |key: &str| o.get(key).and_then(Value::as_f64);
    let at_least = |key: &str, cap: u64| o.get(key).and_then(Value::as_u64).unwrap_or(0).min(cap);
    match kind {
        "object" => {
            let props = o.get("properties").and_then(Value::as_object);
            let required = o.get("required").and_then(Value::as_array);
            let mut out = serde_json::Map::new();
            for name in required.into_iter().flatten().filter_map(Value::as_str) {
                let prop = props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                out.insert(name.to_owned(), neutral(prop, root, depth + 1));
            }
            Value::Object(out)
        }
        "array" => {
            let n = at_least("minItems", 8);
            let item = o.get("items").unwrap_or(&Value::Null);
            Value::Array((0..n).map(|_| neutral(item, root, depth + 1)).collect())
        }
        "string" => {
            let n = at_least("minLength", 64);
            Value::String("a".repeat(n as usize))
        }
        "integer" | "number" => {
            let low = bound("minimum").or(bound("exclusiveMinimum").map(|m| m + 1.0));
            let high = bound("maximum").or(bound("exclusiveMaximum").map(|m| m - 1.0));
            // Unbounded: a number 0 (a confidence, a share), an integer 1 (a count or a score,
            // which agents read from 1: Gemini CLI's router takes 1 to 100).
            let n = match (low, high) {
                (Some(l), _) => l.ceil(),
                (None, Some(h)) if h < 0.0 => h.floor(),
                _ if kind == "integer" => 1.0,
                _ => 0.0,
            };
            if kind == "integer" || n.fract() == 0.0 {
                json!(n as i64)
            } else {
                json!(n)
            }
        }
        "boolean" => json!(false),
        _ => Value::Null,
    }
}

/// An error answer with `message` in the provider's error shape (a 400 is one the SDKs do
/// not retry).
pub fn refusal(provider: Provider, status: u16, message: &str) -> HttpAnswer {
    HttpAnswer {
        status,
        headers: Vec::new(),
        body: AnswerBody::Json(provider.error_body(status, message)),
    }
}
