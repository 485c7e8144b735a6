"""Constructors for the requirement kinds backends declare.

Each returns a :class:`~moe_oracle.rules.check.Check` whose message quotes the actual values,
the rule and the source, e.g. ``hidden_size=6144 is not a multiple of 512 (SGLang
check_mega_moe_shapes; DeepGEMM's host check needs only 128)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from moe_oracle.model.types import INTEGER_FORMATS, ActivationKind, MoELayerGroup, QuantSpec
from moe_oracle.rules.build import BuildSpec, build_finding
from moe_oracle.rules.check import Check, Finding, Scope, Status
from moe_oracle.rules.reasons import ReasonCode
from moe_oracle.rules.scenario import Scenario
from moe_oracle.spec.device import Arch

Sources = tuple[str, ...]


def _join(items: Iterable[str]) -> str:
    return ", ".join(items)


def arch_in(archs: Iterable[Arch], *, kernel: str, remediation: str, sources: Sources) -> Check:
    allowed = tuple(archs)
    names = _join(a.value for a in allowed)

    def test(sc: Scenario) -> Finding | None:
        dev = sc.deployment.device
        if dev.arch in allowed:
            return None
        return Finding(f"{kernel} runs on {names}; {dev.name} is {dev.arch.value}")

    return Check(
        ReasonCode.ARCH_UNSUPPORTED, f"device arch in {{{names}}}", remediation, test, sources, data={"archs": allowed}
    )


def weight_format(
    accept: Callable[[QuantSpec], bool],
    *,
    wants: str,
    remediation: str,
    sources: Sources,
    remediation_for: Callable[[QuantSpec], str | None] | None = None,
) -> Check:
    """Routed-expert weights must satisfy ``accept``; ``wants`` describes them for people. ``remediation_for``:
    the fix for the format found, where ``remediation`` fits only some formats (None: ``remediation``)."""

    def test(sc: Scenario) -> Finding | None:
        q = sc.group.weight_quant
        if accept(q) or q.format in INTEGER_FORMATS:  # integer weights: integer_weights() says why
            return None
        fix = remediation_for(q) if remediation_for is not None else None
        return Finding(f"routed experts are {q.label()}; the kernel consumes {wants}", remediation=fix)

    return Check(
        ReasonCode.QUANT_UNSUPPORTED, f"routed expert weights are {wants}", remediation, test, sources, Scope.LAYER
    )


_FIELDS = {"hidden_size": "hidden_size", "moe_intermediate_size": "moe_intermediate_size"}


def multiple_of(field: str, multiple: int, *, why: str, remediation: str, sources: Sources) -> Check:
    if field not in _FIELDS:
        raise ValueError(field)

    def test(sc: Scenario) -> Finding | None:
        value = getattr(sc.group, field)
        if value % multiple == 0:
            return None
        return Finding(f"{field}={value} is not a multiple of {multiple} ({why})")

    return Check(ReasonCode.SHAPE_UNSUPPORTED, f"{field} % {multiple} == 0", remediation, test, sources, Scope.LAYER)


def at_most(field: str, limit: int, *, why: str, remediation: str, sources: Sources) -> Check:
    def test(sc: Scenario) -> Finding | None:
        value = getattr(sc.group, field)
        if value <= limit:
            return None
        return Finding(f"{field}={value} exceeds {limit} ({why})")

    return Check(ReasonCode.SHAPE_UNSUPPORTED, f"{field} <= {limit}", remediation, test, sources, Scope.LAYER)


def topk_at_most(limit: int, *, why: str, sources: Sources) -> Check:
    def test(sc: Scenario) -> Finding | None:
        k = sc.group.top_k
        if k <= limit:
            return None
        return Finding(f"top_k={k} exceeds {limit} ({why})")

    return Check(
        ReasonCode.TOPK_UNSUPPORTED,
        f"top_k <= {limit}",
        "Leave --moe-backend unset: the engine's non-fused MoE serves this model.",
        test,
        sources,
        Scope.LAYER,
    )


def _divisors_up_to(n: int, cap: int) -> list[int]:
    return [d for d in range(1, min(n, cap) + 1) if n % d == 0]


def experts_divisible_by_ep(sources: Sources) -> Check:
    def test(sc: Scenario) -> Finding | None:
        e, ep = sc.group.num_experts, sc.ep
        if e % ep == 0:
            return None
        ok = [d for d in _divisors_up_to(e, sc.world_size) if d > 1]
        hint = f"Use an EP size that divides {e}: {_join(map(str, ok))}." if ok else "Use --ep 1."
        return Finding(f"num_experts={e} is not divisible by ep={ep} ({e / ep:.2f} experts per rank)", remediation=hint)

    return Check(
        ReasonCode.EXPERTS_NOT_DIVISIBLE,
        "num_experts % ep == 0",
        "Use an --ep that divides the expert count.",
        test,
        sources,
        Scope.LAYER,
    )


def experts_at_most(total: int, per_rank: int, sources: Sources) -> Check:
    def test(sc: Scenario) -> Finding | None:
        e, ep = sc.group.num_experts, sc.ep
        if e > total:
            return Finding(f"num_experts={e} exceeds {total}")
        if e // ep > per_rank:
            need = -(-e // per_rank)
            return Finding(
                f"{e // ep} experts per rank at ep={ep} exceeds {per_rank}",
                remediation=f"Use an EP size of at least {need}.",
            )
        return None

    return Check(
        ReasonCode.EXPERTS_EXCEED_LIMIT,
        f"num_experts <= {total} and experts per rank <= {per_rank}",
        "Raise --ep.",
        test,
        sources,
        Scope.LAYER,
    )


def ep_only(sources: Sources) -> Check:
    """Every expert must live whole on one rank: ``tp * dp == ep``."""

    def test(sc: Scenario) -> Finding | None:
        par = sc.deployment.parallel
        if par.moe_tp == 1:
            return None
        return Finding(
            f"tp*dp={par.moe_group_size} ranks with ep={par.ep} shard each expert over {par.moe_tp} ranks; "
            "the fused kernel keeps every expert whole on one rank",
            remediation=f"Use --ep {par.moe_group_size} (expert parallel over all tp*dp ranks).",
        )

    return Check(ReasonCode.TP_UNSUPPORTED, "ep == tp * dp (no expert TP sharding)", "", test, sources)


def ep_in_domain(max_ranks: int, *, scope: str, sources: Sources) -> Check:
    """The EP group must fit inside one NVLink/XGMI domain and the kernel's rank cap."""

    def test(sc: Scenario) -> Finding | None:
        ep = sc.ep
        topo = sc.deployment.topology
        domain = topo.effective_domain
        if ep > max_ranks:
            return Finding(
                f"ep={ep} exceeds the kernel's cap of {max_ranks} ranks ({scope})",
                remediation=f"Run replicas of at most {max_ranks} EP ranks each (DP across replicas).",
            )
        if ep > domain:
            link = "NVLink" if sc.deployment.device.vendor.value == "nvidia" else "XGMI"
            return Finding(
                f"ep={ep} crosses the {domain}-GPU {link} "
                f"domain ({topo.nodes} node(s) x {topo.gpus_per_node} GPUs, domain {topo.domain_size}); "
                "symmetric-memory dispatch reaches peers only inside one domain",
                remediation=f"Run {-(-ep // domain)} replicas of EP{domain} (e.g. DP{domain}+EP{domain} each) "
                "behind a router instead of one EP group across domains.",
            )
        return None

    return Check(
        ReasonCode.EP_EXCEEDS_DOMAIN,
        f"ep <= min(domain size, {max_ranks})",
        "Keep --ep within one NVLink/XGMI domain (--domain-size), or let moe-oracle plan split it into replicas.",
        test,
        sources,
    )


