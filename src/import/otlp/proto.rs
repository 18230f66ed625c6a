//! OTLP protobuf (`ExportTraceServiceRequest`, `ExportLogsServiceRequest`) read into the OTLP
//! JSON the rest of the importer reads: what an SDK's exporter sends over HTTP
//! (`application/x-protobuf`) and what the Collector's file exporter writes with
//! `format: proto`. Only the wire format's few rules are needed (varints, fixed widths,
//! length-delimited fields), with the field numbers of the OTLP `trace`, `logs` and `common`
//! protos; unknown fields are skipped, as protobuf readers do.
//!
//! JSON as OTLP JSON writes it: lowerCamelCase keys, trace and span ids in hex, 64-bit integers
//! as decimal strings, enums as numbers, bytes values in base64.

use serde_json::{Map, Value, json};

/// A wire value of one field.
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// The fields of one message, in order: `(number, value)`. `Err` says where the bytes stop
/// being protobuf.
fn fields(mut b: &[u8]) -> Result<Vec<(u32, Wire<'_>)>, String> {
    let total = b.len();
    let mut out = Vec::new();
    while !b.is_empty() {
        let at = total - b.len();
        let key = varint(&mut b).ok_or_else(|| format!("a field key cut short at byte {at}"))?;
        let number = u32::try_from(key >> 3)
            .map_err(|_| format!("a field number too large at byte {at}"))?;
        if number == 0 {
            return Err(format!("field number 0 at byte {at}"));
        }
        let value = match key & 7 {
            0 => Wire::Varint(
                varint(&mut b).ok_or_else(|| format!("a varint cut short at byte {at}"))?,
            ),
            1 => {
                let (v, rest) = b
                    .split_first_chunk::<8>()
                    .ok_or_else(|| format!("a 64-bit field cut short at byte {at}"))?;
                b = rest;
                Wire::Fixed64(u64::from_le_bytes(*v))
            }
            2 => {
                let n = varint(&mut b).ok_or_else(|| format!("a length cut short at byte {at}"))?;
                let n = usize::try_from(n).ok().filter(|n| *n <= b.len()).ok_or_else(|| {
                    format!("a length-delimited field at byte {at} runs past the end ({n} bytes, {} left)", b.len())
                })?;
                let (v, rest) = b.split_at(n);
                b = rest;
                Wire::Bytes(v)
            }
            5 => {
                let (v, rest) = b
                    .split_first_chunk::<4>()
                    .ok_or_else(|| format!("a 32-bit field cut short at byte {at}"))?;
                b = rest;
                Wire::Fixed32(u32::from_le_bytes(*v))
            }
            t => return Err(format!("wire type {t} (groups or unknown) at byte {at}")),
        };
        out.push((number, value));
    }
    Ok(out)
}

fn varint(b: &mut &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..70).step_by(7) {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        if shift == 63 && byte > 1 {
            return None;
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn text(v: &Wire) -> Result<String, String> {
    match v {
        Wire::Bytes(b) => std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| "a string field that is not UTF-8".to_owned()),
        _ => Err("a string field of another wire type".to_owned()),
    }
}

fn hex(v: &Wire) -> Result<String, String> {
    match v {
        Wire::Bytes(b) => Ok(b.iter().map(|x| format!("{x:02x}")).collect()),
        _ => Err("an id of another wire type".to_owned()),
    }
}

fn message<'a>(v: &Wire<'a>) -> Result<Vec<(u32, Wire<'a>)>, String> {
    match v {
        Wire::Bytes(b) => fields(b),
        _ => Err("a message field of another wire type".to_owned()),
    }
}

fn fixed64(v: &Wire) -> Result<Value, String> {
    match v {
        Wire::Fixed64(n) | Wire::Varint(n) => Ok(Value::String(n.to_string())),
        _ => Err("a timestamp of another wire type".to_owned()),
    }
}

fn number(v: &Wire) -> Result<Value, String> {
    match v {
        Wire::Varint(n) => Ok(Value::from(*n)),
        Wire::Fixed32(n) => Ok(Value::from(*n)),
        Wire::Fixed64(n) => Ok(Value::from(*n)),
        Wire::Bytes(_) => Err("a number of another wire type".to_owned()),
    }
}

fn push(map: &mut Map<String, Value>, key: &str, v: Value) {
    match map.get_mut(key) {
        Some(Value::Array(list)) => list.push(v),
        _ => {
            map.insert(key.to_owned(), Value::Array(vec![v]));
        }
    }
}

/// How deep values may nest (arrays and key-value lists in one another): as deep as OTLP JSON
/// may (`limits::MAX_NESTING_JSON`, two JSON levels a value).
const MAX_DEPTH: usize = 60;

