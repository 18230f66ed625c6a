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
                text: args.into_owned(),
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
            let crate::llm::Arguments::Parsed(mut value) =
                generate::arguments(schema, crate::scenario::Generate::Valid, seed)
            else {
                return None;
            };
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

/// An error answer with `message` in the provider's error shape (a 400 is one the SDKs do
/// not retry).
pub fn refusal(provider: Provider, status: u16, message: &str) -> HttpAnswer {
    HttpAnswer {
        status,
        headers: Vec::new(),
        body: AnswerBody::Json(provider.error_body(status, message)),
    }
}
