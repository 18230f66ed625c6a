//! Size and speed of the HTML report at scale: `harness report` over JSON results of 10,000
//! cases (default), and the page's first paint in Debian's headless Chromium.
//!
//! The results are real: the bundled scenarios run once with `--json` (every case, their
//! traces), copied under `copy-K/` prefixes until there are as many cases as asked. The
//! benchmark then times `harness report RESULTS --html` (best and median of the runs), states
//! the file's size, and opens the page several times in a fresh headless Chromium each time
//! (the same flags as the browser tests): time to first paint and first contentful paint
//! (`performance.getEntriesByType('paint')`), to the case list drawn (the page's own
//! `harness-cases-drawn` mark), to the load event, and the time to open the slowest-to-show
//! case of the first page (inflate and insert its detail). Without Chromium it says so and
//! reports the rest.
//!
//! ```text
//! cargo bench --bench html_report                  # 10,000 cases
//! cargo bench --bench html_report -- 1000,10000    # several sizes
//! HTML_REPORT_REPS=5 cargo bench --bench html_report
//! ```

#![expect(
    clippy::disallowed_methods,
    unsafe_code,
    reason = "a benchmark measures wall time and reads and writes its inputs directly"
)]

#[path = "../tests/integration/cdp.rs"]
#[expect(dead_code, reason = "the tests' client; the benchmark uses part of it")]
mod cdp;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const HARNESS: &str = env!("CARGO_BIN_EXE_harness");

type Result<T> = std::result::Result<T, String>;

fn main() {
    if let Err(e) = bench() {
        eprintln!("html_report: error: {e}");
        std::process::exit(1);
    }
}

fn harness(dir: &Path, args: &[&str]) -> Result<std::process::Output> {
    Command::new(HARNESS)
        .args(args)
        .current_dir(dir)
        .env("CI", "1")
        .env("NO_COLOR", "1")
        .output()
        .map_err(|e| format!("cannot run harness: {e}"))
}

fn sizes() -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for arg in std::env::args().skip(1).filter(|a| !a.starts_with('-')) {
        for part in arg.split(',').filter(|p| !p.is_empty()) {
            out.push(
                part.replace(['_', 'k'], "")
                    .parse::<usize>()
                    .map(|n| if part.ends_with('k') { n * 1000 } else { n })
                    .map_err(|_| format!("`{part}` is not a number of cases"))?,
            );
        }
    }
    if out.is_empty() {
        out.push(10_000);
    }
    Ok(out)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench() -> Result<()> {
    let reps: usize = std::env::var("HTML_REPORT_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|r| *r > 0)
        .unwrap_or(3);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::Builder::new()
        .prefix("harness-html-bench-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    for sub in ["scenarios", "snapshots"] {
        let status = Command::new("cp")
            .args(["-r"])
            .arg(root.join(sub))
            .arg(dir.path())
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("cannot copy {sub}"));
        }
    }
    let run = harness(dir.path(), &["run", "scenarios/", "--json", "base.json"])?;
    if run.status.code() != Some(0) {
        return Err(format!(
            "the bundled scenarios do not pass: {}",
            String::from_utf8_lossy(&run.stdout)
        ));
    }
    let base: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("base.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let files = base["files"].as_array().cloned().unwrap_or_default();
    let per_copy: usize = files
        .iter()
        .map(|f| f["cases"].as_array().map_or(0, Vec::len))
        .sum();
    println!(
        "html_report: {} cores, load average {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    );
    for size in sizes()? {
        if per_copy == 0 {
            return Err("the bundled results hold no case".to_owned());
        }
        let mut all = Vec::new();
        let mut n = 0;
        'fill: for k in 0.. {
            for f in &files {
                if n >= size {
                    break 'fill;
                }
                let mut f = f.clone();
                f["path"] = json!(format!("copy-{k}/{}", f["path"].as_str().unwrap_or("")));
                if let Some(cases) = f["cases"].as_array_mut() {
                    cases.truncate(size - n);
                    for c in cases.iter_mut() {
                        c["id"] = json!(format!("copy-{k}/{}", c["id"].as_str().unwrap_or("")));
                    }
                    n += cases.len();
                }
                all.push(f);
            }
        }
        let mut results = base.clone();
        results["files"] = json!(all);
        let results_path = dir.path().join(format!("results-{size}.json"));
        std::fs::write(
            &results_path,
            serde_json::to_vec(&results).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let json_bytes = std::fs::metadata(&results_path)
            .map_err(|e| e.to_string())?
            .len();

        let html = format!("report-{size}.html");
        let results_name = format!("results-{size}.json");
        let mut times = Vec::new();
        for _ in 0..reps {
            let t = Instant::now();
            let out = harness(dir.path(), &["report", &results_name, "--html", &html])?;
            times.push(t.elapsed().as_secs_f64());
            if out.status.code() != Some(0) {
                return Err(format!(
                    "harness report failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        let html_path = dir.path().join(&html);
        let html_bytes = std::fs::metadata(&html_path)
            .map_err(|e| e.to_string())?
            .len();
        println!(
            "{size} cases: JSON results {:.1} MB; harness report --html: {:.2} s best, {:.2} s median; the page {:.1} MB ({:.0} bytes per case)",
            json_bytes as f64 / 1e6,
            times.iter().copied().fold(f64::INFINITY, f64::min),
            median(times.clone()),
            html_bytes as f64 / 1e6,
            html_bytes as f64 / size as f64
        );

        if !Path::new(&cdp::chromium()).exists() {
            println!(
                "  Chromium not installed ({}): no paint figures (apt-get install chromium)",
                cdp::chromium()
            );
            continue;
        }
        let url = format!("file://{}", html_path.display());
        let mut paint = Vec::new();
        let mut contentful = Vec::new();
        let mut drawn = Vec::new();
        let mut load = Vec::new();
        let mut open = Vec::new();
        for _ in 0..reps {
            let mut browser = cdp::Browser::launch();
            let mut page = browser.open(&url, 900);
            let v = page.eval(
                "(function () { var p = {}; performance.getEntriesByType('paint').forEach(function (e) { p[e.name] = e.startTime; }); \
                 var m = performance.getEntriesByName('harness-cases-drawn')[0]; var n = performance.getEntriesByType('navigation')[0]; \
                 return [p['first-paint'], p['first-contentful-paint'], m ? m.startTime : null, n.loadEventEnd]; })()",
            );
            let at = |i: usize| v[i].as_f64().unwrap_or(f64::NAN);
            paint.push(at(0));
            contentful.push(at(1));
            drawn.push(at(2));
            load.push(at(3));
            let t = page.eval(
                "(function () { var t = performance.now(); document.querySelector('#case-rows button.open').click(); \
                 return new Promise(function (ok) { (function wait() { if (document.querySelector('tr.detail td[data-ready]')) ok(performance.now() - t); else setTimeout(wait, 1); })(); }); })()",
            );
            open.push(t.as_f64().unwrap_or(f64::NAN));
            std::thread::sleep(Duration::from_millis(100));
        }
        println!(
            "  Chromium (median of {reps}): first paint {:.0} ms, first contentful paint {:.0} ms, case list drawn {:.0} ms, load event {:.0} ms; opening a case {:.0} ms",
            median(paint),
            median(contentful),
            median(drawn),
            median(load),
            median(open)
        );
    }
    Ok(())
}