def ep_at_most(max_ranks: int, *, why: str, sources: Sources) -> Check:
    """The kernel's own rank cap on the EP group (a layer check: it reads the EP size alone)."""

    def test(sc: Scenario) -> Finding | None:
        return None if sc.ep <= max_ranks else Finding(f"ep={sc.ep} exceeds {max_ranks} ranks ({why})")

    return Check(
        ReasonCode.EP_EXCEEDS_DOMAIN,
        f"ep <= {max_ranks}",
        f"Run replicas of at most {max_ranks} EP ranks each (DP across replicas).",
        test,
        sources,
        Scope.LAYER,
    )


def ep_size_in(sizes: Iterable[int], *, why: str, sources: Sources) -> Check:
    allowed = tuple(sizes)

    def test(sc: Scenario) -> Finding | None:
        if sc.ep in allowed:
            return None
        return Finding(f"ep={sc.ep}; {why}")

    return Check(
        ReasonCode.EP_SIZE_UNSUPPORTED,
        f"ep in {{{_join(map(str, allowed))}}}",
        f"Use --ep {allowed[0]}." if allowed else "",
        test,
        sources,
    )


#: What serves an activation no mega-MoE kernel implements.
NO_MEGA_KERNEL = "No mega-MoE kernel serves this; leave --moe-backend unset (the engine's own MoE runs it)."


