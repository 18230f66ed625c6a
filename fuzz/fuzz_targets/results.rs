//! The JSON results reader of `harness merge`: any bytes give results or a located error;
//! results it reads render (`--json`) to a file it reads again.
#![no_main]

use harness::report::json;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(results) = json::parse(text) {
        let again = json::render(&results);
        if let Err(e) = json::parse(&again) {
            panic!("rendered results do not read back: {e}\n{again}");
        }
    }
});
