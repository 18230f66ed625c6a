//! The providers' stream parsing: the input is split into server-sent events by the parser the
//! live client uses (`eventsource-stream`), and the events are folded by OpenAI's and
//! Anthropic's stream readers; the input read as a whole JSON body goes to their body readers.
//! Any bytes give an answer or a wire error, never a panic.
//! The body is `harness::fuzzing::sse`, which the normal suite also runs on the seeds and
//! findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::sse(data);
});
