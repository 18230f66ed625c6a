//! The cassette reader, then a strict replay of what it read through a fixed bundled scenario
//! (`scenarios/record/reflex-live.toml`): any bytes give a cassette or a located error, and a
//! cassette replays to a trace, a drifted request or a script gap, never a panic or a hang.
//! The body is `harness::fuzzing::cassette`, which the normal suite also runs on the seeds and
//! findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::cassette(data);
});
