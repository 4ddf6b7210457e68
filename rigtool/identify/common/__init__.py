"""What the identification stages share: the platform's motion from its markers
(``platform_motion``), pseudo-inertia LMIs (``consistency``), first-order uncertainty
propagation (``propagate``) and the output-error fits' common pieces (``output_error``).
"""
