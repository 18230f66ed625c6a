//! The fuzz targets' inputs in the normal suite: every committed seed (`fuzz/seeds/`) and every
//! input a fuzzer found a crash with (`fuzz/regressions/<target>/`, kept after the fix) goes
//! through the same code as its target (`fuzz/fuzz_targets/`), here through the library, as
//! the fuzzers call it. None may panic; a baseline or results file that reads must render to
//! one that reads again.

use crate::support::repo;
use harness::scenario::{self, SourceFormat};
use std::path::Path;

fn inputs(dir: &str) -> Vec<(String, Vec<u8>)> {
    let dir = repo().join(dir);
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

/// `fuzz_targets/scenario_load.rs` and `scenario_replay.rs`.
fn scenario_target(data: &[u8]) -> usize {
    let Ok(text) = std::str::from_utf8(data) else {
        return 0;
    };
    let mut cases = 0;
    for format in [SourceFormat::Toml, SourceFormat::Json] {
        match scenario::load(text, format, "fuzz/case") {
            Ok(loaded) => {
                for case in &loaded {
                    if let Ok(events) = harness::run::replay(case) {
                        let golden = harness::trace::render_golden(&case.id, &events);
                        assert!(golden.starts_with("# harness trace v1: "));
                        cases += 1;
                    }
                }
            }
            Err(diags) => {
                assert!(!diags.is_empty());
                assert!(diags.iter().all(|d| d.line >= 1 && d.col >= 1));
            }
        }
    }
    cases
}

/// `fuzz_targets/baseline.rs` and `results.rs`: a file that reads renders to one that reads
/// again; whether it read.
fn round_trip<T>(
    data: &[u8],
    parse: fn(&str) -> Result<T, String>,
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

/// A fuzz target's code: whether the input read.
type Target = fn(&[u8]) -> bool;

fn baseline_target(data: &[u8]) -> bool {
    use harness::gate::baseline::{parse, render};
    round_trip(data, parse, render)
}

fn results_target(data: &[u8]) -> bool {
    use harness::report::json::{parse, render};
    round_trip(data, parse, render)
}

/// `fuzz_targets/cassette.rs`: read, render and read back, then replay strictly through the
/// bundled recorded scenario; whether it replayed.
fn cassette_target(data: &[u8]) -> bool {
    use harness::record::{self, cassette};
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let c = match cassette::parse(text) {
        Ok(c) => c,
        Err(e) => {
            assert!(e.line >= 1 && e.col >= 1);
            return false;
        }
    };
    let again = cassette::render(&c);
    assert!(
        cassette::parse(&again).is_ok(),
        "a rendered cassette does not read back"
    );
    let scenario =
        std::fs::read_to_string(repo().join("scenarios/record/reflex-live.toml")).unwrap();
    let cases = scenario::load(&scenario, SourceFormat::Toml, "record/reflex-live").unwrap();
    let mut case = cases
        .iter()
        .find(|k| k.profile == c.profile)
        .unwrap_or(&cases[0])
        .clone();
    record::retarget(&mut case, "fuzz/cassette".into(), &c.model);
    let replay = record::replay_case(&case, &c);
    let _ = harness::trace::render_golden(&case.id, &replay.events);
    replay.miss.is_none() && replay.gap.is_none()
}

/// `fuzz_targets/transcript.rs`: every format forced and detected, whole and as JSON lines;
/// imported runs render to trace files that read back. The runs read.
fn transcript_target(data: &[u8]) -> usize {
    use harness::import::{self, Format};
    let Ok(text) = std::str::from_utf8(data) else {
        return 0;
    };
    let mut runs = 0;
    for format in std::iter::once(None).chain(Format::ALL.into_iter().map(Some)) {
        for jsonl in [false, true] {
            let file = import::import_text(text, "fuzz/transcript", jsonl, format);
            assert!(file.errors.iter().all(|e| !e.message.is_empty()));
            for run in &file.runs {
                let rendered = import::render_imported(run);
                assert!(
                    matches!(import::read_imported(&rendered), Some(Ok(_))),
                    "an imported run does not read back\n{rendered}"
                );
                runs += 1;
            }
        }
    }
    runs
}

/// `fuzz_targets/sse.rs`: split into events as the live client does, folded by both
/// providers' stream and body readers. The events parsed as an answer by some provider.
fn sse_target(data: &[u8]) -> bool {
    use eventsource_stream::Eventsource as _;
    use futures_util::{FutureExt as _, StreamExt as _, stream};
    use harness::provider::{Provider, SseEvent};
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
            event: Some(e.event).filter(|n| !n.is_empty() && n != "message"),
            data: e.data,
        })
        .collect();
    let body: Option<serde_json::Value> = serde_json::from_slice(data).ok();
    let mut answered = false;
    for provider in [Provider::Openai, Provider::Anthropic] {
        answered |= provider.parse_stream(&events).is_ok();
        if let Some(body) = &body {
            answered |= provider.parse_body(body).is_ok();
            let _ = provider.fault(500, body);
        }
    }
    answered
}

