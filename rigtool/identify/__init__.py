"""Identification, organised by stage; each stage's equation-error fit and its output-error
(maximum-likelihood) refinement side by side:

- :mod:`.calibration`: the rig's springs and platform from reference-body captures;
- :mod:`.posture`: one locked posture -> the object's mass, COM and inertia;
- :mod:`.subset`: several postures -> Phi_s, its identifiability, the next-posture advice;
- :mod:`.relative`: a relative-motion capture -> the remaining J_yy terms, Phi_B;
- :mod:`.segments`: per-link standard parameters consistent with Phi_B and a prior;
- :mod:`.common`: what the stages share (platform motion from markers, consistency LMIs,
  uncertainty propagation, the output-error fits' common pieces).

The simulation with exact sensitivities that every output-error fit runs is rigtool.engine.
"""
