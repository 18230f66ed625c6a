"""pytest plugin of harness: the ``harness_serve`` fixture.

    def test_my_agent(harness_serve):
        served = harness_serve("scenarios/serve/reflex-black-box.toml",
                               label="my-agent", expect="moltis")
        client = OpenAI(base_url=served.openai_base_url, api_key="harness")
        run_my_agent(client)
        # after the test body: every conversation is judged; the test fails with the report

Each call starts ``harness serve SCENARIO --judge`` on a free loopback port (the scenario's
scripted model behind the OpenAI and Anthropic APIs). When the test body returns, the server is
stopped and judges every conversation the test had with it, as ``harness exec`` does: its
golden ``<scenario id>@<label>`` and, with ``expect``, the expectations the scenario states for
that profile. A failing verdict fails the test with harness's report. Goldens are reviewed as
for any run: the first run writes a pending ``.snap.new`` (not under ``CI``), which
``harness diff`` shows and ``harness accept`` keeps. Paths are the project file's, found from
the folder pytest runs in (or ``cwd=``).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import IO, List, Optional

import pytest

from . import find_harness_bin

_SERVED = pytest.StashKey[list]()


@dataclass
class Served:
    """A scenario served for one test."""

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
        """Stop serving and judge (once; later calls give the same verdict)."""
        if self._verdict is None:
            # The end of its standard input stops the server (`--until-eof`); it then judges.
            out, _ = self._process.communicate(input=b"")
            self._stderr.seek(0)
            self._verdict = Verdict(
                passed=self._process.returncode == 0,
                returncode=self._process.returncode,
                report=out.decode("utf-8", "replace"),
                stderr=self._stderr.read().decode("utf-8", "replace"),
            )
            self._stderr.close()
        return self._verdict


@dataclass
class Verdict:
    """What ``harness serve --judge`` said about the test's conversations."""

    passed: bool
    #: 0 passed, 1 a golden or an expectation did not hold, 2 bad input (see docs/project-file.md).
    returncode: int
    #: The report ``harness exec`` prints.
    report: str
    stderr: str


def _start(scenario, label, expect, cwd, failure, pace) -> Served:
    command = [find_harness_bin(), "serve", os.fspath(scenario), "--judge", "--until-eof",
               "--label", label]
    if expect:
        command += ["--expect", expect]
    for pattern in failure or ():
        command += ["--failure", pattern]
    if pace:
        command += ["--pace", str(pace)]
    stderr = tempfile.TemporaryFile()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
    )
    first = process.stdout.readline().decode("utf-8", "replace").strip()
    if not first.startswith("listening on "):
        rest, _ = process.communicate()
        stderr.seek(0)
        raise RuntimeError(
            f"harness serve {scenario} did not start (exit {process.returncode}):\n"
            f"{first}\n{rest.decode('utf-8', 'replace')}"
            f"{stderr.read().decode('utf-8', 'replace')}"
        )
    url = first[len("listening on "):]
    return Served(url=url, openai_base_url=url + "/v1", anthropic_base_url=url,
                  scenario=os.fspath(scenario), label=label, _process=process, _stderr=stderr)


@pytest.fixture
def harness_serve(request, monkeypatch):
    """Start serving a scenario for this test: ``harness_serve(scenario, label=..., expect=...,
    env=False, cwd=None, failure=(), pace=0)`` returns a :class:`Served`. With ``env=True`` the
    test's environment gets ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL`` and placeholder keys, so
    ``OpenAI()`` and ``Anthropic()`` with no arguments reach it. Every served scenario is judged
    when the test body returns."""
    served: List[Served] = []
    request.node.stash[_SERVED] = served

    def start(scenario, *, label="pytest", expect=None, env=False, cwd=None, failure=(), pace=0):
        s = _start(scenario, label, expect, cwd or os.getcwd(), failure, pace)
        served.append(s)
        if env:
            for key, value in s.env.items():
                monkeypatch.setenv(key, value)
        return s

    yield start
    # A test that failed on its own is not judged; its servers still stop.
    for s in served:
        if s._verdict is None and s._process.poll() is None:
            s._process.kill()
            s._process.communicate()
            s._stderr.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    failed = [v for v in (s.verdict() for s in item.stash.get(_SERVED, [])) if not v.passed]
    if failed:
        pytest.fail("\n".join(v.report or v.stderr for v in failed), pytrace=False)
    return result
