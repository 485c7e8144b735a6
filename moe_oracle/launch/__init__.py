"""Launch plans: the engine-neutral plan model, its rendering and the generated examples.

``moe_oracle.launch.build`` turns a question into a :class:`~moe_oracle.launch.model.LaunchPlan`: the decision
``select`` makes (through :mod:`moe_oracle.answers`), the replica step, the memory fit of :mod:`moe_oracle.fit`
(which also holds the derived-resource formulas and the vocabulary the engines' plan modules write in), and the
commands the engines write (``moe_oracle.engines.vllm.plan``, ``moe_oracle.engines.sglang.plan``). Nothing here
imports torch, vLLM or SGLang, and ``select`` never imports this package.
"""
