"""One module per ``rigtool`` sub-command: ``HELP``, ``add_arguments(parser)``, ``run(args)``."""
