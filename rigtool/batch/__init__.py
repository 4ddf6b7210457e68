"""Many sessions at once: ``rigtool batch`` on dask.distributed.

Every session runs as ``rigtool run`` does (:func:`rigtool.pipeline.run_job.run_to_directory`),
as independent Dask tasks, on a local cluster of processes or an existing scheduler.

- :mod:`rigtool.batch.plan`     (parent) the sessions given, their results folders, which are
                                up to date (skipped), which may not be written (refused);
- :mod:`rigtool.batch.tasks`    (workers) preflight, run, write atomically; a session's
                                outcome as a :class:`~rigtool.batch.tasks.SessionRecord`;
- :mod:`rigtool.batch.cluster`  (parent) the Dask client, submission, progress;
- :mod:`rigtool.batch.summary`  (parent) the summary table (CSV, Parquet) and index.html.

The parent process never imports the fitting code (nor JAX): workers are separate
interpreters (Dask's nanny starts them with the ``spawn`` method).

Layout of a results folder ``RESULTS/``::

    RESULTS/KEY/            what `rigtool run -o RESULTS/KEY` writes, plus batch.json
    RESULTS/summary.csv     one row per session and posture / relative motion / segment
    RESULTS/summary.parquet the same table
    RESULTS/index.html      the overview, linking every KEY/report.html
"""
