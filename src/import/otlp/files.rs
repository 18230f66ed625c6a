//! OTLP files as collectors write them, read by their content whatever their name: gzip or
//! zstd over the whole file; the Collector's file exporter with `format: proto` or
//! `compression: zstd` (each request preceded by its length, 4 bytes big-endian, the request
//! compressed or not); a bare protobuf request (an HTTP body saved as it came). Each request
//! becomes one line of OTLP JSON, as the file exporter's default `format: json` writes.

use super::proto;
use std::io::Read;

/// gzip's magic bytes.
const GZIP: [u8; 2] = [0x1f, 0x8b];
/// zstd's frame magic, little-endian.
const ZSTD: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// What a file's bytes are.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    /// OTLP JSON lines decoded from a binary form.
    Lines(String),
    /// Text already: read as it is.
    Plain,
    /// Compressed, but what is inside is no OTLP and no text (an archive): why.
    Foreign(String),
}

/// What the bytes of a file hold: OTLP JSON lines decoded from a binary form, text as it is,
/// or a compressed file of something else. `limit` bounds everything decoding makes (the
/// decompressed bytes and the lines, together). `Err` says what the file is and where it stops
/// being that.
pub fn decode(bytes: &[u8], limit: u64) -> Result<Decoded, String> {
    let what = if bytes.starts_with(&GZIP) {
        "gzip"
    } else if bytes.starts_with(&ZSTD) {
        "zstd"
    } else {
        return uncompressed(bytes, limit);
    };
    let inner = decompress(bytes, limit)
        .map_err(|e| format!("a {what} file that does not decompress: {e}"))?;
    // No collector compresses twice: a file that does is refused, not unwrapped again.
    if inner.starts_with(&GZIP) || inner.starts_with(&ZSTD) {
        return Err(format!(
            "a {what} file holding a compressed file again: decompress it first"
        ));
    }
    match uncompressed(&inner, limit)? {
        Decoded::Lines(text) => Ok(Decoded::Lines(text)),
        _ => match String::from_utf8(inner) {
            Ok(text) if looks_like_text(text.as_bytes()) => Ok(Decoded::Lines(text)),
            _ => Ok(Decoded::Foreign(format!(
                "a {what} file of something that is no JSON and no OTLP"
            ))),
        },
    }
}

/// [`decode`] of bytes that are not compressed as a whole.
fn uncompressed(bytes: &[u8], limit: u64) -> Result<Decoded, String> {
    if let Some(frames) = framed(bytes) {
        let mut out = String::new();
        for (i, frame) in frames.iter().enumerate() {
            let left = limit.saturating_sub(out.len() as u64);
            let line = request_line(frame, left).map_err(|e| {
                format!(
                    "a length-prefixed OTLP file (the Collector's `format: proto` or `compression`): request {} of {}: {e}",
                    i + 1,
                    frames.len()
                )
            })?;
            out.push_str(&line);
            out.push('\n');
            if out.len() as u64 > limit {
                return Err(format!(
                    "a length-prefixed OTLP file that decodes to more than {limit} bytes (the transcript limit): split it"
                ));
            }
        }
        return Ok(Decoded::Lines(out));
    }
    // Text is read as text: only bytes that are not UTF-8 may be a bare protobuf request.
    if std::str::from_utf8(bytes).is_ok() || looks_like_text(bytes) {
        return Ok(Decoded::Plain);
    }
    if bytes.first() == Some(&0x0a) {
        let line = proto_line(bytes, limit)
            .map_err(|e| format!("not UTF-8 text, and not an OTLP protobuf request either: {e}"))?;
        return Ok(Decoded::Lines(line + "\n"));
    }
    Ok(Decoded::Plain)
}

/// Is this the start of JSON text (after whitespace and a byte-order mark)?
fn looks_like_text(bytes: &[u8]) -> bool {
    let b = bytes.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(bytes);
    let first = b.iter().find(|c| !c.is_ascii_whitespace());
    // A multi-byte character cut by the 64-byte prefix is no reason to doubt.
    let utf8 = std::str::from_utf8(&b[..b.len().min(64)])
        .map_or_else(|e| e.error_len().is_none(), |_| true);
    matches!(first, None | Some(b'{' | b'[')) && utf8
}

/// The requests of a length-prefixed file, when its lengths chain exactly to its end.
fn framed(bytes: &[u8]) -> Option<Vec<&[u8]>> {
    let mut rest = bytes;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (len, tail) = rest.split_first_chunk::<4>()?;
        let n = usize::try_from(u32::from_be_bytes(*len)).ok()?;
        if n == 0 || n > tail.len() {
            return None;
        }
        let (frame, tail) = tail.split_at(n);
        out.push(frame);
        rest = tail;
    }
    (!out.is_empty()).then_some(out)
}

/// One framed request (compressed or not; protobuf or JSON) as one JSON line.
fn request_line(frame: &[u8], limit: u64) -> Result<String, String> {
    let inner;
    let frame = if frame.starts_with(&ZSTD) || frame.starts_with(&GZIP) {
        let what = if frame.starts_with(&ZSTD) {
            "zstd"
        } else {
            "gzip"
        };
        inner = decompress(frame, limit)
            .map_err(|e| format!("{what} that does not decompress: {e}"))?;
        &inner[..]
    } else {
        frame
    };
    if looks_like_text(frame) {
        let doc: serde_json::Value =
            serde_json::from_slice(frame).map_err(|e| format!("JSON that does not parse: {e}"))?;
        return Ok(doc.to_string());
    }
    proto_line(frame, limit)
}

