//! The served endpoints' request parsing and answering: the input is cut into several request
//! bodies (at NUL bytes), each read by both wire formats and answered in turn by one serving
//! session of the bundled scenario (`scenarios/serve/reflex-black-box.toml`). Any bytes get a
//! reply or a refusal, never a panic.
//! The body is `harness::fuzzing::serve_request`, which the normal suite also runs on the seeds and
//! findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::serve_request(data);
});
