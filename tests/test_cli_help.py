"""Every command and subcommand's `--help` says what it does and what each argument is (issue #17)."""

from __future__ import annotations

import argparse

from eagle_console.cli import build_parser


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*path, name), child
                yield from walk(child, (*path, name))


def test_every_command_has_a_description_and_every_argument_a_help():
    missing = []
    for path, parser in walk(build_parser()):
        if not (parser.description or "").strip():
            missing.append(f"{' '.join(path)}: no description")
        for action in parser._actions:
            if action.help is None:
                missing.append(f"{' '.join(path)}: {action.dest} has no help")
    assert missing == []


def test_server_log_takes_f_as_log_does():
    parser = build_parser()
    assert parser.parse_args(["server-log", "-f", "server.log"]).follow
    assert parser.parse_args(["log", "plan.toml", "0.3", "-f"]).follow
