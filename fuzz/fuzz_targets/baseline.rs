//! The metric baseline reader (`--baseline FILE`): any bytes give a baseline or a located
//! error; a baseline it reads renders (`harness bless`) to a file it reads again.
//! The body is `harness::fuzzing::baseline`, which the normal suite also runs on the seeds and
//! findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::baseline(data);
});
