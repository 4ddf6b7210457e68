"""rigtool.devices."""
