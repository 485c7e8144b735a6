"""Routed- and shared-expert weight formats from ``quantization_config`` / ``hf_quant_config.json``.

The format of one layer's experts is decided in this order (the first rule that applies wins,
and :attr:`QuantSpec.source` records which key decided):

1. a per-layer map (ModelOpt ``quantized_layers``): listed modules take the listed algorithm,
   unlisted ones keep the checkpoint's base format;
2. ``modules_to_not_convert`` (HF FP8): listed modules stay BF16;
3. ``ignore`` / ``exclude_modules`` (ModelOpt, compressed-tensors): matched modules keep the
   base format (MXFP4 for a DeepSeek V4 ``expert_dtype: "fp4"`` checkpoint, BF16 otherwise);
4. ``moe_quant_algo`` (routed experts only), a ModelOpt ``quant_algo``, or the
   compressed-tensors ``config_groups`` entry whose ``targets`` match;
5. the base format: ``quant_method: fp8`` plus ``expert_dtype`` (``fp4`` -> MXFP4 g32 ue8m0,
   ``fp8`` -> FP8 blocks of ``weight_block_size`` with ``scale_fmt`` scales, float32 when
   absent), ``quant_method: mxfp4``, or BF16 when there is no quantization config at all.

An explicit NVFP4 rule (1 or 4) beats a contradicting ``expert_dtype``. A DeepSeek V4
checkpoint whose ``quant_method`` is ``fp8`` but which states no ``expert_dtype`` is never
assumed to be FP4: when a layer falls through to the base format, :class:`ModelConfigError`
says the format cannot be determined and how to state it.

Module names are matched by :mod:`._patterns` (RE2 regular expressions, globs, exact names and
prefixes, ``Linear``), under the wrapper prefixes of a multimodal checkpoint too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from moe_oracle.errors import ModelConfigError
from moe_oracle.model.adapters._formats import (
    bf16,
    fp8_block,
    fp8_channel,
    integer,
    mxfp4,
    mxfp8,
    nvfp4,
    with_source,
)
from moe_oracle.model.adapters._patterns import PatternSet, Site, deepseek_v4_site, hf_site, prefixes, wrapped
from moe_oracle.model.adapters._view import FIX_VALUE, ConfigView, is_int, json_type, show
from moe_oracle.model.types import QuantSpec, ScaleFormat

__all__ = ["QuantResolver", "Site", "deepseek_v4_site", "hf_site"]

_FIX_MANUAL = (
    "describe the model manually (a manual description JSON, or the manual flags of moe-oracle model/select: "
    "--hidden-size ... --weight-format)"
)


# ---------------------------------------------------------------------------------------------
# The resolver
# ---------------------------------------------------------------------------------------------

_METHODS = ("fp8", "modelopt", "modelopt_fp4", "compressed-tensors", "mxfp4", "awq", "gptq")
#: Integer weight-only methods: ``bits`` (AWQ also ``w_bit``) and ``group_size`` (AWQ ``q_group_size``).
_INTEGER_METHODS = ("awq", "gptq")


@dataclass
class _Group:
    name: str
    path: str
    targets: PatternSet
    weights: Any


class QuantResolver:
    """Decides routed- and shared-expert weight formats for one checkpoint.

    ``expert_dtype_required`` marks families (DeepSeek V4 / V4.1) whose ``quant_method: fp8``
    says nothing about the routed experts without ``expert_dtype``.
    """

    def __init__(self, view: ConfigView, hf_quant_config: Any, *, expert_dtype_required: bool) -> None:
        self.view = view
        self.model_id = view.model_id
        self.expert_dtype_required = expert_dtype_required
        self.multimodal = len(view.scopes) > 1  # the language model's keys sit under text_config

        found = view.lookup("quantization_config")
        self.qc: dict | None = None
        self.qc_path = view.path("quantization_config")
        if found is not None:
            self.qc_path, qc = found
            if not isinstance(qc, dict):
                raise view.error(self.qc_path, qc, f"a JSON {json_type(qc)}, expected an object")
            self.qc = qc or None

        self.hq: dict | None = None
        self.hq_path = "hf_quant_config"
        if hf_quant_config is not None:
            if not isinstance(hf_quant_config, dict):
                raise ModelConfigError(
                    f"{self.model_id}: hf_quant_config.json={show(hf_quant_config)} is a JSON "
                    f"{json_type(hf_quant_config)}; expected an object"
                )
            inner = hf_quant_config.get("quantization")
            if inner is not None:
                if not isinstance(inner, dict):
                    raise ModelConfigError(
                        f"{self.model_id}: hf_quant_config.quantization={show(inner)} is a JSON "
                        f"{json_type(inner)}; expected an object"
                    )
                self.hq, self.hq_path = inner or None, "hf_quant_config.quantization"
            elif hf_quant_config:
                self.hq = hf_quant_config

        self.method = self._method()
        self.expert_dtype = self._expert_dtype()
        self.layer_map = self._layer_map()
        self.not_convert = self._patterns("modules_to_not_convert", both=False)
        self.ignores = self._patterns("ignore", both=True) + self._patterns("exclude_modules", both=True)
        self.moe_algo = self._algo_spec("moe_quant_algo")
        self.algo = self._algo_spec("quant_algo") if self.method in ("modelopt", "modelopt_fp4") else None
        if self.method == "modelopt_fp4" and self.algo is None:
            self.algo = nvfp4(f"{self.qc_path}.quant_method=modelopt_fp4")
        self.groups = self._groups()
        self._base_routed_cache: QuantSpec | str | None = "unset"
        self._base_shared_cache: QuantSpec | None = None

    # -- reading ----------------------------------------------------------------------------

    def _get(self, key: str, *, both: bool = True) -> tuple[str, Any] | None:
        if self.qc is not None and self.qc.get(key) is not None:
            return f"{self.qc_path}.{key}", self.qc[key]
        if both and self.hq is not None and self.hq.get(key) is not None:
            return f"{self.hq_path}.{key}", self.hq[key]
        return None

    def _err(
        self, path: str, value: Any, expected: str, fix: str | None = None, *, limit: int = 80
    ) -> ModelConfigError:
        return ModelConfigError(
            f"{self.model_id}: {path}={show(value, limit)} is invalid: {expected}", fix=fix or FIX_VALUE
        )

    def _method(self) -> str | None:
        if self.qc is None:
            return "modelopt" if self.hq is not None else None
        found = self._get("quant_method", both=False)
        if found is None:
            producer = self.qc.get("producer")
            if self.qc.get("quant_algo") is not None or (
                isinstance(producer, dict) and producer.get("name") == "modelopt"
            ):
                return "modelopt"
            if self.qc.get("config_groups") is not None:
                return "compressed-tensors"
            raise ModelConfigError(
                f"{self.model_id}: {self.qc_path} has no quant_method; cannot tell how the weights are stored",
                fix="add quant_method (fp8, modelopt, compressed-tensors, mxfp4) or " + _FIX_MANUAL,
            )
        path, value = found
        if not isinstance(value, str) or value.lower() not in _METHODS:
            raise self._err(
                path,
                value,
                "expected one of " + ", ".join(_METHODS) + " (other quantization methods are not supported)",
                fix=_FIX_MANUAL,
            )
        return value.lower()

    def _expert_dtype(self) -> tuple[str, str] | None:
        outer = self.view.lookup("expert_dtype")
        inner = self._get("expert_dtype", both=False)
        for found in (outer, inner):
            if found is not None:
                path, value = found
                if value not in ("fp4", "fp8"):
                    raise self._err(path, value, 'expected "fp4" (MXFP4 experts) or "fp8" (FP8 block experts)')
        if outer is not None and inner is not None and outer[1] != inner[1]:
            raise ModelConfigError(
                f"{self.model_id}: {outer[0]}={show(outer[1])} contradicts {inner[0]}={show(inner[1])}",
                fix="keep one expert_dtype",
            )
        found = outer or inner
        return (found[0], found[1]) if found is not None else None

    def _patterns(self, key: str, *, both: bool) -> list[PatternSet]:
        sets = []
        if self.qc is not None and self.qc.get(key) is not None:
            sets.append(PatternSet(self.qc[key], path=f"{self.qc_path}.{key}", model_id=self.model_id))
        if both and self.hq is not None and self.hq.get(key) is not None:
            sets.append(PatternSet(self.hq[key], path=f"{self.hq_path}.{key}", model_id=self.model_id))
        return [s for s in sets if s]

    def _group_size(self, default: int) -> int:
        found = self._get("group_size")
        if found is not None:
            path, value = found
            if not is_int(value) or not 1 <= value <= 4096:
                raise self._err(path, value, "expected an integer in 1..4096 (quantization group size)")
            return value
        for group in self._raw_groups():
            weights = group[1].get("weights") if isinstance(group[1], dict) else None
            if isinstance(weights, dict) and is_int(weights.get("group_size")):
                return weights["group_size"]
        return default

    def _spec_for_algo(self, algo: Any, path: str, group_size: int | None) -> QuantSpec:
        if not isinstance(algo, str):
            raise self._err(path, algo, f"a JSON {json_type(algo)}, expected an algorithm name such as NVFP4")
        name = algo.upper()
        source = f"{path}={algo}"
        if name == "NVFP4":
            if group_size is not None and group_size != 16:
                raise self._err(path, algo, f"NVFP4 uses 16-element groups, but the group size is {group_size}")
            return nvfp4(source)
        if name == "MXFP4":
            return mxfp4(source)
        if name == "MXFP8":
            return mxfp8(source)
        raise self._err(
            path,
            algo,
            "the oracle reads NVFP4, MXFP4 and MXFP8 expert quantization here "
            "(per-tensor FP8 and integer schemes are not representable)",
            fix=_FIX_MANUAL,
        )

    def _algo_spec(self, key: str) -> QuantSpec | None:
        found = self._get(key)
        if found is None:
            return None
        path, value = found
        if isinstance(value, str) and value.upper() == "MIXED_PRECISION":
            if self.layer_map is None:
                raise self._err(
                    path,
                    value,
                    "MIXED_PRECISION needs a quantized_layers map saying which layers use which format",
                    fix="add quantized_layers or " + _FIX_MANUAL,
                )
            return None
        return self._spec_for_algo(value, path, self._group_size(16))

    def _layer_map(self) -> dict[str, QuantSpec] | None:
        found = self._get("quantized_layers")
        if found is None:
            return None
        path, value = found
        if not isinstance(value, dict):
            raise self._err(path, value, f"a JSON {json_type(value)}, expected an object of module -> format")
        specs: dict[str, QuantSpec] = {}
        for name, entry in value.items():
            where = f"{path}[{name}]"
            if not isinstance(entry, dict):
                raise self._err(where, entry, f"a JSON {json_type(entry)}, expected an object with quant_algo")
            size = entry.get("group_size")
            if size is not None and (not is_int(size) or not 1 <= size <= 4096):
                raise self._err(f"{where}.group_size", size, "expected an integer in 1..4096")
            algo = entry.get("quant_algo")
            if algo is None:
                raise ModelConfigError(f"{self.model_id}: {where}.quant_algo is missing; expected e.g. NVFP4")
            spec = self._spec_for_algo(algo, f"{where}.quant_algo", size)
            specs[name] = with_source(spec, f"{path} ({spec.format.value})")
        return specs

    def _raw_groups(self) -> list[tuple[str, Any]]:
        if self.qc is None:
            return []
        groups = self.qc.get("config_groups")
        if groups is None:
            return []
        if not isinstance(groups, dict):
            raise self._err(f"{self.qc_path}.config_groups", groups, f"a JSON {json_type(groups)}, expected an object")
        return list(groups.items())

    def _groups(self) -> list[_Group]:
        out = []
        for name, group in self._raw_groups():
            path = f"{self.qc_path}.config_groups.{name}"
            if not isinstance(group, dict):
                raise self._err(path, group, f"a JSON {json_type(group)}, expected an object")
            targets = group.get("targets")
            if targets is None:
                raise ModelConfigError(f"{self.model_id}: {path}.targets is missing; expected an array")
            weights = group.get("weights")
            if weights is not None and not isinstance(weights, dict):
                raise self._err(f"{path}.weights", weights, f"a JSON {json_type(weights)}, expected an object")
            out.append(_Group(name, path, PatternSet(targets, path=f"{path}.targets", model_id=self.model_id), weights))
        return out

    # -- formats ----------------------------------------------------------------------------

    def _fp8_block(self, why: str) -> QuantSpec:
        found = self._get("weight_block_size")
        if found is None:
            raise ModelConfigError(
                f"{self.model_id}: {self.qc_path}.weight_block_size is missing; FP8 weights ({why}) need "
                "a [rows, cols] scale block (per-tensor FP8 is not representable)",
                fix="add weight_block_size, e.g. [128, 128], or " + _FIX_MANUAL,
            )
        path, value = found
        if not isinstance(value, list) or len(value) != 2 or not all(is_int(v) and 1 <= v <= 4096 for v in value):
            raise self._err(path, value, "expected [rows, cols], two integers in 1..4096")
        scale_found = self._get("scale_fmt")
        scale = ScaleFormat.FP32
        scale_source = "float32 scales (no scale_fmt)"
        if scale_found is not None:
            spath, svalue = scale_found
            if svalue == "ue8m0":
                scale, scale_source = ScaleFormat.UE8M0, f"{spath}=ue8m0"
            elif svalue in ("fp32", "float32"):
                scale_source = f"{spath}={svalue}"
            else:
                raise self._err(spath, svalue, 'expected "ue8m0" or absent (float32 scales)')
        return fp8_block((value[0], value[1]), scale, f"{why}, {path}={value}, {scale_source}")

    def _from_expert_dtype(self) -> QuantSpec:
        assert self.expert_dtype is not None
        path, value = self.expert_dtype
        if value == "fp4":
            return mxfp4(f"{path}=fp4")
        return self._fp8_block(f"{path}=fp8")

    def base_routed(self) -> QuantSpec | None:
        """The routed-expert format of the checkpoint before any per-module rule (None: unknown)."""
        if self._base_routed_cache != "unset":
            return self._base_routed_cache  # type: ignore[return-value]
        spec: QuantSpec | None
        if self.method == "fp8":
            if self.expert_dtype is not None:
                spec = self._from_expert_dtype()
            elif self.expert_dtype_required:
                spec = None
            else:
                spec = self._fp8_block(f"{self.qc_path}.quant_method=fp8")
        elif self.method == "mxfp4":
            spec = mxfp4(f"{self.qc_path}.quant_method=mxfp4")
        elif self.method in _INTEGER_METHODS:
            spec = self._integer_method()
        elif self.method is None:
            spec = self._from_expert_dtype() if self.expert_dtype is not None else bf16("no quantization_config")
        else:
            spec = bf16(f"not quantized by {self.method}")
        self._base_routed_cache = spec
        return spec

    def _integer_method(self) -> QuantSpec:
        """AWQ / GPTQ: integer weights of ``bits`` (4 or 8) in groups of ``group_size`` (-1: per channel)."""
        found = self._get("bits", both=False) or self._get("w_bit", both=False)
        if found is None:
            raise ModelConfigError(
                f"{self.model_id}: {self.qc_path}.bits is missing; {self.method} weights need a bit width (4 or 8)",
                fix="add bits, or " + _FIX_MANUAL,
            )
        path, bits = found
        if bits not in (4, 8) or not is_int(bits):
            raise self._err(path, bits, "expected 4 or 8 (integer weight bits)")
        size_found = self._get("group_size", both=False) or self._get("q_group_size", both=False)
        size = size_found[1] if size_found is not None else 128
        if not is_int(size) or not (size == -1 or 1 <= size <= 4096):
            raise self._err(size_found[0] if size_found else self.qc_path, size, "expected -1 or 1..4096")
        return integer(bits, None if size == -1 else size, f"{self.qc_path}.quant_method={self.method}, {path}={bits}")

    def base_shared(self) -> QuantSpec:
        if self._base_shared_cache is None:
            if self.method == "fp8":
                self._base_shared_cache = self._fp8_block(f"{self.qc_path}.quant_method=fp8")
            elif self.method is None:
                self._base_shared_cache = bf16("no quantization_config")
            else:
                self._base_shared_cache = bf16(f"not quantized by {self.method}")
        return self._base_shared_cache

    def _undetermined(self, site: Site, reason: str) -> ModelConfigError:
        return ModelConfigError(
            f"{self.model_id}: the routed-expert weight format of {site.label} cannot be determined: "
            f"{self.qc_path}.quant_method is fp8 but expert_dtype is missing{reason} (DeepSeek V4 stores "
            "routed experts as MXFP4 or as FP8 blocks; a missing expert_dtype is never assumed to be fp4)",
            fix='add "expert_dtype": "fp4" (MXFP4) or "fp8" (FP8 blocks) to config.json, or ' + _FIX_MANUAL,
        )

    def _routed_base(self, site: Site, reason: str = "") -> QuantSpec:
        spec = self.base_routed()
        if spec is None:
            raise self._undetermined(site, reason)
        return with_source(spec, spec.source + reason) if reason else spec

    def _match_layer_map(self, names: Sequence[str]) -> QuantSpec | None:
        assert self.layer_map is not None
        for name in names:
            for prefix in prefixes(name):
                spec = self.layer_map.get(prefix)
                if spec is not None:
                    return spec
        return None

    def _match_group(self, names: Sequence[str]) -> QuantSpec | None:
        for by_class in (False, True):
            for group in self.groups:
                hit = group.targets.match(names) if by_class else group.targets.match_names(names)
                if hit is None:
                    continue
                if group.weights is None:
                    return None
                return self._spec_for_scheme(group, hit)
        return None

    def _spec_for_scheme(self, group: _Group, target: str) -> QuantSpec:
        w = group.weights
        path = f"{group.path}.weights"
        source = f"{group.path} (targets {target!r})"
        bits, kind = w.get("num_bits"), w.get("type", "float")
        strategy, size = w.get("strategy"), w.get("group_size")
        if kind == "float" and bits == 4:
            if size == 16:
                return nvfp4(source)
            if size == 32:
                return mxfp4(source)
            raise self._err(f"{path}.group_size", size, "4-bit float weights need group_size 16 (NVFP4) or 32")
        if kind == "int" and bits in (4, 8):
            if strategy == "channel":
                return integer(bits, None, source + f", int{bits} per channel")
            if not is_int(size) or not 1 <= size <= 4096:
                raise self._err(
                    f"{path}.group_size",
                    size,
                    f"int{bits} weights need strategy group with a group_size in 1..4096, or strategy channel",
                )
            return integer(bits, size, source + f", int{bits} g{size}")
        if kind == "float" and bits == 8:
            block = w.get("block_structure")
            if strategy == "block" or block is not None:
                if not (
                    isinstance(block, list) and len(block) == 2 and all(is_int(v) and 1 <= v <= 4096 for v in block)
                ):
                    raise self._err(f"{path}.block_structure", block, "expected [rows, cols], integers in 1..4096")
                scale = ScaleFormat.UE8M0 if "e8m0" in str(w.get("scale_dtype") or "") else ScaleFormat.FP32
                return fp8_block((block[0], block[1]), scale, source)
            if strategy == "channel":
                return fp8_channel(source)
            if strategy == "group" and size == 32 and "e8m0" in str(w.get("scale_dtype") or ""):
                return mxfp8(source)
        raise self._err(
            path,
            w,
            "the oracle reads NVFP4/MXFP4 (4-bit float, groups of 16/32), FP8 blocks, per-channel FP8 and "
            "INT4/INT8 expert weights; this scheme is not representable",
            fix=_FIX_MANUAL,
            limit=2000,  # the whole scheme: every field that made it unrepresentable
        )

    def _names(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """Candidate module names; a multimodal (``text_config``) checkpoint's under its wrappers too."""
        return wrapped(names) if self.multimodal else names

    def _excluded(self, names: Sequence[str]) -> str | None:
        for patterns in self.ignores:
            hit = patterns.match(names)
            if hit is not None:
                return f" (excluded by {patterns.path} {hit!r})"
        return None

    def _not_converted(self, names: Sequence[str]) -> QuantSpec | None:
        for patterns in self.not_convert:
            hit = patterns.match(names)
            if hit is not None:
                return bf16(f"{patterns.path} lists {hit!r}")
        return None

    def routed(self, site: Site) -> QuantSpec:
        """Format of the routed experts at ``site``."""
        names = self._names(site.experts)
        if self.layer_map is not None:
            spec = self._match_layer_map(names)
            if spec is not None:
                return spec
        spec = self._not_converted(names)
        if spec is not None:
            return spec
        reason = self._excluded(names)
        if reason is not None:
            return self._routed_base(site, reason)
        if self.layer_map is not None:
            return self._routed_base(site, f" (not listed in {self._get('quantized_layers')[0]})")  # type: ignore[index]
        if self.moe_algo is not None:
            return self.moe_algo
        if self.algo is not None:
            return self.algo
        spec = self._match_group(names)
        if spec is not None:
            return spec
        if self.groups and self.method == "compressed-tensors":
            return bf16(f"no {self.qc_path}.config_groups target matches the experts")
        return self._routed_base(site)

    def shared(self, site: Site) -> QuantSpec:
        """Format of the shared experts at ``site``."""
        names = self._names(site.shared)
        if self.layer_map is not None:
            spec = self._match_layer_map(names)
            if spec is not None:
                return spec
        spec = self._not_converted(names)
        if spec is not None:
            return spec
        reason = self._excluded(names)
        base = self.base_shared()
        if reason is not None:
            return with_source(base, base.source + reason)
        if self.layer_map is not None:
            return base
        if self.algo is not None:
            return self.algo
        spec = self._match_group(names)
        if spec is not None:
            return spec
        if self.groups and self.method == "compressed-tensors":
            return bf16(f"no {self.qc_path}.config_groups target matches the shared experts")
        return base
