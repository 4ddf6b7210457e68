"""Per-link standard parameters consistent with Phi_B and a prior (de Leva 1996 for human
segments, CAD values for robot links).
"""
