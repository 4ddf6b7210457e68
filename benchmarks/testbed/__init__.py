"""An independent test bed: the rig and its subject simulated on MuJoCo.

rigtool never imports this package. Its physics is MuJoCo's (a free platform hanging from
spatial-tendon springs, the subject's bodies welded or on ball / hinge / slide joints); it
writes what a lab writes (Vicon Nexus CSV captures in mm, the rig file and the session
manifest as a user writes them) and a ``truth.json`` in the form rigtool's report compares
with. Nothing here reads rigtool's simulator or engine.
"""
