//! The fuzz targets' bodies, one function per target of `fuzz/fuzz_targets/`. The fuzzers call
//! them, and so do this module's tests with every committed seed and finding, so both run the
//! same code. It is compiled for those tests and for the fuzz crate (feature `fuzzing`) only:
//! no part of the library's surface. Each takes any bytes; a broken invariant (a diagnostic without a place, a
//! file that does not read back) is a panic, which is what the fuzzer looks for. Each returns
//! how far the input got, for the tests' assertions on the seeds.
//!
//! Mirrors docs/robustness.md (Fuzzing): `cargo fuzz run TARGET fuzz/corpus/TARGET
//! fuzz/seeds/DIR` mutates these seeds through these bodies; the tests below run every seed and
//! finding through them on each `cargo test`, where no `cargo install cargo-fuzz` is needed.

use crate::import::{self, Format};
use crate::provider::{Provider, SseEvent};
use crate::record::{self, cassette};
use crate::scenario::{self, Case, SourceFormat};
use std::sync::LazyLock;

/// `scenario_load`: the parser and validator, TOML and JSON; how many formats the input loaded
/// as.
pub fn scenario_load(data: &[u8]) -> usize {
    scenario_cases(data).len()
}

/// `scenario_plain`: any text to the plain-TOML path of the scenario reader and to the general
/// TOML parser, as TOML values and as a scenario. Where the plain path reads the text it must
/// read what the general parser reads, and it must not read what that parser refuses (a panic
/// otherwise); how many of the two readings it made.
pub fn scenario_plain(data: &[u8]) -> usize {
    let Ok(text) = std::str::from_utf8(data) else {
        return 0;
    };
    let (values, scenario) = scenario::plain_agrees(scenario::without_bom(text));
    usize::from(values) + usize::from(scenario)
}

/// `scenario_replay`: load, then replay every case and render its golden; the cases replayed.
pub fn scenario_replay(data: &[u8]) -> usize {
    let mut replayed = 0;
    for cases in scenario_cases(data) {
        for case in &cases {
            if let Ok(events) = crate::run::replay(case) {
                let golden = crate::trace::render_golden(&case.id, &events);
                assert!(golden.starts_with("# harness trace v1: "));
                replayed += 1;
            }
        }
    }
    replayed
}

/// The input loaded as TOML and as JSON (the formats it loaded as); every failure has a place.
fn scenario_cases(data: &[u8]) -> Vec<Vec<Case>> {
    let Ok(text) = std::str::from_utf8(data) else {
        return Vec::new();
    };
    let mut loaded = Vec::new();
    for format in [SourceFormat::Toml, SourceFormat::Json] {
        match scenario::load(text, format, "fuzz/case") {
            Ok(cases) => loaded.push(cases),
            Err(diags) => {
                assert!(!diags.is_empty(), "an error without a diagnostic");
                for d in diags {
                    assert!(
                        d.line() >= 1 && d.col() >= 1,
                        "diagnostic at {}:{}",
                        d.line(),
                        d.col()
                    );
                }
            }
        }
    }
    loaded
}

/// A file that reads renders to one that reads again; whether it read.
fn round_trip<T>(
    data: &[u8],
    parse: fn(&str) -> Result<T, crate::diagnostic::Diagnostic>,
    render: fn(&T) -> String,
) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let Ok(value) = parse(text) else {
        return false;
    };
    let again = render(&value);
    if let Err(e) = parse(&again) {
        panic!("a rendered file does not read back: {e}\n{again}");
    }
    true
}

/// `baseline`: the metric baseline reader and `bless`'s writer; whether the input read.
pub fn baseline(data: &[u8]) -> bool {
    round_trip(
        data,
        crate::verdict::baseline::parse,
        crate::verdict::baseline::render,
    )
}

/// `project_file`: the project-file reader (`harness.toml`): any bytes give a project file or
/// a located error; one that reads writes out to a file that reads again. Whether it read.
pub fn project_file(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    match crate::project::parse(text) {
        Ok(config) => {
            let again = toml::to_string(&config).unwrap_or_default();
            if let Err(e) = crate::project::parse(&again) {
                panic!("a project file written out does not read back: {e}\n{again}");
            }
            true
        }
        Err(d) => {
            assert!(
                d.line() >= 1 && d.col() >= 1,
                "diagnostic at {}:{}",
                d.line(),
                d.col()
            );
            false
        }
    }
}

