"""Read one layer's routed experts from local safetensors files (no network, no hub).

Names understood:

* DeepSeek V4 (``layers.{L}.ffn.experts.{e}.w1|w2|w3.weight`` and ``.scale``; w1 = gate, w3 = up,
  w2 = down), optionally prefixed (``model.``);
* GLM / Hugging Face (``model.layers.{L}.mlp.experts.{e}.gate_proj|up_proj|down_proj.weight`` and
  ``.weight_scale_inv``; ModelOpt NVFP4 adds ``.weight_scale`` (E4M3 block scales),
  ``.weight_scale_2`` (global) and ``.input_scale``).

The format is read from the tensors: uint8/int8 values with K/32 UE8M0 scales = MXFP4; E4M3
values with 2-D block scales = FP8 block (fp32 or UE8M0 scales, block size from the shapes);
E4M3 values with K/32 scales = MXFP8; packed values with E4M3 K/16 scales = NVFP4; BF16 = BF16.
Files are read with the ``safetensors`` package (optional dependency: ``pip install
'moe-oracle[weights]'``), tensor by tensor, so only the asked layer is loaded.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from moe_oracle.errors import BadInputError
from moe_oracle.model.types import QuantSpec, ScaleFormat, WeightFormat
from moe_oracle.runtime.interface import CheckpointExperts
from moe_oracle.runtime.quantize import BF16, MXFP4, MXFP8, NVFP4

_DSV4 = re.compile(r"^(?:model\.)?layers\.(\d+)\.ffn\.experts\.(\d+)\.(w1|w2|w3)\.(weight|scale)$")
_HF = re.compile(
    r"^(?:model\.)?(?:language_model\.)?(?:model\.)?layers\.(\d+)\.mlp\.experts\.(\d+)\."
    r"(gate_proj|up_proj|down_proj)\.(weight|weight_scale_inv|weight_scale|weight_scale_2|input_scale)$"
)
_ROLE = {"w1": "gate", "w3": "up", "w2": "down", "gate_proj": "gate", "up_proj": "up", "down_proj": "down"}


def _safe_open():
    try:
        from safetensors import safe_open
    except ImportError:
        raise BadInputError(
            "--weights needs the safetensors package", fix="pip install 'moe-oracle[weights]'"
        ) from None
    return safe_open


def _tensor_names(path: Path) -> list[str]:
    try:
        with _safe_open()(str(path), framework="pt") as f:
            return list(f.keys())
    except BadInputError:
        raise
    except Exception as exc:  # a corrupt or foreign file
        raise BadInputError(f"{path} is not a readable safetensors file: {type(exc).__name__}: {exc}") from None


def _load_tensors(path: Path, names: list[str]) -> dict[str, torch.Tensor]:
    with _safe_open()(str(path), framework="pt") as f:
        return {n: f.get_tensor(n) for n in names}


def find_layer_tensors(directory: str | Path, layer: int) -> dict[int, dict[str, tuple[Path, str]]]:
    """``{expert: {"gate.weight": (file, name), ...}}`` for ``layer`` across every ``*.safetensors``."""
    root = Path(directory)
    files = sorted(root.glob("*.safetensors")) if root.is_dir() else [root]
    if not files or not all(f.is_file() for f in files):
        raise BadInputError(
            f"--weights {directory}: no .safetensors files there", fix="point --weights at a checkpoint directory"
        )
    found: dict[int, dict[str, tuple[Path, str]]] = {}
    for f in files:
        for name in _tensor_names(f):
            m = _DSV4.match(name) or _HF.match(name)
            if m is None or int(m.group(1)) != layer:
                continue
            expert, role, kind = int(m.group(2)), _ROLE[m.group(3)], m.group(4)
            kind = {"weight_scale_inv": "scale", "scale": "scale"}.get(kind, kind)
            found.setdefault(expert, {})[f"{role}.{kind}"] = (f, name)
    return found


def _detect(values: torch.Tensor, scale: torch.Tensor | None, extras: bool) -> QuantSpec:
    n, kk = values.shape
    if scale is None:
        if values.dtype == torch.bfloat16:
            return BF16
        raise BadInputError(f"expert weights of dtype {values.dtype} without scales are not understood")
    if values.dtype in (torch.uint8, torch.int8):
        k = kk * 2
        if extras or scale.dtype == torch.float8_e4m3fn:
            return NVFP4
        if scale.shape[-1] == k // 32:
            return MXFP4
    if values.dtype == torch.float8_e4m3fn:
        if scale.dim() == 2 and scale.shape[0] == n and scale.shape[1] == kk // 32:
            return MXFP8
        bm, bn = -(-n // scale.shape[0]), -(-kk // scale.shape[1])
        sfmt = ScaleFormat.FP32 if scale.dtype == torch.float32 else ScaleFormat.UE8M0
        return QuantSpec(format=WeightFormat.FP8_BLOCK, block=(bm, bn), scale_format=sfmt)
    raise BadInputError(
        f"expert weights {values.dtype} {tuple(values.shape)} with scales {scale.dtype} are not understood"
    )


def load_layer_experts(
    directory: str | Path, layer: int, experts: list[int] | None = None
) -> tuple[CheckpointExperts, list[int]]:
    """Experts of ``layer`` (all, or the listed ids) as :class:`CheckpointExperts` (gate rows first)."""
    index = find_layer_tensors(directory, layer)
    if not index:
        raise BadInputError(
            f"--weights {directory}: no routed-expert tensors for layer {layer}",
            fix="check --layer; names must look like layers.L.ffn.experts.E.w1.weight or "
            "model.layers.L.mlp.experts.E.gate_proj.weight",
        )
    ids = sorted(index) if experts is None else experts
    per: list[dict[str, torch.Tensor]] = []
    for e in ids:
        entry = index.get(e)
        if entry is None or not {"gate.weight", "up.weight", "down.weight"} <= set(entry):
            raise BadInputError(f"--weights {directory}: layer {layer} expert {e} lacks gate/up/down weights")
        by_file: dict[Path, list[str]] = {}
        for f, name in entry.values():
            by_file.setdefault(f, []).append(name)
        loaded: dict[str, torch.Tensor] = {}
        for f, names in by_file.items():
            loaded.update(_load_tensors(f, names))
        per.append({key: loaded[name] for key, (_, name) in entry.items()})
    first = per[0]
    extras = "gate.weight_scale_2" in first
    quant = _detect(first["gate.weight"], first.get("gate.scale", first.get("gate.weight_scale")), extras)

    def scale_of(d: dict[str, torch.Tensor], role: str) -> torch.Tensor:
        scale = d.get(f"{role}.scale", d.get(f"{role}.weight_scale"))
        if scale is None:
            raise BadInputError(
                f"--weights {directory}: layer {layer} has {quant.label()} experts, but one lacks the {role} scale",
                fix="point --weights at a complete checkpoint (every expert's weights with their scales)",
            )
        return scale

    w13 = torch.stack([torch.cat([d["gate.weight"], d["up.weight"]], dim=0) for d in per])
    w2 = torch.stack([d["down.weight"] for d in per])
    if quant.format is WeightFormat.BF16:
        return CheckpointExperts(quant, w13, w2), ids
    s13 = torch.stack([torch.cat([scale_of(d, "gate"), scale_of(d, "up")], dim=0) for d in per])
    s2 = torch.stack([scale_of(d, "down") for d in per])
    if quant.format is WeightFormat.NVFP4:
        g13 = torch.stack([d["gate.weight_scale_2"].float().reshape(()) for d in per])
        g2 = torch.stack([d["down.weight_scale_2"].float().reshape(()) for d in per])
        inp = torch.stack([d.get("down.input_scale", torch.ones(())).float().reshape(()) for d in per])
        return CheckpointExperts(quant, w13, w2, s13, s2, w13_global=g13, w2_global=g2, w2_input_scale=inp), ids
    return CheckpointExperts(quant, w13, w2, s13, s2), ids
