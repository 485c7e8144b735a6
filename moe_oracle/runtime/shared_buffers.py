"""Buffers shared by every layer of one shape, released with the last layer that holds them.

A mega-MoE symmetric buffer is sized by ``(process group, device, E, max tokens, top-k, H, I)`` and
costs from hundreds of MiB to several GiB; the layers of one model group share one. A process that
builds layers of several shapes (a benchmark sweep, a second model, a layer rebuilt after a config
change) must get that memory back when the last layer of a shape goes away, or it runs out.

:class:`SharedBuffers` hands out one buffer per key with a reference count: :meth:`acquire` returns
the buffer and a :class:`Lease`; the buffer is destroyed (its ``destroy()`` called when it has one,
as DeepGEMM's ``SymmBuffer`` does) and dropped from the cache when the last lease is released, either
explicitly or when the object that holds the lease is garbage-collected (``Lease.attach``).
Torch-free: the GPU memory itself is returned by whatever frees the buffer's tensors.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any


class Lease:
    """One holder's claim on a shared buffer; :meth:`release` is idempotent."""

    def __init__(self, owner: SharedBuffers, key: Hashable) -> None:
        self._owner = owner
        self._key = key
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._owner._release(self._key)

    def attach(self, holder: object) -> None:
        """Release when ``holder`` is garbage-collected (the finalizer holds no reference to it)."""
        weakref.finalize(holder, self.release)


class SharedBuffers:
    """A reference-counted cache of buffers built by ``factory()`` per key."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, list[Any]] = {}  # key -> [buffer, count]
        self._lock = threading.Lock()

    def acquire(self, key: Hashable, factory: Callable[[], Any]) -> tuple[Any, Lease]:
        """The buffer for ``key`` (built by ``factory`` the first time) and a lease on it."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = [factory(), 0]
                self._entries[key] = entry
            entry[1] += 1
            return entry[0], Lease(self, key)

    def _release(self, key: Hashable) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self._entries[key]
        destroy = getattr(entry[0], "destroy", None)
        if callable(destroy):
            destroy()

    def holders(self, key: Hashable) -> int:
        """Leases outstanding on ``key`` (0: not cached)."""
        with self._lock:
            entry = self._entries.get(key)
            return 0 if entry is None else entry[1]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
