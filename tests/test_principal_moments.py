"""The principal moments' standard errors: first order through the eigenvalues of the
inertia, from the full covariance of its nine entries, and shown with their ± in the
report's per-posture summary (the whole object, when there are no segment parameters)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from scipy.spatial.transform import Rotation

from rigtool.inertia import principal_moments_std
from rigtool.report.content_summary import overall_table
from rigtool.report.document import _principal_std
from rigtool.report.summary import overall_rows


def _rotated_inertia() -> tuple[np.ndarray, np.ndarray]:
    rot = Rotation.from_rotvec([0.3, -0.5, 0.8]).as_matrix()
    return rot @ np.diag([1.2, 2.0, 3.1]) @ rot.T, rot


def test_diagonal_inertia_moments_take_their_entries_standard_errors():
    cov = np.zeros((9, 9))
    for i, sd in zip((0, 4, 8), (0.01, 0.02, 0.03)):
        cov[i, i] = sd ** 2
    std = principal_moments_std(np.diag([1.0, 2.0, 3.0]), cov)
    np.testing.assert_allclose(std, [0.01, 0.02, 0.03], rtol=1e-12)


def test_moments_standard_errors_match_the_eigenvalues_jacobian():
    inertia, _ = _rotated_inertia()
    rng = np.random.default_rng(3)
    a = rng.normal(size=(9, 9)) * 1e-3
    cov = a @ a.T                                     # correlated entries
    h = 1e-7

    # the reference: central differences through the symmetrised tensor's eigenvalues
    def moments(v: np.ndarray) -> np.ndarray:
        m = v.reshape(3, 3)
        return np.linalg.eigvalsh(0.5 * (m + m.T))

    num = np.zeros((3, 9))
    for k in range(9):
        e = np.zeros(9)
        e[k] = h
        num[:, k] = (moments(inertia.ravel() + e) - moments(inertia.ravel() - e)) / (2 * h)
    expected = np.sqrt(np.einsum("ki,ij,kj->k", num, cov, num))
    np.testing.assert_allclose(principal_moments_std(inertia, cov), expected, rtol=1e-6)


def test_posture_entry_carries_the_moments_standard_errors():
    inertia, _ = _rotated_inertia()
    props_cov = np.eye(12) * 1e-6
    got = _principal_std(SimpleNamespace(inertia_com=inertia, props_cov=props_cov))
    np.testing.assert_allclose(got["principal_moments_std"], [1e-3] * 3, rtol=1e-3)
    assert _principal_std(SimpleNamespace(inertia_com=inertia,
                                          props_cov=np.full((12, 12), np.nan))) == {}


def test_per_posture_summary_shows_the_moments_with_their_standard_errors():
    inertia, _ = _rotated_inertia()
    doc = {"postures": [{"name": "posture1", "mass": 80.0, "com": [0.0, -0.25, -0.12],
                         "com_std": [1e-5, 1e-5, 1e-5], "inertia_com": inertia.tolist(),
                         "principal_moments_std": [0.0011, 0.0022, 0.0033],
                         "method": "output-error"}]}
    rows = overall_rows(doc)
    assert rows[0]["principal_moments_std"] == [0.0011, 0.0022, 0.0033]
    table = overall_table({"overall": rows})
    cells = table.rows[0]
    assert cells[5:8] == ["1.2000 ± 0.0011", "2.0000 ± 0.0022", "3.1000 ± 0.0033"]
    # a report.json written before the moments had standard errors: the values alone
    del doc["postures"][0]["principal_moments_std"]
    assert overall_table({"overall": overall_rows(doc)}).rows[0][5] == "1.2000"
