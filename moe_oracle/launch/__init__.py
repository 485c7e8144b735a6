"""Launch plans: the engine-neutral plan model and the derived-resource formulas.

``moe_oracle.fit.resources`` holds the pure formulas (DeepGEMM symmetric buffer, AITER
token capacity, MoRI heap, SGLang token cap); ``moe_oracle.launch.build`` turns deployment
flags into a :class:`~moe_oracle.launch.model.LaunchPlan` through the oracle's ``decide()``;
engines write the commands (``moe_oracle.engines.vllm.plan``, ``moe_oracle.engines.sglang.plan``).
Nothing here imports torch, vLLM or SGLang.
"""
