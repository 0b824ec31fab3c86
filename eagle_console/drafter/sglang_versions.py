"""Which SGLang a drafter will be loaded by, and what that version does with it.

Every boundary here is cited in docs/upstream.md ("Drafter doctor (SGLang 0.5.23)"): each one was read in
the released wheels 0.5.9 to 0.5.23 (the first release that has the code, and the one before that lacks it).
When the version is unknown the newest behaviour (0.5.23) is assumed and each finding says so.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

Version = tuple[int, ...]

NEWEST_READ = "0.5.23"  # the newest wheel the rules were read in; an unknown version is judged as this one
K25_EAGLE3 = (0, 5, 10)  # PR #19689: EAGLE-3 with a Kimi-K2.5 target (kimi_k25.py set_eagle3_layers_to_capture)
# PR #24663, all in the 0.5.12 wheel and none in 0.5.11 (llama_eagle3.py): the `midlayer` -> `layers.0` name map,
# N decoder layers, fc = target_hidden x number of aux ids (3 before), fc_norm / use_aux_norm and the legacy
# aux_norm_{low,mid,high} names
LAYERS0_NAMES = (0, 5, 12)
AUX_COUNT_FC = (0, 5, 12)
LLAMA_MULTI_LAYER = (0, 5, 12)
LLAMA_FC_NORM = (0, 5, 12)
MLA_DRAFTER = (0, 5, 12)  # models/kimi_k25_eagle3.py (Eagle3DeepseekV2ForCausalLM)
MLA_FC_NORM = (0, 5, 13)  # kimi_k25_eagle3.py builds fc_norm from 0.5.13 (not in 0.5.12 / 0.5.12.post1)
AUX_FIRST_ID_RULE = (0, 5, 13)  # PR #25454 (deepseek_v2.py, glm4_moe_lite.py only): +1 only when the first id is 1
NORM_BEFORE_FC = (0, 5, 17)  # PR #32334: llama_eagle3.py norm_before_fc -> input_norm (not in 0.5.16)
GPT_OSS_BOUNDARY_IDS = (0, 5, 17)  # PR #32334: gpt_oss.py keeps ids whose largest equals the layer count
KIMI_K2_CONFIG = (0, 5, 12)  # model_type kimi_k2 read as DeepseekV3Config (utils/hf_transformers/common.py)

VERSION_ARGV = ["-c", "import importlib.metadata as m; print(m.version('sglang'))"]


def parse_version(text: str | None) -> Version | None:
    """(0, 5, 12) from '0.5.12', '0.5.12.post1', 'v0.5.12rc0'; None when it has no leading number."""
    if not text:
        return None
    m = re.match(r"v?(\d+(?:\.\d+)*)", text.strip())
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def installed_version(python: str | None = None) -> str | None:
    """The sglang version installed for `python` (another interpreter, asked in a subprocess) or for this
    one; None when sglang is not installed or the interpreter cannot be run."""
    if python is None:
        import importlib.metadata as metadata

        try:
            return metadata.version("sglang")
        except metadata.PackageNotFoundError:
            return None
    try:
        out = subprocess.run([python, *VERSION_ARGV], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = out.stdout.strip()
    return text if out.returncode == 0 and parse_version(text) else None


@dataclass(frozen=True)
class SGLang:
    """The SGLang version findings are judged against."""

    text: str | None  # as given or read; None: unknown, the newest behaviour is assumed
    source: str = ""  # where it came from: "--sglang-version", "installed for /usr/bin/python3", ...

    @property
    def version(self) -> Version | None:
        return parse_version(self.text)

    def at_least(self, bound: Version) -> bool:
        v = self.version
        return True if v is None else v >= bound

    def label(self) -> str:
        """How a finding names the version it assumes."""
        if self.version is None:
            return "SGLang version unknown, newest assumed"
        return f"SGLang {self.text}" + (f" ({self.source})" if self.source else "")


def resolve(version: str | None = None, python: str | None = None) -> SGLang:
    """An explicit version wins; else the one installed for `python` (or for this interpreter)."""
    if version:
        return SGLang(version, "as given")
    found = installed_version(python)
    where = f"installed for {python}" if python else "installed here"
    return SGLang(found, where if found else "")


def intended_inputs(ids: list[int], n_layers: int | None = None) -> list[int] | None:
    """The hidden-state boundaries (boundary i = input of layer i, boundary n = the final state) the drafter was
    trained on, from the convention its ids show: largest id = n (only boundary numbering can say n),
    first id 1 = 'output of block i' (boundary i + 1), first id 2 = 'input to layer i'. None: ambiguous."""
    if not ids:
        return None
    if n_layers is not None and max(ids) == n_layers:
        return list(ids)
    if ids[0] == 1:
        return [i + 1 for i in ids]
    if ids[0] == 2:
        return list(ids)
    return None