/// `detector_answer`: what `sweep` reads from an external detector's stdout: lines bounded
/// (read through a small buffer, so a line straddles many reads), each answer read strictly
/// against a run of 3 calls. How many answers were read as one.
pub fn detector_answer(data: &[u8]) -> usize {
    use crate::sweep::external::{parse_answer, read_answer};
    const LIMIT: usize = 64;
    let mut reader = std::io::BufReader::with_capacity(7, data);
    let mut answers = 0;
    loop {
        match read_answer(&mut reader, LIMIT) {
            Ok(Some(line)) => {
                assert!(line.len() <= LIMIT, "a line of {} bytes passed", line.len());
                assert!(!line.contains('\n'));
                match parse_answer(line.trim(), 3) {
                    Ok(fire) => {
                        assert!(fire.is_none_or(|f| f.at <= 3), "{fire:?}");
                        answers += 1;
                    }
                    Err(e) => assert!(e.contains("answer one line"), "{e}"),
                }
            }
            Ok(None) | Err(_) => return answers,
        }
    }
}

/// `results`: the JSON results reader of `harness merge` and `--json`'s writer; whether the
/// input read.
pub fn results(data: &[u8]) -> bool {
    round_trip(
        data,
        crate::report::json::parse,
        crate::report::json::render,
    )
}

/// The bundled recorded scenario cassettes are replayed through.
static RECORDED: LazyLock<Vec<Case>> = LazyLock::new(|| {
    let text = include_str!("../scenarios/record/reflex-live.toml");
    scenario::load(text, SourceFormat::Toml, "record/reflex-live")
        .expect("the bundled scenario loads")
});

/// `cassette`: read, render and read back, then replay strictly through the bundled recorded
/// scenario; whether it replayed without a drift or a gap.
pub fn cassette(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let c = match cassette::parse(text) {
        Ok(c) => c,
        Err(e) => {
            assert!(
                e.line() >= 1 && e.col() >= 1,
                "error at {}:{}",
                e.line(),
                e.col()
            );
            return false;
        }
    };
    let again = cassette::render(&c);
    if let Err(e) = cassette::parse(&again) {
        panic!(
            "a rendered cassette does not read back: {}\n{again}",
            e.message
        );
    }
    let mut case = RECORDED
        .iter()
        .find(|k| k.profile == c.profile)
        .unwrap_or(&RECORDED[0])
        .clone();
    record::retarget(&mut case, "fuzz/cassette".into(), &c.model);
    let replay = record::replay_case(&case, &c, &Default::default());
    let _ = crate::trace::render_golden(&case.id, &replay.events);
    replay.miss.is_none() && replay.gap.is_none()
}

/// `tool_schema`: any JSON as a tool's parameters schema (as an agent offers it to the suite):
/// arguments of every kind are made, within the generation's bounds — at most its budget of
/// string bytes, and of values each no longer than the schema's own names. Whether the input
/// was JSON. (A hang is the fuzzer's `-timeout` to find.)
pub fn tool_schema(data: &[u8]) -> bool {
    use crate::llm::Arguments;
    use crate::scenario::{Generate, generate};
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(data) else {
        return false;
    };
    let seed = generate::seed("fuzz/tool_schema", data.len() as u64);
    let bound = generate::MAX_BYTES + generate::MAX_NODES * (data.len() + 64);
    for how in [
        Generate::Valid,
        Generate::Empty,
        Generate::MissingRequired,
        Generate::WrongType,
        Generate::Truncated,
    ] {
        let text = match generate::arguments(&schema, how, seed) {
            Arguments::Parsed(v) => serde_json::to_string(&v).unwrap_or_default(),
            Arguments::Raw(s) => s,
        };
        assert!(
            text.len() <= bound,
            "{how:?} arguments of {} bytes from a schema of {}",
            text.len(),
            data.len()
        );
        let _ = generate::invalidity(&schema, how);
    }
    let _ = generate::required_fields(&schema);
    true
}

