"""The `python -m sglang.launch_server ...` command line of a `sglang.server` step, and its checks.

`with` keys: model, draft, tp, port, host (127.0.0.1), speculative = {algorithm, num_steps, eagle_topk,
num_draft_tokens}, args (extra flags, a list), python (interpreter command, default `python3`; a string is
split with shlex, so "python -m eagle_console.sim.sglang_server" launches the simulated server instead).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from eagle_console.findings import Finding

ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")  # --speculative-algorithm choices in 0.5.x
# In the SpeculativeAlgorithm enum of newer SGLang only (0.5.23 speculative/spec_info.py:32-45); accepted with
# a note.
NEWER_ALGORITHMS = ("DFLASH", "DSPARK", "FROZEN_KV_MTP", "UNO")
# 0.5.23 takes any other name a plugin registered (`SpeculativeAlgorithm.register`, spec_info.py:50-66:
# from_string tries the enum, NEXTN, then the plugin registry): a name shaped like one is a warning, not an error.
_PLUGIN_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# The flags build_launch_argv writes, with SGLang's aliases: `args` must not say them again. 0.5.23 has no
# `--tp` alias (srt/arg_groups/fields/parallel.py:45-51: aliases=["--tensor-parallel-size"]); `--tp` still
# reaches --tp-size as an argparse abbreviation, which repeated_flag catches as one.
GENERATED_FLAGS = {"--model-path": ("--model-path", "--model"), "--tp-size": ("--tp-size", "--tensor-parallel-size"),
                   "--host": ("--host",), "--port": ("--port",)}
NEW_FLAGS_SINCE = (0, 5, 23)  # the release the rules below were read in (earlier boundaries unverified)
# Flags 0.5.23 no longer has: an argparse prefix of two new flags is ambiguous, so argparse exits 2
# (fields/exec_.py:629-645 cuda_graph_max_bs_decode/_prefill, cuda_graph_bs_decode/_prefill).
GONE_FLAGS = {"--cuda-graph-max-bs": "--cuda-graph-max-bs-decode (and -prefill)",
              "--cuda-graph-bs": "--cuda-graph-bs-decode (and -prefill)"}
# Deprecated in 0.5.23 (server_args.py:408-414 DeprecatedStoreTrueAction): still works, with a warning.
DEPRECATED_FLAGS = {"--disable-cuda-graph": "--cuda-graph-backend-decode=disabled --cuda-graph-backend-prefill=disabled"}
SPEC_GENERATED = {"--speculative-algorithm": ("--speculative-algorithm",),
                  "--speculative-draft-model-path": ("--speculative-draft-model-path", "--speculative-draft-model")}
SPEC_FLAGS = (("num_steps", "--speculative-num-steps"), ("eagle_topk", "--speculative-eagle-topk"),
              ("num_draft_tokens", "--speculative-num-draft-tokens"))
# sglang_version: the SGLang the server runs ("0.5.23"), for the flag checks only; never on the command line.
LAUNCH_KEYS = {"model", "draft", "tp", "port", "host", "speculative", "args", "python", "sglang_version"}
KNOWN_KEYS = LAUNCH_KEYS | {"nodes", "dist_port"}  # the last two: multi-node only (sglang/multinode.py)


class LaunchArgsError(ValueError):
    """A `with` table that cannot make a launch command (the message names the key)."""


def _int(args: dict[str, Any], key: str, default: int | None, lo: int, hi: int) -> int | None:
    value = args.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.isdigit())):
        raise LaunchArgsError(f"`{key}` must be an integer, got {value!r}")
    n = int(value)
    if not lo <= n <= hi:
        raise LaunchArgsError(f"`{key}` must be between {lo} and {hi}, got {n}")
    return n


def python_command(args: dict[str, Any]) -> list[str]:
    py = args.get("python", "python3")
    if isinstance(py, str):
        try:
            parts = shlex.split(py)
        except ValueError as exc:
            raise LaunchArgsError(f"`python` does not split as a command line: {exc}") from None
    elif isinstance(py, list) and all(isinstance(p, str) for p in py):
        parts = list(py)
    else:
        raise LaunchArgsError(f"`python` must be a string or a list of strings, got {py!r}")
    if not parts:
        raise LaunchArgsError("`python` is empty")
    return parts


def speculative(args: dict[str, Any]) -> dict[str, Any]:
    spec = args.get("speculative") or {}
    if not isinstance(spec, dict):
        raise LaunchArgsError(f"`speculative` must be a table, got {spec!r}")
    unknown = set(spec) - {"algorithm", *(k for k, _ in SPEC_FLAGS)}
    if unknown:
        raise LaunchArgsError(f"`speculative` has unknown keys: {', '.join(sorted(unknown))}")
    algorithm = spec.get("algorithm")
    if algorithm is not None and not _PLUGIN_NAME.match(str(algorithm)):
        raise LaunchArgsError(f"`speculative.algorithm` must be one of {', '.join(ALGORITHMS + NEWER_ALGORITHMS)} "
                              f"or a plugin-registered name, got {algorithm!r}")
    out: dict[str, Any] = {"algorithm": str(algorithm).upper() if algorithm else None}
    for key, _flag in SPEC_FLAGS:
        out[key] = _int(spec, key, None, 1, 64)
    if out["algorithm"] and out["num_steps"] is None and (out["eagle_topk"] is not None
                                                          or out["num_draft_tokens"] is not None):
        # server_args.py asserts topk and draft tokens are None when num_steps is: all three or none
        raise LaunchArgsError("`speculative.eagle_topk` / `num_draft_tokens` need `num_steps`: SGLang "
                              "auto-chooses all three or none, and asserts otherwise")
    return out


def repeated_flag(extra: list[str], generated: dict[str, tuple[str, ...]]) -> str | None:
    """The first `args` item that repeats a generated flag: the flag, an alias, `--flag=value`, or an argparse
    abbreviation of one (SGLang's parser keeps allow_abbrev on; the last value given would win)."""
    for item in extra:
        name = str(item).split("=", 1)[0]
        if not name.startswith("--") or len(name) < 3:
            continue
        for flag, names in generated.items():
            if any(n == name or n.startswith(name) for n in names):
                return f"{item!s} ({'repeats' if name in names else 'abbreviates'} {flag})"
    return None


def build_launch_argv(args: dict[str, Any]) -> list[str]:
    """The launch command for a `sglang.server` `with` table; LaunchArgsError if a key is malformed."""
    unknown = set(args) - LAUNCH_KEYS  # a multi-node table reaches here without `nodes` and `dist_port`
    if unknown:
        extra = " (`dist_port` goes with `nodes`)" if unknown == {"dist_port"} else ""
        raise LaunchArgsError(f"unknown keys: {', '.join(sorted(unknown))} (known: {', '.join(sorted(KNOWN_KEYS))})"
                              + extra)
    model = args.get("model")
    if not isinstance(model, str) or not model:
        raise LaunchArgsError("`model` (a model path or name) is required")
    tp = _int(args, "tp", 1, 1, 64)
    port = _int(args, "port", 30000, 1, 65535)
    host = args.get("host", "127.0.0.1")
    if not isinstance(host, str) or not host:
        raise LaunchArgsError(f"`host` must be a string, got {host!r}")
    extra = args.get("args", [])
    if not isinstance(extra, list) or not all(isinstance(a, (str, int, float)) for a in extra):
        raise LaunchArgsError(f"`args` must be a list of flags, got {extra!r}")
    argv = [*python_command(args), "-m", "sglang.launch_server", "--model-path", model,
            "--tp-size", str(tp), "--host", host, "--port", str(port)]
    spec = speculative(args)
    generated = dict(GENERATED_FLAGS)
    if spec["algorithm"]:
        generated.update(SPEC_GENERATED)
        generated.update({flag: (flag,) for key, flag in SPEC_FLAGS if spec[key] is not None})
    clash = repeated_flag([str(a) for a in extra], generated)
    if clash:
        raise LaunchArgsError(f"`args` has {clash}, a flag the step writes from its keys (model, tp, host, port, "
                              "speculative, draft): set the key instead (a second --port would send the "
                              "readiness probe to the wrong port)")
    draft = args.get("draft")
    if draft is not None and (not isinstance(draft, str) or not draft):
        raise LaunchArgsError(f"`draft` must be a path, got {draft!r}")
    if draft and not spec["algorithm"]:
        raise LaunchArgsError("`draft` is set but `speculative.algorithm` is not (EAGLE3 for an EAGLE-3 drafter)")
    if spec["algorithm"]:
        argv += ["--speculative-algorithm", spec["algorithm"]]
        if draft:
            argv += ["--speculative-draft-model-path", draft]
        for key, flag in SPEC_FLAGS:
            if spec[key] is not None:
                argv += [flag, str(spec[key])]
    return argv + [str(a) for a in extra]


def _draft_config(draft: str) -> dict[str, Any] | None:
    from eagle_console.drafter.checkpoint import CheckpointError, read_json

    path = Path(draft)
    config = path / "config.json" if path.is_dir() else path
    if not config.is_file():
        return None  # a hub id or a path on another machine: nothing to read here
    try:
        return read_json(config)
    except CheckpointError:
        return None


def launch_findings(args: dict[str, Any]) -> list[Finding]:
    """Problems with a `sglang.server` `with` table, found without launching (errors refuse the launch)."""
    try:
        build_launch_argv(args)
    except LaunchArgsError as exc:
        return [Finding("error", "ARGS", str(exc))]
    spec = speculative(args)
    findings: list[Finding] = []
    draft = args.get("draft")
    if draft and spec["algorithm"] in ("EAGLE", "EAGLE3"):
        from eagle_console.drafter.check import is_eagle3

        config = _draft_config(draft)
        if config is not None and is_eagle3(config) and spec["algorithm"] == "EAGLE":
            findings.append(Finding(
                "error", "ALGORITHM",
                f"{draft} is an EAGLE-3 drafter but speculative.algorithm is EAGLE: SGLang loads it as an "
                "EAGLE-2 head and the accept length is silently 1.0 (sglang PR #21272); use algorithm = \"EAGLE3\""))
    if spec["algorithm"] in NEWER_ALGORITHMS:
        findings.append(Finding(
            "warning", "SPEC_VERSION",
            f"speculative.algorithm {spec['algorithm']} exists only in newer SGLang (not in 0.5.x's choices "
            f"{', '.join(ALGORITHMS)}): check the installed version"))
    elif spec["algorithm"] and spec["algorithm"] not in ALGORITHMS:
        import difflib

        close = difflib.get_close_matches(spec["algorithm"], ALGORITHMS + NEWER_ALGORITHMS, n=1)
        findings.append(Finding(
            "warning", "SPEC_VERSION",
            f"speculative.algorithm {spec['algorithm']} is no builtin of SGLang 0.5.23: it starts only if a plugin "
            "registered it (SpeculativeAlgorithm.register), else SGLang stops with \"Unknown speculative "
            "algorithm name\"" + (f"; did you mean {close[0]}?" if close else "")))
    findings += flag_findings([str(a) for a in args.get("args", [])], args.get("sglang_version"))
    topk, steps, tokens = spec["eagle_topk"], spec["num_steps"], spec["num_draft_tokens"]
    if topk == 1 and steps is not None and tokens is not None and tokens != steps + 1:
        findings.append(Finding(
            "warning", "SPEC_CHAIN",
            f"eagle_topk = 1 is a chain: num_draft_tokens should be num_steps + 1 = {steps + 1}, not {tokens}"))
    return findings


def _version(text: object) -> tuple[int, ...] | None:
    m = re.match(r"v?(\d+(?:\.\d+)*)", str(text).strip()) if text is not None else None
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def flag_findings(extra: list[str], sglang_version: object = None) -> list[Finding]:
    """`args` flags the SGLang of `sglang_version` (None: unknown) refuses or deprecates (0.5.23 rules)."""
    version = _version(sglang_version)
    new = version is not None and version >= NEW_FLAGS_SINCE
    which = f"SGLang {sglang_version}" if version is not None else "SGLang 0.5.23 (the version is not given)"
    out: list[Finding] = []
    for item in extra:
        name = item.split("=", 1)[0]
        if name in GONE_FLAGS and (new or version is None):
            out.append(Finding(
                "error" if new else "warning", "ARGS",
                f"`args` has {name}: {which} has only {GONE_FLAGS[name]}, and argparse refuses {name} as an "
                "ambiguous abbreviation of both (exit 2)"))
        elif name in DEPRECATED_FLAGS and (new or version is None):
            out.append(Finding(
                "warning", "ARGS",
                f"`args` has {name}: deprecated in {which}; use {DEPRECATED_FLAGS[name]}"))
    return out
