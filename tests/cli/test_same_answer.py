"""Same question, same answer, whichever command asks it (issue 20).

For each question of the table, ``select --json``, ``plan --json``, ``serve --dry-run --json`` and the matrix
cell of the same question (``matrix --models M --devices D --topologies T --engine E <the same flags>``) give
the same chosen variants, the same rejected candidates (the chosen never among them), the same advisories and
the same fingerprint. A deployment that cannot hold its weights is refused with one line by select, plan and
serve (exit 7) and starred by no matrix cell.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli.runner import cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "models"
FLASH, PRO = "deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Pro"
GLM5, GLM5_FP8 = "zai-org/GLM-5", "zai-org/GLM-5-FP8"
QWEN_FP8 = str(FIXTURES / "Qwen--Qwen3-235B-A22B-FP8")
MINIMAX = str(FIXTURES / "MiniMaxAI--MiniMax-M2.5")
GPT_OSS = str(FIXTURES / "openai--gpt-oss-120b")
MANUAL = "manual"  # written per test: a manual description whose "model" names its checkpoint
_LAYOUT = ("--dp", "--ep", "--tp", "--nodes")


@dataclass(frozen=True)
class Q:
    """One question: MODEL, device, engine, matrix topology, and the other flags (passed to every command)."""

    model: str
    device: str
    engine: str
    topology: str
    flags: tuple[str, ...] = ()
    fits: bool = True

    @property
    def layout(self) -> tuple[str, ...]:
        return {"dp8ep8": ("--dp", "8", "--ep", "8"), "tp8": ("--tp", "8")}[self.topology]


QUESTIONS = [
    Q(FLASH, "h200", "vllm", "dp8ep8"),
    Q(FLASH, "h200", "sglang", "dp8ep8", ("--workload", "decode")),
    Q(FLASH, "h200", "sglang", "dp8ep8", ("--no-convert",)),
    Q(FLASH, "b200", "vllm", "dp8ep8", ("--max-num-seqs", "64")),
    Q(FLASH, "mi355x", "vllm", "dp8ep8", ("--software", "all")),  # MOA-2026-001 rejects aiter here (KNOWN_BAD)
    Q(FLASH, "mi355x", "vllm", "dp8ep8"),  # ... and is noted next to the chosen aiter path here
    Q(PRO, "b200", "sglang", "dp8ep8"),
    Q(PRO, "h100", "vllm", "dp8ep8", fits=False),
    Q(GLM5_FP8, "h200", "vllm", "dp8ep8"),
    Q(GLM5_FP8, "b200", "sglang", "dp8ep8", ("--allow-lossy-conversion",)),
    Q(GLM5, "h200", "vllm", "dp8ep8", ("--allow-lossy-conversion",), fits=False),
    Q(GLM5, "b200", "sglang", "dp8ep8", ("--workload", "prefill", "--memory-fraction", "0.85"), fits=False),
    Q(QWEN_FP8, "h200", "sglang", "dp8ep8"),
    Q(MINIMAX, "b200", "vllm", "tp8"),
    Q(GPT_OSS, "h100", "vllm", "dp8ep8", ("--decode-tokens", "16")),
    Q(MANUAL, "h200", "vllm", "dp8ep8"),
]


@dataclass(frozen=True)
class Answer:
    chosen: tuple[tuple[str, str | None], ...]  # per built layer group: (backend:variant, converted from)
    rejected: frozenset[str]  # the main group's rejected candidates (labels)
    advisories: tuple[str, ...]  # ids of the advisories noted next to the chosen variants
    fingerprint: str


def _advisory_ids(lines: list[str]) -> tuple[str, ...]:
    return tuple(m.group(1) for line in lines if (m := re.match(r"advisory (\S+) ", line)))


def _converted_from(label: str | None) -> str | None:
    return label.split(" after ", 1)[1].split("->")[0] if label and " after " in label else None


def _from_record(doc: dict[str, Any]) -> Answer:
    chosen = []
    for g in doc["layer_groups"]:
        c = g["chosen"]
        conv = c.get("conversion") if c else None
        chosen.append((f"{c['backend']}:{c['variant']}", conv["from"] if conv else None) if c else ("-", None))
    main = doc["layer_groups"][0]
    return Answer(tuple(chosen), frozenset(main["rejected"]), _advisory_ids(doc["advisory_notes"]), doc["fingerprint"])


def _from_plan(doc: dict[str, Any]) -> Answer:
    chosen = tuple(
        (g["chosen"] or "-", _converted_from(g.get("chosen_label")))
        for g in doc["layer_groups"]
        if g.get("built", True)
    )
    rejected = frozenset(r["candidate"] for r in doc["rejected"])
    assert _from_record(doc["decision"]).fingerprint == doc["fingerprint"]
    return Answer(chosen, rejected, _advisory_ids(doc["notes"]), doc["fingerprint"])


def _run(*args: str) -> dict[str, Any]:
    r = cli(*args)
    assert r.code == 0, (args, r.err)
    return json.loads(r.out)


@pytest.fixture(scope="module")
def manual_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A manual description (``moe-oracle model --json`` shape) that names its checkpoint."""
    doc = _run(
        "model", "--hidden-size", "4096", "--moe-intermediate-size", "2048", "--num-experts", "128", "--top-k", "8",
        "--weight-format", "fp8_block", "--num-layers", "40", "--json",
    )  # fmt: skip
    doc["model"] = "acme/Manual-MoE-FP8"
    path = tmp_path_factory.mktemp("manual") / "manual-moe.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "q", QUESTIONS, ids=lambda q: f"{Path(q.model).name}-{q.device}-{q.engine}-{'-'.join(q.flags)}"
)
def test_select_plan_serve_and_the_matrix_give_one_answer(q: Q, manual_model: str):
    model = manual_model if q.model == MANUAL else q.model
    flags = ("--device", q.device, *q.layout, "--engine", q.engine, *q.flags)
    matrix_args = [f for f in q.flags if f not in ("--software",)]
    software = q.flags[q.flags.index("--software") + 1] if "--software" in q.flags else None
    if software:
        matrix_args = [f for f in matrix_args if f != software]
    matrix = _run(
        "matrix", "--models", model, "--devices", q.device, "--topologies", q.topology, "--engine", q.engine,
        *(["--software", software] if software else []), *matrix_args, "--format", "json",
    )  # fmt: skip
    (scenario,) = matrix["scenarios"]
    cells = [c for c in matrix["cells"] if c["scenario"] == scenario["scenario"]]
    if not q.fits:  # one refusal (exit 7, the same line) from select, plan and serve; no star in the matrix
        assert scenario["memory_fit"] == "DOES NOT FIT" and scenario["scenario_choice"] is None
        assert not any(c["chosen"] for c in cells)
        refused = cli("select", model, *flags, "--json")
        assert refused.code == 7, refused.err
        message = json.loads(refused.out)["message"]
        assert message.startswith("[DEPLOYMENT_MEMORY_EXCEEDED]")
        for command in (("plan", model, *flags, "--json"), ("serve", model, *flags, "--dry-run", "--json")):
            r = cli(*command)
            assert r.code == 7 and json.loads(r.out)["message"] == message, (command, r.out)
        return

    record = _run("select", model, *flags, "--json")
    selected = _from_record(record)
    verdict = record["fit"]["verdict"]
    assert verdict == scenario["memory_fit"] and verdict.startswith(("FITS", "ROUTED EXPERTS FIT"))
    for label in selected.rejected:  # the chosen never appears among the rejected
        assert label not in {c for c, conv in selected.chosen if conv is None}
    assert scenario["fingerprint"] == selected.fingerprint
    stored_rejected = {label for label in selected.rejected if " after " not in label}
    assert {c["key"] for c in cells if c["verdict"] == "rejected"} == stored_rejected
    main_key = selected.chosen[0][0]
    assert scenario["scenario_choice"] == (None if main_key == "-" else main_key + _matrix_suffix(cells, main_key))
    starred = [c for c in cells if c["chosen"]]
    assert [(c["key"], _converted_from_matrix(c)) for c in starred] == ([] if main_key == "-" else [selected.chosen[0]])
    assert _advisory_ids(scenario["advisory_notes"]) == selected.advisories

    for command in (("plan", model, *flags, "--json"), ("serve", model, *flags, "--dry-run", "--json")):
        r = cli(*command)
        assert r.code == 0, (command, r.err)
        assert _from_plan(json.loads(r.out)) == selected, command


