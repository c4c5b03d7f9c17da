"""Seeds an MLflow tracking store (SQLite, through MLflow's own SqlAlchemyStore) with N runs shaped like the
metastore benchmark's experiments: one experiment, each run with tags team (5 values), model (10) and goal (100),
a status among MLflow's five, two params and a metric. Deterministic (seed 7).

    python mlflow_seed.py DB_PATH N
"""

import os
import random
import sys
import time

from mlflow.entities import Metric, Param, RunStatus, RunTag
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

TEAMS = ["perf", "infra", "research", "kernels", "serving"]
STATUSES = ["RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED"]


def main() -> None:
    db, n = sys.argv[1], int(sys.argv[2])
    store = SqlAlchemyStore(f"sqlite:///{db}", os.path.join(os.path.dirname(os.path.abspath(db)), "mlflow-artifacts"))
    exp = store.create_experiment("bench")
    rng = random.Random(7)
    start = time.time()
    for i in range(n):
        run = store.create_run(exp, user_id="bench", start_time=1_700_000_000_000 + i * 1000, tags=[], run_name=f"run-{i}")
        rid = run.info.run_id
        store.log_batch(
            rid,
            metrics=[Metric("step_time_s", rng.uniform(0.1, 0.3), 0, 0)],
            params=[Param("batch_size", str(rng.choice([8, 16, 32]))), Param("lr", "3e-4")],
            tags=[
                RunTag("team", rng.choice(TEAMS)),
                RunTag("model", f"model-{rng.randrange(10)}"),
                RunTag("goal", f"g-{rng.randrange(1, 101)}"),
            ],
        )
        status = rng.choice(STATUSES)
        if status != "RUNNING":
            store.update_run_info(rid, RunStatus.from_string(status), end_time=1_700_000_000_000 + i * 1000 + 500, run_name=None)
        if (i + 1) % 2000 == 0:
            print(f"mlflow_seed: {i + 1}/{n} runs ({time.time() - start:.0f} s)", file=sys.stderr)
    print(exp)


if __name__ == "__main__":
    main()
