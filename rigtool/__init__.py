"""rigtool: inertial parameters from free vibration on a spring-suspended platform."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("rigtool")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
