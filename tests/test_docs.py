"""The documentation says what the tool does: every command shown parses, the reference pages
cover every option and key, the site builds strictly, and the product text speaks of the tool.

Every ``rigtool ...`` command in a shell block of README.md or docs/ is parsed by the real
command-line parser (``rigtool.cli.build_parser``) with every option as shown, and its
``--help`` is asked for. The tutorial's ``rigtool inspect`` runs on the demo data and must print
what the tutorial shows. (The demo's calibrate and run are exercised by conftest.py's
``demo_run`` fixture.)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rigtool.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").rglob("*.md") if "gen" not in p.relative_to(ROOT / "docs").parts)
SHELL = {"bash", "sh", "shell", "console"}

#: the two command lines CI and users rely on (README.md, first code block)
README_COMMANDS = (
    "python3 -m pip install -e . && rigtool calibrate calibration/paper-rig.toml --force "
    "&& rigtool run captures/two-link/session.toml",
    "python3 -m pip install -e '.[test]' && python3 -m pytest -q -p no:cacheprovider "
    "-m \"not slow\"",
)


def code_blocks(path: Path) -> list[tuple[str, str, int]]:
    """Every fenced code block of a Markdown file: (language, text, first line number)."""
    blocks, lang, buf, start, fence = [], None, [], 0, None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if fence is None:
            m = re.match(r"^(`{3,}|~{3,})\s*([\w+-]*)", stripped)
            if m:
                fence, lang, buf, start = m.group(1), m.group(2).lower(), [], number + 1
        elif stripped.startswith(fence):
            blocks.append((lang, "\n".join(buf), start))
            fence = None
        else:
            buf.append(line)
    return blocks


def rigtool_commands(text: str) -> list[list[str]]:
    """The ``rigtool`` invocations of a shell block, as argument lists (without ``rigtool``).

    Continued lines are joined, comments dropped, and each line split at ``&&``, ``||``,
    ``;`` and ``|``; leading ``VAR=value`` assignments are skipped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError as exc:                 # an unbalanced quote: the doc is wrong
            raise AssertionError(f"cannot split shell line {line!r}: {exc}") from None
        segment: list[str] = []
        for tok in tokens + ["&&"]:
            if tok in ("&&", "||", ";", "|"):
                words = [w for w in segment]
                while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                    words.pop(0)
                if words and words[0] == "rigtool":
                    out.append(words[1:])
                segment = []
            else:
                segment.append(tok)
    return out


def shown_commands() -> list[tuple[str, list[str]]]:
    """Every rigtool command of every shell block of the docs: (where, arguments)."""
    found = []
    for path in DOC_FILES:
        for lang, text, line in code_blocks(path):
            if lang in SHELL:
                for args in rigtool_commands(text):
                    found.append((f"{path.relative_to(ROOT)}:{line}", args))
    return found


SHOWN = shown_commands()


def _parse(args: list[str]) -> int | None:
    """Parse ``args`` with the real parser; the exit code argparse asked for, else None."""
    parser = build_parser()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            parser.parse_args(args)
        except SystemExit as exc:
            return int(exc.code or 0)
    return None


def test_the_docs_show_commands_of_every_kind():
    commands = {args[0] for _, args in SHOWN if args}
    # the tutorial's three steps, the guides' commands, and the README's demo
    assert {"inspect", "calibrate", "run", "batch", "camera", "track", "weigh"} <= commands
    assert len(SHOWN) >= 15


@pytest.mark.parametrize("where,args", SHOWN, ids=[f"{w}:{' '.join(a[:2])}" for w, a in SHOWN])
def test_every_shown_command_parses(where, args):
    assert args and args[0] in COMMANDS, f"{where}: 'rigtool {' '.join(args)}' names no command"
    status = _parse(args)
    assert status is None, (f"{where}: 'rigtool {' '.join(args)}' does not parse "
                            f"(argparse exit {status})")
    # and its help: the command (and sub-action) a reader would ask about
    head = args[:2] if args[0] == "camera" else args[:1]
    assert _parse(head + ["--help"]) == 0, f"{where}: rigtool {' '.join(head)} --help"


def test_a_misspelt_option_would_be_caught():
    """The check above can fail: an option the parser does not know is refused."""
    assert _parse(["run", "captures/two-link/session.toml", "--rigg", "x.toml"]) == 2
    assert rigtool_commands("A=1 rigtool run s.toml --rig r.toml && echo done  # note") == [
        ["run", "s.toml", "--rig", "r.toml"]]


def test_readme_keeps_the_two_commands_and_stays_short():
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    for command in README_COMMANDS:
        assert command in lines, f"README.md lost the command line: {command}"
    assert len(lines) < 160, f"README.md has {len(lines)} lines; the front door stays under 160"


