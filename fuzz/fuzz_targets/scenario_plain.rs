//! The scenario reader's plain-TOML path against the general TOML parser: wherever the plain
//! path reads a text, as TOML values or as a scenario, it reads what the general parser reads,
//! and it reads nothing that parser refuses.
//! The body is `harness::fuzzing::scenario_plain`, which the normal suite also runs on the seeds
//! and findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::scenario_plain(data);
});
