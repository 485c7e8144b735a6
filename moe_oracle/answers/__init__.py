"""The one door every question goes through, and the typed results it gives.

:mod:`.door` answers a question (the command line's :class:`~moe_oracle.decide.asked.AskedQuestion`, or an
engine plug-in's typed :class:`~moe_oracle.decide.question.Question`) with the bundled advisories in force and
the one fingerprint; :mod:`.results` holds the frozen values it returns. The keyword API over it is
:mod:`moe_oracle.api`; the CLI commands and both engine plug-ins call this package, never ``decide()``.
"""
