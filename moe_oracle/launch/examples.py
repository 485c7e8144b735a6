"""Generated example plans (``docs/plans``): regenerate with ``moe-oracle plan --examples docs/plans``.

Each example is planned for both engines with the engine's release profile, and again with
``--software all`` (every known kernel build present) to show what newer kernel builds would
change. ``tests/engines/test_examples_docs.py`` fails, printing the regenerate command, when a
committed file differs from what this module writes.

Run as ``python -m moe_oracle.launch.examples [DIR] [--check]``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from moe_oracle.fit.engines import RELEASE_PROFILE
from moe_oracle.inputs import DeploymentFlags
from moe_oracle.launch.build import PlanRequest, build_plan
from moe_oracle.launch.model import LaunchPlan
from moe_oracle.launch.prerequisites import with_prerequisites
from moe_oracle.launch.render import render_markdown
from moe_oracle.output import ensure_directory, write_text_file
from moe_oracle.rules import Engine

REGENERATE = "moe-oracle plan --examples docs/plans"


@dataclass(frozen=True)
class Example:
    slug: str
    title: str
    model: str
    flags: DeploymentFlags
    required: bool = True  # part of the list (extras illustrate replicas that get adopted)

    def request(self, engine: Engine, software: str | None = None) -> PlanRequest:
        return PlanRequest(model=self.model, flags=self.flags, engine=engine, software=software)


EXAMPLES: tuple[Example, ...] = (
    Example(
        "deepseek-v4-flash--8xb200",
        "DeepSeek-V4-Flash on 8 x B200 (DP8+EP8)",
        "deepseek-ai/DeepSeek-V4-Flash",
        DeploymentFlags(device="b200", dp=8, ep=8),
    ),
    Example(
        "deepseek-v4-flash--8xh200",
        "DeepSeek-V4-Flash on 8 x H200 (DP8+EP8)",
        "deepseek-ai/DeepSeek-V4-Flash",
        DeploymentFlags(device="h200", dp=8, ep=8),
    ),
    Example(
        "deepseek-v4-flash--8xmi355x",
        "DeepSeek-V4-Flash on 8 x MI355X (DP8+EP8)",
        "deepseek-ai/DeepSeek-V4-Flash",
        DeploymentFlags(device="mi355x", dp=8, ep=8),
    ),
    Example(
        "deepseek-v4-flash--2x8xh200",
        "DeepSeek-V4-Flash on 2 x 8 H200 (DP16+EP16 requested)",
        "deepseek-ai/DeepSeek-V4-Flash",
        DeploymentFlags(device="h200", nodes=2, dp=16, ep=16),
    ),
    Example(
        "glm-5-fp8--8xh200",
        "GLM-5-FP8 on 8 x H200 (DP8+EP8)",
        "zai-org/GLM-5-FP8",
        DeploymentFlags(device="h200", dp=8, ep=8),
    ),
    Example(
        "deepseek-v4-flash--2x8xb200",
        "DeepSeek-V4-Flash on 2 x 8 B200 (DP16+EP16 requested; replicas adopted)",
        "deepseek-ai/DeepSeek-V4-Flash",
        DeploymentFlags(device="b200", nodes=2, dp=16, ep=16),
        required=False,
    ),
    Example(
        "glm-5-fp8--2x8xh200",
        "GLM-5-FP8 on 2 x 8 H200 (DP16+EP16 requested)",
        "zai-org/GLM-5-FP8",
        DeploymentFlags(device="h200", nodes=2, dp=16, ep=16),
        required=False,
    ),
    Example(
        "deepseek-v4-flash-nvfp4--8xb200",
        "DeepSeek-V4-Flash-NVFP4 on 8 x B200 (DP8+EP8)",
        "nvidia/DeepSeek-V4-Flash-NVFP4",
        DeploymentFlags(device="b200", dp=8, ep=8),
        required=False,
    ),
)
ENGINES = (Engine.VLLM, Engine.SGLANG)


def filename(example: Example, engine: Engine) -> str:
    return f"{engine.value}--{example.slug}.md"


def command_line(example: Example, engine: Engine, software: str | None = None) -> str:
    f = example.flags
    parts = ["moe-oracle plan", example.model, f"--device {f.device}"]
    if f.nodes != 1:
        parts.append(f"--nodes {f.nodes}")
    for name in ("tp", "dp", "ep", "pp"):
        value = getattr(f, name)
        if value != 1:
            parts.append(f"--{name} {value}")
    if f.max_num_batched_tokens != 8192:
        parts.append(f"--max-num-batched-tokens {f.max_num_batched_tokens}")
    parts.append(f"--engine {engine.value}")
    if software:
        parts.append(f"--software {software}")
    return " ".join(parts)


def _fused(plan: LaunchPlan) -> str:
    return f"{plan.backend}:{plan.variant}" if plan.fused else "no fused backend"


def compare(release: LaunchPlan, everything: LaunchPlan) -> list[str]:
    """What ``--software all`` changes, as Markdown lines."""
    lines: list[str] = []
    if _fused(release) == _fused(everything) and release.commands == everything.commands:
        lines.append(
            f"No change: `{_fused(release)}`, same command and environment (the release profile is not what limits "
            "this deployment)."
        )
        return lines
    lines.append(f"- Backend: `{_fused(release)}` -> `{_fused(everything)}`.")
    if everything.replicas and everything.replicas.adopted and not (release.replicas and release.replicas.adopted):
        lines.append(f"- Layout: {everything.replicas.count} replicas of {everything.replicas.layout.label()}.")
    if not everything.fused and everything.default_command_reason:
        lines.append(f"- Why: {everything.default_command_reason}")
    if release.fused and not everything.fused:
        key = f"{release.backend}:{release.variant}"
        for r in everything.rejected:
            if r["candidate"] == key:
                for reason in r["reasons"]:
                    lines.append(f"- {key} under `--software all`: [{reason['code']}] {reason['message']}")
    lines.append("")
    lines.append("Command with `--software all`:")
    lines.append("")
    for cmd in everything.commands:
        lines += [f"{cmd.where}:", "", "```bash", cmd.shell(), "```", ""]
    return lines


def render_example(example: Example, engine: Engine) -> str:
    release = with_prerequisites(build_plan(example.request(engine)), example.request(engine))
    everything = build_plan(example.request(engine, "all"))
    title = f"{example.title}, {'vLLM' if engine is Engine.VLLM else 'SGLang'} {release.engine_version}"
    text = render_markdown(release, title=title, regenerate=REGENERATE, comparison=compare(release, everything))
    return text.replace(
        f"**{release.model}",
        f"Command: `{command_line(example, engine)}`\n\n**{release.model}",
        1,
    )


def render_index(rows: list[tuple[Example, Engine, LaunchPlan]]) -> str:
    lines = [
        "# Example launch plans",
        "",
        f"<!-- generated by `{REGENERATE}`; do not edit by hand -->",
        "",
        "Generated by `moe-oracle plan` with each engine's default software profile ("
        + ", ".join(f"`{p}`" for p in RELEASE_PROFILE.values())
        + "), the default of select, plan, serve, compare and matrix for that engine;",
        "every file also shows what `--software all` would change and the deployment's memory fit. Regenerate with:",
        "",
        "```bash",
        REGENERATE,
        "```",
        "",
        "| example | engine | fused backend | layout | environment |",
        "|---|---|---|---|---|",
    ]
    for example, engine, plan in rows:
        layout = (
            f"{plan.replicas.count} x {plan.layout.label()} replicas"
            if plan.replicas and plan.replicas.adopted
            else plan.layout.label() + (f" on {plan.layout.nodes} nodes" if plan.layout.nodes > 1 else "")
        )
        env = ", ".join(f"`{k}={v}`" for k, v in plan.env.items()) or "-"
        extra = "" if example.required else " (extra)"
        lines.append(
            f"| [{example.title}]({filename(example, engine)}){extra} | {engine.value} {plan.engine_version} | "
            f"{_fused(plan)} | {layout} | {env} |"
        )
    return "\n".join(lines) + "\n"


def generate() -> dict[str, str]:
    """File name -> contents for every example and the index."""
    files: dict[str, str] = {}
    rows = []
    for example in EXAMPLES:
        for engine in ENGINES:
            files[filename(example, engine)] = render_example(example, engine)
            rows.append((example, engine, build_plan(example.request(engine))))
    files["README.md"] = render_index(rows)
    return files


def _read(path: Path) -> str | None:
    """A committed example's text; ``None`` when it is missing or unreadable (then it is stale)."""
    try:
        return path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        return None


def write_examples(directory: str | Path, *, check: bool = False) -> list[str]:
    """Write (or with ``check``, only compare) the examples; return the names that changed."""
    root = Path(directory)
    files = generate()
    changed = []
    for name, text in files.items():
        path = root / name
        old = _read(path)
        if old != text:
            changed.append(name)
            if not check:
                write_text_file(ensure_directory(root, "--examples") / name, text, "--examples")
    return changed


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    directory = args[0] if args else "docs/plans"
    changed = write_examples(directory, check=check)
    for name in changed:
        print(f"{'stale' if check else 'wrote'}: {Path(directory) / name}")
    if check and changed:
        print(f"regenerate with: {REGENERATE}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
