"""Software profiles: which kernel-library builds are present, probed or declared.

Modules: ``types`` (the data), ``catalog`` (the libraries, entry points and builds that matter),
``profiles`` (the named profiles), ``probe`` (the ``installed`` profile). The package itself imports
nothing, so the rules can read ``software.types`` without loading the catalogue.
"""
