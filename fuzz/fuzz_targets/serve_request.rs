//! The served endpoints' request parsing and answering: the input is cut into several request
//! bodies (at NUL bytes), each read by both wire formats and answered in turn by one serving
//! session of the bundled scenario (`scenarios/serve/reflex-black-box.toml`). Any bytes get a
//! reply or a refusal, never a panic.
#![no_main]

use harness::provider::Provider;
use harness::scenario::{self, SourceFormat};
use harness::serve::Session;
use std::sync::LazyLock;

static CASE: LazyLock<scenario::Case> = LazyLock::new(|| {
    let text = include_str!("../../scenarios/serve/reflex-black-box.toml");
    let mut cases = scenario::load(text, SourceFormat::Toml, "serve/reflex-black-box")
        .expect("the bundled scenario loads");
    cases.remove(0)
});

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut session = Session::new(CASE.clone());
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
    }
});
