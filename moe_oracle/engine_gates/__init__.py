"""Engine gates: what each engine version adds on top of the kernels' own requirements.

Data the decision reads (which variants vLLM 0.33 and SGLang 0.5.23 wire, and with which rules;
what each runs when no fused backend fits), kept below the decision so that ``selection`` never
imports ``moe_oracle.engines`` (the launch plans and plug-ins, which sit above it). The gate
types, :class:`~moe_oracle.rules.engine.EngineProfile` and
:class:`~moe_oracle.rules.engine.EngineSupport`, are part of the rules engine.
"""

from moe_oracle.engine_gates.profiles import engine_profile, fallback_path

__all__ = ["engine_profile", "fallback_path"]
