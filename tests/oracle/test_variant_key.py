"""VariantKey: the one parser of ``backend:variant`` (``--moe-backend``, plug-in pins, ``emulation:``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moe_oracle.decide.selection import Override
from moe_oracle.errors import BadInputError, ExitCode
from moe_oracle.registry import load_registry
from moe_oracle.rules.variant_key import Bare, VariantKey
from moe_oracle.runtime.build import resolve_variant


@pytest.mark.parametrize(
    ("text", "bare", "key"),
    [
        ("deep_gemm_mega_moe:sm100_fp8xfp4", Bare.BACKEND, VariantKey("deep_gemm_mega_moe", "sm100_fp8xfp4")),
        (" Deep-GEMM_mega_moe:SM100_FP8XFP4 ", Bare.BACKEND, VariantKey("deep_gemm_mega_moe", "sm100_fp8xfp4")),
        ("deep_gemm_mega_moe", Bare.BACKEND, VariantKey("deep_gemm_mega_moe", None)),
        ("sm90_fp8xfp8", Bare.VARIANT, VariantKey(None, "sm90_fp8xfp8")),
        ("*:sm90_fp8xfp8", Bare.BACKEND, VariantKey(None, "sm90_fp8xfp8")),
        ("emulation:sm90_fp8xfp8", Bare.BACKEND, VariantKey(None, "sm90_fp8xfp8", emulated=True)),
        ("emulation:aiter_mega_moe:mi355_a4w4", Bare.BACKEND, VariantKey("aiter_mega_moe", "mi355_a4w4", True)),
    ],
)
def test_parses_every_spelling(text: str, bare: Bare, key: VariantKey) -> None:
    assert VariantKey.parse(text, bare=bare) == key
    assert VariantKey.parse(str(key), bare=bare) == key  # str() spells the same key


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "is malformed (an empty name)"),
        ("deep_gemm_mega_moe:", "is malformed (an empty part)"),
        (":sm90_fp8xfp8", "is malformed (an empty part)"),
        ("a:b:c", "is malformed (more than one ':')"),
        ("deep gemm", "is malformed ('deep gemm')"),
        ("emulation:", "is malformed (an empty name)"),
    ],
)
def test_a_malformed_key_is_one_bad_input_error(text: str, needle: str) -> None:
    with pytest.raises(BadInputError) as err:
        VariantKey.parse(text)
    exc = err.value
    assert exc.exit_code is ExitCode.BAD_INPUT
    assert needle in exc.message and repr(text) in exc.message and exc.fix  # value, rule and fix
    assert "\n" not in exc.message


def test_a_pin_must_name_a_variant() -> None:
    with pytest.raises(BadInputError, match="names no variant"):
        VariantKey.parse("deep_gemm_mega_moe", subject="pin", require_variant=True)


def test_matches_the_registry_as_the_old_parsers_did() -> None:
    for spec in load_registry().variants:
        assert VariantKey.parse(spec.key).matches(spec)
        assert VariantKey.parse(spec.backend).matches(spec)
        assert VariantKey.parse(f"*:{spec.variant}").matches(spec)
        assert not VariantKey("no_such_backend", spec.variant).matches(spec)
        assert Override.parse(spec.key) == Override(spec.backend, spec.variant)


def test_override_and_runtime_go_through_it() -> None:
    with pytest.raises(BadInputError, match=r"--moe-backend 'x:' is malformed"):
        Override.parse("x:")
    with pytest.raises(BadInputError, match="names no backend"):
        Override.parse("*:sm90_fp8xfp8")
    with pytest.raises(BadInputError, match="is malformed"):
        resolve_variant("a:b:c")
    spec, emulated = resolve_variant("emulation:sm90_fp8xfp8")
    assert spec.variant == "sm90_fp8xfp8" and emulated


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=80), st.from_regex(r"(emulation:)?[a-zA-Z0-9_*: .+-]{0,40}", fullmatch=True)))
def test_fuzz_parse_is_a_key_or_one_bad_input_error(text: str) -> None:
    for bare in Bare:
        try:
            key = VariantKey.parse(text, bare=bare)
        except BadInputError as exc:
            assert exc.exit_code is ExitCode.BAD_INPUT and "\n" not in exc.message and exc.fix
        else:
            assert key.backend is not None or key.variant is not None
            assert VariantKey.parse(str(key), bare=bare) == key
