"""rigtool weigh: scale protocols, the port reader, weigh.json, and the command line.

Scales are simulated three ways: a pure-Python port object (fast, deterministic), pyserial's
``loop://`` URL (what is written is read back: a streaming scale), and a pseudo-terminal
whose master side is played by a thread (the CLI opens the slave like a real device).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
import tty
from pathlib import Path

import pytest

serial = pytest.importorskip("serial")

import rigtool.cli  # noqa: E402
from rigtool.config import load_session  # noqa: E402
from rigtool.devices.scale import (  # noqa: E402
    KG_PER_UNIT, parse_any_line, parse_continuous_line, parse_mt_sics_line, read_weigh_json,
    read_weight, resolve_total_mass, weigh, write_weigh_json)
from rigtool.errors import ConfigError, DeviceError, InputError  # noqa: E402

LB = 0.45359237  # kg, exact by definition (1959)


# --------------------------------------------------------------------------------------
# Simulated scales


class FakePort:
    """A pyserial-like port: answers each command with the next scripted reply, or streams.

    ``replies``: lines sent in answer to successive commands (the last one repeats; None
    means no answer). ``stream``: an iterable of lines delivered one per read, unasked.
    """

    def __init__(self, replies=(), stream=None, line_end=b"\r\n", period_s=0.002):
        self.replies = list(replies)
        self.stream = iter(stream) if stream is not None else None
        self.line_end = line_end
        self.period_s = period_s
        self.pending = b""
        self.written = []
        self.timeout = 0.1

    def write(self, data):
        self.written.append(data)
        if self.replies:
            reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
            if reply is not None:
                self.pending += reply.encode("ascii") + self.line_end
        return len(data)

    def reset_input_buffer(self):
        self.pending = b""

    def read_until(self, expected=b"\n"):
        if not self.pending and self.stream is not None:
            line = next(self.stream, None)
            if line is not None:
                time.sleep(self.period_s)
                self.pending += line.encode("ascii") + self.line_end
        if not self.pending:
            time.sleep(self.timeout)
            return b""
        i = self.pending.find(expected)
        cut = len(self.pending) if i < 0 else i + len(expected)
        out, self.pending = self.pending[:cut], self.pending[cut:]
        return out


class PtyScale:
    """A scale on the master side of a pseudo-terminal; ``path`` is the slave device.

    ``replies``: answered to each received command line (last repeats, None = silence).
    ``stream``: lines written unasked, every ``period_s`` (cycled while the test runs).
    """

    def __init__(self, replies=(), stream=None, period_s=0.02):
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)  # no echo, no line editing, before anyone writes
        self.path = os.ttyname(self.slave)
        self.replies = list(replies)
        self.stream = itertools.cycle(stream) if stream else None
        self.period_s = period_s
        self.received = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._play, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(2.0)
        os.close(self.master)
        os.close(self.slave)

    def _play(self):
        buf = b""
        next_stream = time.monotonic()
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.01)
            if ready:
                try:
                    buf += os.read(self.master, 1024)
                except OSError:
                    return
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self.received.append(line.strip().decode())
                    if self.replies:
                        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
                        if reply is not None:
                            os.write(self.master, reply.encode() + b"\r\n")
            if self.stream is not None and time.monotonic() >= next_stream:
                os.write(self.master, next(self.stream).encode() + b"\r\n")
                next_stream += self.period_s


@pytest.fixture(autouse=True)
def _only_weigh_command(monkeypatch):
    """The CLI builds every sub-command's parser; test ``weigh`` alone, so a sibling
    command's import problem cannot mask (or fake) the behaviour tested here."""
    monkeypatch.setattr(rigtool.cli, "COMMANDS", ("weigh",))


def main(argv):
    return rigtool.cli.main(argv)


def _read(port, **kw):
    kw.setdefault("port_name", "COM9")
    kw.setdefault("timeout_s", 2.0)
    kw.setdefault("silence_s", 0.5)
    kw.setdefault("poll_interval_s", 0.01)
    kw.setdefault("listen_s", 0.1)
    return read_weight(port, **kw)


# --------------------------------------------------------------------------------------
# MT-SICS lines


