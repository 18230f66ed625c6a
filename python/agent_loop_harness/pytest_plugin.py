"""pytest plugin of harness: the ``harness_serve`` fixture.

    def test_my_agent(harness_serve):
        served = harness_serve("scenarios/serve/reflex-black-box.toml", expect="moltis")
        client = OpenAI(base_url=served.openai_base_url, api_key="harness")
        run_my_agent(client)
        # after the test body: every conversation is judged; the test fails with the report

Each call starts ``harness serve SCENARIO --judge`` on a free loopback port (the scenario's
scripted model, or an agent's cassettes, behind the OpenAI and Anthropic APIs). When the test
body returns, the server is stopped and judges every conversation the test had with it, as
``harness exec`` does: its golden ``<id>@<label>`` (the label defaults to the test's name,
with a hash of its node id when the name has upper case or parameters) and,
with ``expect``, the expectations the scenario states for that profile. A failing verdict fails
the test with harness's report; a verdict the test took itself (``served.verdict()``) is the
test's to assert. A test that fails on its own is not judged. Goldens are reviewed as for any
run: the first run writes a pending ``.snap.new`` (not under ``CI``), which ``harness diff``
shows and ``harness accept`` keeps. Paths are the project file's, found from the folder pytest
runs in (or ``cwd=``).

The plugin is registered when the wheel is installed and does nothing in a test that does not
ask for the fixture; ``-p no:agent_loop_harness`` turns it off, and with
``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set, ``-p agent_loop_harness.pytest_plugin`` turns it on.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import IO, List, Optional

import pytest

from . import find_harness_bin

#: How long the server may take to start, and to judge once its input ends (seconds).
TIMEOUT = 60

# Where a test's servers are kept on its item (an attribute: no stash on older pytest).
_ITEM_KEY = "_agent_loop_harness_served"


@dataclass
class Served:
    """A scenario (or cassettes) served for one test."""

    #: ``http://127.0.0.1:PORT``
    url: str
    #: ``http://127.0.0.1:PORT/v1``: what an OpenAI client takes as its base URL.
    openai_base_url: str
    #: ``http://127.0.0.1:PORT``: what an Anthropic client takes as its base URL.
    anthropic_base_url: str
    scenario: str
    label: str
    _process: subprocess.Popen = field(repr=False)
    _stderr: IO[bytes] = field(repr=False)
    _verdict: Optional["Verdict"] = field(default=None, repr=False)
    _taken: bool = field(default=False, repr=False)

    @property
    def env(self) -> dict:
        """The variables ``harness exec`` hands an agent command."""
        return {
            "OPENAI_BASE_URL": self.openai_base_url,
            "OPENAI_API_KEY": "harness",
            "ANTHROPIC_BASE_URL": self.anthropic_base_url,
            "ANTHROPIC_API_KEY": "harness",
        }

    def verdict(self) -> "Verdict":
        """Stop serving and judge (once; later calls give the same verdict). A verdict taken
        here is the test's to assert: the plugin does not fail the test for it."""
        self._taken = True
        return self._judge()

    def _judge(self) -> "Verdict":
        if self._verdict is None:
            # The end of its standard input stops the server (`--until-eof`); it then judges.
            try:
                out, _ = self._process.communicate(input=b"", timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self._process.kill()
                out, _ = self._process.communicate()
                out += f"\nharness serve did not end within {TIMEOUT} s of its input ending: killed".encode()
            self._stderr.seek(0)
            self._verdict = Verdict(
                passed=self._process.returncode == 0,
                returncode=self._process.returncode,
                report=out.decode("utf-8", "replace"),
                stderr=self._stderr.read().decode("utf-8", "replace"),
            )
            self._stderr.close()
        return self._verdict

    def _stop(self) -> None:
        """Stop without judging (the test failed on its own)."""
        if self._verdict is None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.communicate()
            self._stderr.close()


@dataclass
class Verdict:
    """What ``harness serve --judge`` said about the test's conversations."""

    passed: bool
    #: 0 passed, 1 a golden or an expectation did not hold, 2 bad input.
    returncode: int
    #: The report ``harness exec`` prints.
    report: str
    stderr: str

    def explanation(self) -> str:
        """The report, and what the server said on stderr when it did not judge (exit 2)."""
        if self.returncode == 1:
            return self.report
        return (self.report + "\n" + self.stderr).strip()


def _label_of(name: str, nodeid: str) -> str:
    """A test's name as a label: lower-case letters, digits, `-` and `_`. A name that does not
    fit as it is (upper case, parameters in brackets) gets 8 hex digits of its node id after it,
    so that ``test_greet[Alice]`` and ``test_greet[alice]`` never share a golden."""
    label = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-") or "pytest"
    if label != name:
        label += "-" + hashlib.sha256(nodeid.encode("utf-8")).hexdigest()[:8]
    return label


#: (scenario, label) → the node id of the test that claimed its golden, for the session (a
#: process: each pytest-xdist worker keeps its own).
_CLAIMED: dict = {}


def _start(scenario, label, expect, cwd, failure, pace, no_builtin_failures,
           cassettes_only=False) -> Served:
    command = [find_harness_bin(), "serve", os.fspath(scenario), "--judge", "--until-eof",
               "--label", label]
    if cassettes_only:
        command.append("--cassettes-only")
    if expect:
        command += ["--expect", expect]
    for pattern in failure or ():
        command += ["--failure", pattern]
    if pace:
        command += ["--pace", str(pace)]
    if no_builtin_failures:
        command.append("--no-builtin-failures")
    stderr = tempfile.TemporaryFile()
    # A session of its own: Ctrl-C on pytest does not reach it (it would judge a conversation
    # cut short); the plugin stops it.
    extra = ({"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if sys.platform == "win32"
             else {"start_new_session": True})
    process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=stderr, **extra)
    first = process.stdout.readline().decode("utf-8", "replace").strip()
    if not first.startswith("listening on "):
        try:
            rest, _ = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            rest, _ = process.communicate()
        stderr.seek(0)
        said = stderr.read().decode("utf-8", "replace")
        stderr.close()
        raise RuntimeError(
            f"harness serve {scenario} did not start (exit {process.returncode}):\n"
            f"{first}\n{rest.decode('utf-8', 'replace')}{said}"
        )
    url = first[len("listening on "):]
    return Served(url=url, openai_base_url=url + "/v1", anthropic_base_url=url,
                  scenario=os.fspath(scenario), label=label, _process=process, _stderr=stderr)


@pytest.fixture
def harness_serve(request, monkeypatch):
    """Start serving a scenario (or cassettes) for this test: ``harness_serve(scenario,
    label=None, expect=None, env=False, cwd=None, failure=(), pace=0,
    no_builtin_failures=False, cassettes_only=False)`` returns a :class:`Served`. The label
    names the runs and their goldens (default: the test's name). With ``cassettes_only=True``
    (agent cassettes only) the replay is judged by the recording alone, with no golden, so any
    number of tests may replay one cassette. With ``env=True`` the test's environment gets
    ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL`` and placeholder keys, so ``OpenAI()`` and
    ``Anthropic()`` with no arguments reach it. Every served scenario is judged when the test
    body returns."""
    served: List[Served] = []
    setattr(request.node, _ITEM_KEY, served)

    def start(scenario, *, label=None, expect=None, env=False, cwd=None, failure=(), pace=0,
              no_builtin_failures=False, cassettes_only=False):
        label = label or _label_of(request.node.name, request.node.nodeid)
        if any(s.scenario == os.fspath(scenario) and s.label == label for s in served):
            raise ValueError(
                f"{scenario} is already served with label {label!r} in this test: give the "
                "second one its own label (its runs and goldens are named by it)")
        # Two tests of the session on one golden would overwrite each other's verdicts (a
        # replay judged by its recording alone has none).
        key = (os.path.abspath(os.path.join(cwd or os.getcwd(), os.fspath(scenario))), label)
        other = (request.node.nodeid if cassettes_only
                 else _CLAIMED.setdefault(key, request.node.nodeid))
        if other != request.node.nodeid:
            raise ValueError(
                f"{request.node.nodeid} and {other} both serve {scenario} with label "
                f"{label!r}, so they would share one golden: give one of them its own "
                "label= (the same test name in two modules does this)")
        s = _start(scenario, label, expect, cwd or os.getcwd(), failure, pace,
                   no_builtin_failures, cassettes_only)
        served.append(s)
        if env:
            for key, value in s.env.items():
                monkeypatch.setenv(key, value)
        return s

    yield start
    # A test that failed on its own is not judged; its servers still stop.
    for s in served:
        s._stop()


@pytest.hookimpl(trylast=True)
def pytest_runtest_call(item):
    # Runs after the test body, only when it did not raise.
    verdicts = [s._judge() for s in getattr(item, _ITEM_KEY, []) if not s._taken]
    failed = [v for v in verdicts if not v.passed]
    if failed:
        pytest.fail("\n".join(v.explanation() for v in failed), pytrace=False)
