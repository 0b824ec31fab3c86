"""NCCL debug log (NCCL_DEBUG=INFO) → the `nccl --json` summary: ranks, devices, transports, findings.

Pure functions over text lines; `NcclParser` is incremental so the console can feed it the lines a log
follower delivers. Lines may come from many processes and hosts interleaved, carry a launcher prefix
(pdsh `host: `, Ray `(Worker pid=N) `, docker `svc  | `, mpirun `[1,0]<stdout>:`), a WARN timestamp
(NCCL ≥ 2.26), and either rank layout: `R[busId]` in hex (NCCL ≤ 2.18.1) or `R[nvmlDev]` (newer).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from eagle_console.findings import Finding, FindingJson
from eagle_console.parse.nccl_shm import shm_verdict

# host:pid:tid [cudaDev] (file:line (func) )?NCCL LEVEL msg — searched, not anchored, so a launcher
# prefix before the host is skipped. The host may contain anything but blanks and colons.
_LINE = re.compile(
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[^\]]*)\] )?"
    r"(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) "
    r"(?:\[(?P<dev>\d+)\] )?"
    r"(?:(?P<file>[\w./+-]+):(?P<fline>\d+) (?:\((?P<func>[^)]*)\) )?)?"
    r"NCCL (?P<lvl>INFO|WARN|TRACE|CALL|ABORT) ?(?P<msg>.*)$"
)
_VERSION = re.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+\S*)")
# What SGLang/vLLM print about the NCCL they load, e.g. `sglang is using nccl==2.27.3`.
_FRAMEWORK_VERSION = re.compile(r"is using nccl==(?P<v>\d+\.\d+\.\d+)")
# `Channel 05/0 : 8[0] -> 15[7] [send] via NET/Socket/0`; very old releases said `Ring 00 :`.
_CONN = re.compile(
    r"^(?:Channel|Ring) (?P<ch>\d+)(?:/(?P<conn>\d+))? : "
    r"(?P<src>\d+)\[(?P<sdev>[0-9a-fA-F]+)\] -> (?P<dst>\d+)\[(?P<ddev>[0-9a-fA-F]+)\]"
    r"(?: \[(?P<dir>send|receive)\])? via (?P<via>.+?)\s*$"
)
# `... comm 0x.. rank 0 nranks 8 cudaDev 0 (nvmlDev 0 )?busId 1000 (commId 0x.. )?- Init COMPLETE`; a split
# communicator's START has no blank before the dash, `... color %d key %d- Init START` (init.cc v2.23.4:1440 …
# v2.30.7:1885-1887; its COMPLETE has one, :1937-1939).
_INIT = re.compile(
    r"comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<cuda>\d+)"
    r"(?: nvmlDev (?P<nvml>\d+))? busId (?P<bus>[0-9a-fA-F]+)"
    r"(?: commId (?P<commid>0x[0-9a-fA-F]+))?.*?- Init (?P<phase>START|COMPLETE)"
)
_TOPO = re.compile(
    r"comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nRanks (?P<nranks>\d+) nNodes (?P<nnodes>\d+)"
)
_ENV = re.compile(r"^(?P<name>NCCL_[A-Z0-9_]+) set by environment to (?P<value>.*?)\s*$")
# misc/param.cc prints integer parameters as "%s set by environment to %lld." (v2.18.1:75 … v2.30.7:100), and
# init.cc NCCL_COLLNET_ENABLE as "%s." (v2.18.1:817): that period is NCCL's sentence, not the value.
_ENV_INT_PERIOD = re.compile(r"^-?\d+\.$")
_P2P_DISABLED = (
    re.compile(r"P2P is disabled between connected GPUs (?P<a>\d+) and (?P<b>\d+)"),
    re.compile(r"Could not enable P2P between dev (?P<a>\d+)\S* and dev (?P<b>\d+)"),
    # `peer query failed between dev %d(=%lx) and dev %d(=%lx)` (transport/p2p.cc v2.21.5:155 … v2.30.7:176)
    re.compile(r"peer query failed between dev (?P<a>\d+)\S* and dev (?P<b>\d+)"),
    re.compile(r"P2P not supported between GPU(?P<a>\d+) and GPU(?P<b>\d+)"),
    re.compile(r"Legacy IPC not supported"),
)
# The GRAPH topology dump's CPU node, `CPU/0-ffffffffffffff (1/1/4)` = (arch/vendor/model) (graph/topo.cc
# ncclTopoPrintRec; values in include/graph.h: arch 1 x86, 3 ARM; vendor 1 Intel, 2 AMD, 3 Zhaoxin).
_CPU = re.compile(r"^CPU/[0-9a-fA-F]+(?:-[0-9a-fA-F]+)? \((?P<arch>\d+)/(?P<vendor>\d+)/(?P<model>\d+)\)")
_SEVERE_WARN = re.compile(r"fail|error|timeout|timed out|abort|unhandled", re.IGNORECASE)
# WARNs after which NCCL carries on: an IB device it cannot open is skipped (`continue` after
# WARN("NET/IB : Unable to open device %s"), transport/net_ib.cc v2.10.3:149 … net_ib/init.cc v2.30.7:334;
# the wrapper's own "Call to ibv_open_device failed" precedes it), and a missing libibverbs only means no IB
# (misc/ibvwrap.cc v2.10.3:63 WARN, demoted to INFO in misc/ibvsymbols.cc v2.18.1:78). NCCL then uses
# sockets or the devices it could open: no error of the run.
_BENIGN_WARN = re.compile(r"NET/IB ?: Unable to open device|Call to ibv_open_device failed|"
                          r"Failed to open libibverbs")

TRANSPORTS = ("P2P", "SHM", "NET", "COLLNET")
MAX_PAIRS = 20_000  # bounded memory: an 8-rank server with several communicators stays far below
MAX_WARNINGS = 200
# The `R[x]` number is the nvmlDev from 2.18.3; up to 2.18.1 it was the hex PCI busId.
NVMLDEV_LAYOUT_SINCE = (2, 18, 3)


class NcclDevice(TypedDict):
    rank: int
    cuda_dev: int | None
    bus_id: str | None  # PCI `0000:e3:00.0`


class NcclPair(TypedDict):
    src: int
    dst: int
    transport: str  # P2P | SHM | NET | COLLNET
    detail: str  # `ch05 P2P/CUMEM/read [send]`


class NcclSummary(TypedDict):
    """The `nccl --json` document (cli.md "NCCL summary"); its keys are in the order printed."""

    version: str | None
    ranks: int | None
    init_complete: int
    hosts: list[str]
    devices: list[NcclDevice]
    transports: dict[str, int]  # channel connections (one per channel and direction of a GPU pair)
    transport_pairs: dict[str, int]  # GPU pairs (src→dst) by transport, whatever their channels: the findings' unit
    pairs: list[NcclPair]
    env: dict[str, str]
    warnings: list[str]
    findings: list[FindingJson]


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """`2.28.9+cuda13.0` → (2, 28, 9)."""
    if not text:
        return None
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(g) for g in m.groups()) if m else None


def format_bus_id(hex_bus: str) -> str:
    """NCCL's int64 busId printed with %lx (`e3000`, `1901000`) → PCI `0000:e3:00.0`."""
    value = int(hex_bus, 16)
    return f"{value >> 20:04x}:{(value >> 12) & 0xFF:02x}:{(value >> 4) & 0xFF:02x}.{value & 0xF:x}"