@pytest.mark.parametrize("line, status, value, unit", [
    ("S S     80.817 kg", "stable", 80.817, "kg"),
    ("S D     80.812 kg\r\n", "unstable", 80.812, "kg"),
    ("S S    -0.0082 g", "stable", -0.0082, "g"),
    ("S S   178.170 lb", "stable", 178.17, "lb"),
    ("SI S    12.5 mg", "stable", 12.5, "mg"),
])
def test_mt_sics_weight_lines(line, status, value, unit):
    r = parse_mt_sics_line(line)
    assert (r.status, r.value, r.unit) == (status, value, unit)
    assert r.mass_kg == pytest.approx(value * KG_PER_UNIT[unit], rel=1e-15)


@pytest.mark.parametrize("line, status, code", [
    ("S I", "busy", "S I"), ("S +", "overload", "S +"), ("S -", "underload", "S -"),
    ("ES", "error", "ES"), ("ET", "error", "ET"), ("EL", "error", "EL"),
])
def test_mt_sics_state_and_error_lines(line, status, code):
    r = parse_mt_sics_line(line)
    assert (r.status, r.code, r.value, r.mass_kg) == (status, code, None, None)


@pytest.mark.parametrize("line", ["", "hello", "S X 1.0 kg", "S S abc kg", "S S 80.8",
                                  "\x00\xff S"])
def test_mt_sics_garbage_names_expected_format(line):
    with pytest.raises(DeviceError, match=r"expected an MT-SICS reply such as 'S S"):
        parse_mt_sics_line(line)


def test_mt_sics_non_mass_unit_says_switch_unit():
    with pytest.raises(DeviceError, match=r"unit 'PCS'; expected a mass in kg, g, mg, lb or "
                                          r"oz \(switch the scale's display unit"):
        parse_mt_sics_line("S S        12 PCS")


# --------------------------------------------------------------------------------------
# Continuous-print lines


@pytest.mark.parametrize("line, status, value, unit", [
    ("ST,+0080.817  kg", "stable", 80.817, "kg"),
    ("US,+0080.812  kg", "unstable", 80.812, "kg"),
    ("ST,+00080817.  g", "stable", 80817.0, "g"),
    ("ST,+0178.170 lb", "stable", 178.17, "lb"),
    ("US,-0000.120 lb", "unstable", -0.12, "lb"),
    ("ST,OK,+0001.234 kg", "stable", 1.234, "kg"),      # with a comparison result
    ("ST,GS, 00254.80 kg", "stable", 254.8, "kg"),      # gross/net indicators
    ("ST,+0080.817, kg", "stable", 80.817, "kg"),       # A&D CSV variant
])
def test_continuous_weight_lines(line, status, value, unit):
    r = parse_continuous_line(line)
    assert (r.status, r.value, r.unit) == (status, value, unit)


@pytest.mark.parametrize("line, status", [
    ("OL,+9999999  kg", "overload"), ("OL,+9999999E+19", "overload"),
    ("OL,-99999999 PC", "overload"), ("QT,+00001234 PC", "count"),
])
def test_continuous_overload_and_count(line, status):
    assert parse_continuous_line(line).status == status


@pytest.mark.parametrize("line", ["XX,+0080.817 kg", "ST+0080.817 kg", "ST,abc kg",
                                  "ST,+0080.817", "0.817  kg", "S S 80.817 kg"])
def test_continuous_garbage_names_expected_format(line):
    with pytest.raises(DeviceError, match=r"expected a continuous-print line such as "
                                          r"'ST,\+0080.817  kg'"):
        parse_continuous_line(line)


def test_continuous_non_mass_unit():
    with pytest.raises(DeviceError, match=r"unit '%'; expected a mass"):
        parse_continuous_line("ST,+0012.34  %")


@pytest.mark.parametrize("unit, factor", [("kg", 1.0), ("g", 1e-3), ("lb", LB),
                                          ("mg", 1e-6), ("oz", LB / 16), ("KG", 1.0)])
def test_each_unit_converts_to_kg(unit, factor):
    r = parse_continuous_line(f"ST,+0080.817 {unit}")
    assert r.unit == unit  # as read
    assert r.mass_kg == pytest.approx(80.817 * factor, rel=1e-15)