def test_tutorial_inspect_output_is_what_rigtool_prints():
    """The tutorial's inspect output, line by line, is what `rigtool inspect` prints now."""
    tutorial = (ROOT / "docs" / "tutorial.md").read_text()
    m = re.search(r"```bash\nrigtool inspect (\S+)\n```\s*```text\n(.*?)```", tutorial, re.S)
    assert m, "docs/tutorial.md: the rigtool inspect example and its output"
    capture, shown = m.group(1), m.group(2)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["inspect", str(ROOT / capture)])
    assert status == 0
    printed = out.getvalue().replace(str(ROOT) + "/", "")
    for line in shown.splitlines():
        if line.strip() and line.strip() != "...":
            assert line.rstrip() in printed.splitlines(), f"tutorial shows {line!r}; rigtool prints:\n{printed}"


def test_inspect_json_on_the_demo():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["inspect", str(ROOT / "captures/two-link/swing.csv"), "--json"])
    assert status == 0
    assert '"format": "vicon-csv"' in out.getvalue()


def test_generated_command_reference_lists_every_option():
    sys.path.insert(0, str(ROOT / "docs" / "gen"))
    from reference_pages import commands_markdown

    page = commands_markdown()

    def walk(parser, prefix):
        for action in parser._actions:
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                for name, sub in action.choices.items():
                    assert f"`rigtool {prefix}{name}`" in page
                    walk(sub, f"{prefix}{name} ")
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in page, f"rigtool {prefix}: {option} not in the reference"

    walk(build_parser(), "")


def test_generated_file_reference_lists_every_key():
    sys.path.insert(0, str(ROOT / "docs" / "gen"))
    from reference_pages import FILE_PAGES, file_markdown

    from rigtool.config.schema import FILES, every_key

    assert set(FILE_PAGES) == set(FILES), "a declared file without a reference page"
    for name, schema in FILES.items():
        page = file_markdown(name)
        for dotted, key in every_key(schema):
            assert f"| `{key.name}` |" in page, f"{name}: key {dotted} not in its reference"
            if key.kind == "tables":
                assert f"[[{dotted.replace('[]', '')}]]" in page


def test_postures_file_reference_shows_the_bundled_example():
    """The page `rigtool subset --help` names shows the example it names, in report.json's
    key for the inertia's standard error."""
    sys.path.insert(0, str(ROOT / "docs" / "gen"))
    from reference_pages import file_markdown

    from rigtool.commands.subset import add_arguments
    from rigtool.identify.subset.postures_file import load_postures

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    help_text = next(a.help for a in parser._actions if a.dest == "postures")
    example = "captures/two-link/postures.toml"
    assert example in help_text and "docs/reference/files/postures-file.md" in help_text
    page = file_markdown("postures file")
    assert f"`{example}`" in page and "inertia_com_std = " in page
    assert len(load_postures(ROOT / example).postures) == 3


HISTORY = re.compile(r"\b(issues? \d+|stops? \d+|this stop|stop's|round \d+|work round|"
                     r"session of 20\d\d)\b", re.I)


def test_product_text_speaks_of_the_tool_not_its_work_history():
    paths = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "RESULTS.md",
             *DOC_FILES, *sorted((ROOT / "benchmarks").glob("*.py")),
             *sorted((ROOT / "scenarios").glob("*")), *sorted((ROOT / "tools").glob("*"))]
    hits = []
    for path in dict.fromkeys(paths):
        if path.is_file():
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if HISTORY.search(line):
                    hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "work history in product text:\n" + "\n".join(hits)


@pytest.mark.parametrize("page", ["README.md", "docs/index.md", "docs/how-to/model-files.md"])
def test_pages_name_the_joints_rigtool_takes(page):
    """Where a page says which joints an object has, it names all a robot's URDF may have
    (the types rigtool.robot.urdf_model accepts, URDF's continuous being its unlimited
    revolute), a person's spherical one, and where an OpenSim model's joints are said."""
    from rigtool.robot.urdf_model import JOINT_TYPES

    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    for joint in set(JOINT_TYPES) - {"continuous"}:
        assert re.search(rf"\b{joint}\b", text), f"{page} does not name {joint} joints"
    assert "spherical" in text and "OpenSim" in text, page
    if page.startswith("docs/"):
        assert "opensim.md" in text, f"{page} does not link the OpenSim guide"


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]')")
    pytest.importorskip("material", reason="mkdocs-material is not installed")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed")
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=ROOT, capture_output=True, text=True,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1",
                               "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-4000:]
    commands = (site / "reference" / "commands" / "index.html").read_text()
    for name in COMMANDS:
        assert f"rigtool {name}" in commands
    manifest = (site / "reference" / "files" / "session-manifest" / "index.html").read_text()
    assert "relative_motion" in manifest and "marker_covariance" in manifest
    api = (site / "reference" / "api" / "tree" / "index.html").read_text()
    assert "minimal_parameters" in api                  # mkdocstrings rendered the module
    accuracy = (site / "performance" / "accuracy" / "index.html").read_text()
    assert "Cramer-Rao" in accuracy and "--8&lt;--" not in accuracy   # sections included
    for image in ("report.png", "accuracy_vs_noise.png", "relative_fit_speed.png"):
        assert (site / "img" / image).stat().st_size > 1000


