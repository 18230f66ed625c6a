//! `Event::field`, which expectations compare `where` fields with, is the JSON form of the
//! event key by key: checked on every event of the bundled scenarios' traces as
//! `harness run --traces` writes them.

use crate::support::Project;
use harness::trace::TimedEvent;
use serde_json::Value;
use std::collections::BTreeSet;

#[test]
fn every_field_of_every_bundled_event_is_its_json_form() {
    let p = Project::new();
    p.copy_from_repo("scenarios", "scenarios");
    p.harness(&["run", "--traces", "out/traces"]);
    let traces = p.tree("out/traces");
    assert!(traces.len() >= 300, "{} traces", traces.len());
    let (mut kinds, mut fields) = (BTreeSet::new(), 0usize);
    for (name, bytes) in &traces {
        let text = std::str::from_utf8(bytes).expect("a UTF-8 trace");
        for line in text.lines() {
            let whole: Value = serde_json::from_str(line).expect("a JSON line");
            let timed: TimedEvent = serde_json::from_str(line).expect("an event");
            let object = whole.as_object().expect("an object");
            for (k, v) in object {
                if k == "t_ms" {
                    // The time is the line's, not the event's.
                    assert_eq!(timed.event.field(k), None, "{name}: {line}");
                    continue;
                }
                assert_eq!(
                    timed.event.field(k).as_ref(),
                    Some(v),
                    "{name}: {k} of {line}"
                );
                fields += 1;
            }
            for absent in ["", "no_such_field"] {
                assert_eq!(timed.event.field(absent), None, "{name}: {line}");
            }
            kinds.insert(timed.event.kind());
        }
    }
    // The bundled scenarios reach most kinds of event, not a handful.
    assert!(kinds.len() >= 18, "{} kinds: {kinds:?}", kinds.len());
    assert!(fields > 10_000, "{fields} fields");
}