def test_parse_any_line_tells_protocols_apart():
    assert parse_any_line("S S 1.0 kg")[0] == "mt-sics"
    assert parse_any_line("ST,+0001.000 kg")[0] == "continuous"
    with pytest.raises(DeviceError, match=r"expected an MT-SICS reply .*, or a continuous"):
        parse_any_line("garbage")


# --------------------------------------------------------------------------------------
# The reader on a pure-Python port


def test_mt_sics_stable_after_dynamic_readings():
    port = FakePort(["S D     80.700 kg", "S D     80.812 kg", "S I", "S S     80.817 kg"])
    res = _read(port, protocol="mt-sics")
    assert res.mass_kg == 80.817 and res.reply.unit == "kg" and res.protocol == "mt-sics"
    assert res.raw_lines == ["S D     80.700 kg", "S D     80.812 kg", "S I",
                             "S S     80.817 kg"]
    assert port.written == [b"SI\r\n"] * 4
    assert res.time_utc.endswith("Z") and "T" in res.time_utc
    rec = res.to_record()
    assert rec["stable"] is True and rec["value"] == 80.817 and rec["port"] == "COM9"
    assert set(rec) >= {"mass_kg", "value", "unit", "stable", "time", "port", "protocol",
                        "raw_lines", "rigtool_version"}


def test_mt_sics_in_grams_and_pounds():
    assert _read(FakePort(["S S    80817.0 g"]), protocol="mt-sics").mass_kg == \
        pytest.approx(80.817, rel=1e-12)
    res = _read(FakePort(["S S   178.170 lb"]), protocol="mt-sics")
    assert res.mass_kg == pytest.approx(178.17 * LB, rel=1e-15) and res.reply.unit == "lb"


def test_mt_sics_cr_only_line_ends():
    port = FakePort(["S D 1.0 kg", "S S 2.5 kg"], line_end=b"\r")
    assert _read(port, protocol="mt-sics").mass_kg == 2.5


def test_mt_sics_transmission_error_is_retried():
    assert _read(FakePort(["ET", "S S 3.0 kg"]), protocol="mt-sics").mass_kg == 3.0


def test_timeout_when_never_stable():
    with pytest.raises(DeviceError, match=r"^scale on COM9: no stable reading within 0.4 s; "
                                          r"last reply 'S D     80.812 kg' \(unstable\); "
                                          r"expected the scale to settle"):
        _read(FakePort(["S D     80.812 kg"]), protocol="mt-sics", timeout_s=0.4)


@pytest.mark.parametrize("reply, match", [
    ("S +", r"the scale reports overload \(S \+\); expected a weight within its range"),
    ("S -", r"the scale reports underload \(S -\)"),
    ("ES", r"syntax error: the scale did not understand the command .*--protocol continuous"),
    ("EL", r"logical error"),
])
def test_mt_sics_fatal_replies(reply, match):
    with pytest.raises(DeviceError, match=r"^scale on COM9: " + match) as info:
        _read(FakePort(["S D 1.0 kg", reply]), protocol="mt-sics")
    assert info.value.found == reply


def test_garbage_names_port_raw_line_and_expectation():
    port = FakePort(["S D 1.0 kg", "#@!garbage"])
    with pytest.raises(DeviceError, match=r"^scale on COM9: expected an MT-SICS reply such as "
                                          r"'S S     80.817 kg'.*\(found '#@!garbage'\)$"):
        _read(port, protocol="mt-sics")


def test_first_cut_line_is_forgiven_but_not_the_second():
    port = FakePort(stream=["0.817  kg", "US,+0080.812  kg", "ST,+0080.817  kg"])
    assert _read(port, protocol="continuous").mass_kg == 80.817
    port = FakePort(stream=["0.817  kg", "~~~~", "ST,+0080.817  kg"])
    with pytest.raises(DeviceError, match=r"expected a continuous-print line.*found '~~~~'"):
        _read(port, protocol="continuous")