/// A protobuf request as one JSON line, refused past `limit` bytes of JSON.
fn proto_line(bytes: &[u8], limit: u64) -> Result<String, String> {
    let line = proto::request(bytes, None).map(|v| v.to_string())?;
    if line.len() as u64 > limit {
        return Err(format!(
            "a request that decodes to more than {limit} bytes of JSON (the transcript limit)"
        ));
    }
    Ok(line)
}

/// Read at most `limit` bytes from `r`; more is an error.
#[expect(
    clippy::disallowed_methods,
    reason = "bounded: `take(limit + 1)` first"
)]
fn bounded(r: impl Read, limit: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    r.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if out.len() as u64 > limit {
        return Err(format!(
            "it decompresses to more than {limit} bytes (the transcript limit)"
        ));
    }
    Ok(out)
}

/// A gzip or zstd body (by its magic bytes) decompressed, at most `limit` bytes.
pub fn decompress(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    if bytes.starts_with(&GZIP) {
        gunzip(bytes, limit)
    } else if bytes.starts_with(&ZSTD) {
        unzstd(bytes, limit)
    } else {
        Err("neither gzip nor zstd (no magic bytes)".to_owned())
    }
}

fn gunzip(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    bounded(flate2::read::MultiGzDecoder::new(bytes), limit)
}

/// Every zstd frame of `bytes`, one after another.
fn unzstd(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    let mut rest = bytes;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let left = limit.saturating_sub(out.len() as u64);
        let decoder = ruzstd::StreamingDecoder::new(&mut rest).map_err(|e| e.to_string())?;
        out.extend(bounded(decoder, left)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const LINE: &str = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"aa","spanId":"bb","name":"chat m"}]}]}]}"#;

    fn gzip(b: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(b).expect("writes");
        e.finish().expect("finishes")
    }

    #[test]
    fn text_is_left_as_it_is() {
        assert_eq!(decode(LINE.as_bytes(), 1 << 20), Ok(Decoded::Plain));
        assert_eq!(
            decode(format!("\u{feff}\n{LINE}").as_bytes(), 1 << 20),
            Ok(Decoded::Plain)
        );
        assert_eq!(decode(b"", 1 << 20), Ok(Decoded::Plain));
        // Text that is no JSON, starting with a blank line, is text too.
        assert_eq!(decode(b"\nhello", 1 << 20), Ok(Decoded::Plain));
    }

    #[test]
    fn gzip_over_the_file_and_framed_requests_read_as_lines() {
        let text = format!("{LINE}\n{LINE}\n");
        assert_eq!(
            decode(&gzip(text.as_bytes()), 1 << 20),
            Ok(Decoded::Lines(text.clone()))
        );
        // Two gzip members one after the other (files concatenated) are one text.
        let two = [gzip(LINE.as_bytes()), gzip(b"\n")].concat();
        assert_eq!(
            decode(&two, 1 << 20),
            Ok(Decoded::Lines(format!("{LINE}\n")))
        );
        // The file exporter's framing: a JSON request, then a gzip'd one.
        let mut framed = Vec::new();
        for frame in [LINE.as_bytes().to_vec(), gzip(LINE.as_bytes())] {
            framed.extend((frame.len() as u32).to_be_bytes());
            framed.extend(frame);
        }
        assert_eq!(
            decode(&framed, 1 << 20),
            Ok(Decoded::Lines(format!("{LINE}\n{LINE}\n")))
        );
    }

    #[test]
    fn compression_twice_archives_and_a_total_past_the_limit_are_said() {
        let err = decode(&gzip(&gzip(LINE.as_bytes())), 1 << 20).expect_err("twice");
        assert!(err.contains("compressed file again"), "{err}");
        // A gzip'd archive (bytes that are no text): not ours, said so.
        let got = decode(&gzip(&[0u8, 1, 2, 0xff, 0xfe]), 1 << 20).expect("decompresses");
        assert!(matches!(got, Decoded::Foreign(_)), "{got:?}");
        // Frames each within the limit, together past it.
        let mut framed = Vec::new();
        for _ in 0..4 {
            let frame = gzip(LINE.as_bytes());
            framed.extend((frame.len() as u32).to_be_bytes());
            framed.extend(frame);
        }
        let err = decode(&framed, (LINE.len() * 2) as u64).expect_err("too much");
        assert!(err.contains("more than"), "{err}");
    }

    #[test]
    fn a_decompression_past_the_limit_is_refused() {
        let big = vec![b' '; 10_000];
        let err = decode(&gzip(&big), 100).expect_err("too big");
        assert!(err.contains("more than 100 bytes"), "{err}");
    }

    #[test]
    fn binary_that_is_no_otlp_says_so() {
        let err = decode(&[0x0a, 0x09, 0x01, 0xff], 1 << 20).expect_err("not protobuf");
        assert!(err.contains("not an OTLP protobuf request"), "{err}");
        let err = decode(&[0x1f, 0x8b, 0x00], 1 << 20).expect_err("a cut gzip");
        assert!(err.contains("gzip"), "{err}");
    }
}
