//! A minimal agent loop in Rust, tested with harness inside `cargo test`: the scenario
//! `scenarios/serve/reflex-black-box.toml` is served in the test process, the loop talks to it
//! over HTTP with reqwest as it would talk to OpenAI, and the verdict judges what it did.
//!
//! The model of that scenario asks for `exec({})` on every call until it sees "LOOP DETECTED"
//! (the reflex loop of Moltis issue #658). The loop below has a defence: after three identical
//! failed calls it warns the model, which then answers. `cargo test --example test_your_loop`
//! runs the tests at the bottom: the loop with its defence passes the scenario's `moltis`
//! expectations; the same loop without it runs to the cap and fails with harness's report.
//! `cargo run --example test_your_loop` runs the loop once and prints the verdict.

use serde_json::{Value, json};

/// The scenario the loop is tested against, and the expectations it must hold.
const SCENARIO: &str = "scenarios/serve/reflex-black-box.toml";
const EXPECT: &str = "moltis";

/// The loop: call the model, run the tools it asks for, call again, until it answers in text.
/// With `defence`, three identical failed calls in a row earn a warning to the model.
async fn agent_loop(base_url: &str, defence: bool) -> Result<String, reqwest::Error> {
    // reqwest is built here without a TLS provider of its own; plain HTTP needs none, but
    // building a client asks for one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder().build()?;
    let tools = json!([{
        "type": "function",
        "function": {
            "name": "exec",
            "description": "Run a shell command",
            "parameters": {
                "type": "object",
                "properties": { "command": { "type": "string" } },
                "required": ["command"]
            }
        }
    }]);
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent. Use tools to act."}),
        json!({"role": "user", "content": "List the files in the project."}),
    ];
    let mut failed_in_a_row: Vec<String> = Vec::new();
    for _ in 0..50 {
        let body = json!({"model": "claude-haiku-4.5", "messages": messages, "tools": tools});
        let bytes = client
            .post(format!("{base_url}/chat/completions"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        let reply: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let message = reply["choices"][0]["message"].clone();
        messages.push(message.clone());
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if calls.is_empty() {
            return Ok(message["content"].as_str().unwrap_or_default().to_owned());
        }
        for call in &calls {
            let (output, failed) = run_tool(&call["function"]);
            messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": output}));
            if failed {
                failed_in_a_row.push(call["function"].to_string());
            } else {
                failed_in_a_row.clear();
            }
        }
        let stuck = failed_in_a_row.len() >= 3
            && failed_in_a_row[failed_in_a_row.len() - 3..]
                .windows(2)
                .all(|w| w[0] == w[1]);
        if defence && stuck {
            failed_in_a_row.clear();
            messages.push(json!({
                "role": "user",
                "content": "LOOP DETECTED: your last 3 tool calls failed the same way. Do not call a tool again; tell the user what you need."
            }));
        }
    }
    Ok(String::new())
}

/// The one tool: `exec` needs a `command` (this stand-in only lists a fixed folder).
fn run_tool(function: &Value) -> (String, bool) {
    let args: Value = function["arguments"]
        .as_str()
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or(Value::Null);
    match args["command"].as_str() {
        Some(_) => ("Cargo.toml\nsrc/".to_owned(), false),
        None => ("Error: missing 'command' parameter".to_owned(), true),
    }
}

/// Serve the scenario, run the loop against it on a current-thread runtime, and judge.
fn tested(label: &str, defence: bool) -> harness::testing::Verdict {
    let served = harness::testing::serve(SCENARIO, label)
        .expect_profile(EXPECT)
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    // A loop refused at the scenario's cap ends with an HTTP error: the verdict says why.
    let _answer = runtime.block_on(agent_loop(&served.openai_base_url(), defence));
    served.verdict()
}

fn main() {
    let verdict = tested("rust-loop", true);
    print!("{}", verdict.report());
    std::process::exit(if verdict.passed() { 0 } else { 1 });
}

#[cfg(test)]
mod tests {
    use super::tested;

    #[test]
    fn the_loop_with_its_defence_recovers_from_the_reflex_loop() {
        let verdict = tested("rust-loop", true);
        verdict.assert_passed();
        let run = verdict.conversations().next().expect("one conversation");
        assert_eq!(run.row.outcome, "response");
        assert_eq!(run.row.iterations, 4);
        assert_eq!(run.row.nudges, 1);
    }

    #[test]
    fn the_loop_without_it_fails_with_the_report() {
        let verdict = tested("rust-loop-undefended", false);
        assert!(!verdict.passed());
        let run = verdict.conversations().next().expect("one conversation");
        assert_eq!(run.row.outcome, "max_iterations");
        assert_eq!(run.row.iterations, 25);
        // `assert_passed` fails the test with the report `harness exec` prints.
        let failure = std::panic::catch_unwind(|| verdict.assert_passed())
            .expect_err("a failing verdict fails the test");
        let message = failure
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(message.contains("harness exec: FAILED"), "{message}");
        assert!(
            message.contains("outcome: expected response, got max_iterations"),
            "{message}"
        );
        assert_eq!(message, verdict.report());
    }
}
