//! Arguments generated from hostile tool schemas (what `harness suite` and `serve` make from an
//! agent's own schema, inside the serving session): the worst time one generation takes. The
//! generation's budget (values, bytes, depth, `$ref` hops, validator visits) bounds it, so
//! another conversation of the same session, a timeout or a stop signal waits at most this
//! long for a session that is generating.
//!
//! ```text
//! cargo bench --bench tool_schema
//! ```
//!
//! Per schema: the slowest and the median of 5 rounds, each round every kind of arguments
//! (valid, empty, missing a required field, a wrong type, cut off) and the check of whether the
//! schema allows each invalid kind. The captured pydantic, zod and TypeBox schemas are the
//! ordinary case; the others are the hostile ones a review found.

#![expect(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall time and reads and writes its inputs directly"
)]

use harness::scenario::{Generate, generate};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn main() {
    let mut worst = Duration::ZERO;
    for (name, schema) in schemas() {
        let mut times: Vec<Duration> = (0..5)
            .map(|round| {
                let t = Instant::now();
                for how in [
                    Generate::Valid,
                    Generate::Empty,
                    Generate::MissingRequired,
                    Generate::WrongType,
                    Generate::Truncated,
                ] {
                    std::hint::black_box(generate::arguments(&schema, how, round));
                    std::hint::black_box(generate::invalidity(&schema, how));
                }
                t.elapsed()
            })
            .collect();
        times.sort();
        worst = worst.max(times[4]);
        println!(
            "generate, {name}: slowest round {:.1} ms, median {:.1} ms",
            times[4].as_secs_f64() * 1e3,
            times[2].as_secs_f64() * 1e3
        );
    }
    println!(
        "generate: the slowest round of any schema {:.1} ms",
        worst.as_secs_f64() * 1e3
    );
}

fn schemas() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    // The captured schemas of real agents (what users run).
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/tool_schema");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the seeds")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a seed");
        let schema: Value = serde_json::from_str(&text).expect("JSON");
        let name = path.file_stem().expect("a name").to_string_lossy();
        out.push((name.into_owned(), schema));
    }
    // `required` naming one field 40 times, nested 9 deep.
    let mut s = json!({"type": "object", "properties": {"x": {"type": "string"}}});
    for _ in 0..9 {
        s = json!({"type": "object", "required": vec!["n"; 40], "properties": {"n": s}});
    }
    out.push(("required 40 times, 9 deep".to_owned(), s));
    // A huge `minLength`.
    out.push((
        "minLength 1,600,000".to_owned(),
        json!({"type": "object", "required": ["s"], "properties": {
            "s": {"type": "string", "minLength": 1_600_000}}}),
    ));
    // Arrays of three nested seven deep around an object with 10,000 required names.
    let names: Vec<String> = (0..10_000).map(|i| format!("f{i}")).collect();
    let mut s = json!({"type": "object", "required": names});
    for _ in 0..7 {
        s = json!({"type": "array", "items": s, "minItems": 3});
    }
    out.push((
        "arrays of 3, 7 deep, around 10,000 required names".to_owned(),
        json!({"type": "object", "required": ["a"], "properties": {"a": s}}),
    ));
    // Each level refers twice to the one below, inside alternatives, 24 levels.
    let mut defs = serde_json::Map::new();
    defs.insert("d0".to_owned(), json!({"type": "string"}));
    for i in 1..24 {
        let below = format!("#/$defs/d{}", i - 1);
        defs.insert(
            format!("d{i}"),
            json!({"anyOf": [
                {"type": "object", "required": ["a", "b"], "properties": {"a": {"$ref": below}, "b": {"$ref": below}}},
                {"type": "array", "items": {"$ref": below}, "minItems": 2}
            ]}),
        );
    }
    out.push((
        "doubling $refs in alternatives, 24 levels".to_owned(),
        json!({"$defs": defs, "type": "object", "required": ["x"], "properties": {"x": {"$ref": "#/$defs/d23"}}}),
    ));
    out
}
