"""Fuzzing the other readers: decision records (select --replay), advisory files (--advisories), workloads.

Like tests/model/test_fuzz.py: deterministic (``derandomize=True``), and every example must end in a
documented exit code other than 1 (internal error), in well under a second of decision time. The
records are real ``select --json`` documents, mutated at random paths; the files go through the real
CLI entry point (``main``) in this process, so a traceback anywhere is an exit 1 and fails the test.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import tempfile
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moe_oracle.cli.app import main
from moe_oracle.errors import BadInputError
from moe_oracle.inputs import check_workload_points, parse_workload
from tests.fuzz_helpers import json_paths, mutate

FUZZ = settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
DOCUMENTED = {0, 2, 3, 5}

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["vllm", "sglang", "none", "deep_gemm_mega_moe", "mxfp4", "b200", "sm100", "1:inf"])
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=16,
)


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _run_file(text: str, args_for) -> tuple[int, str, str]:
    fd, path = tempfile.mkstemp(suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        start = time.perf_counter()
        result = _run(args_for(path))
        assert time.perf_counter() - start < 20, "too slow: a hang in the making"
        return result
    finally:
        os.unlink(path)


def _check(result: tuple[int, str, str]) -> None:
    code, _out, err = result
    assert code in DOCUMENTED, (code, err[-1500:])
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err


def _record() -> dict:
    code, out, err = _run(["select", "zai-org/GLM-5-FP8", "--device", "h200", "--dp", "8", "--ep", "8", "--json"])
    assert code == 0, err
    return json.loads(out)


RECORD = _record()


INPUT_PATHS = [p for p in json_paths(RECORD["inputs"], 3, ("inputs",)) if len(p) <= 6]


@st.composite
def mutated_record(draw):
    doc = copy.deepcopy(RECORD)
    mutate(draw, doc, INPUT_PATHS, scale=st.sampled_from([0, -1, 10**9, 1e300, -0.5]), values=json_values)
    return doc


@FUZZ
@given(mutated_record())
def test_mutated_records_replay_or_exit_documented(doc):
    _check(_run_file(json.dumps(doc), lambda p: ["select", "--replay", p, "--json"]))


workload_points = st.lists(st.tuples(scalars, scalars), max_size=4) | json_values


@FUZZ
@given(workload_points, st.one_of(st.none(), st.text(max_size=10), json_values))
def test_record_workloads(points, label):
    doc = copy.deepcopy(RECORD)
    if isinstance(points, list):
        points = [list(p) if isinstance(p, tuple) else p for p in points]
    doc["inputs"]["workload"] = {"points": points, "label": label}
    _check(_run_file(json.dumps(doc), lambda p: ["select", "--replay", p]))


ADVISORY = {
    "id": "SITE-1",
    "title": "site advisory",
    "link": "https://example.invalid/site-1",
    "backend": "deep_gemm_mega_moe",
}
advisory_fields = st.fixed_dictionaries(
    {},
    optional={
        "variant": scalars,
        "engine": scalars,
        "engine_versions": scalars | st.sampled_from([">=0.33", "<1", "==bad", "~=0.5.2"]),
        "library": scalars | st.sampled_from(["deep_gemm", "aiter"]),
        "library_versions": scalars,
        "library_symbols": json_values,
        "models": json_values | st.lists(st.sampled_from(["glm*", "*", "[", "deepseek_v4"]), max_size=3),
        "archs": json_values,
        "min_ep": scalars,
        "max_ep": scalars,
        "evidence": scalars,
        "id": scalars,
    },
)


@FUZZ
@given(advisory_fields, st.sampled_from([1, 2, "1", None]), st.booleans())
def test_random_advisory_files(fields, schema, wrap):
    entry = {**ADVISORY, **fields}
    body = {"schema": schema, "advisories": [entry]} if wrap else entry
    text = json.dumps(body)
    _check(
        _run_file(
            text,
            lambda p: ["select", "zai-org/GLM-5-FP8", "--device", "b200", "--dp", "8", "--ep", "8", "--advisories", p],
        )
    )


@FUZZ
@given(json_values)
def test_any_json_as_an_advisory_file_or_record(value):
    text = json.dumps(value)
    _check(_run_file(text, lambda p: ["select", "zai-org/GLM-5", "--device", "h200", "--advisories", p]))
    _check(_run_file(text, lambda p: ["select", "--replay", p]))


@FUZZ
@given(st.text(max_size=30) | st.lists(st.tuples(st.integers(-5, 10**7), st.floats()), max_size=3).map(
    lambda pts: ",".join(f"{t}:{w}" for t, w in pts)))  # fmt: skip
def test_random_workload_flags(text):
    try:
        workload = parse_workload(text, 8192, 32)
    except BadInputError as exc:
        assert "\n" not in str(exc) and "--workload" in str(exc)
        return
    json.dumps([list(p) for p in workload.points], allow_nan=False)
    assert all(1 <= t <= 8192 and w > 0 for t, w in workload.points)


@FUZZ
@given(st.lists(st.tuples(scalars, scalars), max_size=5))
def test_random_workload_points(points):
    try:
        checked = check_workload_points(points, 8192)
    except ValueError as exc:
        assert str(exc)
        return
    json.dumps(checked, allow_nan=False)


#: The manual flags and a valid value of each; a drawn flag gets a hostile spelling instead.
MANUAL_VALID = {
    "--hidden-size": "4096",
    "--moe-intermediate-size": "2048",
    "--num-experts": "256",
    "--top-k": "8",
    "--weight-format": "mxfp4",
    "--num-shared-experts": "1",
    "--weight-block": "1x32",
    "--num-layers": "4",
    "--shared-expert-width": "2048",
    "--scoring": "softmax",
    "--activation": "swigluoai:1.702,7",
}
#: Spellings a person (or a paste) produces: signs, unicode digits (``isdigit()`` passes ``⁸``), huge numbers.
manual_values = (
    st.sampled_from(["+-4096", "⁸", "٤٠٩٦", "1_0", "0x10", "4096.0", "1e3", "-1", "+8", " 8 ", "nan", "∞", "", "x"])
    | st.sampled_from(["swigluoai:nan,7", "swiglu-clamp:1e400", "gelu:", "relu2", "swigluoai:,", "SOFTMAX", "int4"])
    | st.integers(-(2**70), 2**70).map(str)
    | st.text(max_size=12)
)


@FUZZ
@given(st.dictionaries(st.sampled_from(sorted(MANUAL_VALID)), manual_values, min_size=1, max_size=3))
def test_hostile_manual_flag_values(changed):
    values = {**MANUAL_VALID, **changed}
    args = [part for flag, value in values.items() for part in (flag, value)]
    start = time.perf_counter()
    result = _run(["select", *args, "--device", "b200", "--dp", "8", "--ep", "8"])
    assert time.perf_counter() - start < 5
    _check(result)
    code, _out, err = result
    if any(not v.isascii() and any(c.isdigit() for c in v) for v in changed.values()):
        assert code == 2, err  # no flag takes a non-ASCII digit


#: Output targets an operator (or a script) names: devices, /proc, missing parents, files as directories,
#: names over the file system's limit; plus arbitrary names under a fresh directory.
special_targets = st.sampled_from(
    ["/dev/full", "/dev/null", "/proc/moe-oracle-x", "/proc/self/status", "{tmp}", "{tmp}/missing/x.md",
     "{tmp}/file/x.md", "{tmp}/" + "a" * 300, "{tmp}/" + "é" * 200, "{tmp}/a\nb", "{tmp}/$(touch X)"]
)  # fmt: skip
name_targets = st.text(
    st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=40
)
#: ``--docs`` targets that fail before the (slow) generation; a writable directory is covered by tests/report.
docs_targets = st.sampled_from(["/dev/full", "/dev/null", "/proc/moe-oracle-x", "{tmp}/file", "{tmp}/file/x"])


def _write_to(args_for, target: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        open(os.path.join(tmp, "file"), "w").close()
        code, _out, err = _run(args_for(target.replace("{tmp}", tmp)))
        assert code in (0, 2), err[-1500:]
        if code == 2:
            assert err.startswith("error: ") and err.count("\n") == 1, err
        assert not os.path.exists(os.path.join(tmp, "X"))


@FUZZ
@given(special_targets | name_targets.map(lambda n: "{tmp}/" + n))
def test_matrix_output_targets(target):
    _write_to(lambda path: ["matrix", "--models", "zai-org/GLM-5-FP8", "--devices", "h200", "-o", path], target)


@FUZZ
@given(docs_targets, st.sampled_from([("matrix", "--docs"), ("plan", "--examples")]))
def test_docs_and_examples_targets(target, command):
    _write_to(lambda path: [*command, path], target)


VISIBLE_PATHS = [p for p in json_paths({k: v for k, v in RECORD.items() if k != "inputs"}, 3) if len(p) <= 5]


@st.composite
def tampered_record(draw):
    """A record whose visible fields (not its inputs) were edited: what a reader sees, not what decides."""
    doc = copy.deepcopy(RECORD)
    mutate(draw, doc, VISIBLE_PATHS, scale=st.sampled_from([0, -1, 2, 10**9]), values=json_values)
    return doc


@FUZZ
@given(tampered_record())
def test_tampered_records_never_replay_as_identical(doc):
    """Exit 0 only when every field the tampered record still shows is what its inputs decide."""
    from moe_oracle.decide.record import covers

    code, out, err = _run_file(json.dumps(doc), lambda p: ["select", "--replay", p, "--json"])
    _check((code, out, err))
    if code == 0:
        replayed = json.loads(out)
        shown = {k: v for k, v in doc.items() if k not in ("inputs", "fingerprint", "oracle_version")}
        assert all(covers(v, replayed[k]) for k, v in shown.items() if k in replayed), err


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 300), st.booleans())
def test_advisory_counts(count, matching):
    """Any number of advisories: exit 0 within the bound (256), one exit-2 line beyond it; never slow."""
    from moe_oracle.decide.advisories import MAX_ADVISORIES

    entry = {"title": "t", "link": "https://example.org", "backend": "deep_gemm_mega_moe"}
    if matching:
        entry["variant"] = "sm90_fp8xfp8"
    text = json.dumps({"schema": 1, "advisories": [{"id": f"S-{i}", **entry} for i in range(count)]})
    start = time.perf_counter()
    code, _out, err = _run_file(
        text, lambda p: ["select", "zai-org/GLM-5-FP8", "--device", "h200", "--dp", "8", "--ep", "8", "--advisories", p]
    )
    assert time.perf_counter() - start < 10
    assert code == (2 if count > MAX_ADVISORIES else 0), err
