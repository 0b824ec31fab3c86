"""`json.set`: set keys in a JSON file, with an exact-bytes backup and a drift-checked undo."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from eagle_console.engine.builtins.base import ActionContext, Builtin, BuiltinError
from eagle_console.inputfile import EDIT_CAP, InputFileError, read_bytes
from eagle_console.statedir import give_to_folder_owner, private_dirs

STATE = "json_set.json"


def sha256(data: bytes) -> str:
    import hashlib  # here, not at the top: the plan loader imports this module for its traits

    return hashlib.sha256(data).hexdigest()


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write next to the target, fsync, rename: a crash leaves the old file or the new one, never half.

    A symlink is written through (the Hugging Face cache links config.json to a blob: the link stays a
    link); the file keeps its owner, group and mode (`mode` sets one for a new file, e.g. a 0600 backup).
    """
    import tempfile

    path = Path(os.path.realpath(path))
    try:
        st: os.stat_result | None = path.stat()
    except FileNotFoundError:
        st = None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                os.chown(tmp, st.st_uid, st.st_gid)  # root editing an operator's file must not take it over
        else:
            os.chmod(tmp, 0o644 if mode is None else mode)
            give_to_folder_owner(Path(tmp), path.parent)  # root's backup in an operator's state dir: theirs
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def apply_sets(doc: Any, sets: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Set dotted keys (`a.b.c`) in `doc`, creating objects on the way; returns (key, old, new) changes."""
    if not isinstance(doc, dict):
        raise BuiltinError("the JSON file's top level is not an object")
    changes = []
    for dotted, value in sets.items():
        node = doc
        parts = dotted.split(".")
        for part in parts[:-1]:
            nxt = node.get(part)
            if nxt is None:
                nxt = node[part] = {}
            if not isinstance(nxt, dict):
                raise BuiltinError(f"cannot set {dotted}: {part} is not an object")
            node = nxt
        old = node.get(parts[-1], "<unset>")
        node[parts[-1]] = value
        changes.append((dotted, old, value))
    return changes


class NonFinite(str):
    """A number JSON cannot carry as a float: `1e400` (inf once parsed), or `NaN` / `Infinity`, which are no
    JSON at all (RFC 8259 §6). Kept as its text so the refusal quotes what the file says."""


def _non_finite_float(text: str) -> float | NonFinite:
    value = float(text)
    return value if math.isfinite(value) else NonFinite(text)


def parse_document(data: bytes, path: Path) -> Any:
    """The JSON document, or BuiltinError naming the file (and line:column of a syntax error) or the first
    key holding a number that would be written back as `Infinity`/`NaN`."""
    try:
        text = data.decode("utf-8")
        doc = json.loads(text, parse_float=_non_finite_float, parse_constant=NonFinite)
    except json.JSONDecodeError as exc:
        raise BuiltinError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise BuiltinError(f"{path}: JSON nested too deeply to read: refused") from None
    except ValueError as exc:  # not UTF-8, an integer past Python's digit limit
        raise BuiltinError(f"{path} is not valid JSON: {exc}") from None
    for key, value in _leaves(doc):
        if isinstance(value, NonFinite):
            raise BuiltinError(f"{path}: {key or 'the top level'} is {value}, a number outside what JSON can "
                               "write back (it would become Infinity or NaN, which no JSON reader accepts): "
                               "fix it in the file first; nothing was changed")
    return doc


def _leaves(doc: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) of every scalar; list items as `key[i]`. Iterative: a deep file cannot recurse."""
    out, todo = [], [(prefix, doc)]
    while todo:
        key, value = todo.pop()
        if isinstance(value, dict):
            todo.extend((f"{key}.{k}" if key else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((f"{key}[{i}]", v) for i, v in enumerate(value))
        else:
            out.append((key, value))
    return out


def _flatten(sets: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`set = { a = { b = 1 } }` means the same as `set = { "a.b" = 1 }`."""
    out: dict[str, Any] = {}
    for key, value in sets.items():
        if isinstance(value, dict) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


class JsonSet(Builtin):
    name = "json.set"

    def validate(self, args: dict[str, Any]) -> list[str]:
        problems = []
        if not isinstance(args.get("path"), str):
            problems.append("`path` (the JSON file) is required")
        if not isinstance(args.get("set"), dict) or not args.get("set"):
            problems.append("`set` must be a table of keys to set, e.g. set = { max_position_embeddings = 262144 }")
        else:
            problems += [f"`set` {key} = {value}: JSON has no such number (it would be written as Infinity or NaN)"
                         for key, value in _leaves(args["set"])
                         if isinstance(value, float) and not math.isfinite(value)]
        return problems

    def run(self, ctx: ActionContext) -> int:
        path = ctx.path(ctx.args["path"])
        try:  # a regular file of at most 64 MiB: a FIFO or a device in its place is refused, not read
            original = read_bytes(path, EDIT_CAP, "a JSON file json.set edits")
        except InputFileError as exc:
            raise BuiltinError(f"cannot read {exc}") from None
        doc = parse_document(original, path)
        sets = _flatten(ctx.args["set"])
        changes = apply_sets(doc, sets)
        try:  # RFC 8259: never Infinity or NaN (validate and parse_document refuse them before this)
            new = (json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()
        except ValueError as exc:
            raise BuiltinError(f"{path}: the result would not be JSON ({exc}); nothing was changed") from None
        state = ctx.load(STATE)
        # Running again over our own write keeps the first backup, so undo returns the original bytes.
        if state and state.get("path") == str(path) and state.get("written_sha") == sha256(original):
            backup_sha = state["backup_sha"]
        else:
            backup_sha = sha256(original)
            private_dirs(ctx.artifacts)
            write_atomic(ctx.artifacts / f"backup-{backup_sha}.bin", original, mode=0o600)  # may hold secrets
            ctx.say(f"backed up {path} ({len(original)} bytes, sha256 {backup_sha[:12]}…)")
        write_atomic(path, new)
        ctx.save(STATE, {"path": str(path), "backup_sha": backup_sha, "written_sha": sha256(new)})
        for key, old, value in changes:
            ctx.say(f"{path.name}: {key}: {json.dumps(old)} → {json.dumps(value)}")
        ctx.result("keys_set", len(changes))
        return 0

    def undo(self, ctx: ActionContext) -> int:
        state = ctx.load(STATE)
        if not state:
            raise BuiltinError("no backup recorded for this step: nothing to restore")
        path = Path(state["path"])
        backup = ctx.artifacts / f"backup-{state['backup_sha']}.bin"
        try:
            data = backup.read_bytes()
        except OSError:
            raise BuiltinError(f"the backup {backup} is missing") from None
        if sha256(data) != state["backup_sha"]:
            raise BuiltinError(f"the backup {backup} is corrupt (hash mismatch)")
        current = path.read_bytes() if path.exists() else b""
        if sha256(current) != state["written_sha"] and not ctx.force:
            raise BuiltinError(
                f"{path} changed since json.set wrote it (sha256 {sha256(current)[:12]}…, expected "
                f"{state['written_sha'][:12]}…): refusing to overwrite someone's edit; a forced rollback "
                "restores the backup anyway")
        write_atomic(path, data)
        ctx.save(STATE + ".undone", state)
        (ctx.artifacts / STATE).unlink(missing_ok=True)
        ctx.say(f"restored {path} from its backup ({len(data)} bytes, sha256 {state['backup_sha'][:12]}…)")
        return 0
