"""SGLang integration: launch plans (its gates: :mod:`moe_oracle.engine_gates.sglang`)."""
