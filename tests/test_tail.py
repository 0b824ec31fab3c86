"""The log follower on real files: rotation, truncation, recreation, a writer process at full speed,
binary junk, megabyte lines, start positions."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from eagle_console.node.tail import CUT_MARK, LogFollower, follow, last_lines_offset, read_lines

GUARD_S = 120  # a deadline against a hung test, not a timing assertion


def append(path: Path, text: str | bytes) -> None:
    data = text.encode() if isinstance(text, str) else text
    with open(path, "ab") as f:
        f.write(data)


def drain(follower: LogFollower) -> list[str]:
    out: list[str] = []
    while True:
        got = follower.read_new()
        out += got
        if not got and not follower.more:
            return out


def test_missing_file_then_created_then_appended(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    f = LogFollower(log)
    assert f.read_new() == []
    append(log, "one\ntwo\nhalf")
    assert f.read_new() == ["one", "two"]  # the unterminated line waits for its newline
    append(log, " done\n")
    assert f.read_new() == ["half done"]
    assert f.read_new() == []
    f.close()


def test_start_at_end_minus_n_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    append(log, "".join(f"line {i}\n" for i in range(1000)))
    with LogFollower(log, start="end", last_lines=3) as f:
        assert f.read_new() == ["line 997", "line 998", "line 999"]
        append(log, "line 1000\n")
        assert f.read_new() == ["line 1000"]
    with LogFollower(log, start="end") as f:
        assert f.read_new() == []
    with LogFollower(log, start="end", last_lines=5000) as f:
        assert len(drain(f)) == 1001


def test_last_lines_offset_edges(tmp_path: Path) -> None:
    log = tmp_path / "b.log"
    append(log, b"a\nb\nc")  # last line without newline counts as a line
    fd = os.open(log, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        assert last_lines_offset(fd, size, 1) == 4
        assert last_lines_offset(fd, size, 2) == 2
        assert last_lines_offset(fd, size, 9) == 0
        assert last_lines_offset(fd, 0, 3) == 0
    finally:
        os.close(fd)


def test_rotation_by_rename_loses_nothing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, "a1\na2\n")
    f = LogFollower(log)
    assert f.read_new() == ["a1", "a2"]
    append(log, "a3\nlast-without-newline")
    log.rename(tmp_path / "server.log.1")
    append(log, "b1\n")
    assert f.read_new() == ["a3", "last-without-newline", "b1"]
    assert f.rotations == 1
    append(log, "b2\n")
    assert f.read_new() == ["b2"]
    f.close()


def test_truncation_restarts_at_zero(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, "old 1\nold 2\n")
    with LogFollower(log) as f:
        assert f.read_new() == ["old 1", "old 2"]
        with open(log, "r+b") as fh:  # copytruncate-style
            fh.truncate(0)
        assert f.read_new() == []
        append(log, "new 1\n")
        assert f.read_new() == ["new 1"]
        assert f.truncations == 1


def test_rewritten_in_place_larger_is_noticed(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, "[2025-01-01 00:00:00] first run\n")
    with LogFollower(log) as f:
        assert f.read_new() == ["[2025-01-01 00:00:00] first run"]
        # `> log` then a longer log written before the next poll: the size alone would not show it
        with open(log, "wb") as fh:
            fh.write(b"[2025-01-02 09:00:00] second run, a longer first line\nmore\n")
        assert f.read_new() == ["[2025-01-02 09:00:00] second run, a longer first line", "more"]


def test_deleted_and_recreated(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    append(log, "x1\n")
    with LogFollower(log) as f:
        assert f.read_new() == ["x1"]
        log.unlink()
        assert f.read_new() == []
        append(log, "y1\ny2\n")
        assert f.read_new() == ["y1", "y2"]
        assert f.rotations == 1


def test_binary_junk_is_escaped_not_fatal(tmp_path: Path) -> None:
    log = tmp_path / "junk.log"
    junk = bytes(range(256)) * 4
    append(log, b"before\n" + junk.replace(b"\n", b"") + b"\nafter \xff\xfe ok\n")
    with LogFollower(log) as f:
        got = drain(f)
    assert got[0] == "before" and got[-1] == "after \\xff\\xfe ok"  # shown as escapes, not lost
    assert len(got) == 3
    assert not any(ch in got[1] for ch in "\x00\x1b\x07\r\x9b")
    assert "\\x1b" in got[1] and "\\x9b" in got[1]  # (what follows its last CR: bytes 14-255)


def test_progress_bar_keeps_last_redraw(tmp_path: Path) -> None:
    log = tmp_path / "bar.log"
    append(log, b"Capturing batches:   0%|  | 0/36\rCapturing batches:  50%|# | 18/36\r"
                b"Capturing batches: 100%|##| 36/36\r\nnext\r\n")
    assert list(read_lines(log)) == ["Capturing batches: 100%|##| 36/36", "next"]


def test_five_megabyte_line_is_cut_and_marked(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    append(log, b"start\n" + b"x" * (5 * 1024 * 1024) + b"\nend\n")
    with LogFollower(log, max_line=64 * 1024) as f:
        got = drain(f)
        assert f.cut_lines == 1
    assert got[0] == "start" and got[2] == "end" and len(got) == 3
    mark = CUT_MARK.format(limit=64 * 1024)
    assert got[1].endswith(mark) and got[1][: -len(mark)] == "x" * (64 * 1024)


def test_long_line_being_written_in_pieces(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with LogFollower(log, max_line=1000) as f:
        append(log, "y" * 600)
        assert f.read_new() == []
        append(log, "y" * 600)  # over the cap, still no newline: delivered cut, the rest dropped
        first = f.read_new()
        assert len(first) == 1 and first[0].startswith("y" * 1000) and "cut" in first[0]
        append(log, "y" * 5000 + "\nnormal\n")
        assert f.read_new() == ["normal"]


def test_reads_are_batched_by_max_bytes(tmp_path: Path) -> None:
    log = tmp_path / "many.log"
    append(log, "".join(f"{i:07d}\n" for i in range(100_000)))  # 800 kB
    with LogFollower(log, max_bytes=64 * 1024) as f:
        first = f.read_new()
        assert f.more and len(first) <= 64 * 1024 // 8
        rest = drain(f)
    assert first + rest == [f"{i:07d}" for i in range(100_000)]


WRITER = textwrap.dedent("""
    import os, sys
    path, n, rotate_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    f = open(path, "a", buffering=1 << 16)
    for i in range(n):
        if i == rotate_at:
            f.close()
            os.rename(path, path + ".1")
            f = open(path, "a", buffering=1 << 16)
        f.write(f"line {i} " + "p" * (i % 97) + "\\n")
    f.close()
