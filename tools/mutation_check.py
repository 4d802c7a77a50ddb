"""Does the fast test tier still catch a wrong law? Plant one fault at a time in the decision code, run the tests.

Each fault below is a one-line change to the source, of the kind a refactor could make by mistake. In the decision
code: the residual taken as p, the bonus drawn from q, the accept test against q/p, a tree sibling judged against p
instead of the residual the earlier rejection left, mentored decoding's KL budget ignored. In the engine's plumbing,
which only end-to-end runs see: a draft judged by another position's q, the accept test reusing the uniforms that
drew the drafts, a draft model drawing from another law than the q it reports. For each,
the repository is copied to a temporary folder, the line is replaced there (the script stops if the line is
not found exactly once, so a fault never silently stops being planted), and pytest runs the fast tier
(`-m "not slow"`, core and engine tests first) until the first failure, which names the test that caught it.

    python tools/mutation_check.py                # every fault against the fast tier; a table on stdout
    python tools/mutation_check.py --json         # the same as JSON
    python tools/mutation_check.py --all          # every failing test per fault, not only the first
    python tools/mutation_check.py -- tests/core  # pytest's own arguments after --: another selection

Exit status 0 when every fault was caught, 1 when one survived, 2 on bad input.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# core and engine first: the law tests sit there, so `-x` stops early when they catch the fault
# (pytest collects overlapping paths once, in its own order: every folder and root file named, none twice)
FAST_TIER = ["-m", "not slow", "tests/core", "tests/engine", "tests/present", "tests/tools", "tests/app",
             *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py"))]


@dataclass(frozen=True)
class Fault:
    name: str
    path: str      # relative to the repository
    line: str      # the exact source line (stripped) the fault replaces
    planted: str   # what replaces it (same indentation)


FAULTS = [
    Fault("residual taken as p, not max(0, p - q)", "specviz/core/sampling.py",
          "residual = torch.clamp(drafted_rows - draft_probs, min=0)                  # [..., gamma, V] max(0, p - q)",
          "residual = drafted_rows"),
    Fault("bonus drawn from q, not from the target's next row", "specviz/core/sampling.py",
          "candidates = torch.cat([corrections, target_probs[..., gamma:, :]], -2)       # [..., gamma+1, V]",
          "candidates = torch.cat([corrections, draft_probs[..., -1:, :]], -2)"),
    Fault("accept test against q/p, not p/q", "specviz/core/sampling.py",
          "accept = torch.clamp(drafted_p / drafted_q, max=1.0)                       # [..., gamma] min(1, p/q)",
          "accept = torch.clamp(drafted_q / drafted_p, max=1.0)"),
    Fault("tree sibling judged against p, not the updated residual", "specviz/core/tree.py",
          "chance = accept_probability(p[None], q[None], token)[0]",
          "chance = accept_probability(target_probs[None], q[None], token)[0]"),
    Fault("mentored plan ignores its KL budget", "specviz/core/mentored.py",
          "if _thresholds(math.exp(mid), row)[2] <= kl_budget:",
          "if True:"),
    # the engine's plumbing: what reaches the decision from real models (caught end to end, or not at all)
    Fault("the round judges each draft by the q of the position before", "specviz/engine/decoding/decoders.py",
          "q = drafted.q(target_probs)                                                             # [k, V]",
          "q = drafted.q(target_probs).roll(1, 0)"),
    # the u_i an inverse-CDF draft of x_i from q would have used (uniform within x_i's step of q's CDF): the accept
    # test then judges each draft by the very uniform that drew it, as the round did before the race drew the drafts
    Fault("the accept test reuses the uniforms that drew the drafts", "specviz/engine/decoding/decoders.py",
          "uniforms = sampling.round_uniforms(k, vocab, self.generator, target_probs.device)     # [k + V]",
          "uniforms = sampling.round_uniforms(k, vocab, self.generator, target_probs.device); "
          "at = drafted.tokens[:, None]; "
          "uniforms[:k] = q.double().cumsum(-1).gather(-1, at)[:, 0] - uniforms[:k] * q.double().gather(-1, at)[:, 0]"),
    Fault("the draft model draws from another law than the q it reports", "specviz/engine/decoding/model_draft.py",
          "inputs = sampling.race(probs, keys, checked=False)                         # [1] long: the next input",
          "inputs = sampling.race(probs * probs, keys, checked=False)"),
]


def plant(folder: Path, fault: Fault) -> None:
    path = folder / fault.path
    lines = path.read_text().split("\n")
    hits = [i for i, line in enumerate(lines) if line.strip() == fault.line]
    if len(hits) != 1:
        raise SystemExit(f"error: the line of fault '{fault.name}' occurs {len(hits)} times in {fault.path} "
                         f"(expected once): update FAULTS in tools/mutation_check.py")
    i = hits[0]
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = indent + fault.planted
    path.write_text("\n".join(lines))


def copy_repository(into: Path) -> Path:
    """The working tree without .git and caches (the models are small enough to copy: about 21 MB)."""
    target = into / "repo"
    shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info", ".gradio", ".whl", ".gl"))
    return target


FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)")


def run_tests(folder: Path, pytest_args: list[str], stop_at_first: bool) -> tuple[int, list[str], float]:
    # addopts emptied: no xdist workers, so -x stops at the first failing test in FAST_TIER's order
    command = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "-p", "no:randomly", "-o", "addopts=",
               *(["-x"] if stop_at_first else []), *pytest_args]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.perf_counter()
    out = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    caught = [m.group(1) for line in out.stdout.splitlines() if (m := FAILED.match(line))]
    return out.returncode, caught, seconds


def check(fault: Fault, pytest_args: list[str], stop_at_first: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="specviz-mutant-") as tmp:
        folder = copy_repository(Path(tmp))
        plant(folder, fault)
        code, caught, seconds = run_tests(folder, pytest_args, stop_at_first)
    print(f"{fault.name}: {'caught by ' + caught[0] if caught else 'NOT CAUGHT'} ({seconds:.0f} s)", file=sys.stderr)
    return {"fault": fault.name, "file": fault.path, "caught": bool(caught) and code != 0, "caught_by": caught,
            "seconds": round(seconds, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--all", action="store_true", help="run the whole selection: every test that catches it")
    parser.add_argument("--only", type=int, action="append", help="check only fault N (1-based; repeatable)")
    parser.add_argument("pytest_args", nargs="*", help="pytest's arguments after -- (default: the fast tier)")
    args = parser.parse_args(argv)
    chosen = args.only or list(range(1, len(FAULTS) + 1))
    if any(not 1 <= n <= len(FAULTS) for n in chosen):
        print(f"error: --only takes 1..{len(FAULTS)}, got {chosen}", file=sys.stderr)
        return 2
    results = [check(FAULTS[n - 1], args.pytest_args or FAST_TIER, not args.all) for n in chosen]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            print(f"{'caught' if r['caught'] else 'MISSED':7} {r['seconds']:6.0f} s  {r['fault']}")
            for name in r["caught_by"][:8]:
                print(f"{'':17}{name}")
    return 0 if all(r["caught"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
