"""One line of bench/aa/run.sh: the verdict of `falcon exp compare --json` (stdin) for METRIC A B."""
import json
import sys

metric, a, b = sys.argv[1:4]
v = json.load(sys.stdin)
cv = v["between_run_cv"]
print(
    "{:12s} {} {} vs {}: median {:.5g} -> {:.5g} ({:+.2f} %), 95 % CI [{:+.2f} %, {:+.2f} %], p = {:.3g}, "
    "between-run CV {:.1f} % ({}, {:.0f} dof)".format(
        v["verdict"], metric, a, b, v["a"]["median"], v["b"]["median"], v["delta_rel"] * 100,
        v["ci_low_rel"] * 100, v["ci_high_rel"] * 100, v["p_value"], cv["cv"] * 100, cv["source"], cv["dof"],
    )
)