def _activation_finding(act, allowed: tuple[str, ...], clamp: bool, alpha_beta: bool) -> Finding | None:
    if act.kind.value not in allowed:
        what = {
            ActivationKind.GELU: "gated GELU experts (Gemma-4 style)",
            ActivationKind.RELU2: "squared-ReLU experts, not gated (Nemotron-H style)",
            ActivationKind.SITU: "SiTU experts (Kimi K3)",
        }.get(act.kind, act.kind.value)
        fix = NO_MEGA_KERNEL if act.kind in (ActivationKind.GELU, ActivationKind.RELU2) else None
        return Finding(f"activation {act.kind.value}: {what}; the kernel implements {_join(allowed)}", remediation=fix)
    if act.clamp is not None and not clamp:
        return Finding(f"SwiGLU clamp {act.clamp:g} (clamp before activation) is not implemented")
    if not alpha_beta and act.kind is ActivationKind.SWIGLU and (act.alpha != 1.0 or act.beta != 0.0):
        return Finding(
            f"SwiGLU alpha={act.alpha:g}, beta={act.beta:g} ({act.label()}); the kernel fixes alpha=1, beta=0",
            remediation="On SM100 the deep_gemm_mega_moe variants take alpha/beta (vLLM's DeepGEMM "
            "activation_alpha/beta); otherwise " + NO_MEGA_KERNEL[0].lower() + NO_MEGA_KERNEL[1:],
        )
    return None


def activation(*, clamp: bool, alpha_beta: bool = False, kinds: Iterable[str] = ("swiglu",), sources: Sources) -> Check:
    """The expert activation: its kind, the pre-activation clamp, and non-default alpha/beta."""
    allowed = tuple(kinds)

    def test(sc: Scenario) -> Finding | None:
        return _activation_finding(sc.group.activation, allowed, clamp, alpha_beta)

    parts = [f"activation in {{{_join(allowed)}}}"]
    parts.append("clamp allowed" if clamp else "no clamp")
    parts.append("alpha/beta allowed" if alpha_beta else "alpha=1, beta=0")
    return Check(
        ReasonCode.ACTIVATION_UNSUPPORTED,
        ", ".join(parts),
        "Leave --moe-backend unset: the engine's own MoE implements this activation.",
        test,
        sources,
        Scope.LAYER,
    )


def expert_width_at_most(limit: int, *, why: str, remediation: str, sources: Sources) -> Check:
    """One routed expert's width ``I`` must not exceed ``limit`` (SM90 mega-MoE: 4096)."""

    def test(sc: Scenario) -> Finding | None:
        inter = sc.group.moe_intermediate_size
        if inter <= limit:
            return None
        return Finding(f"expert width moe_intermediate_size={inter} exceeds {limit} ({why})")

    return Check(
        ReasonCode.EXPERT_WIDTH_EXCEEDS, f"moe_intermediate_size <= {limit}", remediation, test, sources, Scope.LAYER
    )


def no_expert_bias(*, kernel: str, sources: Sources) -> Check:
    """The routed experts must have no bias vectors: no mega-MoE kernel takes a bias operand."""

    def test(sc: Scenario) -> Finding | None:
        if not sc.group.expert_bias:
            return None
        return Finding(
            f"the routed experts carry biases (gate_up and down projections); {kernel} takes no bias operand"
        )

    return Check(
        ReasonCode.EXPERT_BIAS_UNSUPPORTED,
        "routed experts without bias vectors",
        NO_MEGA_KERNEL,
        test,
        sources,
        Scope.LAYER,
    )