def test_silence():
    with pytest.raises(DeviceError, match=r"^scale on COM9: no data for 0.3 s; expected "
                                          r"replies to 'SI' \(is the scale on"):
        _read(FakePort([None]), protocol="mt-sics", silence_s=0.3)
    with pytest.raises(DeviceError, match=r"no data for 0.3 s; expected a stream of weight "
                                          r"lines .*--protocol mt-sics"):
        _read(FakePort(), protocol="continuous", silence_s=0.3)


def test_lost_reply_is_asked_again():
    port = FakePort(["S D 80.0 kg", None, "S S 80.817 kg"])
    res = _read(port, protocol="mt-sics", silence_s=3.0)
    assert res.mass_kg == 80.817 and len(port.written) == 3


def test_no_data_before_timeout_says_so():
    with pytest.raises(DeviceError, match=r"^scale on COM9: no data within 0.3 s; expected a "
                                          r"stream of weight lines \(is the scale on"):
        _read(FakePort(), protocol="continuous", timeout_s=0.3, silence_s=5.0)


def test_bytes_without_line_end_are_garbage():
    port = FakePort(stream=["x" * 300], line_end=b"")
    with pytest.raises(DeviceError, match=r"received \d+ bytes without a line end; expected "
                                          r"text lines ended by CR LF \(check the baud rate"):
        _read(port, protocol="continuous")


def test_zero_or_negative_stable_reading_is_refused():
    with pytest.raises(DeviceError, match=r"the stable reading is 0 kg; expected the object's "
                                          r"positive mass"):
        _read(FakePort(["S S      0.000 kg"]), protocol="mt-sics")


def test_count_mode_is_refused():
    with pytest.raises(DeviceError, match=r"counting pieces \(QT\); expected weight data"):
        _read(FakePort(stream=["US,+0001.000 kg", "QT,+00001234 PC"]), protocol="continuous")


def test_auto_detects_a_streaming_scale_without_writing():
    port = FakePort(stream=["US,+0080.812  kg", "ST,+0080.817  kg"])
    res = _read(port, protocol="auto")
    assert (res.protocol, res.mass_kg, port.written) == ("continuous", 80.817, [])


def test_auto_polls_a_silent_mt_sics_scale():
    res = _read(FakePort(["S D 80.0 kg", "S S 80.817 kg"]), protocol="auto")
    assert (res.protocol, res.mass_kg) == ("mt-sics", 80.817)


def test_auto_accepts_an_ad_reply_to_si():
    res = _read(FakePort(["US,+0080.812  kg", "ST,+0080.817  kg"]), protocol="auto")
    assert (res.protocol, res.mass_kg) == ("continuous", 80.817)


# --------------------------------------------------------------------------------------
# The reader on pyserial's loop:// (a streaming scale)


def _loop(*lines):
    port = serial.serial_for_url("loop://", timeout=0.05)
    port.write("".join(f"{x}\r\n" for x in lines).encode())
    return port


def test_loop_continuous_stable_after_unstable():
    port = _loop("US,+0080.700  kg", "US,+0080.812  kg", "ST,+0080.817  kg")
    res = _read(port, protocol="continuous")
    assert res.mass_kg == 80.817 and len(res.raw_lines) == 3


def test_loop_continuous_overload():
    with pytest.raises(DeviceError, match=r"overload \(OL\); expected a weight within its "
                                          r"range.*found 'OL,\+9999999E\+19'"):
        _read(_loop("US,+0080.812  kg", "OL,+9999999E+19"), protocol="continuous")


def test_loop_continuous_silence_after_unstable():
    with pytest.raises(DeviceError, match=r"no data for 0.3 s"):
        _read(_loop("US,+0080.812  kg"), protocol="continuous", silence_s=0.3)


# --------------------------------------------------------------------------------------
# weigh.json


def _result():
    return _read(FakePort(["S D 80.0 kg", "S S     80.817 kg"]), protocol="mt-sics")


def test_weigh_json_round_trip_and_no_overwrite(tmp_path):
    out = write_weigh_json(_result(), tmp_path / "weigh.json")
    mass, rec = read_weigh_json(out)
    assert mass == 80.817 and rec["raw_lines"][-1] == "S S     80.817 kg"
    with pytest.raises(InputError, match=r"weigh.json: the file exists; expected a new output "
                                         r"file \(use --force"):
        write_weigh_json(_result(), out)
    write_weigh_json(_result(), out, force=True)