""")


def run_writer_and_follow(log: Path, n: int, rotate_at: int) -> list[str]:
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log), str(n), str(rotate_at)])
    got: list[str] = []
    deadline = time.monotonic() + GUARD_S
    f = LogFollower(log, max_bytes=256 * 1024)
    try:
        while time.monotonic() < deadline:
            done = writer.poll() is not None
            got += f.read_new()
            if done and not f.more:
                got += drain(f)
                break
    finally:
        f.close()
        if writer.poll() is None:
            writer.kill()
        writer.wait()
    assert writer.returncode == 0
    return got


def expected(n: int) -> list[str]:
    return [f"line {i} " + "p" * (i % 97) for i in range(n)]


def test_writer_process_full_speed_no_loss_no_duplicates(tmp_path: Path) -> None:
    n = 200_000
    got = run_writer_and_follow(tmp_path / "fast.log", n, rotate_at=-1)
    assert got == expected(n)


def test_writer_process_rotating_midway(tmp_path: Path) -> None:
    n = 120_000
    got = run_writer_and_follow(tmp_path / "rot.log", n, rotate_at=70_000)
    assert got == expected(n)


def test_follow_generator_stops_on_request(tmp_path: Path) -> None:
    log = tmp_path / "f.log"
    append(log, "a\nb\n")
    seen: list[str] = []
    sleeps: list[float] = []

    def fake_sleep(s: float) -> None:  # the first idle poll appends a line, the second ends it
        sleeps.append(s)
        if len(sleeps) == 1:
            append(log, "c\n")

    for line in follow(log, stop=lambda: len(sleeps) >= 2, sleep=fake_sleep, interval=0.01):
        seen.append(line)
    assert seen == ["a", "b", "c"]


def test_read_lines_whole_file_including_unterminated_last(tmp_path: Path) -> None:
    log = tmp_path / "r.log"
    append(log, "1\n2\n3")
    assert list(read_lines(log)) == ["1", "2", "3"]


def test_plain_text_is_split_in_bulk(tmp_path: Path, monkeypatch) -> None:
    """A server's own log lines are plain ASCII: they are split a chunk at a time, not cleaned one by one
    (per line, cleaning was a third of the Server pane's follow thread at 100k lines/s); a line that needs
    cleaning still is, and the lines come out the same."""
    import eagle_console.node.tail as tail

    cleaned = []
    real = tail.clean_line
    monkeypatch.setattr(tail, "clean_line", lambda raw: cleaned.append(raw) or real(raw))
    log = tmp_path / "server.log"
    plain = [f"[2026-01-05 10:27:57 TP0] Decode batch. #running-req: 1, seq {i}\ttab" for i in range(5000)]
    log.write_text("\n".join(plain[:2500]) + "\n" + plain[2500][:20])  # the last line still being written
    f = LogFollower(log)
    got = f.read_new()
    with open(log, "a") as out:
        out.write(plain[2500][20:] + "\n" + "\n".join(plain[2501:]) + "\nred \x1b[31m\nbar 10%\rbar 90%\n")
    got += f.read_new()
    assert got == [*plain, "red \\x1b[31m", "bar 90%"]
    assert len(cleaned) <= 3  # the line split across two reads, the coloured one, the redrawn bar
