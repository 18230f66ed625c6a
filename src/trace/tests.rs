//! The trace's events, golden text and JSON, tested.

use super::*;

#[test]
fn catalogue_lists_every_kind_with_its_fields() {
    let cat = Event::catalogue();
    assert_eq!(cat.len(), 25);
    let intervention = cat.iter().find(|(k, _)| k == "intervention").unwrap();
    for f in ["policy", "stage", "action", "tool"] {
        assert!(intervention.1.iter().any(|x| x == f), "{f}");
    }
}

#[test]
fn jsonl_round_trips() {
    let e = TimedEvent {
        t_ms: 10_000,
        event: Event::Intervention {
            policy: "moltis-reflex".into(),
            stage: 1,
            action: "nudge".into(),
            tool: Some("exec".into()),
        },
    };
    let line = render_jsonl(std::slice::from_ref(&e));
    assert!(
        line.starts_with(r#"{"t_ms":10000,"kind":"intervention""#),
        "{line}"
    );
    let back: TimedEvent = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(back, e);
}

#[test]
fn names_with_control_characters_cannot_forge_golden_lines() {
    let e = TimedEvent {
        t_ms: 0,
        event: Event::RunStart {
            profile: "agent".into(),
            model: "m\n        9.999s  outcome response iterations=1".into(),
            max_iterations: 3,
            tools: vec!["exec\u{1b}[2J".into()],
        },
    };
    let g = render_golden("x", &[e]);
    assert_eq!(g.lines().count(), 2, "{g}");
    assert!(
        g.contains("model=m\\n        9.999s") && g.contains("exec\\u{1b}[2J"),
        "{g}"
    );
}

#[test]
fn the_time_column_is_seconds_right_aligned_in_nine_places_and_milliseconds() {
    for t in [
        0,
        1,
        7,
        10,
        999,
        1_000,
        12_345,
        // The last second of the table of padded seconds, and the first after it.
        999_999,
        1_000_000,
        1_000_001,
        999_999_999,
        1_000_000_000,
        999_999_999_999,
        1_000_000_000_000,
        u64::MAX - 1,
        u64::MAX,
    ]
    .into_iter()
    // Every second of the table of padded seconds and the first past it, each at a
    // millisecond that moves with it.
    .chain((0..=1_001).map(|s| s * 1_000 + s % 1_000))
    {
        let mut got = "x".to_owned();
        clock(&mut got, t);
        assert_eq!(got, format!("x{:>9}.{:03}s  ", t / 1000, t % 1000), "{t}");
    }
}

#[test]
fn a_golden_is_its_lines_each_spelled_out_on_its_own() {
    // One scan of the whole text decides; each line must read as if spelled out alone,
    // whichever line holds what.
    let start = |model: &str| Event::RunStart {
        profile: "agent".into(),
        model: model.into(),
        max_iterations: 3,
        tools: vec!["exec".into()],
    };
    let said = |text: &str| Event::Notice {
        source: "tool".into(),
        text: text.into(),
    };
    let odd = [
        start("m"),
        start("a\nb"),
        start("tab\tand — dash"),
        start("\u{202e}right"),
        start("é\r"),
        said("line one\nline two → é"),
        said("bell\u{7}"),
        said("\u{85}"),
    ];
    for (i, a) in odd.iter().enumerate() {
        for b in &odd[i..] {
            let events: Vec<TimedEvent> = [a, b, &odd[0]]
                .into_iter()
                .enumerate()
                .map(|(n, e)| TimedEvent {
                    t_ms: 1_000 * n as u64,
                    event: e.clone(),
                })
                .collect();
            let mut want = format!("# harness trace v{TRACE_VERSION}: x\n");
            for e in &events {
                clock(&mut want, e.t_ms);
                want.push_str(&render_event(&e.event));
                want.push('\n');
            }
            let got = render_golden("x", &events);
            assert_eq!(got, want);
            assert_eq!(got.lines().count(), 4, "{got}");
        }
    }
}

#[test]
fn lines_written_piece_by_piece_read_as_their_words_say() {
    // The kinds whose words are numbers, names and lists, each written piece by piece:
    // numbers of one digit and of more, fields given and left out, quotes to escape.
    let id = || "call_1".to_owned();
    let exec = || "exec".to_owned();
    let cases: Vec<(Event, &str)> = vec![
        (Event::Iteration { n: 7 }, "iteration 7"),
        (Event::Iteration { n: 10 }, "iteration 10"),
        (
            Event::Signal {
                signal: "done".into(),
                text: Some("a\"b".into()),
            },
            r#"signal done text="a\"b""#,
        ),
        (
            Event::Signal {
                signal: "done".into(),
                text: None,
            },
            "signal done",
        ),
        (
            Event::TruncationDiscarded {
                calls: 12,
                count: 3,
            },
            "truncation_discarded calls=12 count=3",
        ),
        (
            Event::Intervention {
                policy: "reflex".into(),
                stage: 255,
                action: "nudge".into(),
                tool: Some(exec()),
            },
            "intervention policy=reflex stage=255 action=nudge tool=exec",
        ),
        (
            Event::Intervention {
                policy: "budget".into(),
                stage: 0,
                action: "stop".into(),
                tool: None,
            },
            "intervention policy=budget stage=0 action=stop",
        ),
        (
            Event::ForceText {
                on: true,
                cause: "budget".into(),
            },
            "force_text on cause=budget",
        ),
        (
            Event::ForceText {
                on: false,
                cause: "text".into(),
            },
            "force_text off cause=text",
        ),
        (
            Event::Diverged {
                request: 10,
                at: "messages[2]".into(),
                reading: "x\ny".into(),
            },
            r#"diverged request=10 at="messages[2]" reading="x\ny""#,
        ),
        (
            Event::ProviderError {
                fault: FaultKind::RateLimit,
                message: "429 \"slow\"".into(),
                attempt: 0,
                retry_in_ms: Some(1_500),
            },
            r#"provider_error rate_limit attempt=0 message="429 \"slow\"" retry_in=1500ms"#,
        ),
        (
            Event::ProviderError {
                fault: FaultKind::Timeout,
                message: String::new(),
                attempt: 11,
                retry_in_ms: None,
            },
            r#"provider_error timeout attempt=11 message="""#,
        ),
        (
            Event::Compaction {
                reason: "overflow".into(),
                before: 100,
                after: 9,
                estimate: Some(12_345),
            },
            "compaction overflow messages=100->9 estimate=12345",
        ),
        (
            Event::Compaction {
                reason: "turns".into(),
                before: 3,
                after: 2,
                estimate: None,
            },
            "compaction turns messages=3->2",
        ),
        (
            Event::ToolCallSkipped {
                id: id(),
                name: exec(),
                reason: "stop \"now\"".into(),
            },
            r#"tool_call_skipped call_1 exec reason="stop \"now\"""#,
        ),
        (
            Event::ApprovalRequested {
                id: id(),
                name: exec(),
                deferred: 2,
                auth: Some("github".into()),
            },
            "approval_requested call_1 exec deferred=2 auth=github",
        ),
        (
            Event::ApprovalRequested {
                id: id(),
                name: exec(),
                deferred: 0,
                auth: None,
            },
            "approval_requested call_1 exec deferred=0",
        ),
        (
            Event::ApprovalDecision {
                id: id(),
                name: exec(),
                decision: Decision::Approve,
            },
            "approval_decision call_1 exec approve",
        ),
        (
            Event::ApprovalDecision {
                id: id(),
                name: exec(),
                decision: Decision::Reject,
            },
            "approval_decision call_1 exec reject",
        ),
        (
            Event::TurnEnd {
                turn: 11,
                input_tokens: 1_234,
                output_tokens: 5,
                cost_usd: 0.5,
            },
            "turn_end 11 tokens=1234/5 cost=$0.500000",
        ),
        (
            Event::UserTurn {
                turn: 2,
                text: "hi".into(),
            },
            r#"user_turn 2 text="hi""#,
        ),
        (
            Event::StepStart {
                step: 1,
                total: 12,
                title: "List \"files\"".into(),
            },
            r#"step_start 1/12 title="List \"files\"""#,
        ),
        (
            Event::StepEnd {
                step: 3,
                status: StepStatus::Failed,
                reason: "budget".into(),
                calls: 40,
                detail: Some("d".into()),
            },
            r#"step_end 3 failed reason=budget calls=40 detail="d""#,
        ),
        (
            Event::StepEnd {
                step: 10,
                status: StepStatus::Done,
                reason: "control".into(),
                calls: 0,
                detail: None,
            },
            "step_end 10 done reason=control calls=0",
        ),
        (
            Event::Replan {
                n: 1,
                kept: 0,
                steps: vec!["a".into(), "b\"c".into()],
            },
            r#"replan 1 kept=0 steps=["a", "b\"c"]"#,
        ),
        (
            Event::Replan {
                n: 12,
                kept: 3,
                steps: Vec::new(),
            },
            "replan 12 kept=3 steps=[]",
        ),
    ];
    for (event, want) in cases {
        assert_eq!(render_event(&event), want);
    }
}

#[test]
fn calls_whose_arguments_are_unknown_say_so() {
    let start = |args_unknown| Event::ToolCallStart {
        id: "call_0".into(),
        name: "exec".into(),
        args: serde_json::json!({}).into(),
        args_unknown,
    };
    assert!(render_event(&start(true)).ends_with(" call_0 exec(args unknown)"));
    assert!(render_event(&start(false)).ends_with(" call_0 exec({})"));
    let json = |e| serde_json::to_string(&e).unwrap();
    assert!(json(start(true)).contains("\"args_unknown\":true"));
    assert!(!json(start(false)).contains("args_unknown"));
    let back: Event = serde_json::from_str(&json(start(true))).unwrap();
    assert!(matches!(
        back,
        Event::ToolCallStart {
            args_unknown: true,
            ..
        }
    ));
    // An answer that asked for tools the trace did not record.
    let asked = Event::ModelResponse {
        finish: crate::llm::Finish::ToolUse,
        text: None,
        calls: Vec::new(),
        input_tokens: 0,
        output_tokens: 0,
        latency_ms: 0,
        anomaly: None,
        chunks: 0,
        tokens_unknown: true,
        calls_unknown: true,
    };
    let line = render_event(&asked);
    assert!(
        line.contains("finish=tool_use calls=unknown tokens=unknown"),
        "{line}"
    );
    assert!(json(asked).contains("\"calls_unknown\":true"));
}

#[test]
fn golden_lines_carry_time_and_fields() {
    let e = TimedEvent {
        t_ms: 12_345,
        event: Event::ToolCallRejected {
            id: "call_0".into(),
            name: "exec".into(),
            args: serde_json::json!({}).into(),
            error: "line one\nline two".into(),
        },
    };
    let g = render_golden("x", &[e]);
    assert_eq!(
        g,
        "# harness trace v1: x\n       12.345s  tool_call_rejected call_0 exec({}) error=\"line one\\nline two\"\n"
    );
}

#[test]
fn calls_are_numbered_by_first_appearance() {
    let call = |id: &str| CallSummary {
        id: id.to_owned(),
        name: "exec".to_owned(),
        args: "{}".to_owned(),
        args_unknown: false,
    };
    let response = |ids: &[&str]| Event::ModelResponse {
        finish: crate::llm::Finish::ToolUse,
        text: None,
        calls: ids.iter().map(|i| call(i)).collect(),
        input_tokens: 0,
        output_tokens: 0,
        latency_ms: 0,
        anomaly: None,
        chunks: 0,
        tokens_unknown: false,
        calls_unknown: false,
    };
    let end = |id: &str| Event::ToolCallSkipped {
        id: id.to_owned(),
        name: "exec".to_owned(),
        reason: String::new(),
    };
    let mut events: Vec<TimedEvent> = [
        response(&["toolu_x", "toolu_y"]),
        end("toolu_y"),
        response(&["toolu_a"]),
    ]
    .into_iter()
    .map(|event| TimedEvent { t_ms: 0, event })
    .collect();
    number_calls(&mut events);
    let ids: Vec<String> = events
        .iter_mut()
        .flat_map(|e| {
            call_ids(&mut e.event)
                .into_iter()
                .map(|s| s.clone())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(ids, ["call_0", "call_1", "call_1", "call_2"]);
}
