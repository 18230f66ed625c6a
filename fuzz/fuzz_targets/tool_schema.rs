//! An agent's tool schema (what `harness suite` makes arguments from): any JSON, every kind of
//! arguments made within the generation's bounds, never a panic.
//! The body is `harness::fuzzing::tool_schema`, which the normal suite also runs on the seeds and
//! findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::tool_schema(data);
});
