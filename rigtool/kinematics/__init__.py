"""rigtool.kinematics."""
