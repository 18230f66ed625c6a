//! A small Chrome DevTools Protocol client over `--remote-debugging-pipe`, to drive Debian's
//! headless Chromium from the tests (and the report benchmark) with nothing but the browser
//! itself: commands go to the child's fd 3 and answers come from its fd 4, each a JSON
//! message ended by a NUL byte.
//!
//! A [`Page`] records what the page did while it was open — console errors, uncaught
//! exceptions, every request it sent, CSP violations, dialogs — so a test can assert none
//! happened. Real input: clicks and key presses are dispatched as the user's (`Input.*`).
//!
//! Chromium starts headless with a fresh profile and no background networking (this
//! machine's network is closed; the flags keep Chromium from trying). `HARNESS_CHROMIUM`
//! names another binary; without one, `/usr/bin/chromium` must exist, or the test fails
//! saying how to install it.

#![expect(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall time and reads and writes its inputs directly"
)]

use serde_json::{Value, json};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// How long one command may take before the test gives up (a guard against a hung browser,
/// not a measurement).
const PATIENCE: Duration = Duration::from_secs(90);

/// A running headless Chromium.
pub struct Browser {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next: u64,
    /// Events that arrived while waiting for an answer, not yet taken.
    pending: Vec<Value>,
    _profile: tempfile::TempDir,
}

/// The Chromium binary the tests drive.
pub fn chromium() -> String {
    std::env::var("HARNESS_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned())
}

fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid two-element array for pipe2 to fill.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // Keep both ends above 4, so the child's dup2 onto 3 and 4 never clobbers one of them.
    let high = |fd: RawFd| {
        // SAFETY: fcntl on a descriptor this function owns; the old one is closed after.
        let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        assert!(new >= 10, "fcntl: {}", std::io::Error::last_os_error());
        // SAFETY: `fd` is ours and no longer used.
        unsafe { libc::close(fd) };
        new
    };
    (high(fds[0]), high(fds[1]))
}

impl Browser {
    /// Start Chromium; panics, saying how to install it, when it is missing or does not start.
    pub fn launch() -> Browser {
        let bin = chromium();
        assert!(
            std::path::Path::new(&bin).exists(),
            "Chromium is not installed at {bin}: the browser tests need Debian's `chromium` package \
             (`apt-get install -y chromium`; .ci/browser installs it), or HARNESS_CHROMIUM naming a binary"
        );
        let profile = tempfile::Builder::new()
            .prefix("harness-chromium-")
            .tempdir()
            .expect("a profile folder");
        let (child_in, to) = pipe();
        let (from, child_out) = pipe();
        let mut cmd = Command::new(&bin);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--mute-audio",
            "--hide-scrollbars",
            "--font-render-hinting=none",
            "--remote-debugging-pipe",
            "about:blank",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (dup2) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(child_in, 3) < 0 || libc::dup2(child_out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start Chromium ({bin}): {e}"));
        // SAFETY: the child's ends are ours to close; the parent's ends become Files.
        let (to, from) = unsafe {
            libc::close(child_in);
            libc::close(child_out);
            (File::from_raw_fd(to), File::from_raw_fd(from))
        };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from);
            loop {
                let mut buf = Vec::new();
                match reader.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        buf.pop();
                        if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                            if tx.send(v).is_err() {
                                break;
                            }
                        }
                    }
                }
            }
        });
        let mut b = Browser {
            child,
            to,
            from: rx,
            next: 0,
            pending: Vec::new(),
            _profile: profile,
        };
        let v = b.call(None, "Browser.getVersion", json!({}));
        assert!(
            v["product"].as_str().is_some_and(|p| p.contains("Chrome")),
            "Chromium did not answer as a browser: {v}"
        );
        b
    }

    /// The browser's version string.
    pub fn version(&mut self) -> String {
        self.call(None, "Browser.getVersion", json!({}))["product"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Send a command (to a page's session, or the browser) and wait for its answer.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).expect("a command serialises");
        bytes.push(0);
        self.to
            .write_all(&bytes)
            .unwrap_or_else(|e| panic!("Chromium's pipe closed ({method}): {e}"));
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from.recv_timeout(left) {
                Ok(v) if v["id"] == json!(id) => {
                    assert!(v.get("error").is_none(), "{method} failed: {}", v["error"]);
                    return v["result"].clone();
                }
                Ok(v) => self.pending.push(v),
                Err(RecvTimeoutError::Timeout) => panic!("Chromium did not answer {method}"),
                Err(RecvTimeoutError::Disconnected) => panic!("Chromium exited during {method}"),
            }
        }
    }

    /// Wait until an event of `session` matching `want` arrives (events already received
    /// count); the event.
    fn wait_event(&mut self, session: &str, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self
            .pending
            .iter()
            .position(|v| v["sessionId"] == json!(session) && want(v))
        {
            return self.pending.remove(i);
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from.recv_timeout(left) {
                Ok(v) if v["sessionId"] == json!(session) && want(&v) => return v,
                Ok(v) => self.pending.push(v),
                Err(_) => panic!("the awaited browser event did not come"),
            }
        }
    }

    /// A new tab (1280 px wide, `height` tall) with everything it does recorded, showing `url`
    /// once loaded.
    pub fn open(&mut self, url: &str, height: u32) -> Page<'_> {
        let target =
            self.call(None, "Target.createTarget", json!({ "url": "about:blank" }))["targetId"]
                .as_str()
                .expect("a target id")
                .to_owned();
        let session = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        )["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        let s = Some(session.as_str());
        for domain in ["Page", "Runtime", "Network", "Log"] {
            self.call(s, &format!("{domain}.enable"), json!({}));
        }
        self.call(
            s,
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        );
        // Violations of the page's Content-Security-Policy (a blocked load or script) are
        // recorded where the test can read them.
        self.call(
            s,
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": "window.__violations = []; document.addEventListener('securitypolicyviolation', function (e) { window.__violations.push(e.violatedDirective + ' ' + e.blockedURI); });" }),
        );
        self.pending.clear();
        self.call(s, "Page.navigate", json!({ "url": url }));
        self.wait_event(&session, |v| v["method"] == "Page.loadEventFired");
        let mut page = Page {
            browser: self,
            session,
            url: url.to_owned(),
            log: Vec::new(),
        };
        page.collect();
        page
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One tab and what it did.
pub struct Page<'a> {
    browser: &'a mut Browser,
    session: String,
    url: String,
    log: Vec<Value>,
}

