"""rigtool.identify."""
