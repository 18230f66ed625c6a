//! The providers' stream parsing: the input is split into server-sent events by the parser the
//! live client uses (`eventsource-stream`), and the events are folded by OpenAI's and
//! Anthropic's stream readers; the input read as a whole JSON body goes to their body readers.
//! Any bytes give an answer or a wire error, never a panic.
#![no_main]

use eventsource_stream::Eventsource as _;
use futures_util::{FutureExt as _, StreamExt as _, stream};
use harness::provider::{Provider, SseEvent};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // Two network reads, split where the first byte says: the parser must not care.
    let cut = data
        .first()
        .map_or(0, |b| usize::from(*b) % (data.len() + 1));
    let reads = vec![
        Ok::<_, std::convert::Infallible>(data[..cut].to_vec()),
        Ok(data[cut..].to_vec()),
    ];
    let parsed: Vec<_> = stream::iter(reads)
        .eventsource()
        .collect::<Vec<_>>()
        .now_or_never()
        .expect("an in-memory stream is always ready");
    let events: Vec<SseEvent> = parsed
        .into_iter()
        .map_while(Result::ok)
        .map(|e| SseEvent {
            event: Some(e.event).filter(|n| !n.is_empty() && n != "message"),
            data: e.data,
        })
        .collect();
    let body: Option<serde_json::Value> = serde_json::from_slice(data).ok();
    for provider in [Provider::Openai, Provider::Anthropic] {
        let _ = provider.parse_stream(&events);
        if let Some(body) = &body {
            let _ = provider.parse_body(body);
            let _ = provider.fault(500, body);
        }
    }
});
