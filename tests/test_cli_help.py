"""``rigtool COMMAND --help``: every option says what it does, an option with choices names
them in the order the usage line lists them, and no help text cites a document or paper a
user cannot look up by that name."""

from __future__ import annotations

import argparse
import re

import pytest

from rigtool.cli import build_parser


def _options() -> list[tuple[str, argparse.Action]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [(name, action) for name, p in sub.choices.items() for action in p._actions
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))]


OPTIONS = _options()
IDS = [f"{name}:{(a.option_strings or [a.dest])[0]}" for name, a in OPTIONS]


@pytest.mark.parametrize("command,action", OPTIONS, ids=IDS)
def test_every_option_has_help(command, action):
    assert action.help and action.help.strip(), f"rigtool {command} {action.option_strings}"


@pytest.mark.parametrize("command,action", [(c, a) for c, a in OPTIONS if a.choices],
                         ids=[i for i, (_, a) in zip(IDS, OPTIONS) if a.choices])
def test_choices_are_described_in_their_listed_order(command, action):
    """A help that describes its choices (names two or more; self-explaining names such as
    the capture formats are only listed by the usage line) describes each, in order."""
    found = {}
    for choice in action.choices:
        m = re.search(rf"(?<![\w-]){re.escape(str(choice))}(?![\w-])", action.help)
        if m:
            found[choice] = m.start()
    if len(found) < 2:
        return
    assert list(found) == list(action.choices), \
        f"rigtool {command} {action.option_strings}: not every choice described: {action.help}"
    assert sorted(found, key=found.get) == list(action.choices), \
        f"rigtool {command} {action.option_strings}: described out of order: {action.help}"


@pytest.mark.parametrize("command,action", OPTIONS, ids=IDS)
def test_help_cites_nothing_a_user_cannot_find(command, action):
    assert not re.search(r"\bSPEC\b|\bpaper \d{3}\b", action.help or ""), action.help