/// `fuzz_targets/serve_request.rs`: request bodies cut at NUL bytes, read by both formats and
/// answered in turn by one session of the bundled serve scenario. The requests answered 200.
fn serve_request_target(data: &[u8]) -> usize {
    use harness::provider::Provider;
    let text =
        std::fs::read_to_string(repo().join("scenarios/serve/reflex-black-box.toml")).unwrap();
    let mut cases = scenario::load(&text, SourceFormat::Toml, "serve/reflex-black-box").unwrap();
    let mut session = harness::serve::Session::new(cases.remove(0));
    let mut ok = 0;
    for (i, body) in data.split(|b| *b == 0).take(16).enumerate() {
        let provider = if i % 2 == 0 {
            Provider::Openai
        } else {
            Provider::Anthropic
        };
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
            let _ = Provider::Openai.parse_request(&value);
            let _ = Provider::Anthropic.parse_request(&value);
        }
        let served = session.handle(provider, body);
        assert!(
            (200..600).contains(&served.status),
            "status {}",
            served.status
        );
        ok += usize::from(served.status == 200);
    }
    ok
}

#[test]
fn the_wire_format_seeds_and_findings_go_through_their_targets() {
    let seeds = inputs("fuzz/seeds/cassette");
    assert!(
        !seeds.is_empty() && seeds.iter().all(|(_, d)| cassette_target(d)),
        "a cassette seed does not replay"
    );
    for (name, data) in inputs("fuzz/regressions/cassette") {
        eprintln!("cassette: {name}");
        cassette_target(&data);
    }
    let seeds = inputs("fuzz/seeds/transcript");
    assert!(seeds.len() >= 6);
    for (name, data) in &seeds {
        assert!(
            transcript_target(data) > 0,
            "transcript seed {name} gives no run"
        );
    }
    for (name, data) in inputs("fuzz/regressions/transcript") {
        eprintln!("transcript: {name}");
        transcript_target(&data);
    }
    let seeds = inputs("fuzz/seeds/sse");
    assert!(seeds.len() >= 4);
    for (name, data) in &seeds {
        // Error bodies are seeds for the fault path: no answer in them.
        assert!(
            sse_target(data) != name.contains("error"),
            "sse seed {name}"
        );
    }
    for (name, data) in inputs("fuzz/regressions/sse") {
        eprintln!("sse: {name}");
        sse_target(&data);
    }
    let seeds = inputs("fuzz/seeds/serve_request");
    for (name, data) in &seeds {
        assert!(
            serve_request_target(data) > 0,
            "serve_request seed {name} is never answered"
        );
    }
    for (name, data) in inputs("fuzz/regressions/serve_request") {
        eprintln!("serve_request: {name}");
        serve_request_target(&data);
    }
}

#[test]
fn seeds_and_fuzz_findings_go_through_their_targets_without_a_panic() {
    let seeds = inputs("fuzz/seeds/scenario");
    assert!(seeds.len() >= 10, "{} scenario seeds", seeds.len());
    let replayed: usize = seeds.iter().map(|(_, d)| scenario_target(d)).sum();
    assert!(replayed >= 10, "only {replayed} seed cases replayed");
    for target in ["scenario_load", "scenario_replay"] {
        for (name, data) in inputs(&format!("fuzz/regressions/{target}")) {
            eprintln!("{target}: {name}");
            scenario_target(&data);
        }
    }

    let round_trips: [(&str, Target); 2] =
        [("baseline", baseline_target), ("results", results_target)];
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
    assert!(Path::new(&repo().join("fuzz/fuzz_targets")).is_dir());
}
