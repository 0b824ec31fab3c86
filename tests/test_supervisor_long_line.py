"""The supervisor's log scanner keeps at most one bounded partial line (issue #18): a step printing 10 MB
without a newline does not grow it, and `::result` lines after it are still read."""

from __future__ import annotations

from eagle_console.engine.supervise import MAX_LINE, LogScanner


def test_an_unterminated_line_is_bounded_and_results_after_it_are_read(tmp_path):
    log = tmp_path / "step.log"
    log.write_bytes(b"::result early=1\n")
    scanner = LogScanner(log, 0)
    assert scanner.read() == ["::result early=1"]
    with open(log, "ab") as f:
        for _ in range(10):
            f.write(b"x" * (1 << 20))  # 10 MiB, no newline
            f.flush()
            scanner.read()
            assert len(scanner._partial) <= MAX_LINE + (4 << 20)
    assert len(scanner._partial) <= MAX_LINE
    with open(log, "ab") as f:
        f.write(b"tail of the long line\n::result late=2\npartial")
    assert scanner.read() == ["::result late=2"]
    with open(log, "ab") as f:
        f.write(b" line\n")
    assert scanner.read() == ["partial line"]
