"""MoE layer schedules other than the DeepSeek one (which :mod:`._layers` reads itself).

Each function returns the indices of the main model's MoE layers; keys per
docs/families.md, semantics as vLLM 0.33's model files apply them.
"""

from __future__ import annotations

from collections.abc import Callable

from moe_oracle.model.adapters._view import ConfigView, check_int
from moe_oracle.model.types import MAX_LAYERS


def every_layer(view: ConfigView, n_layers: int) -> list[int]:
    """Mixtral, gpt-oss, MiniMax-M2: every decoder layer is MoE."""
    return list(range(n_layers))


def qwen(view: ConfigView, n_layers: int) -> list[int]:
    """Qwen2/3-MoE, Qwen3-Next, Qwen3.5: layer ``i`` is MoE unless listed in ``mlp_only_layers``,
    and when ``(i + 1) % decoder_sparse_step == 0`` (default 1)."""
    step = view.get_int("decoder_sparse_step", lo=1, hi=MAX_LAYERS, default=1, what="MoE every n-th layer")
    dense = _layer_list(view, "mlp_only_layers", n_layers)
    return [i for i in range(n_layers) if i not in dense and (i + 1) % step == 0]


def llama4(view: ConfigView, n_layers: int) -> list[int]:
    """Llama-4: MoE when ``(i + 1) % interleave_moe_layer_step == 0`` (Scout 1, Maverick 2)."""
    step = view.get_int("interleave_moe_layer_step", lo=1, hi=MAX_LAYERS, default=1, what="MoE every n-th layer")
    return [i for i in range(n_layers) if (i + 1) % step == 0]


def ernie(view: ConfigView, n_layers: int) -> list[int]:
    """ERNIE-4.5: MoE for ``start <= i <= end`` with ``(i + 1) % interval == 0``."""
    start = view.get_int("moe_layer_start_index", lo=0, hi=n_layers - 1, default=0, what="first MoE layer")
    end = view.get_int("moe_layer_end_index", lo=0, hi=n_layers - 1, default=n_layers - 1, what="last MoE layer")
    interval = view.get_int("moe_layer_interval", lo=1, hi=MAX_LAYERS, default=1, what="MoE every n-th layer")
    return [i for i in range(start, end + 1) if (i + 1) % interval == 0]


def step(view: ConfigView, n_layers: int) -> list[int]:
    """Step3: ``moe_layers_enum``, a comma-separated string (or array) of MoE layer indices; absent = all."""
    found = view.lookup("moe_layers_enum")
    if found is None:
        return list(range(n_layers))
    path, value = found
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if not all(p.isdigit() for p in parts):
            raise view.error(path, value, 'expected comma-separated layer indices such as "1,2,3"')
        items: list = [int(p) for p in parts]
    elif isinstance(value, list):
        items = value
    else:
        raise view.error(path, value, "expected a comma-separated string or an array of layer indices")
    layers = [
        check_int(v, path=f"{path}[{i}]", lo=0, hi=n_layers - 1, model_id=view.model_id) for i, v in enumerate(items)
    ]
    return sorted(set(layers))


def pattern(view: ConfigView, n_layers: int) -> list[int]:
    """Nemotron-H: ``hybrid_override_pattern`` has one character per layer; ``E`` marks a MoE layer
    (``M`` Mamba, ``*`` attention, ``-`` dense MLP)."""
    path, value = view.lookup("hybrid_override_pattern") or (view.path("hybrid_override_pattern"), None)
    if value is None:
        raise view.missing("hybrid_override_pattern", "one character per layer (E = MoE, M = Mamba, * = attention)")
    if not isinstance(value, str) or len(value) != n_layers:
        raise view.error(path, value, f"expected a string of {n_layers} characters, one per layer (num_hidden_layers)")
    return [i for i, ch in enumerate(value) if ch == "E"]


def _layer_list(view: ConfigView, key: str, n_layers: int) -> set[int]:
    found = view.lookup(key)
    if found is None:
        return set()
    path, value = found
    if not isinstance(value, list):
        raise view.error(path, value, "expected an array of layer indices")
    return {
        check_int(v, path=f"{path}[{i}]", lo=0, hi=n_layers - 1, model_id=view.model_id) for i, v in enumerate(value)
    }


SCHEDULES: dict[str, Callable[[ConfigView, int], list[int]]] = {
    "all": every_layer,
    "qwen": qwen,
    "llama4": llama4,
    "ernie": ernie,
    "step": step,
    "pattern": pattern,
}
