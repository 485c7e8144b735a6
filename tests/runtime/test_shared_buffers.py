"""The shared-buffer cache: one buffer per key, destroyed with the last lease (explicit or by collection)."""

from __future__ import annotations

import gc

from moe_oracle.runtime.shared_buffers import SharedBuffers


class Buffer:
    """A stand-in with DeepGEMM SymmBuffer's release method (what the cache calls)."""

    destroyed = 0

    def destroy(self) -> None:
        Buffer.destroyed += 1


class Holder:
    pass


def test_one_buffer_per_key_until_the_last_lease_goes():
    cache = SharedBuffers()
    built = []

    def factory():
        built.append(Buffer())
        return built[-1]

    a, lease_a = cache.acquire(("E256", 8192), factory)
    b, lease_b = cache.acquire(("E256", 8192), factory)
    c, lease_c = cache.acquire(("E128", 8192), factory)
    assert a is b and a is not c and len(built) == 2 and len(cache) == 2
    assert cache.holders(("E256", 8192)) == 2
    before = Buffer.destroyed
    lease_a.release()
    lease_a.release()  # idempotent: one lease counts once
    assert cache.holders(("E256", 8192)) == 1 and Buffer.destroyed == before
    lease_b.release()
    assert cache.holders(("E256", 8192)) == 0 and Buffer.destroyed == before + 1 and len(cache) == 1
    lease_c.release()
    assert len(cache) == 0 and Buffer.destroyed == before + 2


def test_a_collected_holder_releases_its_lease():
    cache = SharedBuffers()
    holder = Holder()
    _, lease = cache.acquire("k", Buffer)
    lease.attach(holder)
    assert cache.holders("k") == 1
    del holder
    gc.collect()
    assert lease.released and cache.holders("k") == 0 and len(cache) == 0


def test_a_rebuilt_shape_gets_a_fresh_buffer():
    cache = SharedBuffers()
    first, lease = cache.acquire("k", Buffer)
    lease.release()
    second, lease2 = cache.acquire("k", Buffer)
    assert second is not first
    lease2.release()
