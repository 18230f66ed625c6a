//! Secrets split across stream events: the input scripts an OpenAI or Anthropic stream whose
//! text and tool-call arguments hide a canary key in pieces interleaved by index (some of it
//! as JSON escapes); after scrubbing, no piece of it may survive in the events or in what the
//! replay assembles, and a stream that read must still read.
//! The body is `harness::fuzzing::stream_scrub`, which the normal suite also runs on the seeds
//! and findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::stream_scrub(data);
});
