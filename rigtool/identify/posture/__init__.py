"""One locked posture: the object's mass, COM and inertia.

``equation_error``: paper 002's eq. 5-7 on filtered markers; ``output_error``: the platform
simulated and fitted to every raw marker (``problem``: the fit on the engine;
``attached_markers``: the object's markers at unknown places on the platform).
"""
