//! What `harness sweep` reads from an external detector (`--detector exec:`): bounded answer
//! lines, each read strictly. The body is `harness::fuzzing::detector_answer`, which the normal
//! suite also runs on the seeds and findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::detector_answer(data);
});