/// `sweep_partial`: any bytes as the one partial of a whole sweep, merged by `sweep --merge`:
/// merged, or refused with a diagnostic that has a message. Whether it merged.
#[expect(
    clippy::disallowed_methods,
    reason = "the fuzz body hands `sweep --merge` a real file, as a user would"
)]
pub fn sweep_partial(data: &[u8]) -> bool {
    let path =
        std::env::temp_dir().join(format!("harness-fuzz-partial-{}.jsonl", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return false;
    }
    let merged = crate::sweep::merge(std::slice::from_ref(&path), None, false);
    let _ = std::fs::remove_file(&path);
    match merged {
        Ok(Ok(_)) => true,
        Ok(Err(d)) => {
            assert!(!d.message.is_empty(), "a refusal without a message");
            false
        }
        Err(_) => false,
    }
}

/// `transcript`: every format forced and detected, whole and as JSON lines; an imported run
/// renders to a trace file that reads back. The runs read.
pub fn transcript(data: &[u8]) -> usize {
    let Ok(text) = std::str::from_utf8(data) else {
        return 0;
    };
    let mut runs = 0;
    for format in std::iter::once(None).chain(Format::all().map(Some)) {
        for jsonl in [false, true] {
            let file = import::import_text(
                text,
                "fuzz/transcript",
                jsonl,
                format,
                &crate::failure::FailureRules::default(),
            );
            for e in &file.errors {
                assert!(!e.message.is_empty(), "an error without a message");
            }
            for run in &file.runs {
                let rendered = import::render_imported(run);
                match import::read_imported(&rendered) {
                    Some(Ok(_)) => runs += 1,
                    Some(Err(e)) => panic!(
                        "an imported run does not read back: {}\n{rendered}",
                        e.message
                    ),
                    None => panic!("an imported run is not recognised as one\n{rendered}"),
                }
            }
        }
    }
    runs
}

/// `sse`: split into events by the parser the live client uses (in two reads, cut where the
/// first byte says), folded by both providers' stream readers; the whole input as a JSON body
/// goes to their body and fault readers. Whether some provider read an answer.
pub fn sse(data: &[u8]) -> bool {
    use eventsource_stream::Eventsource as _;
    use futures_util::{FutureExt as _, StreamExt as _, stream};
    let cut = data
        .first()
        .map_or(0, |b| usize::from(*b) % (data.len() + 1));
    let reads = vec![
        Ok::<_, std::convert::Infallible>(data[..cut].to_vec()),
        Ok(data[cut..].to_vec()),
    ];
    let parsed: Vec<_> = stream::iter(reads)
        .eventsource()
        .collect::<Vec<_>>()
        .now_or_never()
        .expect("an in-memory stream is always ready");
    let events: Vec<SseEvent> = parsed
        .into_iter()
        .map_while(Result::ok)
        .map(|e| SseEvent {
            event: SseEvent::wire_name(e.event),
            data: e.data,
        })
        .collect();
    let body: Option<serde_json::Value> = serde_json::from_slice(data).ok();
    let mut answered = false;
    for provider in Provider::ALL {
        answered |= provider.parse_stream(&events).is_ok();
        if let Some(body) = &body {
            answered |= provider.parse_body(body).is_ok();
            let _ = provider.fault(500, body);
        }
    }
    answered
}

/// The key the `stream_scrub` target hides in its streams.
pub const STREAM_CANARY: &str = "CANARYKEY0123456789zz";

/// `stream_scrub`: the input scripts a streamed answer — OpenAI or Anthropic, up to four tool
/// calls and the text, the canary key hidden in one or more of them (some of its characters
/// as JSON escapes in arguments), each value cut into pieces that interleave across events
/// (several OpenAI calls in one event, in any order) — which is scrubbed as a recording is,
/// then read and assembled as the replay reads it. No piece of the canary may survive in the
/// events, the assembled text, the arguments as sent, or the arguments decoded; a stream that
/// read before scrubbing must still read. Whether the stream read.
pub fn stream_scrub(data: &[u8]) -> bool {
    use crate::llm::stream;
    use serde_json::{Value, json};
    let mut bytes = data.iter().copied();
    let mut next = move || bytes.next().unwrap_or(0);
    let anthropic = next() & 1 == 1;
    let calls = usize::from(next() % 4);
    // Channel 0 is the text, 1.. the calls' arguments; a bit per channel hides the canary.
    let hide = next();
    let mut values: Vec<String> = (0..=calls)
        .map(|c| {
            let secret = if hide & (1 << c) != 0 {
                STREAM_CANARY.to_owned()
            } else {
                "nothing".to_owned()
            };
            if c == 0 {
                format!("text {secret} end")
            } else {
                // Arguments are JSON text: some characters of the canary may be escapes.
                let escapes = next();
                let spelled: String = secret
                    .chars()
                    .enumerate()
                    .map(|(i, ch)| {
                        if escapes & (1 << (i % 8)) != 0 && i % 3 == 0 {
                            format!("\\u{:04x}", u32::from(ch))
                        } else {
                            ch.to_string()
                        }
                    })
                    .collect();
                format!("{{\"command\": \"{spelled}\"}}")
            }
        })
        .collect();
    if hide == 0 {
        values[0] = format!("text {STREAM_CANARY}");
    }
    // Cut every value into pieces at input-chosen places.
    let mut pieces: Vec<std::collections::VecDeque<String>> = values
        .iter()
        .map(|v| {
            let chars: Vec<char> = v.chars().collect();
            let mut out = std::collections::VecDeque::new();
            let mut at = 0;
            while at < chars.len() {
                let len = usize::from(next() % 9) + 1;
                let end = (at + len).min(chars.len());
                out.push_back(chars[at..end].iter().collect());
                at = end;
            }
            out
        })
        .collect();
    // Interleave: each step takes the next piece of an input-chosen channel (and, for OpenAI,
    // maybe of a second call in the same event).
    let mut events: Vec<Value> = Vec::new();
    let mut started = vec![false; calls + 1];
    if anthropic {
        events.push(json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}}));
    }
    while pieces.iter().any(|p| !p.is_empty()) {
        let pick = usize::from(next()) % pieces.len();
        let Some(c) = (0..pieces.len())
            .map(|k| (pick + k) % pieces.len())
            .find(|k| !pieces[*k].is_empty())
        else {
            break;
        };
        let piece = pieces[c].pop_front().unwrap_or_default();
        if anthropic {
            let index = c;
            if !started[c] {
                started[c] = true;
                let block = if c == 0 {
                    json!({"type": "text", "text": ""})
                } else {
                    json!({"type": "tool_use", "id": format!("toolu_{c}"), "name": "exec", "input": {}})
                };
                events.push(
                    json!({"type": "content_block_start", "index": index, "content_block": block}),
                );
            }
            let delta = if c == 0 {
                json!({"type": "text_delta", "text": piece})
            } else {
                json!({"type": "input_json_delta", "partial_json": piece})
            };
            events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        } else if c == 0 {
            events.push(json!({"choices": [{"index": 0, "delta": {"content": piece}}]}));
        } else {
            let mut entry = json!({"index": c - 1, "function": {"arguments": piece}});
            if !started[c] {
                started[c] = true;
                entry["id"] = json!(format!("call_{c}"));
                entry["type"] = json!("function");
                entry["function"]["name"] = json!("exec");
            }
            let mut entries = vec![entry];
            // A second call's piece in the same event, before or after.
            let other = usize::from(next()) % pieces.len();
            if other != 0 && other != c && started[other] {
                if let Some(p) = pieces[other].pop_front() {
                    let e = json!({"index": other - 1, "function": {"arguments": p}});
                    if next() & 1 == 0 {
                        entries.insert(0, e);
                    } else {
                        entries.push(e);
                    }
                }
            }
            events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": entries}}]}));
        }
    }
    if anthropic {
        for (c, _) in started.iter().enumerate().filter(|(_, s)| **s) {
            events.push(json!({"type": "content_block_stop", "index": c}));
        }
        events.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}}));
        events.push(json!({"type": "message_stop"}));
    } else {
        events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    }
    let mut timed: Vec<cassette::TimedEvent> = events
        .iter()
        .map(|v| cassette::TimedEvent {
            t_ms: 0,
            event: anthropic.then(|| v["type"].as_str().unwrap_or_default().to_owned()),
            data: v.to_string(),
        })
        .collect();
    let provider = if anthropic {
        Provider::Anthropic
    } else {
        Provider::Openai
    };
    let read = |timed: &[cassette::TimedEvent]| {
        let wire: Vec<SseEvent> = timed
            .iter()
            .map(|e| SseEvent {
                event: e.event.clone(),
                data: e.data.clone(),
            })
            .collect();
        provider
            .parse_stream(&wire)
            .ok()
            .and_then(|r| stream::assemble(&r.stream).ok())
    };
    let before = read(&timed);
    record::scrub::Scrubber::new([STREAM_CANARY.to_owned()]).scrub_events(&mut timed);
    let tail = &STREAM_CANARY[STREAM_CANARY.len() - 8..];
    for e in &timed {
        assert!(
            !e.data.contains(STREAM_CANARY) && !e.data.contains(tail),
            "the canary survives in an event: {}",
            e.data
        );
    }
    let Some(after) = read(&timed) else {
        assert!(before.is_none(), "scrubbing broke a stream that read");
        return false;
    };
    let mut seen = after.text.clone().unwrap_or_default();
    for call in &after.tool_calls {
        let text = call.arguments.text();
        seen.push_str(text);
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            seen.push_str(&v.to_string());
            if let Some(s) = v.get("command").and_then(Value::as_str) {
                seen.push_str(s);
            }
        }
    }
    assert!(
        !seen.contains(STREAM_CANARY) && !seen.contains(tail),
        "the canary survives assembly: {seen}"
    );
    true
}