def router_weight_after_experts(sources: Sources) -> Check:
    """The routing weight must scale the expert output, as the kernels combine it (not the input, as Llama-4)."""

    def test(sc: Scenario) -> Finding | None:
        g = sc.group
        if not g.routing.weight_on_input:
            return None
        top1 = (
            "; for top-1 pre-scaling x by its one weight and passing weight 1 would be equivalent, which no engine "
            "and not moe-oracle's layer does"
            if g.top_k == 1
            else f"; with top_k={g.top_k} no rescaling makes them equal"
        )
        return Finding(
            "the routing weight scales the expert input (router weight on input); the kernel multiplies the "
            "expert output by it after the activation" + top1
        )

    return Check(
        ReasonCode.ROUTER_WEIGHT_ON_INPUT,
        "routing weight applied to the expert output",
        NO_MEGA_KERNEL,
        test,
        sources,
        Scope.LAYER,
    )


def integer_weights(*, sources: Sources) -> Check:
    """INT4 / INT8 routed experts: no mega-MoE kernel consumes integer weights."""

    def test(sc: Scenario) -> Finding | None:
        q = sc.group.weight_quant
        if q.format not in INTEGER_FORMATS:
            return None
        return Finding(f"routed experts are {q.label()}; no mega-MoE kernel consumes integer weights")

    return Check(
        ReasonCode.QUANT_INTEGER,
        "routed experts not INT4/INT8",
        "Use an FP8 block-128, MXFP4 or NVFP4 checkpoint of the model (e.g. nvidia/Kimi-K2.5-NVFP4 for Kimi-K2.5); "
        "otherwise " + NO_MEGA_KERNEL[0].lower() + NO_MEGA_KERNEL[1:],
        test,
        sources,
        Scope.LAYER,
    )


_CONTRACT = (
    "docs/families.md: every mega kernel consumes topk_ids/topk_weights, applies the weight after the "
    "activation and has no bias operand; no INT4/INT8 mega kernel exists (DeepGEMM, AITER MegaMoEV2)",
)


def mega_moe_contract(kernel: str) -> tuple[Check, ...]:
    """What every mega-MoE kernel's contract excludes: expert biases, router weight on the input, integer weights."""
    return (
        no_expert_bias(kernel=kernel, sources=_CONTRACT),
        router_weight_after_experts(_CONTRACT),
        integer_weights(sources=_CONTRACT),
    )


def shared_expert_fusable(*, path: str, sources: Sources) -> Check:
    """For a path that fuses the shared expert into the routed kernel as a unit-weight expert: it must be ungated.

    Not a kernel requirement: the shared expert of a plain mega-MoE call runs outside the kernel, gated or not.
    Declare it only on a path that fuses (e.g. an engine's shared-expert fusion).
    """

    def test(sc: Scenario) -> Finding | None:
        g = sc.group
        if not (g.num_shared_experts and g.shared_expert_gate):
            return None
        return Finding(
            f"the shared expert (width {g.shared_intermediate_size}) is scaled per token by sigmoid(shared_expert_gate"
            f"(x)); {path} would fuse it as a unit-weight expert"
        )

    return Check(
        ReasonCode.SHARED_EXPERT_GATED,
        "shared experts ungated (fusable as a unit-weight expert)",
        "Run the shared expert outside the kernel (no fusion); the routed experts are unaffected.",
        test,
        sources,
        Scope.LAYER,
    )


@functools.lru_cache(maxsize=256)
def _satisfies(version: str, spec: str) -> bool | None:
    """PEP 440 containment (pre-releases included); None for a version that does not parse."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(spec).contains(Version(version), prereleases=True)
    except InvalidVersion:
        return None


def library_version(library: str, spec: str, *, why: str, sources: Sources) -> Check:
    """``library``'s version must satisfy the PEP 440 specifier ``spec`` (unknown versions pass)."""
    from packaging.specifiers import SpecifierSet

    SpecifierSet(spec)  # a bad declaration fails at import, not at decision time

    def test(sc: Scenario) -> Finding | None:
        lib = sc.software.library(library)
        if lib is None or lib.version is None or _satisfies(lib.version, spec) is not False:
            return None
        return Finding(f"{library} {lib.version} does not satisfy {spec} ({why})")

    return Check(ReasonCode.LIBRARY_VERSION, f"{library} {spec}", f"Install {library}{spec}.", test, sources)


