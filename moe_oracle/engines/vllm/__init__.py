"""vLLM integration: launch plans and the general plug-in (its gates: ``moe_oracle/releases/vllm_0_33/gates.py``)."""
