"""SGLang integration: launch plans (its gates: ``moe_oracle/releases/sglang_0_5_23/gates.py``)."""
