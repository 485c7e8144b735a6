"""The decision: from a :class:`~moe_oracle.decide.question.Question` to a verdict per layer group.

``question`` (what is asked), ``candidates`` (one variant judged as stored), ``conversions``
(candidates after a load-time conversion), ``accuracy_class``, ``advisories`` (known-bad entries),
``selection`` (:func:`~moe_oracle.decide.selection.decide`, ranking, overrides) and ``record``
(decision records and replay). Nothing is re-exported here: import the module that holds a name.
"""