def _shown_output(page: str, command: str) -> list[str]:
    """The lines of the first ``text`` block after the ``bash`` block holding ``command``
    (before the next ``bash`` block)."""
    text = (ROOT / page).read_text()
    m = re.search(r"```bash\n[^`]*?" + re.escape(command) + r"[^`]*?```"
                  r"(?:(?!```bash).)*?```text\n(.*?)```", text, re.S)
    assert m, f"{page}: the output shown after `{command}`"
    return [line.rstrip() for line in m.group(1).splitlines()
            if line.strip() and line.strip() != "..."]


def _printed(demo_run, name: str) -> list[str]:
    tmp, out = demo_run
    text = (tmp / f"{name}.out").read_text(encoding="utf-8")
    text = text.replace(str(out), "captures/two-link/results").replace(f"{tmp}/", "")
    return [line.rstrip() for line in text.splitlines()]


@pytest.mark.parametrize("command,name", [("rigtool calibrate", "calibrate"),
                                          ("rigtool run", "run")])
def test_tutorial_shows_what_the_demo_prints(demo_run, command, name):
    """Every line the tutorial shows after `rigtool calibrate` and `rigtool run` is a line
    the demo prints now (the conftest's demo_run ran both, as the tutorial does)."""
    printed = _printed(demo_run, name)
    for line in _shown_output("docs/tutorial.md", command):
        assert line in printed, (f"docs/tutorial.md shows {line!r}; `{command}` prints:\n"
                                 + "\n".join(printed))


def test_tutorial_names_the_term_the_swing_resolves(demo_run):
    """The tutorial's prose names the relative-motion term report.json resolves, and the
    number of files the run wrote."""
    _, out = demo_run
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    tutorial = (ROOT / "docs" / "tutorial.md").read_text()
    for term in doc["relative_motion"]["resolved"]:
        assert f"resolves the last term (`{term}`" in tutorial
    written = [line for line in _printed(demo_run, "run") if line.startswith("wrote ")]
    n_files = int(written[0].split()[1])
    assert n_files == sum(1 for p in out.iterdir() if p.is_file())
    assert f"wrote {n_files} files" in tutorial


def _with_text(s: str):
    return (float(s), s)


def _tolerance(text: str) -> float:
    """Half a unit of the last digit a number is written with (1.37e-05: 0.005e-05)."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals) * (1 + 1e-9) + 1e-15


def _compare(shown, actual, where: str, problems: list[str]) -> None:
    if shown == "...":
        return
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            problems.append(f"{where}: shown an object, report.json has {type(actual).__name__}")
            return
        for key, value in shown.items():
            if key not in actual:
                problems.append(f"{where}.{key}: not in report.json")
            else:
                _compare(value, actual[key], f"{where}.{key}", problems)
    elif isinstance(shown, list):
        if not isinstance(actual, list):
            problems.append(f"{where}: shown a list, report.json has {actual!r}")
        elif "..." in shown:                       # shortened: its first and last items
            k = shown.index("...")
            for i in range(k):
                _compare(shown[i], actual[i], f"{where}[{i}]", problems)
            for i in range(1, len(shown) - k):
                _compare(shown[-i], actual[-i], f"{where}[-{i}]", problems)
        elif len(shown) != len(actual):
            problems.append(f"{where}: {len(shown)} items shown, {len(actual)} in report.json")
        else:
            for i, (a, b) in enumerate(zip(shown, actual)):
                _compare(a, b, f"{where}[{i}]", problems)
    elif isinstance(shown, tuple):                 # a number with its text
        value, text = shown
        if not isinstance(actual, (int, float)) or abs(value - actual) > _tolerance(text):
            problems.append(f"{where}: shown {text}, report.json has {actual!r}")
    elif shown != actual:
        problems.append(f"{where}: shown {shown!r}, report.json has {actual!r}")


def test_report_json_reference_shows_the_demos_report(demo_run):
    """The example of docs/reference/report-json.md is the demo's report.json, shortened:
    every key shown is there and every number shown is its value to the digits shown."""
    _, out = demo_run
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    page = (ROOT / "docs" / "reference" / "report-json.md").read_text()
    block = re.search(r"```json\n(\{.*?\})\n```", page, re.S).group(1)
    shown = json.loads(block, parse_float=_with_text)
    problems: list[str] = []
    _compare(shown, doc, "report", problems)
    assert not problems, "docs/reference/report-json.md:\n" + "\n".join(problems)
    # the check can fail: a number off by more than its last digit is caught
    _compare({"subset": {"rank": 16}}, doc, "report", problems)
    _compare({"subset": {"condition_number": (14.0, "14.0")}}, doc, "report", problems)
    assert len(problems) == 2
