"""Run `groupspec traces check` under spark-submit (the cluster's master and resources are spark-submit's):

    spark-submit --master spark://host:7077 --conf spark.pyspark.python=/opt/groupspec/.venv/bin/python \\
        checkers/traces/submit.py /data/traces --out /data/verdicts

Every executor must import groupspec with the same Python (install the project at the same path on
every worker, or on a shared file system).
"""
from __future__ import annotations

import sys

from groupspec.checkers.cli import main

if __name__ == "__main__":
    # an empty --master leaves the master to spark-submit
    sys.argv = ["groupspec", "traces", "check", *sys.argv[1:], "--master", ""]
    main()