fn any_value(v: &Wire, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "attribute values nested more than {MAX_DEPTH} deep"
        ));
    }
    let mut out = Map::new();
    for (n, f) in message(v)? {
        let (k, x) = match n {
            1 => ("stringValue", Value::String(text(&f)?)),
            2 => (
                "boolValue",
                Value::Bool(matches!(f, Wire::Varint(x) if x != 0)),
            ),
            3 => match f {
                Wire::Varint(x) => ("intValue", Value::String((x as i64).to_string())),
                _ => return Err("an int value of another wire type".to_owned()),
            },
            4 => match f {
                Wire::Fixed64(x) => ("doubleValue", json!(f64::from_bits(x))),
                _ => return Err("a double value of another wire type".to_owned()),
            },
            5 => {
                let mut values = Vec::new();
                for (m, item) in message(&f)? {
                    if m == 1 {
                        values.push(any_value(&item, depth + 1)?);
                    }
                }
                ("arrayValue", json!({ "values": values }))
            }
            6 => {
                let mut values = Vec::new();
                for (m, item) in message(&f)? {
                    if m == 1 {
                        values.push(key_value(&item, depth + 1)?);
                    }
                }
                ("kvlistValue", json!({ "values": values }))
            }
            7 => match f {
                Wire::Bytes(b) => {
                    use base64::Engine;
                    (
                        "bytesValue",
                        Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
                    )
                }
                _ => return Err("a bytes value of another wire type".to_owned()),
            },
            _ => continue,
        };
        out.insert(k.to_owned(), x);
    }
    Ok(Value::Object(out))
}

fn key_value(v: &Wire, depth: usize) -> Result<Value, String> {
    let mut key = String::new();
    let mut value = Value::Object(Map::new());
    for (n, f) in message(v)? {
        match n {
            1 => key = text(&f)?,
            2 => value = any_value(&f, depth)?,
            _ => {}
        }
    }
    Ok(json!({ "key": key, "value": value }))
}

/// A message with attributes at `attrs` and other fields read by `field`.
fn object(
    v: &Wire,
    attrs: u32,
    mut field: impl FnMut(u32, &Wire, &mut Map<String, Value>) -> Result<(), String>,
) -> Result<Value, String> {
    let mut out = Map::new();
    for (n, f) in message(v)? {
        if n == attrs {
            push(&mut out, "attributes", key_value(&f, 0)?);
        } else {
            field(n, &f, &mut out)?;
        }
    }
    Ok(Value::Object(out))
}

fn resource(v: &Wire) -> Result<Value, String> {
    object(v, 1, |_, _, _| Ok(()))
}

fn scope(v: &Wire) -> Result<Value, String> {
    object(v, 3, |n, f, out| {
        match n {
            1 => {
                out.insert("name".into(), Value::String(text(f)?));
            }
            2 => {
                out.insert("version".into(), Value::String(text(f)?));
            }
            _ => {}
        }
        Ok(())
    })
}

fn span(v: &Wire) -> Result<Value, String> {
    object(v, 9, |n, f, out| {
        let (k, x) = match n {
            1 => ("traceId", Value::String(hex(f)?)),
            2 => ("spanId", Value::String(hex(f)?)),
            3 => ("traceState", Value::String(text(f)?)),
            4 => ("parentSpanId", Value::String(hex(f)?)),
            5 => ("name", Value::String(text(f)?)),
            6 => ("kind", number(f)?),
            7 => ("startTimeUnixNano", fixed64(f)?),
            8 => ("endTimeUnixNano", fixed64(f)?),
            11 => {
                let event = object(f, 3, |m, g, e| {
                    match m {
                        1 => {
                            e.insert("timeUnixNano".into(), fixed64(g)?);
                        }
                        2 => {
                            e.insert("name".into(), Value::String(text(g)?));
                        }
                        _ => {}
                    }
                    Ok(())
                })?;
                push(out, "events", event);
                return Ok(());
            }
            15 => {
                let mut status = Map::new();
                for (m, g) in message(f)? {
                    match m {
                        2 => {
                            status.insert("message".into(), Value::String(text(&g)?));
                        }
                        3 => {
                            status.insert("code".into(), number(&g)?);
                        }
                        _ => {}
                    }
                }
                ("status", Value::Object(status))
            }
            16 => ("flags", number(f)?),
            _ => return Ok(()),
        };
        out.insert(k.to_owned(), x);
        Ok(())
    })
}

fn log_record(v: &Wire) -> Result<Value, String> {
    object(v, 6, |n, f, out| {
        let (k, x) = match n {
            1 => ("timeUnixNano", fixed64(f)?),
            2 => ("severityNumber", number(f)?),
            3 => ("severityText", Value::String(text(f)?)),
            5 => ("body", any_value(f, 0)?),
            8 => ("flags", number(f)?),
            9 => ("traceId", Value::String(hex(f)?)),
            10 => ("spanId", Value::String(hex(f)?)),
            11 => ("observedTimeUnixNano", fixed64(f)?),
            12 => ("eventName", Value::String(text(f)?)),
            _ => return Ok(()),
        };
        out.insert(k.to_owned(), x);
        Ok(())
    })
}

/// What a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `ExportTraceServiceRequest`.
    Traces,
    /// `ExportLogsServiceRequest`.
    Logs,
}