@pytest.mark.parametrize("text, match", [
    ("{\n  \"mass_kg\": 80.8,\n  oops\n}", r"weigh.json, line 3: not valid JSON"),
    ("[1, 2]", r"expected a JSON object with mass_kg"),
    ("{\"unit\": \"kg\"}", r"field 'mass_kg': missing required field 'mass_kg'"),
    ("{\"mass_kg\": -1}", r"field 'mass_kg': expected a positive number of kg \(found -1\)"),
    ("{\"mass_kg\": \"80\"}", r"expected a positive number of kg"),
    ("{\"mass_kg\": 80.8, \"stable\": false}", r"field 'stable': expected a stable reading"),
    ("{\"mass_kg\": 80.8, \"value\": 80.8, \"unit\": \"PCS\"}", r"field 'unit': expected a "
                                                               r"mass unit"),
    ("{\"mass_kg\": 80.8, \"value\": 80.8, \"unit\": \"lb\"}", r"value 80.8 lb is 36.65.* kg, "
                                                              r"which disagrees with mass_kg"),
])
def test_read_weigh_json_bad_files(tmp_path, text, match):
    p = tmp_path / "weigh.json"
    p.write_text(text)
    with pytest.raises(ConfigError, match=match):
        read_weigh_json(p)


def test_read_weigh_json_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"nothere.json: file not found; expected a "
                                          r"weigh.json written by 'rigtool weigh'"):
        read_weigh_json(tmp_path / "nothere.json")


SESSION = """
[session]
name = "demo"
rig = "rig.toml"
{mass}

[[links]]
name = "trunk"
parent = "platform"
markers = {{ T1 = [0.10, 0.02, 0.30], T2 = [-0.12, 0.05, 0.28], T3 = [0.0, -0.15, 0.31] }}

[[postures]]
name = "posture1"
capture = "posture1.csv"
"""


def test_resolve_total_mass_from_session(tmp_path):
    (tmp_path / "s1.toml").write_text(SESSION.format(mass="total_mass = 80.5"))
    assert resolve_total_mass(load_session(tmp_path / "s1.toml")) == 80.5
    write_weigh_json(_result(), tmp_path / "weigh.json")
    (tmp_path / "s2.toml").write_text(SESSION.format(mass='total_mass_from = "weigh.json"'))
    assert resolve_total_mass(load_session(tmp_path / "s2.toml")) == 80.817
    (tmp_path / "s3.toml").write_text(SESSION.format(mass='total_mass_from = "w2.json"'))
    with pytest.raises(ConfigError, match=r"w2.json: file not found.*\(named by "
                                          r"session.total_mass_from in .*s3.toml\)"):
        resolve_total_mass(load_session(tmp_path / "s3.toml"))


# --------------------------------------------------------------------------------------
# End to end on a pseudo-terminal, and the command line


def test_weigh_on_a_pty_mt_sics_scale():
    with PtyScale(["S D     80.700 kg", "S D     80.812 kg", "S S     80.817 kg"]) as scale:
        res = weigh(scale.path, protocol="mt-sics", timeout_s=3.0)
    assert res.mass_kg == 80.817 and res.port == scale.path
    assert scale.received[:3] == ["SI", "SI", "SI"]


def test_cli_mt_sics_writes_weigh_json(tmp_path, capsys):
    out = tmp_path / "weigh.json"
    with PtyScale(["S D     80.812 kg", "S S     80.817 kg"]) as scale:
        code = main(["weigh", "--port", scale.path, "-o", str(out), "--protocol", "mt-sics",
                     "--timeout", "3"])
    assert code == 0
    rec = json.loads(out.read_text())
    assert (rec["mass_kg"], rec["value"], rec["unit"], rec["stable"], rec["protocol"],
            rec["port"]) == (80.817, 80.817, "kg", True, "mt-sics", scale.path)
    assert rec["raw_lines"] == ["S D     80.812 kg", "S S     80.817 kg"]
    assert "80.817 kg (read 80.817 kg, stable, mt-sics)" in capsys.readouterr().out