def is_nccl_line(line: str) -> bool:
    """True for a line NCCL wrote (an INFO/WARN line or the bare version banner), or the framework's line
    naming the NCCL it loads (`sglang is using nccl==2.27.3`: the version when NCCL prints no banner)."""
    if "NCCL" not in line:
        return "nccl==" in line and bool(_FRAMEWORK_VERSION.search(line))
    return bool(_LINE.search(line) or _VERSION.search(line))


def nccl_lines(lines: Iterable[str]) -> list[str]:
    """The NCCL lines of a mixed log (a server's stdout with NCCL_DEBUG=INFO), in order."""
    return [line for line in lines if is_nccl_line(line)]


@dataclass
class _Conn:
    src: int  # ranks as logged: the communicator's own (a sub-group's rank 0 is not the server's rank 0)
    dst: int
    transport: str
    detail: str
    host: str | None  # the host of the process that logged it
    sdev: int | None = None  # the GPUs (nvmlDev, NCCL >= 2.18.3) behind src and dst
    ddev: int | None = None


@dataclass
class NcclParser:
    """Feed NCCL log lines (any order of processes/hosts); `summary()` gives the `nccl --json` dict."""

    version: str | None = None
    framework_version: str | None = None
    hosts: dict[str, None] = field(default_factory=dict)  # insertion-ordered set: O(1) per line
    env: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    nccl_lines_seen: int = 0
    _conns: list[_Conn] = field(default_factory=list)
    _conn_keys: set[tuple] = field(default_factory=set)
    _net_counted: set[tuple] = field(default_factory=set)  # (channel, conn, src, dst) of NET lines counted
    _transport_counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TRANSPORTS, 0))
    _rank_host: dict[int, str] = field(default_factory=dict)
    _devices: dict[int, NcclDevice] = field(default_factory=dict)
    _rank_bracket: dict[int, str] = field(default_factory=dict)  # raw R[x] value per rank
    _hex_seen: bool = False
    _nranks: dict[str, int] = field(default_factory=dict)  # communicator key → nranks
    _started: dict[tuple, int] = field(default_factory=dict)  # (host, pid, comm) → rank
    _completed: dict[tuple, int] = field(default_factory=dict)
    _completed_ranks: dict[str, set[int]] = field(default_factory=dict)  # communicator key → ranks
    _nnodes: set[int] = field(default_factory=set)
    # nranks → (host, nvmlDev) → rank: which rank each GPU is in a communicator of that size
    _gpu_rank: dict[int, dict[tuple[str, int], int]] = field(default_factory=dict)
    _p2p_disabled: list[str] = field(default_factory=list)
    cpu: tuple[int, int] | None = None  # (arch, vendor) from the GRAPH topology dump
    _warn_count: int = 0
    _benign_warns: int = 0  # WARNs NCCL carries on after (_BENIGN_WARN)
    _severe_warn: bool = False
    node: str | None = None  # the node the lines being fed come from (set by the multi-node merge)
    # The cards' names as NVML gives them (the GPU reading; NCCL's log has none): SHM_FALLBACK names the class
    gpu_names: list[str] = field(default_factory=list)
    _host_node: dict[str, str] = field(default_factory=dict)  # host → the node whose log first named it

    def _qualified(self, host: str) -> str:
        """Two nodes' logs naming the same host (sim nodes, containers all called `localhost`) stay apart."""
        if self.node is None:
            return host
        first = self._host_node.setdefault(host, self.node)
        return host if first == self.node else f"{host}@{self.node}"

    def feed(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.feed_line(line)

    def feed_line(self, line: str) -> None:
        if "NCCL" not in line and "nccl==" not in line:
            return
        m = _LINE.search(line)
        if not m:
            v = _VERSION.search(line) if self.version is None else None
            if v:  # bare banner at NCCL_DEBUG=VERSION/WARN
                self.version = v.group("v")
                self.nccl_lines_seen += 1
            fv = _FRAMEWORK_VERSION.search(line)
            if fv and self.framework_version is None:
                self.framework_version = fv.group("v")
            return
        self.nccl_lines_seen += 1
        host, msg = self._qualified(m.group("host")), m.group("msg").rstrip()
        self.hosts.setdefault(host)
        if m.group("lvl") == "WARN":
            self._on_warn(m, msg)
            return
        self._on_info(host, m.group("pid"), msg)

    def _on_warn(self, m: re.Match[str], msg: str) -> None:
        self._warn_count += 1
        if _BENIGN_WARN.search(msg):
            self._benign_warns += 1
        else:
            self._severe_warn = self._severe_warn or bool(_SEVERE_WARN.search(msg))
        where = f"{m.group('file')}:{m.group('fline')} " if m.group("file") else ""
        text = f"{m.group('host')}:{m.group('pid')} [{m.group('dev') or '?'}] {where}{msg}"
        if len(self.warnings) < MAX_WARNINGS and text not in self.warnings:
            self.warnings.append(text)

    def _on_info(self, host: str, pid: str, msg: str) -> None:
        if msg.startswith(("Channel ", "Ring ")) and " via " in msg:
            c = _CONN.match(msg)
            if c:
                self._on_conn(host, pid, c)
                return
        if self.version is None:
            v = _VERSION.search(msg)
            if v:
                self.version = v.group("v")
                return
        if "Init " in msg:
            i = _INIT.search(msg)
            if i:
                self._on_init(host, pid, i)
                return
        t = _TOPO.search(msg) if "nNodes" in msg else None
        if t:
            self._nnodes.add(int(t.group("nnodes")))
            self._nranks.setdefault(f"size{t.group('nranks')}", int(t.group("nranks")))
            self._rank_host.setdefault(int(t.group("rank")), host)
            return
        if msg.startswith("CPU/"):
            cpu = _CPU.match(msg)
            if cpu:
                self.cpu = self.cpu or (int(cpu.group("arch")), int(cpu.group("vendor")))
                return
        e = _ENV.match(msg)
        if e:
            value = e.group("value")
            self.env[e.group("name")] = value[:-1] if _ENV_INT_PERIOD.match(value) else value
            return
        for pattern in _P2P_DISABLED:
            d = pattern.search(msg)
            if d:
                pair = f"{d.group('a')}-{d.group('b')}" if d.groupdict() else "legacy IPC"
                if pair not in self._p2p_disabled and len(self._p2p_disabled) < 256:
                    self._p2p_disabled.append(pair)
                return

    def _on_conn(self, host: str, pid: str, c: re.Match[str]) -> None:
        src, dst = int(c.group("src")), int(c.group("dst"))
        via, direction = c.group("via"), c.group("dir")
        transport = via.split("/", 1)[0].split(" ", 1)[0].upper()
        # The process that logs a connection owns its sender, except for NET `[receive]` lines.
        self._rank_host.setdefault(dst if direction == "receive" else src, host)
        for rank, raw in ((src, c.group("sdev")), (dst, c.group("ddev"))):
            self._rank_bracket.setdefault(rank, raw)
            if len(raw) > 2 or any(ch in "abcdefABCDEF" for ch in raw):
                self._hex_seen = True
        key = (host, pid, c.group("ch"), c.group("conn"), src, dst, via, direction)
        if key in self._conn_keys:
            return
        # Both ends log a NET connection ([send] net.cc v2.30.7:324, [receive] :377; P2P and SHM only the
        # sender, p2p.cc:423, shm.cc:116): counted once, by whichever end's line came (an excerpt of one
        # host holds only its receiving half of a connection from another).
        net_key = (c.group("ch"), c.group("conn"), src, dst) if direction else None
        if net_key is None or net_key not in self._net_counted:
            self._transport_counts[transport] = self._transport_counts.get(transport, 0) + 1
            if net_key is not None:
                self._net_counted.add(net_key)
        if len(self._conns) >= MAX_PAIRS:
            return
        self._conn_keys.add(key)
        detail = f"ch{c.group('ch')} {via}" + (f" [{direction}]" if direction else "")
        devs = (int(c.group("sdev")), int(c.group("ddev"))) if c.group("sdev").isdigit() and \
            c.group("ddev").isdigit() else (None, None)
        self._conns.append(_Conn(src, dst, transport, detail, host, *devs))

    def _on_init(self, host: str, pid: str, i: re.Match[str]) -> None:
        rank, nranks = int(i.group("rank")), int(i.group("nranks"))
        if i.group("nvml") is not None:  # which rank each GPU is in a communicator of this size
            self._gpu_rank.setdefault(nranks, {})[(host, int(i.group("nvml")))] = rank
        comm_key = i.group("commid") or f"size{nranks}"
        self._nranks[comm_key] = nranks
        self._rank_host.setdefault(rank, host)
        dev = self._devices.setdefault(rank, NcclDevice(rank=rank, cuda_dev=None, bus_id=None))
        if dev["cuda_dev"] is None:
            dev["cuda_dev"] = int(i.group("cuda"))
        if dev["bus_id"] is None:
            dev["bus_id"] = format_bus_id(i.group("bus"))
        proc = (host, pid, i.group("comm"))
        if i.group("phase") == "START":
            self._started[proc] = rank
        else:
            self._completed[proc] = rank
            self._completed_ranks.setdefault(comm_key, set()).add(rank)

    # ---- results -------------------------------------------------------------------------------

    @property
    def effective_version(self) -> str | None:
        return self.version or self.framework_version

    def ranks(self) -> int | None:
        return max(self._nranks.values()) if self._nranks else None

    def init_complete(self) -> int:
        """Distinct ranks of the largest communicator that logged Init COMPLETE."""
        size = self.ranks()
        done: set[int] = set()
        for key, ranks in self._completed_ranks.items():
            if self._nranks.get(key) == size:
                done |= ranks
        return len(done)

    def _busid_layout(self) -> bool:
        v = parse_version(self.effective_version)
        if v is not None:
            return v < NVMLDEV_LAYOUT_SINCE
        return self._hex_seen

    def devices(self) -> list[NcclDevice]:
        devices = {r: NcclDevice(**d) for r, d in self._devices.items()}
        if self._busid_layout():  # old layout: the channel lines name each rank's PCI bus
            for rank, raw in self._rank_bracket.items():
                dev = devices.setdefault(rank, NcclDevice(rank=rank, cuda_dev=None, bus_id=None))
                if dev["bus_id"] is None:
                    dev["bus_id"] = format_bus_id(raw)
        return [devices[r] for r in sorted(devices)]

    def _ranks_of(self, c: _Conn, gpus: dict[tuple[str, int], int] | None) -> tuple[int, int]:
        """`c`'s ends as ranks of the largest communicator. A channel line names its communicator's own ranks:
        a sub-group's (SGLang's attention-TP groups under DP attention, an EP or PP group) `0[4] -> 1[5]` is
        GPU 4 → GPU 5, not the server's ranks 0 → 1. A P2P or SHM connection joins two GPUs of the host that
        logged it, so each end is found by (host, nvmlDev) among the Init lines of the largest communicator;
        a NET end may be on another host, and without those lines the numbers stay as logged."""
        if gpus and c.transport in ("P2P", "SHM") and c.sdev is not None and c.ddev is not None and c.host:
            a, b = gpus.get((c.host, c.sdev)), gpus.get((c.host, c.ddev))
            if a is not None and b is not None:
                return a, b
        return c.src, c.dst

    def _gpus(self) -> dict[tuple[str, int], int] | None:
        if not self._gpu_rank or self._busid_layout():
            return None
        return self._gpu_rank[max(self._gpu_rank)]

    def _ends(self, transport: str | None = None) -> list[tuple[_Conn, int, int]]:
        gpus = self._gpus()
        return [(c, *self._ranks_of(c, gpus)) for c in self._conns
                if transport is None or c.transport == transport]

    def transport_pairs(self) -> dict[str, int]:
        """Distinct GPU pairs (src→dst) per transport: what the findings count, and the console's header."""
        seen: dict[str, set[tuple[int, int]]] = {t: set() for t in self._transport_counts}
        for c, a, b in self._ends():
            seen.setdefault(c.transport, set()).add((a, b))
        return {t: len(p) for t, p in seen.items()}

    def pairs(self) -> list[NcclPair]:
        return [NcclPair(src=a, dst=b, transport=c.transport, detail=c.detail) for c, a, b in self._ends()]

    def summary(
        self,
        seconds_since_last_line: float | None = None,
        gpu_busy: bool | None = None,
        hang_after_s: float = 60.0,
    ) -> NcclSummary:
        """The `nccl --json` document. Pass live figures (seconds since the log last grew, whether the
        GPUs are busy per NVML) to let POSSIBLE_HANG fire."""
        return NcclSummary(
            version=self.effective_version,
            ranks=self.ranks(),
            init_complete=self.init_complete(),
            hosts=list(self.hosts),
            devices=self.devices(),
            transports=dict(self._transport_counts),
            transport_pairs=self.transport_pairs(),
            pairs=self.pairs(),
            env=dict(self.env),
            warnings=list(self.warnings),
            findings=[f.to_json() for f in self.findings(seconds_since_last_line, gpu_busy, hang_after_s)],
        )

    def findings(
        self,
        seconds_since_last_line: float | None = None,
        gpu_busy: bool | None = None,
        hang_after_s: float = 60.0,
    ) -> list[Finding]:
        out: list[Finding] = []
        version = parse_version(self.effective_version)
        # NCCL <= 2.22 logs NCCL_P2P_DISABLE=1 only as `NCCL_P2P_LEVEL set by environment to LOC`
        # (graph/paths.cc v2.22.3:218-247 sets the level to 0 and prints its name; the DISABLE line itself is
        # 2.23.4+): LOC is P2P off however it was set.
        p2p_off = (self.env.get("NCCL_P2P_DISABLE", "").strip() == "1"
                   or self.env.get("NCCL_P2P_LEVEL", "").strip().upper() == "LOC")
        self._shm_finding(out, version, p2p_off)
        if self._p2p_disabled or p2p_off:
            what = []
            if self.env.get("NCCL_P2P_DISABLE", "").strip() == "1":
                what.append("NCCL_P2P_DISABLE=1 is set in the environment")
            elif p2p_off:
                what.append("NCCL_P2P_LEVEL=LOC is set (what NCCL <= 2.22 logs for NCCL_P2P_DISABLE=1)")
            if self._p2p_disabled:
                shown = ", ".join(self._p2p_disabled[:12]) + (" …" if len(self._p2p_disabled) > 12 else "")
                what.append(f"NCCL reports P2P disabled/unsupported between GPUs {shown}")
            out.append(Finding("warning", "P2P_DISABLED", "; ".join(what) + " — traffic between those "
                                "GPUs goes through host memory (SHM) or the network instead of PCIe P2P."))
        self._net_finding(out)
        self._init_finding(out)
        if self._warn_count:
            first = self.warnings[0] if self.warnings else ""
            msg = f"{self._warn_count} NCCL WARN line(s); first: {first}"
            if self._benign_warns == self._warn_count:
                out.append(Finding("info", "NCCL_WARN", msg + " — NCCL carries on after these: an InfiniBand "
                                   "device or libibverbs it cannot open is skipped (sockets or the other devices "
                                   "are used; NCCL 2.18+ logs a missing libibverbs as INFO)"))
            else:
                out.append(Finding("error" if self._severe_warn else "warning", "NCCL_WARN", msg))
        self._hang_finding(out, seconds_since_last_line, gpu_busy, hang_after_s)
        return out

    def _intra_host(self, c: _Conn) -> bool | None:
        a, b = self._rank_host.get(c.src), self._rank_host.get(c.dst)
        if a is not None and b is not None:
            return a == b
        if self._nnodes == {1}:
            return True  # one node by NCCL's own count (a one-host log may still be one node of many)
        return None

    def _shm_finding(self, out: list[Finding], version: tuple[int, ...] | None, p2p_off: bool) -> None:
        shm = {(a, b) for c, a, b in self._ends("SHM") if self._intra_host(c) is not False}
        if not shm:
            return
        p2p = {(a, b) for _c, a, b in self._ends("P2P")}
        shown = ", ".join(f"{a}→{b}" for a, b in sorted(shm)[:12]) + (" …" if len(shm) > 12 else "")
        msg = (f"{len(shm)} GPU pair(s) connect through SHM (host memory) instead of PCIe P2P: {shown}"
               f" ({len(p2p)} pair(s) use P2P).")
        severity, why = shm_verdict(version, self.env, self.cpu, p2p_off, self.gpu_names)
        out.append(Finding(severity, "SHM_FALLBACK", msg + why))

    def _net_finding(self, out: list[Finding]) -> None:
        intra = sorted({(c.src, c.dst) for c in self._conns if c.transport == "NET" and self._intra_host(c)})
        if not intra:
            return
        shown = ", ".join(f"{a}→{b}" for a, b in intra[:12]) + (" …" if len(intra) > 12 else "")
        out.append(Finding("warning", "NET_INTRA_NODE",
                            f"{len(intra)} pair(s) on one host use the NET transport (sockets/IB loopback): "
                            f"{shown}. NCCL does that only when neither P2P nor SHM can connect them — "
                            "NCCL_SHM_DISABLE=1, or the ranks see different /dev/shm (containers)."))

    def _init_finding(self, out: list[Finding]) -> None:
        size, done = self.ranks(), self.init_complete()
        stuck = sorted({rank for proc, rank in self._started.items() if proc not in self._completed})
        if size is None or (done >= size and not stuck):
            return
        msg = f"{done} of {size} ranks logged Init COMPLETE"
        if stuck:
            msg += f"; rank(s) {', '.join(map(str, stuck))} logged Init START without Init COMPLETE"
        msg += (" — still initialising, hung in init (bootstrap/P2P setup), or this log holds only part "
                "of the ranks (pass every rank's log).")
        out.append(Finding("warning", "INIT_INCOMPLETE", msg))

    def _hang_finding(self, out: list[Finding], silent_s: float | None, gpu_busy: bool | None,
                      hang_after_s: float) -> None:
        size = self.ranks()
        if size is None or self.init_complete() < size or silent_s is None or silent_s < hang_after_s:
            return
        if gpu_busy is False:
            return  # initialised and idle: a server waiting for requests
        base = (f"All {size} ranks initialised, then no new log line for {silent_s:.0f} s")
        advice = (" — the signature of a collective stuck on broken PCIe P2P (ACS/IOMMU). Confirm by "
                  "restarting with NCCL_P2P_DISABLE=1 (and --disable-custom-all-reduce).")
        if gpu_busy:
            out.append(Finding("error", "POSSIBLE_HANG", base + " while the GPUs stay busy" + advice))
        else:
            out.append(Finding("info", "POSSIBLE_HANG", base + "; GPU activity unknown — if the GPUs sit "
                                "at 100% utilisation with no progress" + advice))


def summarize(lines: Iterable[str], **live: object) -> NcclSummary:
    """One-shot: parse `lines` and return the summary (live kwargs as in `NcclParser.summary`)."""
    parser = NcclParser()
    parser.feed(lines)
    return parser.summary(**live)  # type: ignore[arg-type]

