"""The pytest plugin of the wheel, used as a Python agent's author uses it (.ci/wheel runs this
file from a clean virtual environment holding only the wheel, pytest and the official openai
SDK, with no Rust toolchain on PATH; docs/in-your-tests.md shows the fixture).

An inner test file holds two tests of a minimal agent loop on the openai SDK against the reflex
scenario (scenarios/serve/reflex-black-box.toml, judged with its `moltis` expectations): the loop
with a defence (a warning after three identical failed calls) and the same loop without it;
beside them a test that takes the verdict itself (its failure is the test's to assert), one
that fails on its own (not judged), and one without the fixture (left alone). They run in a
scratch project under pytest's own `pytester`, and what pytest reports is asserted: first the
two loops fail for want of goldens, then `harness accept` keeps them, then the loop with the
defence passes and the one without fails with harness's report.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from agent_loop_harness import find_harness_bin

pytest_plugins = ["pytester"]

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "serve" / "reflex-black-box.toml"

INNER = '''
import json
from openai import OpenAI, APIStatusError

TOOLS = [{"type": "function", "function": {
    "name": "exec", "description": "Run a shell command",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                   "required": ["command"]}}}]


def agent_loop(client, defence):
    messages = [{"role": "system", "content": "You are a coding agent. Use tools to act."},
                {"role": "user", "content": "List the files in the project."}]
    failed = []
    for _ in range(50):
        try:
            reply = client.chat.completions.create(
                model="claude-haiku-4.5", messages=messages, tools=TOOLS)
        except APIStatusError:
            return None  # refused at the scenario's cap
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            args = json.loads(call.function.arguments or "{}")
            ok = "command" in args
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": "Cargo.toml" if ok else "Error: missing 'command' parameter"})
            failed = [] if ok else failed + [call.function.name + call.function.arguments]
        if defence and len(failed) >= 3 and len(set(failed[-3:])) == 1:
            failed = []
            messages.append({"role": "user", "content":
                             "LOOP DETECTED: your last 3 tool calls failed the same way. "
                             "Do not call a tool again; tell the user what you need."})
    return None


def test_the_loop_with_its_defence(harness_serve):
    served = harness_serve("scenarios/reflex-black-box.toml", label="py-loop", expect="moltis")
    client = OpenAI(base_url=served.openai_base_url, api_key="harness")
    assert agent_loop(client, defence=True).startswith("Sorry")


def test_the_loop_without_it(harness_serve):
    harness_serve("scenarios/reflex-black-box.toml", label="py-loop-undefended",
                  expect="moltis", env=True)
    agent_loop(OpenAI(), defence=False)


def test_the_verdict_taken_by_the_test(harness_serve):
    served = harness_serve("scenarios/reflex-black-box.toml", expect="moltis")
    agent_loop(OpenAI(base_url=served.openai_base_url, api_key="harness"), defence=False)
    verdict = served.verdict()
    assert not verdict.passed
    assert "outcome: expected response, got max_iterations" in verdict.report


def test_a_test_failing_on_its_own(harness_serve):
    served = harness_serve("scenarios/reflex-black-box.toml", label="py-raises")
    agent_loop(OpenAI(base_url=served.openai_base_url, api_key="harness"), defence=True)
    raise RuntimeError("the test's own failure")


def test_without_the_fixture():
    assert True
'''


def test_the_fixture_serves_judges_and_fails_a_test_with_the_report(pytester, monkeypatch):
    # Pending goldens are written only off CI, as by every harness command.
    monkeypatch.delenv("CI", raising=False)
    (pytester.path / "scenarios").mkdir()
    shutil.copy(SCENARIO, pytester.path / "scenarios" / "reflex-black-box.toml")
    pytester.makepyfile(test_agent=INNER)

    # No goldens yet: both loops fail, and pending goldens are written (not for the test that
    # failed on its own: it is not judged). The label defaults to the test's name.
    first = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    first.assert_outcomes(passed=2, failed=3)
    first.stdout.fnmatch_lines(["*no golden yet*"])
    pending = sorted(p.name for p in (pytester.path / "snapshots").iterdir())
    assert pending == ["reflex-black-box@py-loop-undefended.snap.new",
                       "reflex-black-box@py-loop.snap.new",
                       "reflex-black-box@test_the_verdict_taken_by_the_test.snap.new"], pending

    # Reviewed and kept as harness's own workflow does it.
    subprocess.run([find_harness_bin(), "accept"], cwd=pytester.path, check=True)

    # The loop with its defence passes; the one without fails with harness's report.
    second = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    second.assert_outcomes(passed=3, failed=2)
    second.stdout.fnmatch_lines([
        "*harness serve: FAILED*",
        "*outcome: expected response, got max_iterations*",
        "*FAILED test_agent.py::test_the_loop_without_it*",
    ])
    out = second.stdout.str()
    assert "FAILED test_agent.py::test_the_loop_with_its_defence" not in out
    assert "FAILED test_agent.py::test_a_test_failing_on_its_own - RuntimeError" in out
    assert "FAILED test_agent.py::test_the_verdict_taken_by_the_test" not in out


LABELS = """
import pytest


@pytest.mark.parametrize("who", ["Alice", "alice"])
def test_greet(harness_serve, who):
    print("LABEL", harness_serve("scenarios/reflex-black-box.toml").label)
