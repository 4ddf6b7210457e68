"""rigtool.sim."""
