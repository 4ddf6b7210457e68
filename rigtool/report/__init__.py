"""rigtool.report: a session's results as files that answer first.

``writer.write_report`` writes them; ``document`` builds report.json (summary, checks,
detail, truth comparison); ``checks`` (with ``check_types``, ``checks_capture``,
``checks_model``) judges the session; ``summary`` and ``truth`` are report.json blocks;
``figures`` with ``plots_fit``, ``plots_inertia``, ``plots_subset`` draws the PNGs;
``content`` (``content_summary``, ``content_detail``) lays the report out as ``blocks``,
rendered by ``markdown`` and ``html``; ``csv_tables`` writes the tables and ``exports`` the
model files (``model_description`` shared by ``export_mjcf``, ``export_osim``,
``export_urdf``); ``anthropometry`` holds the de Leva (1996) segment tables.
"""
