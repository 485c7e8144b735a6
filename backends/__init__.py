"""moe-oracle's own backends, one sub-package per hardware target.

Installed as the import package ``moe_oracle_backends``; each target registers with the core
through the ``moe_oracle.backends`` entry-point group, the same way a third-party package
would. Each variant folder has the same files: ``config.py`` (capability declarations, no
torch), ``weights.py`` (checkpoint to kernel layout) and
``backend.py`` (the kernel call; its input staging is built from the declaration's ``staging``).
"""
