"""pyproject.toml tells the truth: what the code imports is declared, floors exist, metadata matches files."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "eagle_console"
# import name -> distribution name, where they differ
DISTRIBUTION = {"pynvml": "nvidia-ml-py", "prometheus_client": "prometheus-client", "textual_plotext": "textual-plotext"}
# imported only behind an importability check, for optional file types: an extra, not a dependency
OPTIONAL = {"torch", "ray"}  # ray: the `cluster` extra, imported only for a plan with [cluster]
# imported only by eagle_console/tui/served.py (`eagle-console serve` catches their absence): the `serve` extra
SERVE_ONLY = {"textual_serve", "aiohttp"}
# imported only by eagle_console/mcp/server.py (`eagle-console mcp` says how to install it): the `agent` extra
AGENT_ONLY = {"mcp"}


def test_ray_is_the_cluster_extra() -> None:
    cluster = [Requirement(t) for t in project()["optional-dependencies"]["cluster"]]
    assert [(r.name, r.extras) for r in cluster] == [("ray", {"default"})]
    assert not cluster[0].specifier.contains("2.51.0"), "token authentication came in Ray 2.52.0"


def project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirements(texts: list[str]) -> dict[str, Requirement]:
    return {Requirement(t).name: Requirement(t) for t in texts}


@functools.lru_cache(maxsize=1)
def top_level_imports() -> dict[Path, frozenset[str]]:
    """Each module of the package -> the top-level names it imports (absolute imports, functions included).
    Parsed once a test process: the package is ~200 files, and three tests read it."""
    found: dict[Path, frozenset[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[path] = frozenset(names)
    return found


def third_party_imports() -> set[str]:
    names = set().union(*top_level_imports().values())
    stdlib = set(sys.stdlib_module_names) | {"tomllib"}
    return {n for n in names if n not in stdlib and n != "eagle_console"} - OPTIONAL - SERVE_ONLY - AGENT_ONLY


def test_every_import_is_declared_and_every_dependency_imported() -> None:
    declared = set(requirements(project()["dependencies"]))
    imported = {DISTRIBUTION.get(n, n) for n in third_party_imports()}
    assert imported - declared == set(), "imported but not declared"
    assert declared - imported == set(), "declared but never imported"


def test_the_serve_extra_declares_what_serve_imports() -> None:
    serve = requirements(project()["optional-dependencies"]["serve"])
    assert {n.replace("_", "-") for n in SERVE_ONLY} == set(serve)
    # only the interface layer's wrapper imports it (it runs Textual consoles); the CLI names it in its check
    allowed = {PACKAGE / "tui" / "served.py", PACKAGE / "cli" / "serve_cmds.py"}
    for path in PACKAGE.rglob("*.py"):
        if path not in allowed:
            text = path.read_text()
            assert "textual_serve" not in text and "aiohttp" not in text, f"{path} imports the serve extra"
    for req in serve.values():
        assert any(s.operator == ">=" for s in req.specifier), f"{req} has no floor"


def test_the_agent_extra_declares_what_the_mcp_server_imports() -> None:
    agent = requirements(project()["optional-dependencies"]["agent"])
    assert set(agent) == AGENT_ONLY
    (req,) = agent.values()
    assert any(s.operator == ">=" for s in req.specifier) and not req.specifier.contains("3.0.0"), req
    # only the server module imports the SDK: the rest of eagle_console.mcp (tools, bounds) runs without it
    for path, imports in top_level_imports().items():
        if path != PACKAGE / "mcp" / "server.py":
            assert "mcp" not in imports, f"{path} imports the agent extra"


def test_every_dependency_has_a_floor() -> None:
    p = project()
    for req in [*requirements(p["dependencies"]).values(), *requirements(p["optional-dependencies"]["test"]).values()]:
        assert any(s.operator in (">=", "==") for s in req.specifier), f"{req} has no floor"


def test_tomli_reads_toml_1_0_like_tomllib() -> None:
    tomli = requirements(project()["dependencies"])["tomli"]
    assert not tomli.specifier.contains("2.4.0"), "tomli 2.4 reads TOML 1.1; tomllib on 3.11+ does not"
    assert tomli.specifier.contains("2.3.0") and tomli.marker is not None


def test_nvidia_ml_py_is_capped_below_the_next_major() -> None:
    nvml = requirements(project()["dependencies"])["nvidia-ml-py"]
    assert not nvml.specifier.contains("14.0.0") and nvml.specifier.contains("13.615.71")


def test_the_node_extra_installs_only_where_sglang_does() -> None:
    node = [Requirement(t) for t in project()["optional-dependencies"]["node"]]
    assert [r.name for r in node] == ["sglang"] and not node[0].extras, "sglang[all] pulls diffusion/tracing stacks"
    marker = node[0].marker
    assert marker is not None
    assert not marker.evaluate({"python_version": "3.10", "sys_platform": "linux"})
    assert marker.evaluate({"python_version": "3.11", "sys_platform": "linux"})


def test_one_version_source() -> None:
    p = project()
    assert "version" not in p and "version" in p["dynamic"]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "eagle_console.__version__"}
    import eagle_console

    assert eagle_console.__version__ in (ROOT / "CHANGELOG.md").read_text()


def test_license_is_spdx_and_shipped() -> None:
    p = project()
    assert p["license"] == "Apache-2.0"
    for name in p["license-files"]:
        assert "Apache License" in (ROOT / name).read_text()


def test_every_package_data_glob_matches_a_file() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for package, globs in data.items():
        for pattern in globs:
            assert list((ROOT / package).glob(pattern)), f"package-data {package}/{pattern} matches nothing"
