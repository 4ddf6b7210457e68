"""The generated reference pages: every command from the command-line parser, every file a user
writes from its declared schema.

Both are read from the code at build time (``docs/gen/hooks.py`` calls :func:`pages`), so the
reference cannot drift from what ``rigtool`` accepts: a new option or key appears in the next
build, a removed one disappears. Run it alone to look at the Markdown::

    python3 docs/gen/reference_pages.py reference/commands.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: the reference page of each declared file, by its name in ``rigtool.config.schema.FILES``
FILE_PAGES = {
    "rig file": "reference/files/rig-file.md",
    "session manifest": "reference/files/session-manifest.md",
    "postures file": "reference/files/postures-file.md",
    "robot postures file": "reference/files/robot-postures-file.md",
    "tags file": "reference/files/tags-file.md",
    "camera file": "reference/files/camera-file.md",
}

#: a bundled file shown as the example of each declared file (path from the repository root)
FILE_EXAMPLES = {
    "rig file": "calibration/paper-rig.toml",
    "session manifest": "captures/two-link/session.toml",
    "postures file": "captures/two-link/postures.toml",
}

COMMANDS_PAGE = "reference/commands.md"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:               # argparse keeps no public list of them
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _argument_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | meaning | default |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            metavar = "" if action.nargs == 0 else " " + (
                action.metavar if isinstance(action.metavar, str) else action.dest.upper())
            name = ", ".join(f"`{o}{metavar}`" for o in action.option_strings)
        else:
            name = f"`{action.metavar or action.dest}`"
            if action.nargs in ("+", "*"):
                name += " ..."
        meaning = action.help or ""
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            meaning += (" " if meaning else "") + "One of: " + ", ".join(
                f"`{c}`" for c in action.choices) + "."
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) or action.nargs == 0 \
            else f"`{default}`"
        if action.required and action.option_strings:
            meaning = "**required.** " + meaning
        rows.append(f"| {name} | {_cell(meaning)} | {shown} |")
    return rows


def _command_section(name: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    parser.prog = f"rigtool {name}"
    usage = parser.format_usage().removeprefix("usage: ").strip()
    lines = [f"{'#' * level} `rigtool {name}`", "", _cell(parser.description or ""), "",
             "```text", usage, "```", ""]
    subs = _subparsers(parser)
    rows = _argument_rows(parser)
    if len(rows) > 2:
        lines += rows + [""]
    for sub_name, sub in subs.items():
        lines += _command_section(f"{name} {sub_name}", sub, level + 1)
    return lines


def commands_markdown() -> str:
    """Every ``rigtool`` command with its usage and every option, from ``build_parser()``."""
    from rigtool.cli import COMMANDS, build_parser

    parser = build_parser()
    subs = _subparsers(parser)
    lines = ["# Commands", "",
             "Generated from the command-line parser (`rigtool.cli.build_parser()`) when this "
             "site is built, so it lists exactly what `rigtool --help` accepts. Every command "
             "also takes `-h`/`--help`.", "",
             "```text", parser.format_usage().removeprefix("usage: ").strip(), "```", "",
             "Options before the command:", "", *_argument_rows(parser), "",
             "| command | what it does |", "|---|---|"]
    for name in COMMANDS:
        if name in subs:
            lines.append(f"| [`rigtool {name}`](#rigtool-{name}) | {_cell(subs[name].description or '')} |")
    lines += ["", "Exit status, for every command: **0** success; **3** partial result "
              "(`run`, `batch`, `subset`: everything measured was written, but the postures "
              "could not identify all of Φ_s); **2** bad input (one message naming the file, "
              "the line or field and what was expected); **1** internal error.", ""]
    for name in COMMANDS:
        if name in subs:
            lines += _command_section(name, subs[name], 2)
    return "\n".join(lines)


def file_markdown(name: str) -> str:
    """The reference page of one declared file (``rigtool.config.schema.FILES``)."""
    from rigtool.config.schema import FILES, reference_markdown

    text = reference_markdown(name, FILES[name])
    intro = ("Generated from the declared schema (`rigtool.config.schema`) when this site is "
             "built: the same declarations the loaders check, so a key listed here is "
             "accepted and any other key is refused with the closest valid one named "
             "(exit status 2).")
    head, _, rest = text.partition("\n\n")
    out = [head, "", intro, "", rest]
    example = FILE_EXAMPLES.get(name)
    if example and (ROOT / example).is_file():
        out += ["", "## Example", "", f"The bundled demo's `{example}`:", "",
                "```toml", (ROOT / example).read_text().rstrip(), "```", ""]
    return "\n".join(out)


def pages() -> dict[str, str]:
    """Every generated page: its path under docs/ -> its Markdown."""
    out = {COMMANDS_PAGE: commands_markdown()}
    for name, path in FILE_PAGES.items():
        out[path] = file_markdown(name)
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    generated = pages()
    for want in sys.argv[1:] or list(generated):
        print(generated[want])
