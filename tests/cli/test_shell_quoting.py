"""Every command moe-oracle prints for pasting is shell-quoted: pasted, it runs nothing and gives the argv back.

The property test quotes arbitrary words; the plan test builds every generated example plan (docs/plans) for
both engines with the model read from a directory with a hostile name (``$()``, backticks, ``;``, newlines,
quotes, unicode), then hands each printed command to a real ``bash`` whose engine binaries are stubs that
print their argv: the argv must come back exactly (placeholders filled), and the canary the name tries to
create must not exist.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moe_oracle.launch.build import build_plan
from moe_oracle.launch.examples import ENGINES, EXAMPLES
from moe_oracle.shell import shell_assign, shell_join, shell_quote
from tests.cli.runner import cli

PRESETS = Path(__file__).resolve().parents[2] / "moe_oracle" / "presets"
#: Each name tries to run ``touch CANARY`` (or to change the argv) if a shell ever evaluates it.
HOSTILE_NAMES = (
    "m$(touch CANARY)",
    "m`touch CANARY`",
    "m${HOME}$(touch CANARY)",
    "m;touch CANARY;#",
    "m\ntouch CANARY\n",
    "m'$(touch CANARY)'\"`touch CANARY`\"",
    "m ${HEAD_NODE_IP} && touch CANARY",
    "møde\u200b|touch CANARY",
)
PLACEHOLDER_VALUES = {"HEAD_NODE_IP": "10.0.0.1", "REPLICA0_HEAD_IP": "10.0.0.2", "REPLICA1_HEAD_IP": "10.0.0.3"}

words = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=40)


def _split(text: str) -> list[str]:
    """The words a shell reads from ``text``: shlex's, or bash's for ANSI-C quoting (``$'\\x1b'``: a control or
    bidi character, which must not be printed raw; shlex does not read that quoting)."""
    if "$'" not in text:
        return shlex.split(text)
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    done = subprocess.run(
        [bash, "-c", "printf '%s\\0' " + text],
        capture_output=True,
        env={"LC_ALL": "C.UTF-8", "HEAD_NODE_IP": "${HEAD_NODE_IP}"},
    )
    return done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]


@settings(max_examples=300, deadline=None)
@given(st.lists(words, max_size=6))
def test_shell_join_round_trips_any_words(argv: list[str]) -> None:
    assert _split(shell_join(argv)) == argv


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.text(st.sampled_from("a '\\$\x1b\x07\r\x7f\x9b\u202e\u2066\n"), max_size=12), max_size=4))
def test_a_control_character_is_never_printed_raw_and_pastes_back(argv: list[str]) -> None:
    from moe_oracle.terminal_text import UNSAFE

    printed = shell_join(argv)
    assert not UNSAFE.search(printed), repr(printed)
    assert _split(printed) == argv


@settings(max_examples=200, deadline=None)
@given(words, words)
def test_placeholder_word_keeps_only_the_placeholder_expandable(head: str, tail: str) -> None:
    word = head + "${HEAD_NODE_IP}" + tail
    quoted = shell_quote(word, placeholders=True)
    assert _split(quoted) == [word]
    assert '"${HEAD_NODE_IP}"' in quoted


def test_shell_assign_refuses_a_name_the_shell_would_run() -> None:
    assert shell_assign("VLLM_X", "a b") == "VLLM_X='a b'"
    with pytest.raises(ValueError):
        shell_assign("A;touch X", "1")


def _hostile_model(tmp_path: Path, preset: str, name: str) -> Path:
    target = tmp_path / "models" / name
    target.mkdir(parents=True)
    for file in (PRESETS / preset.replace("/", "--")).iterdir():
        if file.suffix == ".json":
            shutil.copy(file, target / file.name)
    return target


def _bash_argv(shell_text: str, cwd: Path, placeholders: dict[str, str]) -> list[str]:
    """What ``bash`` hands the engine binary when ``shell_text`` is pasted (the binary a stub)."""
    stubs = 'vllm() { printf "%s\\0" vllm "$@"; }\npython3() { printf "%s\\0" python3 "$@"; }\n'
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), **placeholders}
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", stubs + shell_text],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=30,
        check=True,
    )
    return done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_every_example_plan_with_a_hostile_model_name_runs_nothing_when_pasted(tmp_path: Path, name: str) -> None:
    seen = 0
    for example in EXAMPLES:
        model = _hostile_model(tmp_path, example.model, name)
        for engine in ENGINES:
            plan = build_plan(dataclasses.replace(example.request(engine), model=str(model)))
            for cmd in plan.commands:
                filled = [
                    PLACEHOLDER_VALUES[w[2:-1].split("}")[0]] + w[w.index("}") + 1 :]
                    if i in cmd.placeholder_words
                    else w
                    for i, w in enumerate(cmd.argv)
                ]
                env_words = [f"{k}={v}" for k, v in cmd.env]
                # shlex does not join lines: drop the " \\<newline>" continuations the plan prints between flags
                assert shlex.split(cmd.shell().replace(" \\\n", " ")) == env_words + list(cmd.argv)
                assert str(model) in cmd.argv or f"--model-path={model}" in cmd.argv
                assert _bash_argv(cmd.shell(), tmp_path, PLACEHOLDER_VALUES) == filled
                seen += 1
        shutil.rmtree(model)
    assert seen >= 2 * len(EXAMPLES)
    assert not (tmp_path / "CANARY").exists()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_serve_dry_run_line_is_shell_quoted(tmp_path: Path) -> None:
    model = _hostile_model(tmp_path, "deepseek-ai/DeepSeek-V4-Flash", HOSTILE_NAMES[2])
    hostile = "${HOME}$(touch CANARY)"
    done = cli(
        *["serve", str(model), "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--dry-run"],
        # (the hostile value was --all2all-backend's: issue 30 validates that against vLLM's backends, so it
        # goes in an engine argument after -- now)
        *["--", "--served-model-name", hostile, "--seed", "8192;touch CANARY"],
    )
    assert done.code == 0, done.err
    line = next(x for x in done.out.splitlines() if x.startswith("dry run: would exec"))
    text = line.split("): ", 1)[1]
    argv = shlex.split(text)
    assert str(model) in argv and hostile in argv and "8192;touch CANARY" in argv
    bash_argv = _bash_argv(text, tmp_path, {})
    assert bash_argv[0] == "vllm" and str(model) in bash_argv and hostile in bash_argv
    assert not (tmp_path / "CANARY").exists()


def test_serve_fills_only_its_own_placeholders(tmp_path: Path) -> None:
    """A model directory named ``m${HOME}`` is not filled from the environment; ``${HEAD_NODE_IP}`` is."""
    from moe_oracle.cli.cmd_serve import _fill

    argv = ["vllm", "serve", "m${HOME}", "--data-parallel-address", "${HEAD_NODE_IP}"]
    env = {"HOME": "/root", "HEAD_NODE_IP": "10.0.0.1"}
    assert _fill(argv, (4,), env, {}) == ["vllm", "serve", "m${HOME}", "--data-parallel-address", "10.0.0.1"]


def test_env_key_that_is_not_a_shell_name_is_refused() -> None:
    done = cli("plan", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--engine", "vllm", "--env", "A;touch X=1")
    assert done.code == 2 and "shell variable name" in done.err and len(done.err.strip().splitlines()) == 1