def _converted_from_matrix(cell: dict[str, Any]) -> str | None:
    conversion = cell["groups"][0]["conversion"]
    return conversion.split("->")[0] if conversion else None


def _matrix_suffix(cells: list[dict[str, Any]], key: str) -> str:
    conversion = next(c for c in cells if c["key"] == key)["groups"][0]["conversion"]
    return f"+convert({conversion})" if conversion else ""


def test_the_table_covers_what_the_issue_names():
    models = {Path(q.model).name for q in QUESTIONS}
    assert {"DeepSeek-V4-Flash", "DeepSeek-V4-Pro", "GLM-5", "GLM-5-FP8", MANUAL} <= models
    assert {"Qwen--Qwen3-235B-A22B-FP8", "MiniMaxAI--MiniMax-M2.5", "openai--gpt-oss-120b"} <= models
    assert {q.device for q in QUESTIONS} >= {"h200", "b200", "mi355x", "h100"}
    assert {q.engine for q in QUESTIONS} == {"vllm", "sglang"}
    flags = {f for q in QUESTIONS for f in q.flags}
    assert {"--allow-lossy-conversion", "--no-convert", "--workload"} <= flags
    assert len(QUESTIONS) >= 12


def test_a_manual_description_without_a_checkpoint_is_refused_by_plan_and_serve():
    manual = ("--hidden-size", "4096", "--moe-intermediate-size", "2048", "--num-experts", "128", "--top-k", "8")
    flags = (*manual, "--weight-format", "fp8_block", "--device", "h200", "--engine", "vllm")
    assert cli("select", *flags).code == 0
    for command in (("plan", *flags), ("serve", *flags, "--dry-run")):
        r = cli(*command)
        assert r.code == 2 and r.out == ""
        assert (
            "names no checkpoint for the engine to load" in r.err
            and "Fix: name the checkpoint the engine loads with --checkpoint" in r.err
        )


