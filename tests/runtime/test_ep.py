"""Non-fused EP over torch.distributed (gloo, CPU processes): each rank's combined output equals the
single-process FP32 reference over all experts, with ragged (and empty) token counts."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from moe_oracle.model.types import Activation

E, H, INTER, K = 8, 64, 32, 3


def _weights():
    g = torch.Generator().manual_seed(0)
    return torch.randn(E, 2 * INTER, H, generator=g) / H**0.5, torch.randn(E, H, INTER, generator=g) / INTER**0.5


def _tokens(rank: int):
    g = torch.Generator().manual_seed(100 + rank)
    t = (0, 5, 1, 9)[rank % 4]  # ragged, one rank with no tokens
    x = torch.randn(t, H, generator=g)
    if not t:
        return x, torch.empty(0, K, dtype=torch.long), torch.empty(0, K)
    ids = torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(t)])
    ids[0, -1] = -1  # a masked slot
    return x, ids, torch.rand(t, K, generator=g)


def _worker(rank: int, world: int, init: str, fixed: bool, results: dict) -> None:
    from moe_oracle.runtime.ep import ep_moe, ep_moe_fixed, reference_expert_fn
    from moe_oracle.runtime.reference import reference_moe

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        act = Activation(clamp=10.0)
        w13, w2 = _weights()
        per = E // world
        local = reference_expert_fn(w13[rank * per : (rank + 1) * per], w2[rank * per : (rank + 1) * per], act)
        x, ids, w = _tokens(rank)
        if fixed:  # one batch size on every rank (a decode step): the smaller batches padded with -1 ids
            t = 9
            pad = t - x.shape[0]
            x = torch.cat([x, torch.randn(pad, H)])
            ids = torch.cat([ids, torch.full((pad, K), -1, dtype=torch.long)])
            w = torch.cat([w, torch.rand(pad, K)])
            y = ep_moe_fixed(x, ids, w, local, num_experts=E, transport=torch.float32)
        else:
            y = ep_moe(x, ids, w, local, num_experts=E)
        ref = reference_moe(x, ids, w, (w13, w2), act)
        results[rank] = float((y - ref).abs().max()) if y.numel() else 0.0
        assert y.shape == (x.shape[0], H)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("fixed", [False, True], ids=["routed-rows", "fixed-capacity"])
@pytest.mark.parametrize("world", [2, 4])
def test_ep_moe_matches_the_single_process_reference(world, fixed, tmp_path):
    init = f"file://{tmp_path / 'store'}"
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_worker, args=(world, init, fixed, results), nprocs=world, join=True)
        errors = dict(results)
    assert sorted(errors) == list(range(world))
    assert max(errors.values()) < 1e-5, errors


def test_single_rank_ep_is_the_reference(tmp_path):
    from moe_oracle.runtime.ep import ep_moe, reference_expert_fn
    from moe_oracle.runtime.reference import reference_moe

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store1'}", rank=0, world_size=1)
    try:
        act = Activation()
        w13, w2 = _weights()
        x, ids, w = _tokens(3)
        y = ep_moe(x, ids, w, reference_expert_fn(w13, w2, act), num_experts=E)
        assert float((y - reference_moe(x, ids, w, (w13, w2), act)).abs().max()) < 1e-5
    finally:
        dist.destroy_process_group()


def test_ep_sweep_dry_run_on_cpus():
    """benchmarks/ep_sweep.py --cpu: two gloo ranks, ragged tokens, the baseline against the FP32 reference."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    cmd += [str(root / "benchmarks/ep_sweep.py"), "--cpu", "--scale", "0.125", "--tokens", "1,16"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=root)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "EP2 on 2 x CPU" in p.stdout and "8..16" in p.stdout and "fixed us" in p.stdout, p.stdout
