"""rigtool.report."""
