//! `sweep --merge` of one partial: any bytes merged or refused with a diagnostic, never a panic
//! or an unbounded read.
//! The body is `harness::fuzzing::sweep_partial`, which the normal suite also runs on the seeds
//! and findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::sweep_partial(data);
});
