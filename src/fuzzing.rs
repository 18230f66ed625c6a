//! The fuzz targets' bodies, one function per target of `fuzz/fuzz_targets/`. The fuzzers call
//! them, and so does the normal test suite with every committed seed and finding, so both run
//! the same code. Each takes any bytes; a broken invariant (a diagnostic without a place, a
//! file that does not read back) is a panic, which is what the fuzzer looks for. Each returns
//! how far the input got, for the tests' assertions on the seeds.

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
                        d.line >= 1 && d.col >= 1,
                        "diagnostic at {}:{}",
                        d.line,
                        d.col
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

/// `baseline`: the metric baseline reader and `bless`'s writer; whether the input read.
pub fn baseline(data: &[u8]) -> bool {
    round_trip(
        data,
        crate::gate::baseline::parse,
        crate::gate::baseline::render,
    )
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
            assert!(e.line >= 1 && e.col >= 1, "error at {}:{}", e.line, e.col);
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
    let replay = record::replay_case(&case, &c);
    let _ = crate::trace::render_golden(&case.id, &replay.events);
    replay.miss.is_none() && replay.gap.is_none()
}

/// `transcript`: every format forced and detected, whole and as JSON lines; an imported run
/// renders to a trace file that reads back. The runs read.
pub fn transcript(data: &[u8]) -> usize {
    let Ok(text) = std::str::from_utf8(data) else {
        return 0;
    };
    let mut runs = 0;
    for format in std::iter::once(None).chain(Format::ALL.into_iter().map(Some)) {
        for jsonl in [false, true] {
            let file = import::import_text(text, "fuzz/transcript", jsonl, format);
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
    for provider in [Provider::Openai, Provider::Anthropic] {
        answered |= provider.parse_stream(&events).is_ok();
        if let Some(body) = &body {
            answered |= provider.parse_body(body).is_ok();
            let _ = provider.fault(500, body);
        }
    }
    answered
}

/// The bundled serve scenario's case.
static SERVED: LazyLock<Case> = LazyLock::new(|| {
    let text = include_str!("../scenarios/serve/reflex-black-box.toml");
    let mut cases = scenario::load(text, SourceFormat::Toml, "serve/reflex-black-box")
        .expect("the bundled scenario loads");
    cases.remove(0)
});

/// `serve_request`: request bodies cut at NUL bytes (at most 16), each read by both wire
/// formats and answered in turn by one serving session of the bundled serve scenario. The
/// requests answered 200.
pub fn serve_request(data: &[u8]) -> usize {
    let mut session = crate::serve::Session::new(SERVED.clone());
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