/// One request in protobuf as OTLP JSON. `signal`: what it is, when the caller knows (an HTTP
/// path); otherwise told by its first record (a span's field 1 is its id, bytes; a log record's
/// is its time, a fixed64).
pub fn request(bytes: &[u8], signal: Option<Signal>) -> Result<Value, String> {
    let top = fields(bytes)?;
    let signal = match signal {
        Some(s) => s,
        None => guess(&top)?,
    };
    let (outer, inner, records) = match signal {
        Signal::Traces => ("resourceSpans", "scopeSpans", "spans"),
        Signal::Logs => ("resourceLogs", "scopeLogs", "logRecords"),
    };
    let mut list = Vec::new();
    for (n, r) in &top {
        if *n != 1 {
            continue;
        }
        let mut rs = Map::new();
        for (m, f) in message(r)? {
            match m {
                1 => {
                    rs.insert("resource".into(), resource(&f)?);
                }
                // `scope_spans`, and `instrumentation_library_spans` (1000) before OTLP 0.15.
                2 | 1000 => {
                    let mut ss = Map::new();
                    for (k, g) in message(&f)? {
                        match k {
                            1 => {
                                ss.insert("scope".into(), scope(&g)?);
                            }
                            2 => push(
                                &mut ss,
                                records,
                                match signal {
                                    Signal::Traces => span(&g)?,
                                    Signal::Logs => log_record(&g)?,
                                },
                            ),
                            _ => {}
                        }
                    }
                    push(&mut rs, inner, Value::Object(ss));
                }
                _ => {}
            }
        }
        list.push(Value::Object(rs));
    }
    let mut out = Map::new();
    out.insert(outer.to_owned(), Value::Array(list));
    Ok(Value::Object(out))
}

/// Traces or logs, by the first record's first field.
fn guess(top: &[(u32, Wire)]) -> Result<Signal, String> {
    for (_, r) in top.iter().filter(|(n, _)| *n == 1) {
        for (m, f) in message(r)? {
            if m != 2 && m != 1000 {
                continue;
            }
            for (k, g) in message(&f)? {
                if k != 2 {
                    continue;
                }
                return Ok(match message(&g)?.first() {
                    Some((1, Wire::Fixed64(_))) => Signal::Logs,
                    _ => Signal::Traces,
                });
            }
        }
    }
    Ok(Signal::Traces)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u32, wire: u8, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut key = u64::from(n) << 3 | u64::from(wire);
        loop {
            let byte = (key & 0x7f) as u8;
            key >>= 7;
            if key == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
        if wire == 2 {
            out.push(u8::try_from(body.len()).expect("short"));
        }
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn a_span_reads_as_otlp_json() {
        let attr = [
            field(1, 2, b"gen_ai.operation.name"),
            field(2, 2, &field(1, 2, b"chat")),
        ]
        .concat();
        let count = [field(1, 2, b"n"), field(2, 2, &field(3, 0, &[0x2f]))].concat();
        let status = [field(2, 2, b"boom"), field(3, 0, &[2])].concat();
        let s = [
            field(1, 2, &[0xab; 16]),
            field(2, 2, &[0x01; 8]),
            field(5, 2, b"chat m"),
            field(7, 1, &7u64.to_le_bytes()),
            field(8, 1, &9u64.to_le_bytes()),
            field(9, 2, &attr),
            field(9, 2, &count),
            field(15, 2, &status),
        ]
        .concat();
        let scope_spans = [field(1, 2, &field(1, 2, b"lib")), field(2, 2, &s)].concat();
        let req = field(1, 2, &field(2, 2, &scope_spans));
        let got = request(&req, None).expect("reads");
        let span = &got["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(span["traceId"], "ab".repeat(16));
        assert_eq!(span["name"], "chat m");
        assert_eq!(span["startTimeUnixNano"], "7");
        assert_eq!(span["attributes"][0]["value"]["stringValue"], "chat");
        assert_eq!(span["attributes"][1]["value"]["intValue"], "47");
        assert_eq!(span["status"], json!({"message": "boom", "code": 2}));
        assert_eq!(
            got["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"],
            "lib"
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let mut v = field(1, 2, b"x");
        for _ in 0..5000 {
            v = field_long(5, &field_long(1, &v));
        }
        let attr = [field(1, 2, b"k"), field_long(2, &v)].concat();
        let s = [field(1, 2, &[1; 16]), field_long(9, &attr)].concat();
        let req = field_long(1, &field_long(2, &field_long(2, &s)));
        let err = request(&req, Some(Signal::Traces)).expect_err("too deep");
        assert!(err.contains("nested more than"), "{err}");
    }

    /// A length-delimited field of any length.
    fn field_long(n: u32, body: &[u8]) -> Vec<u8> {
        let mut out = vec![u8::try_from(n << 3 | 2).expect("small field number")];
        let mut len = body.len();
        while len >= 0x80 {
            out.push((len & 0x7f) as u8 | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn broken_bytes_say_where() {
        let err = request(&[0x0a, 0x05, 0x01], None).expect_err("cut short");
        assert!(err.contains("runs past the end"), "{err}");
        assert!(request(&[0x0b], None).is_err(), "a group");
    }
}
