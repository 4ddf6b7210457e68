"""The relative-motion stage: the remaining J_yy term(s) and Phi_B.

``equation_error``: paper 002's eq. 13-16 and the feasible intervals (eq. 19-20);
``output_error``: the swing simulated (platform, links on spherical joints) and fitted to the
raw markers (``problem``: the fit on the engine).
"""
