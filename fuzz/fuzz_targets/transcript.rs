//! The transcript importers (`harness import`/`sweep`): any bytes, read whole and as JSON lines,
//! with every format forced and with detection, give runs and located errors, never a panic;
//! an imported run renders to a trace file that reads back.
#![no_main]

use harness::import::{self, Format};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let formats = std::iter::once(None).chain(Format::ALL.into_iter().map(Some));
    for format in formats {
        for jsonl in [false, true] {
            let file = import::import_text(text, "fuzz/transcript", jsonl, format);
            for e in &file.errors {
                assert!(!e.message.is_empty(), "an error without a message");
            }
            for run in &file.runs {
                let rendered = import::render_imported(run);
                match import::read_imported(&rendered) {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => panic!(
                        "an imported run does not read back: {}\n{rendered}",
                        e.message
                    ),
                    None => panic!("an imported run is not recognised as one\n{rendered}"),
                }
            }
        }
    }
});
