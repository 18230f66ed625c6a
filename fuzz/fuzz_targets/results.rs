//! The JSON results reader of `harness merge`: any bytes give results or a located error;
//! results it reads render (`--json`) to a file it reads again.
//! The body is `harness::fuzzing::results`, which the normal suite also runs on the seeds and
//! findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::results(data);
});