def entry_points(
    library: str,
    *,
    all_of: Iterable[str] = (),
    any_of: Iterable[str] = (),
    provided_by: str,
    sources: Sources,
    builds: Iterable[BuildSpec] = (),
) -> Check:
    """The software profile must offer these entry points of ``library``, from a build that meets their limits.

    ``builds``: the named builds that provide them (:class:`~moe_oracle.rules.build.BuildSpec`, most specific
    first). When the profile's library is one of them (named by a described profile, or recognised in a
    probed one), that build's limits for ``all_of`` apply too, and a failure reports the limit's own code.
    """
    need_all = tuple(all_of)
    need_any = tuple(any_of)
    providers = tuple(builds)
    parts = list(need_all) + ([f"one of ({' | '.join(need_any)})"] if need_any else [])
    rule = f"{library} exports {_join(parts)}"
    if providers:
        rule += ", within the limits of the build providing them"

    def test(sc: Scenario) -> Finding | None:
        sw = sc.software
        lib = sw.libraries.get(library)
        if lib is None or not lib.present:
            detail = f" ({lib.error})" if lib is not None and lib.error else ""
            return Finding(f"{library} is not present in software profile '{sw.name}'{detail}")
        missing = [s for s in need_all if not lib.has(s)]
        if need_any and not any(lib.has(s) for s in need_any):
            missing.append(f"one of ({' | '.join(need_any)})")
        if not missing:
            return build_finding(lib, providers, need_all, need_any, sc) if providers else None
        where = lib.dist or lib.import_path or library
        version = f" {lib.version}" if lib.version else ""
        return Finding(f"{where}{version} in profile '{sw.name}' lacks {_join(missing)}")

    data = {
        "library": library,
        "all_of": need_all,
        "any_of": need_any,
        "provided_by": provided_by,
        "builds": providers,
    }
    return Check(ReasonCode.KERNEL_MISSING, rule, f"Install {provided_by}.", test, sources, data=data)


def group_predicate(
    code: ReasonCode,
    ok: Callable[[MoELayerGroup], bool],
    *,
    rule: str,
    message: Callable[[MoELayerGroup], str],
    remediation: str,
    sources: Sources,
) -> Check:
    """A rule on the layer group alone (routing method, shared experts...)."""

    def test(sc: Scenario) -> Finding | None:
        return None if ok(sc.group) else Finding(message(sc.group))

    return Check(code, rule, remediation, test, sources, Scope.LAYER)


def scenario_predicate(
    code: ReasonCode,
    ok: Callable[[Scenario], bool],
    *,
    rule: str,
    message: Callable[[Scenario], str],
    remediation: str,
    sources: Sources,
    unknown: Callable[[Scenario], bool] | None = None,
    scope: Scope = Scope.DEPLOYMENT,
    fix: Callable[[Scenario], str] | None = None,
) -> Check:
    """A rule on the whole scenario; ``unknown`` marks it undecidable from declarations.

    ``scope=Scope.LAYER`` declares that ``ok`` and ``message`` read only what a
    :class:`~moe_oracle.rules.scenario.LayerScenario` has (group, ep, tokens_per_rank). ``fix``: the remediation
    for this scenario (``remediation`` is the declared, general one), for a fix that names an alternative only
    where that alternative holds.
    """

    def test(sc: Scenario) -> Finding | None:
        if unknown is not None and unknown(sc):
            return Finding(message(sc), status=Status.UNKNOWN, remediation=None if fix is None else fix(sc))
        return None if ok(sc) else Finding(message(sc), remediation=None if fix is None else fix(sc))

    return Check(code, rule, remediation, test, sources, scope)


def env_unset(code: ReasonCode, names: Iterable[str], *, why: str, remediation: str, sources: Sources) -> Check:
    """Each environment variable of ``names`` must be unset or ``0`` in the deployment (the kernel asserts it)."""
    off = tuple(names)

    def test(sc: Scenario) -> Finding | None:
        env = sc.deployment.env
        if all(env.get(n, "0") in ("", "0") for n in off):
            return None
        return Finding(", ".join(f"{n}={env.get(n, '0')}" for n in off) + f": {why}")

    rule = " and ".join(off) + " unset or 0"
    return Check(code, rule, remediation, test, sources, data={"env_off": off})
