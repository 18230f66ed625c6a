//! Cost of `harness serve` answering one long conversation, in process through the library: an
//! agent that re-sends its whole history on every request (as every chat agent does), served
//! by the reflex script (`exec({})` on every call), for conversations of 250, 500 and 1,000
//! requests. A request's body grows with the history, so reading it is linear in the
//! conversation's length and the whole conversation at least quadratic; the server's own
//! work per request must not add another factor (it once replayed the conversation so far
//! through a fresh mock on every request: cubic in all).
//!
//! It prints each length's wall time and time per request, and the growth exponent between
//! lengths (time ∝ length^e): about 2 when the server's work per request is constant, about
//! 3 when it replays.
//!
//! ```text
//! cargo bench --bench serve_session
//! SERVE_BENCH_REPS=5 cargo bench --bench serve_session
//! ```

#![expect(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall time and reads and writes its inputs directly"
)]

use harness::scenario::{self, SourceFormat};
use harness::serve::Api;
use harness::serve::{AnswerBody, Session};
use serde_json::json;
use std::time::{Duration, Instant};

const SCENARIO: &str = include_str!("../scenarios/serve/reflex-black-box.toml");
const LENGTHS: [usize; 3] = [250, 500, 1000];

fn main() {
    let reps: usize = std::env::var("SERVE_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut rows = Vec::new();
    for n in LENGTHS {
        let mut times: Vec<Duration> = (0..reps.max(1)).map(|_| conversation(n)).collect();
        times.sort();
        let median = times[times.len() / 2];
        println!(
            "{n:>5} requests: {:>8.1} ms, {:>7.1} µs a request (median of {})",
            median.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e6 / n as f64,
            times.len()
        );
        rows.push((n, median));
    }
    for pair in rows.windows(2) {
        let ((a, ta), (b, tb)) = (pair[0], pair[1]);
        let e = (tb.as_secs_f64() / ta.as_secs_f64()).ln() / (b as f64 / a as f64).ln();
        println!("growth {a} → {b}: time ∝ length^{e:.2}");
    }
}

/// Serve one conversation of `n` requests; the time taken.
fn conversation(n: usize) -> Duration {
    let mut case = scenario::load(SCENARIO, SourceFormat::Toml, "serve/bench")
        .expect("the bundled scenario loads")
        .remove(0);
    std::sync::Arc::make_mut(&mut case.config).max_iterations =
        u32::try_from(n).expect("small") + 1;
    let mut session = Session::new(case);
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent. Use tools to act."}),
        json!({"role": "user", "content": "List the files in the project."}),
    ];
    let tools = json!([{"type": "function", "function": {"name": "exec", "parameters": {"type": "object"}}}]);
    let start = Instant::now();
    for _ in 0..n {
        let body = json!({"model": "m", "messages": messages, "tools": tools}).to_string();
        let served = session.handle(Api::ChatCompletions, body.as_bytes());
        assert_eq!(served.status, 200, "the script answers every request");
        let AnswerBody::Json(answer) = served.body else {
            panic!("a whole answer")
        };
        let message = answer["choices"][0]["message"].clone();
        let id = message["tool_calls"][0]["id"].clone();
        assert!(id.is_string(), "the reflex script calls exec: {message}");
        messages.push(message);
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": "Error: missing 'command' parameter"}));
    }
    let took = start.elapsed();
    assert_eq!(session.conversations().len(), 1, "one conversation");
    took
}