"""

SAME_NAME = """
def test_same(harness_serve):
    harness_serve("scenarios/reflex-black-box.toml")
"""


def test_two_tests_never_share_a_golden(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    (pytester.path / "scenarios").mkdir()
    shutil.copy(SCENARIO, pytester.path / "scenarios" / "reflex-black-box.toml")
    # Parameters that differ in case only: the labels differ (a hash of each node id).
    pytester.makepyfile(test_labels=LABELS)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", "test_labels.py")
    labels = sorted(re.findall(r"LABEL (\S+)", run.stdout.str()))
    assert len(labels) == 2 and labels[0] != labels[1], labels
    assert all(label.startswith("test_greet-alice-") for label in labels), labels
    # The same test name in two modules: the second is refused, naming both.
    pytester.makepyfile(test_one=SAME_NAME, test_two=SAME_NAME)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_one.py", "test_two.py")
    run.stdout.fnmatch_lines([
        "*test_two.py::test_same and test_one.py::test_same both serve*share one golden*",
    ])



REPLAYS = '''
from openai import OpenAI
from test_agent import agent_loop


def test_one_replay(harness_serve):
    served = harness_serve("cassettes", cassettes_only=True)
    agent_loop(OpenAI(base_url=served.openai_base_url, api_key="harness"), defence=False)


def test_another_replay_of_the_same_cassette(harness_serve):
    served = harness_serve("cassettes", cassettes_only=True)
    agent_loop(OpenAI(base_url=served.openai_base_url, api_key="harness"), defence=False)


def test_a_changed_agent(harness_serve):
    served = harness_serve("cassettes", cassettes_only=True)
    agent_loop(OpenAI(base_url=served.openai_base_url, api_key="harness"), defence=True)
'''

RECORD = '''
from openai import OpenAI
from test_agent import agent_loop

agent_loop(OpenAI(), defence=False)
'''


def test_cassettes_replayed_by_their_recording_alone(pytester, monkeypatch):
    # docs/in-your-tests.md: `cassettes_only=True` judges a replay by its recording alone, so
    # any number of tests replay one cassette with no golden to accept.
    monkeypatch.delenv("CI", raising=False)
    (pytester.path / "scenarios").mkdir()
    shutil.copy(SCENARIO, pytester.path / "scenarios" / "reflex-black-box.toml")
    pytester.makepyfile(test_agent=INNER, record=RECORD)
    # Record the loop through `harness proxy`, the scenario served as its provider.
    upstream = subprocess.Popen(
        [find_harness_bin(), "serve", "scenarios/reflex-black-box.toml", "--until-eof"],
        cwd=pytester.path, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    base = upstream.stdout.readline().decode().strip()[len("listening on "):]
    env = {**os.environ, "OPENAI_API_KEY": "harness"}
    subprocess.run([find_harness_bin(), "proxy", "--upstream", base + "/v1", "--out", "cassettes",
                    "--", sys.executable, "record.py"], cwd=pytester.path, env=env, check=True)
    upstream.stdin.close()
    upstream.wait()
    pytester.makepyfile(test_replays=REPLAYS)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_replays.py")
    run.assert_outcomes(passed=2, failed=1)
    run.stdout.fnmatch_lines(["*FAILED test_replays.py::test_a_changed_agent*"])
    assert not (pytester.path / "snapshots").exists()


DOC = Path(__file__).resolve().parents[2] / "docs" / "in-your-tests.md"

# The user's own loop the documented example calls: the openai SDK, its one tool, run until
# the model answers (`answer_at_once` skips the tool: the loop that does not do its job).
RUN_MY_AGENT = '''
import json

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city today.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


def run_my_agent(client, answer_at_once=False):
    messages = [{"role": "user", "content": "What is the weather in Paris today?"}]
    for _ in range(10):
        message = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls or answer_at_once:
            return message.content
        for call in message.tool_calls:
            city = json.loads(call.function.arguments).get("city", "?")
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": f"Sunny in {city}."})
'''


def test_the_documented_example_runs_in_a_project_init_made(pytester, monkeypatch):
    # docs/in-your-tests.md's pytest example, verbatim, in a folder `harness init` set up:
    # no golden at first (fails, the pending golden written), green once accepted, and a loop
    # that skips its tool fails with harness's report.
    monkeypatch.delenv("CI", raising=False)
    harness = find_harness_bin()
    subprocess.run([harness, "init"], cwd=pytester.path, check=True, capture_output=True)
    example = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S).group(1)
    assert 'harness_serve("scenarios/first.toml"' in example, example
    pytester.makepyfile(test_doc=RUN_MY_AGENT + example)
    first = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(["FAIL first@my-agent  no golden yet*"])
    assert (pytester.path / "snapshots" / "first@my-agent.snap.new").is_file()
    subprocess.run([harness, "accept"], cwd=pytester.path, check=True, capture_output=True)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    # The same test of a loop that answers without running its tool.
    lazy = example.replace("run_my_agent(client)", "run_my_agent(client, answer_at_once=True)")
    pytester.makepyfile(test_doc=RUN_MY_AGENT + lazy)
    third = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    third.assert_outcomes(failed=1)
    # The report the page shows for it, line for line.
    report = re.search(r"```text\n(harness serve: FAILED.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    third.stdout.fnmatch_lines([line.replace("[", "[[]") for line in report.group(1).splitlines() if line])
