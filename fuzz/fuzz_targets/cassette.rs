//! The cassette reader, then a strict replay of what it read through a fixed bundled scenario
//! (`scenarios/record/reflex-live.toml`): any bytes give a cassette or a located error, and a
//! cassette replays to a trace, a drifted request or a script gap, never a panic or a hang.
#![no_main]

use harness::record::{self, cassette};
use harness::scenario::{self, SourceFormat};
use std::sync::LazyLock;

static CASES: LazyLock<Vec<scenario::Case>> = LazyLock::new(|| {
    let text = include_str!("../../scenarios/record/reflex-live.toml");
    scenario::load(text, SourceFormat::Toml, "record/reflex-live")
        .expect("the bundled scenario loads")
});

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let c = match cassette::parse(text) {
        Ok(c) => c,
        Err(e) => {
            assert!(e.line >= 1 && e.col >= 1, "error at {}:{}", e.line, e.col);
            return;
        }
    };
    let again = cassette::render(&c);
    if let Err(e) = cassette::parse(&again) {
        panic!(
            "a rendered cassette does not read back: {}\n{again}",
            e.message
        );
    }
    let mut case = CASES
        .iter()
        .find(|k| k.profile == c.profile)
        .unwrap_or(&CASES[0])
        .clone();
    record::retarget(&mut case, "fuzz/cassette".into(), &c.model);
    let replay = record::replay_case(&case, &c);
    let _ = harness::trace::render_golden(&case.id, &replay.events);
});
