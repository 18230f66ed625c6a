//! The whole scenario path: load, then replay every case through the engine. A case may end
//! in a script gap (an error), never in a panic or a hang.
#![no_main]

use harness::scenario::{self, SourceFormat};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in [SourceFormat::Toml, SourceFormat::Json] {
        if let Ok(cases) = scenario::load(text, format, "fuzz/case") {
            for case in &cases {
                if let Ok(events) = harness::run::replay(case) {
                    let _ = harness::trace::render_golden(&case.id, &events);
                }
            }
        }
    }
});
