"""vLLM integration: launch plans and the general plug-in (its gates: :mod:`moe_oracle.engine_gates.vllm`)."""
