"""Fixes right for the case (issue 32, Why 7), over every preset and the MXFP4-expert fixtures x h100, h200, b200,
gb200, mi355x x every engine:

- a candidate's fix that names a variant the same answer refuses says so (``here sm90_fp8xfp4 (SHAPE_UNSUPPORTED)
  is refused too``): no fix recommends a refused variant unmarked;
- MXFP4 experts never get the FP8 advice (``FP8 ... FP32 scales``, ``runs the checkpoint as stored``);
- the ARCH_UNSUPPORTED summary under select's table names each candidate once, a conversion candidate as such
  (``... after mxfp4->fp8_block``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import moe_oracle
from moe_oracle.cli.app import main
from moe_oracle.decide.refused_fixes import REFUSED_TOO, refused_named
from moe_oracle.errors import OracleError

ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted(p.name.replace("--", "/", 1) for p in (ROOT / "moe_oracle" / "presets").iterdir() if p.is_dir())
MXFP4 = [f"tests/fixtures/models/{n}" for n in ("openai--gpt-oss-120b", "openai--gpt-oss-20b", "moonshotai--Kimi-K3")]
DEVICES = ("h100", "h200", "b200", "gb200", "mi355x")
ENGINES = ("none", "vllm", "sglang")


def _selection(model: str, device: str, engine: str):  # type: ignore[no-untyped-def]
    try:
        return moe_oracle.select(model, device=device, engine=engine)
    except OracleError as exc:
        return getattr(exc, "selection", None)


@pytest.mark.parametrize("model", PRESETS + MXFP4)
def test_no_fix_names_a_refused_variant_unmarked(model: str, capsys: pytest.CaptureFixture[str]) -> None:
    problems = []
    for device in DEVICES:
        for engine in ENGINES:
            selection = _selection(model, device, engine)
            if selection is None:
                continue
            for group in selection.to_dict()["layer_groups"]:
                cands = group["candidates"] + group["conversion_candidates"]
                runs = {c["variant"] for c in cands if c["eligible"]}
                refused = {c["variant"]: "" for c in cands if c["variant"] not in runs}
                for c in cands:
                    for r in c["reasons"]:
                        text = r["remediation"] or ""
                        head, _, tail = text.rpartition(f"; {REFUSED_TOO} ")
                        named = refused_named(head if head else text, refused, c["variant"])
                        missing = [v for v in named if not re.search(rf"\b{re.escape(v)} \(", tail)]
                        if missing or (not head and named):
                            problems.append(f"{device}/{engine} {c['backend']}:{c['variant']} names {named}: {text}")
                        if group["weight_format"] == "mxfp4" and re.search(r"FP32 scales|as stored", text, re.I):
                            problems.append(f"{device}/{engine} MXFP4 experts get FP8 advice: {text}")
            main(["select", model, "--device", device, "--engine", engine])
            out = capsys.readouterr().out.replace("\n  ", " ")
            labels = {
                c["backend"] + ":" + c["variant"] for g in selection.to_dict()["layer_groups"] for c in g["candidates"]
            }
            for m in re.finditer(r"ARCH_UNSUPPORTED on \w+: (.*?) \(--all-reasons", out):
                names = m.group(1).split(", ")
                if len(names) != len(set(names)):
                    problems.append(f"{device}/{engine} summary names a candidate twice: {m.group(1)}")
                for name in names:
                    if name.split(" after ")[0] not in labels:
                        problems.append(f"{device}/{engine} summary names {name!r}, not a candidate")
    assert not problems, "\n".join(problems[:20])
