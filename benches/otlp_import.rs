//! `harness import` of OTLP JSON whose spans nest deep: 100,000 spans in one trace, each the
//! child of the one before (every other one a model call), and the same spans with their parent
//! ids closed into one cycle. Each span's parents are walked once, so the cost per span stays
//! flat as the chain grows; before, every model call walked all its ancestors (20,000 nested
//! spans took minutes, a cycle never ended).
//!
//! ```text
//! cargo bench --bench otlp_import
//! OTLP_BENCH_SPANS=20000 cargo bench --bench otlp_import
//! ```
//!
//! Prints the median of 3 imports per shape, and the cost per span.

#![expect(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall time and reads and writes its inputs directly"
)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

fn main() {
    let n: usize = std::env::var("OTLP_BENCH_SPANS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    for (shape, cycle) in [("nested", false), ("cycle", true)] {
        let text = file(n, cycle);
        let mut times: Vec<Duration> = (0..3)
            .map(|_| {
                let t = Instant::now();
                let got = harness::import::otlp::import(&text, "bench.jsonl");
                let took = t.elapsed();
                assert_eq!(got.runs.len(), 1, "one run of {n} spans");
                assert!(got.errors.is_empty());
                took
            })
            .collect();
        times.sort();
        let median = times[1];
        println!(
            "otlp import, {shape}: {n} spans ({} MiB) in {:.3} s: {:.2} µs per span",
            text.len() / (1024 * 1024),
            median.as_secs_f64(),
            median.as_secs_f64() * 1e6 / n as f64
        );
    }
}

/// `n` spans of one trace, 1,000 to a line; span i's parent is span i-1 (span n-1's, when
/// `cycle`, closing the ring at span 0).
fn file(n: usize, cycle: bool) -> String {
    let mut out = String::new();
    for first in (0..n).step_by(1000) {
        out.push_str(r#"{"resourceSpans":[{"scopeSpans":[{"spans":["#);
        for i in first..(first + 1000).min(n) {
            if i > first {
                out.push(',');
            }
            let parent = match (i, cycle) {
                (0, false) => String::new(),
                (0, true) => format!("s{}", n - 1),
                _ => format!("s{}", i - 1),
            };
            let (name, op) = if i % 2 == 0 {
                ("chat m", "chat")
            } else {
                ("agent", "invoke_agent")
            };
            let _ = write!(
                out,
                r#"{{"traceId":"t1","spanId":"s{i}","parentSpanId":"{parent}","name":"{name}","startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"{op}"}}}}]}}"#,
                (i + 1) * 1_000_000,
                (i + 2) * 1_000_000
            );
        }
        out.push_str("]}]}]}\n");
    }
    out
}
