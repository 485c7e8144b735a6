"""The memory fit of one planned server, behind one question value (:class:`~moe_oracle.fit.settle.FitQuestion`).

``select``, ``plan``, ``serve``, ``compare`` and every matrix cell ask it the same way and get the same
:class:`~moe_oracle.decide.fit.Fit`: the weights as the engine places them (:mod:`moe_oracle.decide.fit`
measures them), the symmetric buffers the engine's plan module sizes (:mod:`.server`, :mod:`.derived`,
:mod:`.resources`, :mod:`.speculative`: the vocabulary those modules write in), and the engine memory settings
that fit (:mod:`.settle`). Nothing here builds a launch plan (:mod:`moe_oracle.launch` does, on top), so
``select`` never loads it.
"""