/// The bundled serve scenario's case.
static SERVED: LazyLock<Case> = LazyLock::new(|| {
    let text = include_str!("../scenarios/serve/reflex-black-box.toml");
    let mut cases = scenario::load(text, SourceFormat::Toml, "serve/reflex-black-box")
        .expect("the bundled scenario loads");
    cases.remove(0)
});

/// `serve_request`: request bodies cut at NUL bytes (at most 16), each read by the three
/// APIs and answered in turn by one serving session of the bundled serve scenario. The
/// requests answered 200.
pub fn serve_request(data: &[u8]) -> usize {
    let mut session = crate::serve::Session::new(SERVED.clone());
    let mut ok = 0;
    for (i, body) in data.split(|b| *b == 0).take(16).enumerate() {
        let all = crate::serve::Api::ALL;
        let api = all[i % all.len()];
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
            for a in all {
                let _ = a.parse_request(&value);
            }
        }
        let served = session.handle(api, body);
        assert!(
            (200..600).contains(&served.status),
            "status {}",
            served.status
        );
        ok += usize::from(served.status == 200);
    }
    ok
}

/// The fuzz targets' inputs in the normal suite: every committed seed (`fuzz/seeds/`) and every
/// input a fuzzer found a crash with (`fuzz/regressions/<target>/`, kept after the fix) goes
/// through its target's body here. None may panic; a baseline or results file that reads must
/// render to one that reads again.
#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "a test sets up and reads its files, clocks and threads itself"
)]
mod tests {
    use crate::fuzzing;
    use std::path::Path;

