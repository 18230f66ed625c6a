//! `harness collect`: an OTLP/HTTP receiver that writes what agents export as OTLP JSON lines.

use super::args::CollectArgs;
use super::fail;
use crate::diagnostic::Diagnostic;
use crate::results::ExitStatus;
use crate::serve::collect::Collector;
use crate::serve::http::Signals;
use anyhow::Context as _;
use std::io::{self, Write as _};

/// `harness collect`.
pub(super) fn collect(args: &CollectArgs) -> anyhow::Result<ExitStatus> {
    if let Some(refused) = super::agent::loopback_only(
        args.addr,
        args.allow_remote,
        "the receiver has no authentication",
    ) {
        return Ok(refused);
    }
    let folder = match args.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => std::path::PathBuf::from("."),
    };
    if let Err(e) = crate::store::writable_folder(&folder) {
        return Ok(fail(
            &Diagnostic::new(format!("cannot write into {}: {e}", folder.display()))
                .hint("name a file in a folder harness may create and write"),
        ));
    }
    if args.out.is_dir() {
        return Ok(fail(
            &Diagnostic::new(format!("{} is a folder", args.out.display()))
                .hint("--out names the file to write, e.g. traces/agents.jsonl"),
        ));
    }
    let collector = Collector::start(&args.out, args.addr, args.rotate_mb << 20, Signals::Stop)
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    let addr = collector.addr();
    {
        let mut out = io::stdout().lock();
        writeln!(out, "listening on http://{addr}")?;
        out.flush()?;
    }
    let _ = writeln!(
        anstream::stderr(),
        "harness collect: OTEL_EXPORTER_OTLP_ENDPOINT=http://{addr} OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (or http/json); writing {}; Ctrl-C{} ends",
        args.out.display(),
        if args.until_eof {
            " (or the end of standard input)"
        } else {
            ""
        }
    );
    super::agent::wait_until(|| collector.finished(), args.until_eof);
    let counts = collector.stop()?;
    let mut out = io::stdout().lock();
    let rotated = if counts.rotated.is_empty() {
        String::new()
    } else {
        format!(
            " ({} earlier file(s) rotated beside it)",
            counts.rotated.len()
        )
    };
    writeln!(
        out,
        "harness collect: {} request(s) written to {}{rotated}: {} span(s), {} log record(s)",
        counts.requests,
        args.out.display(),
        counts.spans,
        counts.logs
    )?;
    if counts.metrics > 0 {
        writeln!(
            out,
            "harness collect: {} metrics request(s) answered and not kept (harness reads traces and logs)",
            counts.metrics
        )?;
    }
    if counts.refused == 0 {
        return Ok(ExitStatus::Ok);
    }
    let mut err = anstream::stderr();
    for why in &counts.refusals {
        let _ = writeln!(err, "error: a request was refused: {why}");
    }
    let _ = writeln!(
        err,
        "error: {} request(s) refused (answered with an error status and written nowhere)",
        counts.refused
    );
    Ok(ExitStatus::Failed)
}
