"""Bundled model configs, addressed by Hub id (``deepseek-ai/DeepSeek-V4-Flash``).

Each ``org--name`` folder holds a byte-for-byte copy of that checkpoint's ``config.json`` (and
``hf_quant_config.json`` where the checkpoint has one); see ``PROVENANCE.md``. Read them with
:func:`moe_oracle.model.loader.load_model_source` / :func:`moe_oracle.model.loader.list_presets`.
"""
