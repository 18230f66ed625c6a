//! The transcript importers (`harness import`/`sweep`): any bytes, read whole and as JSON lines,
//! with every format forced and with detection, give runs and located errors, never a panic;
//! an imported run renders to a trace file that reads back.
//! The body is `harness::fuzzing::transcript`, which the normal suite also runs on the seeds and
//! findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::transcript(data);
});
