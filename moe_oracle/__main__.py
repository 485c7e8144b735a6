"""``python -m moe_oracle``: the ``moe-oracle`` command.

``python -m`` puts the working directory first on ``sys.path``; run from inside a downloaded checkpoint, that
would import the checkpoint's Python files (``configuration_*.py``, or a ``json.py``) in place of the modules
moe-oracle imports next. The working directory is taken off the path before anything else is imported, as
``python -P`` (``PYTHONSAFEPATH``) would; the ``moe-oracle`` console script never had it there.
"""

import os
import sys


def _drop_working_directory() -> None:
    if getattr(sys.flags, "safe_path", False) or not sys.path:  # Python 3.11+: -P given
        return
    first = sys.path[0]
    try:
        here = os.path.realpath(first or os.curdir) == os.path.realpath(os.getcwd())
    except OSError:
        here = first == ""
    if here:
        del sys.path[0]


_drop_working_directory()

from moe_oracle.cli import main  # noqa: E402 (after the path is safe)

raise SystemExit(main())
