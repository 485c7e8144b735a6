"""One entry for every way a model can be named on the command line."""

from __future__ import annotations

from moe_oracle.model.types import ModelDescription


def resolve_model(source: str) -> ModelDescription:
    """A preset id, a Hub id in the local cache, a directory, a config.json, or a manual JSON file.

    A JSON file whose top level has ``layer_groups`` is a manual description (the shape
    ``moe-oracle model --json`` prints); anything else goes through the model adapters.
    """
    from moe_oracle.model.manual import is_manual_description, load_manual_description

    if is_manual_description(source):
        return load_manual_description(source)
    from moe_oracle.model.adapters import describe_model

    return describe_model(source)