    /// A few thousand inputs from a fixed generator, besides the committed seeds: the target's
    /// invariant holds on every shape the script can take.
    #[test]
    fn stream_scrub_holds_on_generated_streams() {
        let mut state = 0x5eed_u64;
        let mut read = 0;
        for n in 0..300 {
            let len = 8 + n % 120;
            let input: Vec<u8> = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (state >> 33) as u8
                })
                .collect();
            read += usize::from(fuzzing::stream_scrub(&input));
        }
        assert!(read > 250, "only {read} of 3000 generated streams read");
    }

    /// A fuzz target's body: whether the input read.
    type Target = fn(&[u8]) -> bool;

    fn inputs(dir: &str) -> Vec<(String, Vec<u8>)> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut out: Vec<(String, Vec<u8>)> = entries
            .map(|e| e.expect("a folder entry").path())
            .filter(|p| p.is_file())
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(&p).expect("read an input"))
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_wire_format_seeds_and_findings_go_through_their_targets() {
        let seeds = inputs("fuzz/seeds/cassette");
        assert!(
            !seeds.is_empty() && seeds.iter().all(|(_, d)| fuzzing::cassette(d)),
            "a cassette seed does not replay"
        );
        for (name, data) in inputs("fuzz/regressions/cassette") {
            eprintln!("cassette: {name}");
            fuzzing::cassette(&data);
        }
        let seeds = inputs("fuzz/seeds/transcript");
        assert!(seeds.len() >= 6);
        for (name, data) in &seeds {
            assert!(
                fuzzing::transcript(data) > 0,
                "transcript seed {name} gives no run"
            );
        }
        for (name, data) in inputs("fuzz/regressions/transcript") {
            eprintln!("transcript: {name}");
            fuzzing::transcript(&data);
        }
        let seeds = inputs("fuzz/seeds/sse");
        assert!(seeds.len() >= 4);
        for (name, data) in &seeds {
            // Error bodies are seeds for the fault path: no answer in them.
            assert!(
                fuzzing::sse(data) != name.contains("error"),
                "sse seed {name}"
            );
        }
        for (name, data) in inputs("fuzz/regressions/sse") {
            eprintln!("sse: {name}");
            fuzzing::sse(&data);
        }
        let seeds = inputs("fuzz/seeds/stream_scrub");
        assert!(seeds.len() >= 6);
        for (name, data) in &seeds {
            assert!(
                fuzzing::stream_scrub(data),
                "stream_scrub seed {name} does not read"
            );
        }
        for (name, data) in inputs("fuzz/regressions/stream_scrub") {
            eprintln!("stream_scrub: {name}");
            fuzzing::stream_scrub(&data);
        }
        let seeds = inputs("fuzz/seeds/detector_answer");
        let answers: usize = seeds.iter().map(|(_, d)| fuzzing::detector_answer(d)).sum();
        assert_eq!(answers, 5, "the detector_answer seeds hold five answers");
        for (name, data) in inputs("fuzz/regressions/detector_answer") {
            eprintln!("detector_answer: {name}");
            fuzzing::detector_answer(&data);
        }
        let seeds = inputs("fuzz/seeds/serve_request");
        for (name, data) in &seeds {
            assert!(
                fuzzing::serve_request(data) > 0,
                "serve_request seed {name} is never answered"
            );
        }
        for (name, data) in inputs("fuzz/regressions/serve_request") {
            eprintln!("serve_request: {name}");
            fuzzing::serve_request(&data);
        }
    }

    #[test]
    fn seeds_and_fuzz_findings_go_through_their_targets_without_a_panic() {
        let seeds = inputs("fuzz/seeds/scenario");
        assert!(seeds.len() >= 10, "{} scenario seeds", seeds.len());
        let replayed: usize = seeds.iter().map(|(_, d)| fuzzing::scenario_replay(d)).sum();
        assert!(replayed >= 10, "only {replayed} seed cases replayed");
        // Every TOML seed is plain TOML, read both ways.
        let toml = seeds.iter().filter(|(name, _)| name.ends_with(".toml"));
        assert!(toml.clone().count() >= 10);
        for (name, data) in toml {
            assert_eq!(fuzzing::scenario_plain(data), 2, "{name}");
        }
        for target in ["scenario_load", "scenario_replay"] {
            for (name, data) in inputs(&format!("fuzz/regressions/{target}")) {
                eprintln!("{target}: {name}");
                fuzzing::scenario_replay(&data);
            }
        }
        for (name, data) in inputs("fuzz/regressions/scenario_plain") {
            eprintln!("scenario_plain: {name}");
            fuzzing::scenario_plain(&data);
        }

        let round_trips: [(&str, Target); 5] = [
            ("baseline", fuzzing::baseline),
            ("results", fuzzing::results),
            ("project_file", fuzzing::project_file),
            ("tool_schema", fuzzing::tool_schema),
            ("sweep_partial", fuzzing::sweep_partial),
        ];
        for (target, run) in round_trips {
            let seeds = inputs(&format!("fuzz/seeds/{target}"));
            assert!(
                !seeds.is_empty() && seeds.iter().all(|(_, d)| run(d)),
                "a {target} seed does not read"
            );
            for (name, data) in inputs(&format!("fuzz/regressions/{target}")) {
                eprintln!("{target}: {name}");
                run(&data);
            }
        }
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fuzz/fuzz_targets")
                .is_dir()
        );
    }
}
