"""The rig calibration: springs and platform from captures with reference bodies.

``equation_error``: filtered, differentiated markers, Newton-Euler least squares;
``output_error``: the rig simulated and fitted to the raw markers (rigtool.engine).
"""
