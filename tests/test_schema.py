"""The declared schemas of the user's files: every key of every table, misspelt once, is an
error (exit 2) naming the file, the table, the key and the closest valid key; the schemas
cover every key the loaders read; the reference pages and the JSON Schema list every key."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from rigtool.cli import main
from rigtool.config import load_session
from rigtool.config.schema import (FILES, POSTURES, RIG, ROBOT_POSTURES, SESSION, Key, Table, check_keys,
                                   closest_key, every_key, json_schema, reference_markdown)
from rigtool.errors import ConfigError
from rigtool.tomlwrite import dumps

DEMO = Path(__file__).resolve().parents[1] / "captures" / "two-link"


def _value(key: Key):
    """A value of the key's kind (the key check runs before any value is read)."""
    return {"string": "x", "number": 1.0, "integer": 1, "boolean": True,
            "array": [0.0, 0.0, 0.0], "map": {"M1": [0.0, 0.0, 0.0]}, "record": {},
            "any": "x"}[key.kind] if key.table is None else (
        _document(key.table) if key.kind == "table" else [_document(key.table)])


def _document(table: Table) -> dict:
    """A document holding every declared key of ``table`` and its inner tables."""
    return {k.name: _value(k) for k in table.keys}


def _misspelt(name: str, valid: list[str]) -> str:
    """``name`` with one letter dropped (or one added to a short name), not a valid key."""
    for i in range(len(name) - 1, 0, -1):
        cand = name[:i] + name[i + 1:]
        if len(cand) >= 3 and cand not in valid:
            return cand
    return name + "x"


def _cases(schema: Table):
    """(dotted path as the error names it, inner table path, key, misspelling) per key."""
    out = []

    def walk(t: Table, at: list, shown: str):
        for k in t.keys:
            out.append((shown, tuple(at), k.name, _misspelt(k.name, t.names())))
            if k.table is not None:
                here = f"{shown}.{k.name}" if shown else k.name
                if k.kind == "tables":
                    walk(k.table, at + [k.name, 0], f"{here}[0]")
                else:
                    walk(k.table, at + [k.name], here)

    walk(schema, [], "")
    return out


def _rename(doc: dict, at: tuple, old: str, new: str) -> dict:
    inner = doc
    for step in at:
        inner = inner[step]
    inner[new] = inner.pop(old)
    return doc


def _cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


@pytest.mark.parametrize("command,schema,name", [
    ("run", SESSION, "session.toml"),
    ("calibrate", RIG, "rig.toml"),
    ("subset", POSTURES, "postures.toml"),
    ("subset", ROBOT_POSTURES, "postures.toml"),
])
def test_every_key_misspelt_once_is_named(tmp_path, command, schema, name):
    """The fuzz over a whole schema: each key of each table misspelt once gives exit 2 with
    the file, the key where it stands and the key it was meant to be."""
    cases = _cases(schema)
    assert len(cases) >= 12
    for shown, at, key, wrong in cases:
        doc = _rename(_document(schema), at, key, wrong)
        path = tmp_path / name
        path.write_text(dumps(doc), encoding="utf-8")
        code, msg = _cli([command, str(path)])
        field = f"{shown}.{wrong}" if shown else wrong
        assert code == 2, (field, msg)
        assert str(path) in msg and f"field '{field}'" in msg, msg
        assert f"unknown key '{wrong}'" in msg and f"did you mean '{key}'?" in msg, msg
        assert "Traceback" not in msg and msg.startswith(f"rigtool {command}: error: "), msg


@pytest.mark.parametrize("schema", list(FILES.values()))
def test_complete_documents_pass(schema):
    check_keys(_document(schema), schema, path=None)


def _demo_manifest(tmp_path: Path, edit) -> Path:
    for f in DEMO.iterdir():
        if f.suffix == ".csv":
            shutil.copy(f, tmp_path / f.name)
    text = (DEMO / "session.toml").read_text(encoding="utf-8")
    text = text.replace("../../calibration/", str(DEMO.parents[1] / "calibration") + "/")
    path = tmp_path / "session.toml"
    path.write_text(edit(text), encoding="utf-8")
    return path


@pytest.mark.parametrize("edit,field,guess", [
    (lambda t: t.replace("[session]\n", '[session]\nurdf = "arm.urdf"\n'), "session.urdf",
     None),
    (lambda t: t.replace('joint = "spherical"', 'joint = "spherical"\naxis = [0, 0, 1]'),
     "links[1].axis", None),
    (lambda t: t.replace("window = ", "windw = "), "relative_motion.windw", "window"),
    (lambda t: t.replace('capture = "posture1.csv"', 'captures = "posture1.csv"'),
     "postures[0].captures", "capture"),
])
def test_keys_users_misspell_in_the_demo_manifest(tmp_path, edit, field, guess):
    path = _demo_manifest(tmp_path, edit)
    with pytest.raises(ConfigError) as info:
        load_session(path)
    msg = str(info.value)
    assert str(path) in msg and f"field '{field}" in msg
    assert ("did you mean" not in msg) if guess is None else f"did you mean '{guess}'?" in msg


def test_rig_locked_dof(tmp_path):
    src = DEMO.parents[1] / "calibration" / "paper-rig.toml"
    path = tmp_path / "rig.toml"
    path.write_text(src.read_text().replace("locked_dofs = []", "locked_dof = []"))
    code, msg = _cli(["calibrate", str(path)])
    assert code == 2 and "field 'rig.locked_dof'" in msg and "did you mean 'locked_dofs'?" \
        in msg


def test_bundled_files_pass():
    """The demo's manifest, the demo rig and the bundled scenarios' sessions hold no key
    the schemas do not declare."""
    from rigtool.config import load_rig
    load_session(DEMO / "session.toml")
    load_rig(DEMO.parents[1] / "calibration" / "paper-rig.toml")


def test_closest_key():
    assert closest_key("windw", ["name", "capture", "window"]) == "window"
    assert closest_key("Window", ["name", "window"]) == "window"
    assert closest_key("urdf", ["name", "rig", "total_mass"]) is None


def test_a_declared_table_holding_a_value_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="expected a table") as info:
        check_keys({"session": {"rig": "r"}, "filter": 3, "links": []}, SESSION,
                   path=tmp_path / "s.toml")
    assert info.value.field == "filter"


@pytest.mark.parametrize("name,schema", list(FILES.items()))
def test_reference_and_json_schema_list_every_key(name, schema):
    page = reference_markdown(name, schema)
    doc = json_schema(schema, title=name)
    text = json.dumps(doc)
    for dotted, key in every_key(schema):
        assert f"`{key.name}`" in page, dotted
        assert f'"{key.name}"' in text, dotted
    assert doc["additionalProperties"] is False


@pytest.mark.parametrize("key, wrong", [("support", "soft"), ("soft_tissue", "yes")])
def test_session_model_keys_take_only_their_choices(tmp_path, key, wrong):
    path = _demo_manifest(tmp_path, lambda t: t.replace("[session]\n",
                                                        f'[session]\n{key} = "{wrong}"\n'))
    with pytest.raises(ConfigError) as info:
        load_session(path)
    msg = str(info.value)
    assert str(path) in msg and f"session.{key}" in msg and "measured" in msg
    assert getattr(load_session(_demo_manifest(tmp_path, lambda t: t)), key) == "auto"
    path = _demo_manifest(tmp_path, lambda t: t.replace("[session]\n",
                                                        f'[session]\n{key} = "rigid"\n'))
    assert getattr(load_session(path), key) == "rigid"
