//! The whole scenario path: load, then replay every case through the engine. A case may end
//! in a script gap (an error), never in a panic or a hang.
//! The body is `harness::fuzzing::scenario_replay`, which the normal suite also runs on the seeds and
//! findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::scenario_replay(data);
});
