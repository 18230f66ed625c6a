//! The scenario parser and validator, TOML and JSON: any bytes give cases or located
//! diagnostics, never a panic.
#![no_main]

use harness::scenario::{self, SourceFormat};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in [SourceFormat::Toml, SourceFormat::Json] {
        if let Err(diags) = scenario::load(text, format, "fuzz/case") {
            assert!(!diags.is_empty(), "an error without a diagnostic");
            for d in diags {
                assert!(d.line >= 1 && d.col >= 1, "diagnostic at {}:{}", d.line, d.col);
            }
        }
    }
});
