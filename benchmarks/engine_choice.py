"""Engine choice: the cost per simulated frame of the relative-motion model (the
platform on four springs carrying a tree of nb bodies on spherical joints) in JAX (rigtool's
engine), pinocchio and numba, with and without the P = 16 nb + 12 sensitivities a fit needs.

Model (benchmarks/_engine_model.py): the paper-002 rig's platform and springs; body 0 the
platform with a 30 kg base bolted on; nb - 1 links in up to four limbs off the base (a person
lying on the platform), 4.0/2.5/1.2/0.6 kg by depth, cylinder-like inertias (4.5 cm radius); three markers per body;
120 Hz, two RK4 steps per frame; the links swinging at ~0.5 rad/s, the platform a few mm off
its equilibrium. The same model, to rounding, in every engine:

(a) JAX: ``rigtool.engine.tree.simulate_jax`` (compiled chunks of 256 frames; articulated-body
    algorithm; markers and their derivatives included). Tangents: exact forward mode
    (``jax.linearize`` of a step, ``vmap`` over the P directions, ``lax.scan`` over frames).
    Compile time reported apart (persistent cache off unless ``--cache``).
(b) pinocchio (``pin``): ``pin.aba`` per RK4 stage from a Python loop; sensitivities by the
    variational equations with ``pin.computeABADerivatives``, the torque regressor and M^-1
    (benchmarks/_engine_pin.py). One Python round trip per stage: that is a per-step Python cost
    a compiled engine avoids; the pinocchio calls alone are timed too (what a compiled driver
    would leave). The markers' derivatives are not in its timings (JAX's and numba's include them).
(c) numba: rigtool's ABA written out with loops, ``@njit``, RK4 loop compiled; sensitivities
    by forward differences, P + 1 primal runs (numba has no automatic differentiation).

Checks, printed under the table, at the end of the timed runs (``--frames``, 1 s): numba and
JAX integrate the same discrete map (final states); pinocchio needs unit quaternions, so its
RK4 stages see the rotation matrices projected where rigtool's use them as they are, and its
sensitivities are the variational equations integrated, not the derivative of the discrete
map: (b) agrees with (a) to the integrator's truncation error, shown beside JAX's own (its
bench-step state against the same run at a step ``--check-refine`` times finer), and checked
again at that finer step (states; sensitivities on a sample of columns up to
``--fine-sens-max`` bodies). Marker sensitivities: largest difference over the column's
largest value, worst column.

Times are CPU (``time.process_time``: the machine has 2 cores shared with other jobs, wall
time would measure the neighbours), ms per simulated frame; JAX's include its worker threads.

    python3 benchmarks/engine_choice.py [--bodies 2,4,8,16] [--frames 120] [--cache]
        [--engines jax,pin,numba] [--check-refine 8] [--fine-sens-max 4]     # ~9 min
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from _engine_model import ANCHOR, ATTACH, FPS, GRAVITY, SUBSTEPS, Bench, build  # noqa: E402


def _cpu(fn, *args, **kw):
    t = time.process_time()
    out = fn(*args, **kw)
    return time.process_time() - t, out


def _rel(a, b):
    """Largest difference over the largest magnitude of the reference ``b``, per column."""
    a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    return np.max(np.abs(a - b), axis=0) / np.maximum(np.max(np.abs(b), axis=0), 1e-300)


class Jax:
    """JAX's forward mode on the benchmark model (``rigtool.engine.tree.simulate_jax``; rigtool's
    tree engine until the numba kernels replaced it: benchmarks/tree_tangents.py)."""

    def __init__(self, bench: Bench):
        from rigtool.engine import tree
        from rigtool.engine.rigid import CHUNK_FRAMES
        self.tree, self.chunk, self.b = tree, CHUNK_FRAMES, bench
        self.model = tree.TreeModel(bench.parents, bench.body_of_marker, ANCHOR, ATTACH,
                                    GRAVITY, tuple(range(6)))

    def run(self, frames, t_th=None, t_y=None, refine=1):
        return self.tree.simulate_jax(self.model, self.b.theta, self.b.y0,
                                      frames * refine + 1, 1.0 / FPS / refine,
                                      substeps=SUBSTEPS, tangent_theta=t_th, tangent_y0=t_y)

    def frames_computed(self, frames):
        return -(-frames // self.chunk) * self.chunk


def measure(nb: int, frames: int, refine: int, fine_sens_max: int,
            engines: set[str]) -> dict:
    """Timings (CPU ms per frame, compile s) and agreement figures for one tree size; the
    agreement is checked at the end of the timed runs (``frames``)."""
    bench = build(nb)
    p = bench.n_dir
    out: dict = {"nb": nb, "P": p}
    have_pin = "pin" in engines and _importable("pinocchio")
    have_numba = "numba" in engines and _importable("numba")
    if have_pin:
        import pinocchio as pin
        integrate = lambda q, dq: pin.integrate(_model_pin(bench), q, dq)  # noqa: E731
    else:                       # the tangent map only needs an exp on SE(3) x SO(3)^n
        integrate = _integrate_np(bench)
    from _engine_model import tangents
    t_th, t_y = tangents(bench, integrate)
    # ---- (a) JAX
    jx = Jax(bench)
    out["jax_compile"], _ = _cpu(jx.run, 1)
    cpu, (states, _, _) = _cpu(jx.run, frames)
    out["jax_primal"] = 1e3 * cpu / jx.frames_computed(frames)
    out["jax_tan_compile"], _ = _cpu(jx.run, 1, t_th, t_y)
    cpu, (_, _, d_mk) = _cpu(jx.run, frames, t_th, t_y)
    out["jax_tan"] = 1e3 * cpu / jx.frames_computed(frames)
    y_jax, d_jax = states[-1], d_mk[-1]
    # ---- (c) numba
    if have_numba:
        from _engine_numba import NumbaEngine
        ne = NumbaEngine(bench)
        out["numba_compile"], _ = _cpu(ne.simulate, bench.theta, bench.y0, 1)
        cpu, (_, y_n) = _cpu(ne.simulate, bench.theta, bench.y0, frames)
        out["numba_primal"] = 1e3 * cpu / frames
        cpu, (_, d_n) = _cpu(ne.sensitivities, bench.theta, bench.y0, t_th, t_y, frames)
        out["numba_fd"] = 1e3 * cpu / frames
        out["numba_state_err"] = np.max(np.abs(y_n - y_jax))
        out["numba_sens_rel"] = float(np.max(_rel(d_n[-1], d_jax)))
    # ---- (b) pinocchio
    if have_pin:
        from _engine_pin import PinEngine
        pe = PinEngine(bench)
        cpu, y_p = _cpu(pe.simulate, bench.y0, frames)
        out["pin_primal"] = 1e3 * cpu / frames
        nv = bench.nv
        x0 = np.zeros((2 * nv, p))
        x0[np.arange(2 * nv), 10 * nb + np.arange(2 * nv)] = 1.0
        cpu, (y_pv, x_p) = _cpu(pe.simulate_var, bench.y0, x0, frames)
        out["pin_var"] = 1e3 * cpu / frames
        out.update(_pin_calls(pe, bench))
        out["pin_state_err_bench_step"] = np.max(np.abs(y_p - y_jax))
        out["pin_sens_rel_bench_step"] = float(np.max(_rel(pe.marker_tangents(y_pv, x_p), d_jax)))
        # the same at a step `refine` times finer (same compiled JAX code, dt / refine)
        fine = PinEngine(bench, substeps=SUBSTEPS * refine)
        states_f, _, _ = jx.run(frames, refine=refine)
        out["pin_state_err"] = np.max(np.abs(fine.simulate(bench.y0, frames) - states_f[-1]))
        out["jax_step_err"] = np.max(np.abs(states_f[-1] - y_jax))
        if nb <= fine_sens_max:
            # a sample of columns (a second compilation of the tangents, at their width):
            # pi of the last link, q and v of body 0 and of the last link, the springs'
            cols = np.r_[10 * (nb - 1) + np.arange(10), 10 * nb + np.r_[0:6, nv - 3:nv],
                         10 * nb + nv + np.r_[0:6, nv - 3:nv], 16 * nb + 6 + np.arange(6)]
            _, _, d_f = jx.run(frames, t_th[:, cols], t_y[:, cols], refine=refine)
            y_f, x_f = fine.simulate_var(bench.y0, x0[:, cols], frames, cols=cols)
            out["pin_sens_rel"] = float(np.max(_rel(fine.marker_tangents(y_f, x_f), d_f[-1])))
            out["pin_sens_cols"] = len(cols)
    return out


def _pin_calls(pe, bench: Bench) -> dict:
    """CPU ms per frame of the pinocchio calls alone (8 stages per frame): ``pin.aba``; and
    ``computeABADerivatives`` + the torque regressor + the two products with M^-1 that the
    variational equations need per stage."""
    import pinocchio as pin
    q, v, rots, _ = pe.qv_of_y(bench.y0)
    tau = pe.tau(bench.y0, rots, v)
    n = 400
    t = time.process_time()
    for _ in range(n):
        a = pin.aba(pe.model, pe.data, q, v, tau)
    aba = (time.process_time() - t) / n
    x = np.zeros((2 * bench.nv, bench.n_dir))
    t = time.process_time()
    for _ in range(n // 4):
        pin.computeABADerivatives(pe.model, pe.data, q, v, tau)
        reg = pin.computeJointTorqueRegressor(pe.model, pe.data, q, v, a)
        _ = pe.data.Minv @ reg
        _ = pe.data.ddq_dq @ x[:bench.nv] + pe.data.ddq_dv @ x[bench.nv:]
    der = (time.process_time() - t) / (n // 4)
    stages = 4 * SUBSTEPS
    return {"pin_aba_only": 1e3 * stages * aba, "pin_der_only": 1e3 * stages * der}


_PIN_MODELS: dict = {}


def _model_pin(bench: Bench):
    from _engine_pin import model_of
    if bench.nb not in _PIN_MODELS:
        _PIN_MODELS[bench.nb] = model_of(bench)
    return _PIN_MODELS[bench.nb]


def _integrate_np(bench: Bench):
    """``q (+) dq`` (SE(3) x SO(3)^n, local) without pinocchio, for the tangent map only."""
    from scipy.spatial.transform import Rotation

    def integrate(q, dq):
        r0 = Rotation.from_quat(q[3:7])
        phi = dq[3:6]
        th = np.linalg.norm(phi)
        k = np.eye(3) if th < 1e-12 else (
            np.eye(3) + (1 - np.cos(th)) / th ** 2 * _sk(phi)
            + (th - np.sin(th)) / th ** 3 * _sk(phi) @ _sk(phi))
        out = q.copy()
        out[:3] = q[:3] + r0.as_matrix() @ (k @ dq[:3])
        out[3:7] = (r0 * Rotation.from_rotvec(phi)).as_quat()
        for i in range(1, bench.nb):
            s = slice(7 + 4 * (i - 1), 11 + 4 * (i - 1))
            out[s] = (Rotation.from_quat(q[s])
                      * Rotation.from_rotvec(dq[6 + 3 * (i - 1):9 + 3 * (i - 1)])).as_quat()
        return out
    return integrate


def _sk(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _importable(name: str) -> bool:
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def _f(x, fmt="{:.3g}", why="not installed"):
    """A figure, or why there is none (the engine not installed, or left out by --engines)."""
    return why if x is None else fmt.format(x)


def fine_sens(r: dict, why: str) -> str:
    if r.get("pin_sens_rel") is not None:
        return f"{r['pin_sens_rel']:.1e} ({r['pin_sens_cols']})"
    return why if r.get("pin_primal") is None else "not run (--fine-sens-max)"


def report(rows: list[dict], frames: int, missing: dict[str, str]) -> str:
    """The two Markdown tables; ``missing[engine]`` says why an engine has no figures."""
    wp, wn = missing["pin"], missing["numba"]
    lines = [
        "| nb | P | JAX compile s (primal / tangents) | JAX primal | JAX P tangents "
        "| pin primal (aba calls alone) | pin variational (pin calls alone) "
        "| numba compile s | numba primal | numba P+1 forward differences |",
        "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        g = r.get
        pin_p = (None if g("pin_primal") is None
                 else f"{g('pin_primal'):.3g} ({g('pin_aba_only'):.2g})")
        pin_v = (None if g("pin_var") is None
                 else f"{g('pin_var'):.3g} ({g('pin_der_only'):.2g})")
        lines.append(
            f"| {r['nb']} | {r['P']} | {r['jax_compile']:.1f} / {r['jax_tan_compile']:.1f} "
            f"| {r['jax_primal']:.3g} | {r['jax_tan']:.3g} | {_f(pin_p, '{}', wp)} "
            f"| {_f(pin_v, '{}', wp)} | {_f(g('numba_compile'), '{:.1f}', wn)} "
            f"| {_f(g('numba_primal'), why=wn)} | {_f(g('numba_fd'), why=wn)} |")
    lines += ["", f"CPU ms per frame over {frames} frames (JAX: per frame computed, whole "
              "chunks of 256; exact forward-mode tangents). pin: driven from a Python loop, "
              "one round trip per RK4 stage (8 per frame), a per-step Python cost a compiled "
              "engine avoids; in brackets its calls alone; sensitivities by the variational "
              "equations. numba: compiled RK4, compiled once per process (later sizes reuse "
              "it); sensitivities by P+1 forward differences (no automatic differentiation).",
              "", f"Agreement after {frames} frames (states: largest absolute difference; "
              "marker sensitivities: largest relative difference, worst column):", "",
              "| nb | numba vs JAX state | numba FD vs JAX sens. (all P) | pin vs JAX state "
              "| pin vs JAX sens. (all P) | JAX's own step error | pin vs JAX state, fine step "
              "| pin vs JAX sens., fine step (columns) |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        g = r.get
        lines.append(
            f"| {r['nb']} | {_f(g('numba_state_err'), '{:.1e}', wn)} "
            f"| {_f(g('numba_sens_rel'), '{:.1e}', wn)} "
            f"| {_f(g('pin_state_err_bench_step'), '{:.1e}', wp)} "
            f"| {_f(g('pin_sens_rel_bench_step'), '{:.1e}', wp)} "
            f"| {_f(g('jax_step_err'), '{:.1e}', wp)} "
            f"| {_f(g('pin_state_err'), '{:.1e}', wp)} | {fine_sens(r, wp)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", default="2,4,8,16", help="tree sizes nb (bodies incl. body 0)")
    ap.add_argument("--frames", type=int, default=120, help="frames timed per run (120 = 1 s)")
    ap.add_argument("--check-refine", type=int, default=8,
                    help="pinocchio vs JAX also checked at a step this many times finer")
    ap.add_argument("--fine-sens-max", type=int, default=4,
                    help="largest nb whose sensitivities are also checked at the fine step "
                         "(costs a second JAX compilation)")
    ap.add_argument("--engines", default="jax,pin,numba")
    ap.add_argument("--cache", action="store_true",
                    help="use rigtool's JAX compilation cache (default off: cold compile times)")
    args = ap.parse_args(argv)
    if not args.cache:
        os.environ["RIGTOOL_JAX_CACHE"] = ""
    engines = set(args.engines.split(","))
    missing = {"pin": "not installed", "numba": "not installed"}
    for name, module in (("pin", "pinocchio"), ("numba", "numba")):
        if not _importable(module):
            print(f"{module}: not installed (pip install {name}); its columns are left out")
        elif name not in engines:
            missing[name] = "not run"
    import jax
    print(f"jax {jax.__version__}, numpy {np.__version__}, numba "
          f"{_version('numba')}, pin {_version('pinocchio')}; {os.cpu_count()} cores, CPU "
          f"times (process_time), ms per simulated frame ({FPS:g} Hz, {SUBSTEPS} RK4 steps)")
    rows = []
    for nb in (int(s) for s in args.bodies.split(",") if s):
        t = time.time()
        rows.append(measure(nb, args.frames, args.check_refine, args.fine_sens_max, engines))
        print(f"nb = {nb}: {time.time() - t:.0f} s wall", flush=True)
    print(report(rows, args.frames, missing))
    return 0


def _version(name):
    try:
        return __import__(name).__version__
    except ImportError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