def test_a_layout_across_domains_names_both_answers_in_every_command():
    """EP16 over two 8-GPU H200 nodes: select (and the matrix cell) judge the layout as given; plan and serve run
    two DP8+EP8 replicas, whose decision is select's for one replica. Each output names the other's fingerprint."""
    flags = ("--device", "h200", "--nodes", "2", "--dp", "16", "--ep", "16", "--engine", "vllm")
    record = _run("select", FLASH, *flags, "--json")
    replica = _run("select", FLASH, "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--json")
    assert record["replicas"]["fingerprint"] == replica["fingerprint"] and record["replicas"]["count"] == 2
    for command in (("plan", FLASH, *flags, "--json"), ("serve", FLASH, *flags, "--dry-run", "--json")):
        plan = _run(*command)
        assert plan["replicas"]["adopted"] and plan["replicas"]["refused_fingerprint"] == record["fingerprint"]
        assert _from_plan(plan) == _from_record(replica)
    matrix = _run(
        "matrix", "--models", FLASH, "--devices", "h200", "--topologies", "ep16x2", "--engine", "vllm",
        "--format", "json",
    )  # fmt: skip
    assert matrix["scenarios"][0]["fingerprint"] == record["fingerprint"]
    text = cli("select", FLASH, *flags)
    assert "replicas: plan and serve run 2 replicas of DP8+EP8" in text.out and replica["fingerprint"] in text.out