def test_cli_auto_continuous_pounds(tmp_path):
    out = tmp_path / "w.json"
    with PtyScale(stream=["US,+0178.100 lb", "US,+0178.160 lb", "ST,+0178.170 lb"]) as scale:
        assert main(["weigh", "--port", scale.path, "-o", str(out), "--timeout", "3"]) == 0
    mass, rec = read_weigh_json(out)
    assert mass == pytest.approx(178.17 * LB, rel=1e-15)
    assert (rec["unit"], rec["value"], rec["protocol"]) == ("lb", 178.17, "continuous")


def test_cli_overload_exit_2_one_line(tmp_path, capsys):
    with PtyScale(stream=["OL,+9999999  kg"]) as scale:
        code = main(["weigh", "--port", scale.path, "-o", str(tmp_path / "w.json"),
                     "--protocol", "continuous", "--timeout", "3"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"rigtool weigh: error: scale on {scale.path}: the scale reports "
                          "overload (OL)")
    assert not (tmp_path / "w.json").exists()


def test_cli_never_stable_times_out(tmp_path, capsys):
    with PtyScale(stream=["US,+0080.812  kg", "US,+0080.813  kg"]) as scale:
        code = main(["weigh", "--port", scale.path, "-o", str(tmp_path / "w.json"),
                     "--protocol", "continuous", "--timeout", "0.5"])
    assert code == 2
    assert "no stable reading within 0.5 s; last reply 'US,+0080.81" in capsys.readouterr().err


def test_cli_silent_scale(tmp_path, capsys):
    with PtyScale([None]) as scale:
        code = main(["weigh", "--port", scale.path, "-o", str(tmp_path / "w.json"),
                     "--timeout", "0.6"])
    assert code == 2
    assert f"scale on {scale.path}: no data for 0.6 s; expected a stream of weight lines or " \
        "replies to 'SI' (is the scale on" in capsys.readouterr().err


def test_cli_auto_polls_a_pty_mt_sics_scale_after_listening(tmp_path):
    out = tmp_path / "w.json"
    with PtyScale(["S D  80812 g", "S S  80817 g"]) as scale:
        assert main(["weigh", "--port", scale.path, "-o", str(out), "--timeout", "5"]) == 0
    mass, rec = read_weigh_json(out)
    assert mass == pytest.approx(80.817, rel=1e-12)
    assert (rec["unit"], rec["value"], rec["protocol"]) == ("g", 80817.0, "mt-sics")


def test_cli_refuses_existing_output_before_weighing(tmp_path, capsys):
    out = tmp_path / "weigh.json"
    out.write_text("{}")
    with PtyScale(["S S 1.0 kg"]) as scale:
        code = main(["weigh", "--port", scale.path, "-o", str(out)])
        assert scale.received == []
    assert code == 2 and out.read_text() == "{}"
    assert "weigh.json: the file exists; expected a new output file (use --force" in \
        capsys.readouterr().err
    with PtyScale(["S S 2.0 kg"]) as scale:
        assert main(["weigh", "--port", scale.path, "-o", str(out), "--force",
                     "--protocol", "mt-sics", "--timeout", "3"]) == 0
    assert read_weigh_json(out)[0] == 2.0


@pytest.mark.parametrize("args, match", [
    (["--timeout", "0"], r"field '--timeout': expected a positive number of seconds"),
    (["--framing", "9X1"], r"expected serial framing as data bits, parity, stop bits"),
])
def test_cli_bad_settings(tmp_path, capsys, args, match):
    code = main(["weigh", "--port", "loop://", "-o", str(tmp_path / "w.json"), *args])
    assert code == 2
    assert re.search(match, capsys.readouterr().err)


def test_cli_missing_port_subprocess_exit_2(tmp_path):
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    script = ("import sys, rigtool.cli as c; c.COMMANDS = ('weigh',); "
              "sys.exit(c.main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", script, "weigh", "--port",
                           str(tmp_path / "ttyNONE"), "-o", str(tmp_path / "w.json")],
                          capture_output=True, text=True, env=env, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "cannot open serial port" in proc.stderr and "ttyNONE" in proc.stderr


def test_docstring_examples_run():
    import doctest

    import rigtool.devices.scale_protocols as protocols

    result = doctest.testmod(protocols, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0
