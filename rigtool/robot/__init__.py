"""A robot described by its URDF (SPEC "A robot described by its URDF"): the URDF read with
pinocchio (rigtool.robot.urdf_model), joint-angle files (rigtool.robot.joint_angles), the
base parameters of locked postures (rigtool.robot.base_parameters), per-link physically
consistent parameters (rigtool.robot.consistent) and the files written back
(rigtool.robot.outputs)."""