impl Page<'_> {
    fn collect(&mut self) {
        let session = json!(self.session);
        let (mine, rest): (Vec<Value>, Vec<Value>) = std::mem::take(&mut self.browser.pending)
            .into_iter()
            .partition(|v| v["sessionId"] == session);
        self.browser.pending = rest;
        self.log.extend(mine);
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let s = self.session.clone();
        let v = self.browser.call(Some(&s), method, params);
        self.collect();
        v
    }

    /// Evaluate `expr` in the page (awaiting a promise); its value as JSON. An exception is a
    /// test failure.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true, "awaitPromise": true }),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "`{expr}` threw: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Wait until `expr` is true in the page (checked every 50 ms).
    pub fn wait_for(&mut self, expr: &str) {
        let deadline = Instant::now() + PATIENCE;
        while self.eval(expr) != json!(true) {
            assert!(Instant::now() < deadline, "never true: {expr}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The centre of the first element matching `selector`, scrolled into view.
    fn centre(&mut self, selector: &str) -> (f64, f64) {
        let sel = serde_json::to_string(selector).expect("a selector serialises");
        let v = self.eval(&format!(
            "(function () {{ var e = document.querySelector({sel}); if (!e) return null; e.scrollIntoView({{block: 'center'}}); var r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2, r.width, r.height]; }})()"
        ));
        let n = |i: usize| v[i].as_f64().unwrap_or_default();
        assert!(!v.is_null(), "no element matches {selector}");
        assert!(
            n(2) > 0.0 && n(3) > 0.0,
            "{selector} is not visible (its box is {} × {})",
            n(2),
            n(3)
        );
        (n(0), n(1))
    }

    /// Click the first element matching `selector` with the mouse, as a user would.
    pub fn click(&mut self, selector: &str) {
        let (x, y) = self.centre(selector);
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            );
        }
    }

    /// Press a key (`Enter`, `Tab`, ` ` …) on the focused element, as a user would.
    pub fn press(&mut self, key: &str) {
        let (code, vk, text) = match key {
            "Enter" => ("Enter", 13, "\r"),
            "Tab" => ("Tab", 9, ""),
            " " => ("Space", 32, " "),
            other => panic!("no key code for {other}"),
        };
        let mut down =
            json!({ "type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk });
        if !text.is_empty() {
            down["text"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down);
        self.call(
            "Input.dispatchKeyEvent",
            json!({ "type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk }),
        );
    }

    /// A PNG screenshot of the viewport.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let v = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        decode_base64(v["data"].as_str().expect("screenshot data"))
    }

    /// Everything the page did wrong so far: console errors and warnings about the page,
    /// uncaught exceptions, requests to anything but the page itself, CSP violations,
    /// dialogs. Empty for a page that behaved.
    pub fn misdeeds(&mut self) -> Vec<String> {
        let violations = self.eval("JSON.stringify(window.__violations || [])");
        self.collect();
        let mut out = Vec::new();
        for v in &self.log {
            let p = &v["params"];
            match v["method"].as_str().unwrap_or_default() {
                "Runtime.exceptionThrown" => out.push(format!(
                    "exception: {}",
                    p["exceptionDetails"]["exception"]["description"]
                        .as_str()
                        .or(p["exceptionDetails"]["text"].as_str())
                        .unwrap_or_default()
                )),
                "Runtime.consoleAPICalled"
                    if matches!(p["type"].as_str(), Some("error" | "assert" | "warning")) =>
                {
                    out.push(format!("console.{}: {}", p["type"], p["args"]));
                }
                "Log.entryAdded"
                    if matches!(p["entry"]["level"].as_str(), Some("error" | "warning")) =>
                {
                    out.push(format!(
                        "log {}: {} {}",
                        p["entry"]["level"], p["entry"]["text"], p["entry"]["url"]
                    ));
                }
                "Network.requestWillBeSent" => {
                    let url = p["request"]["url"].as_str().unwrap_or_default();
                    if url != self.url {
                        out.push(format!("request: {url}"));
                    }
                }
                "Page.javascriptDialogOpening" => {
                    out.push(format!("dialog: {}", p["message"]));
                }
                _ => {}
            }
        }
        let violations: Vec<String> =
            serde_json::from_str(violations.as_str().unwrap_or("[]")).unwrap_or_default();
        out.extend(
            violations
                .into_iter()
                .map(|v| format!("CSP violation: {v}")),
        );
        out
    }
}

fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        other => panic!("not base64: {other}"),
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=' && c != b'\n').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= u32::from(val(c)) << (18 - 6 * i);
        }
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

/// Luminance of a PNG on a coarse `cols` × `rows` grid (each cell the mean of its pixels,
/// 0–255), decoded by the browser itself in a blank tab.
pub fn luminance_grid(browser: &mut Browser, png: &[u8], cols: u32, rows: u32) -> Vec<f64> {
    let b64 = encode_base64(png);
    let mut page = browser.open("about:blank", 200);
    let v = page.eval(&format!(
        "new Promise(function (ok, fail) {{ var img = new Image(); img.onerror = fail; img.onload = function () {{ \
           var c = document.createElement('canvas'); c.width = img.width; c.height = img.height; \
           var g = c.getContext('2d'); g.drawImage(img, 0, 0); var d = g.getImageData(0, 0, c.width, c.height).data; \
           var cols = {cols}, rows = {rows}, sums = new Array(cols * rows).fill(0), counts = new Array(cols * rows).fill(0); \
           for (var y = 0; y < c.height; y++) for (var x = 0; x < c.width; x++) {{ \
             var i = (y * c.width + x) * 4, cell = Math.min(rows - 1, Math.floor(y * rows / c.height)) * cols + Math.min(cols - 1, Math.floor(x * cols / c.width)); \
             sums[cell] += 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2]; counts[cell]++; }} \
           ok(sums.map(function (s, i) {{ return s / counts[i]; }})); }}; img.src = 'data:image/png;base64,{b64}'; }})"
    ));
    v.as_array()
        .expect("a grid")
        .iter()
        .map(|x| x.as_f64().unwrap_or_default())
        .collect()
}

fn encode_base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn base64_round_trips() {
    for s in [&b""[..], b"a", b"ab", b"abc", b"abcd", &[0, 255, 128, 7, 9]] {
        assert_eq!(decode_base64(&encode_base64(s)), s);
    }
}
