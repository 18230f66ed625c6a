//! The scenario parser and validator, TOML and JSON: any bytes give cases or located
//! diagnostics, never a panic.
//! The body is `harness::fuzzing::scenario_load`, which the normal suite also runs on the seeds and
//! findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::scenario_load(data);
});
