//! A tool loop on async-openai, as its tool-call examples write one: Chat Completions with the
//! typed requests and answers, whole or streamed (the chunks folded into one message).
//!
//!     async-openai-agent [--stream]
//!
//! Tools and log as the Python agents' `common.py`: `exec` (fails without a command), or with
//! AGENT_TOOLS=travel `search_flights` and `read_file`; with AGENT_LOG_DIR, one JSON line per
//! tool run, the final answer, or the error that stopped the run, in `<dir>/<stem>.jsonl`.

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionMessageToolCalls, ChatCompletionRequestMessage, CreateChatCompletionRequest,
    CreateChatCompletionResponse,
};
use futures::StreamExt;
use serde_json::{Value, json};
use std::io::Write;

const STEPS: usize = 40;

fn log(event: &str, fields: Value) {
    let Ok(dir) = std::env::var("AGENT_LOG_DIR") else {
        return;
    };
    let scenario = std::env::var("HARNESS_SCENARIO").unwrap_or_else(|_| "run".into());
    let stem = std::path::Path::new(&scenario)
        .file_stem()
        .map_or("run".into(), |s| s.to_string_lossy().into_owned());
    let mut line = json!({ "event": event });
    if let (Some(l), Value::Object(f)) = (line.as_object_mut(), fields) {
        l.extend(f);
    }
    let path = std::path::Path::new(&dir).join(format!("{stem}.jsonl"));
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(f, "{line}");
    }
}

fn travel() -> bool {
    std::env::var("AGENT_TOOLS").is_ok_and(|t| t == "travel")
}

fn tools() -> Value {
    let function = |name: &str, description: &str, params: &[&str]| {
        let properties: serde_json::Map<String, Value> = params
            .iter()
            .map(|p| ((*p).to_owned(), json!({ "type": "string" })))
            .collect();
        json!({ "type": "function", "function": {
            "name": name, "description": description,
            "parameters": { "type": "object", "properties": properties, "required": params }
        }})
    };
    if travel() {
        json!([
            function(
                "search_flights",
                "Search flights between two airports on a date.",
                &["origin", "destination", "date"]
            ),
            function("read_file", "Read a text file.", &["path"]),
        ])
    } else {
        json!([function("exec", "Run a shell command", &["command"])])
    }
}

/// Run one call: the tool's output, or the error the model is told.
fn call(name: &str, arguments: &str) -> Result<String, String> {
    let args: Value = serde_json::from_str(if arguments.is_empty() { "{}" } else { arguments })
        .map_err(|e| format!("invalid arguments: {e}"))?;
    let Some(args) = args.as_object() else {
        return Err(format!("{name}() arguments must be an object"));
    };
    let get = |k: &str| -> Result<String, String> {
        match args.get(k) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!("{name}() argument '{k}' must be a string, not {other}")),
            None => Err(format!("{name}() missing 1 required argument: '{k}'")),
        }
    };
    match (name, travel()) {
        ("exec", false) => {
            let command = get("command").unwrap_or_default();
            if command.is_empty() {
                return Err("missing 'command' parameter".into());
            }
            log("tool", json!({ "name": "exec", "args": { "command": command } }));
            Ok("a.txt\nb.txt".into())
        }
        ("search_flights", true) => {
            let (o, d, t) = (get("origin")?, get("destination")?, get("date")?);
            log(
                "tool",
                json!({ "name": "search_flights", "args": { "origin": o, "destination": d, "date": t } }),
            );
            Ok(format!("3 flights from {o} to {d} on {t}: 07:10, 12:45, 18:30"))
        }
        ("read_file", true) => {
            let p = get("path")?;
            log("tool", json!({ "name": "read_file", "args": { "path": p } }));
            Ok(format!("(the contents of {p})"))
        }
        _ => Err(format!("unknown tool '{name}'")),
    }
}

/// One model turn: the answer's message as (content, [(id, name, arguments)]).
async fn turn(
    client: &Client<OpenAIConfig>,
    request: CreateChatCompletionRequest,
    stream: bool,
) -> Result<(Option<String>, Vec<(String, String, String)>), async_openai::error::OpenAIError> {
    if !stream {
        let answer: CreateChatCompletionResponse = client.chat().create(request).await?;
        let Some(choice) = answer.choices.into_iter().next() else {
            return Ok((None, Vec::new()));
        };
        let calls = choice
            .message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .filter_map(|c| match c {
                ChatCompletionMessageToolCalls::Function(f) => {
                    Some((f.id, f.function.name, f.function.arguments))
                }
                ChatCompletionMessageToolCalls::Custom(_) => None,
            })
            .collect();
        return Ok((choice.message.content, calls));
    }
    let mut chunks = client.chat().create_stream(request).await?;
    let mut content: Option<String> = None;
    let mut calls: Vec<(String, String, String)> = Vec::new();
    while let Some(chunk) = chunks.next().await {
        for choice in chunk?.choices {
            if let Some(text) = choice.delta.content {
                content.get_or_insert_with(String::new).push_str(&text);
            }
            for part in choice.delta.tool_calls.unwrap_or_default() {
                let i = part.index as usize;
                if calls.len() <= i {
                    calls.resize(i + 1, Default::default());
                }
                if let Some(id) = part.id {
                    calls[i].0 = id;
                }
                if let Some(f) = part.function {
                    calls[i].1.push_str(f.name.as_deref().unwrap_or(""));
                    calls[i].2.push_str(f.arguments.as_deref().unwrap_or(""));
                }
            }
        }
    }
    Ok((content, calls))
}

async fn run(stream: bool) -> Result<String, Box<dyn std::error::Error>> {
    let client = Client::new();
    let system = std::env::var("HARNESS_SYSTEM")
        .unwrap_or_else(|_| "You are a coding agent. Use tools to act.".into());
    let user = std::env::var("HARNESS_USER").unwrap_or_else(|_| "List the files in the project.".into());
    let mut messages = vec![
        json!({ "role": "system", "content": system }),
        json!({ "role": "user", "content": user }),
    ];
    for _ in 0..STEPS {
        let request: CreateChatCompletionRequest = serde_json::from_value(json!({
            "model": "gpt-4o-mini", "messages": messages, "tools": tools(),
        }))?;
        let (content, calls) = turn(&client, request, stream).await?;
        if calls.is_empty() {
            return Ok(content.unwrap_or_default());
        }
        let mut assistant = json!({
            "role": "assistant",
            "tool_calls": calls.iter().map(|(id, name, arguments)| json!({
                "id": id, "type": "function", "function": { "name": name, "arguments": arguments }
            })).collect::<Vec<_>>(),
        });
        if let Some(c) = content {
            assistant["content"] = json!(c);
        }
        messages.push(assistant);
        for (id, name, arguments) in &calls {
            let output = call(name, arguments).unwrap_or_else(|e| format!("Error: {e}"));
            messages.push(json!({ "role": "tool", "tool_call_id": id, "content": output }));
        }
        // The history as the crate's typed messages: what it would refuse, it refuses here.
        let _: Vec<ChatCompletionRequestMessage> =
            serde_json::from_value(Value::Array(messages.clone()))?;
    }
    Ok(String::new())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let stream = std::env::args().any(|a| a == "--stream");
    match run(stream).await {
        Ok(text) => {
            log("final", json!({ "text": text }));
            println!("{text}");
        }
        Err(e) => {
            // The server refused a request (iteration cap, script exhausted), or the crate
            // could not read an answer.
            log("stopped", json!({ "error": e.to_string() }));
            eprintln!("agent: stopped: {e}");
        }
    }
}
