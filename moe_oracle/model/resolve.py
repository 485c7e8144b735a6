"""One entry for every way a model can be named on the command line."""

from __future__ import annotations

from pathlib import Path

from moe_oracle.jsonfile import path_problem
from moe_oracle.model.types import ModelDescription


def resolve_model(source: str) -> ModelDescription:
    """A preset id, a Hub id in the local cache, a directory, a config.json, or a manual JSON file.

    A JSON file whose top level has ``layer_groups`` is a manual description (the shape
    ``moe-oracle model --json`` prints); anything else goes through the model adapters.
    """
    path = Path(source)
    # path_problem first: a name too long for the file system makes is_file() raise (Python 3.11)
    if path.suffix.lower() == ".json" and path_problem(path) is None and path.is_file():
        from moe_oracle.model.loader import read_json_file

        data = read_json_file(path)
        if "layer_groups" in data:
            from moe_oracle.model.manual import manual_from_dict

            return manual_from_dict(data, where=str(path))
    from moe_oracle.model.adapters import describe_model

    return describe_model(source)
