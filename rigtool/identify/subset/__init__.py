"""Several postures: the identifiable subset Phi_s of the minimal parameters (``fit``), its
physically consistent form (``consistent``), the base-parameter check (``base_params``), the
next-posture advice (``advice``) and per-posture properties measured elsewhere
(``postures_file``).
"""
