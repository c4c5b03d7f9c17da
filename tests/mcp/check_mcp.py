"""Drives `falcon mcp` with the official Python MCP client (PyPI `mcp`), as an agent harness would.

    python check_mcp.py FALCON CONFIG REPO

FALCON is the binary, CONFIG a scratch store's falcon.toml (its experiments run on the local backend), REPO the
repository (its test data). Checks, each failing the run with a message when it does not hold:
  - initialize; the tools and prompts listed (every skill a prompt, its procedure as the prompt's text);
  - profile_analyze on the TPU capture: its duty cycle equals `falcon profile analyze --json`'s;
  - exp_submit with wait: COMPLETED, with progress notifications on the way; exp_list, exp_show, exp_diff and
    exp_compare on it give the CLI's objects;
  - bisect with wait on a repository examples/bisect/make-repo.sh makes: the script's culprit named, with progress;
    bisect_show gives `falcon bisect --session --json`'s object;
  - a missing experiment: a tool error carrying {"error": {"code": "not_found", ...}};
  - under --read-only: exp_submit and goal_claim absent, calling exp_submit refused.
The client validates every structured result against the tool's output schema.
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

FALCON, CONFIG, REPO = sys.argv[1:4]
TPU = f"{REPO}/crates/falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb"
REQUIRED = {
    "context", "exp_list", "exp_submit", "exp_show", "exp_compare", "exp_diff", "goal_claim", "goal_report",
    "profile_analyze", "profile_trace", "profile_compare", "accuracy_compare", "kernel_analyze",
}
WRITES = {
    "exp_submit", "exp_cancel", "goal_create", "goal_claim", "goal_release", "goal_achieve", "goal_abandon", "bisect",
}
SPEC = """
name: mcp-check
scenario: benchmark
workload:
  framework: shell
  command: [sh, -c, 'echo to-stdout; for i in $(seq 0 9); do echo "{\\"step\\": $i, \\"step_time_s\\": 0.1}" >> $FALCON_ARTIFACT_DIR/metrics.jsonl; done']
resources: {accelerator: cpu}
"""


def check(ok, what):
    if not ok:
        raise SystemExit(f"check-mcp: FAILED: {what}")
    print(f"check-mcp: ok: {what}", file=sys.stderr)


def cli(*args):
    out = subprocess.run([FALCON, "--config", CONFIG, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def server(*extra):
    return StdioServerParameters(command=FALCON, args=["--config", CONFIG, "mcp", *extra])


async def full():
    async with stdio_client(server()) as (read, write), ClientSession(read, write) as s:
        init = await s.initialize()
        check(init.server_info.name == "falcon", f"initialize: server {init.server_info.name} {init.server_info.version}")

        tools = {t.name: t for t in (await s.list_tools()).tools}
        check(REQUIRED <= tools.keys(), f"{len(tools)} tools listed, the required ones among them")
        for t in tools.values():
            check(t.input_schema.get("type") == "object", f"{t.name}: an object input schema") if t.name in REQUIRED else None
        check(tools["exp_submit"].annotations.read_only_hint is False and tools["exp_show"].annotations.read_only_hint,
              "read-only hints: exp_submit writes, exp_show does not")

        prompts = (await s.list_prompts()).prompts
        skills = [x["name"] for x in cli("skills", "list")["items"]]
        check(sorted(p.name for p in prompts) == sorted(skills), f"one prompt per skill ({len(skills)})")
        got = await s.get_prompt(skills[0])
        text = got.messages[0].content.text
        shown = cli("skills", "show", skills[0])["text"]
        check(not text.startswith("---") and text in shown and "falcon" in text,
              f"prompt {skills[0]}: the skill's procedure ({len(text)} characters)")

        r = await s.call_tool("profile_analyze", {"input": TPU})
        check(not r.is_error, "profile_analyze on the TPU capture: no error")
        ours = r.structured_content["overview"]["device_duty_cycle_percent"]
        theirs = cli("profile", "analyze", TPU)["overview"]["device_duty_cycle_percent"]
        check(ours == theirs and ours > 0, f"profile_analyze duty cycle {ours} = the CLI's {theirs}")
        check(json.loads(r.content[0].text) == r.structured_content, "the text content is the same JSON")

        notes = []

        async def on_progress(progress, total, message):
            notes.append((progress, message))

        started = time.monotonic()
        ids = []
        for _ in range(2):
            before = len(notes)
            r = await s.call_tool("exp_submit", {"spec_yaml": SPEC, "wait": True, "timeout_s": 120},
                                  progress_callback=on_progress)
            steps = [p for p, _ in notes[before:]]
            check(len(steps) >= 2 and steps == sorted(set(steps)), f"progress of one call increases: {steps}")
            check(not r.is_error, f"exp_submit with wait: no error ({r.content[0].text[:300] if r.is_error else ''})")
            exp = r.structured_content
            check(exp["status"] == "COMPLETED", f"exp_submit with wait: {exp['id']} {exp['status']}")
            ids.append(exp["id"])
        check(len(notes) >= 2 and any("COMPLETED" in m for _, m in notes),
              f"{len(notes)} progress notifications: {[m for _, m in notes]}")
        print(f"check-mcp: two runs submitted and completed in {time.monotonic() - started:.1f} s", file=sys.stderr)

        r = await s.call_tool("exp_show", {"id": ids[0]})
        check(r.structured_content == cli("exp", "show", ids[0]), f"exp_show {ids[0]} = `falcon exp show --json`")
        r = await s.call_tool("exp_list", {"limit": 5})
        check([i["id"] for i in r.structured_content["items"]][:2] == ids[::-1], "exp_list: newest first")
        r = await s.call_tool("exp_diff", {"a": ids[0], "b": ids[1]})
        check(r.structured_content == cli("exp", "diff", ids[0], ids[1]), "exp_diff = `falcon exp diff --json`")
        r = await s.call_tool("exp_compare", {"a": ids[0], "b": ids[1], "metric": "step_time_s"})
        check(not r.is_error and "verdict" in r.structured_content,
              f"exp_compare: {json.dumps(r.structured_content['verdict'])[:200]}")
        r = await s.call_tool("context", {})
        check(not r.is_error and isinstance(r.structured_content, dict), "context")

        # Every other tool on real inputs: no error, the result valid against the tool's output schema (the
        # client checks), and where a CLI command prints the same object, equal to it.
        data = f"{REPO}/crates/falcon-analysis/tests/data"
        acc = f"{data}/accuracy/bert_mcore_tp1_pp2__dev_dgx_"
        kb = f"{data}/kernel_bench/cpu_results"
        r = await s.call_tool("goal_create", {"title": "faster steps", "metric": "step_time_s", "baseline": ids[0]})
        goal = r.structured_content["id"]
        cases = [
            ("profile_trace", {"input": f"{data}/pytorch_cpu_tfm2.pt.trace.json.gz"},
             ["profile", "trace", f"{data}/pytorch_cpu_tfm2.pt.trace.json.gz"]),
            ("profile_compare", {"a": f"{data}/compare/batch8", "b": f"{data}/compare/batch16"}, None),
            ("accuracy_compare", {"a": acc + "a100.json", "b": acc + "h100.json"},
             ["accuracy", "compare", acc + "a100.json", acc + "h100.json"]),
            ("kernel_analyze", {"input": kb + ".jsonl"}, ["kernel", "analyze", kb + ".jsonl"]),
            ("kernel_compare", {"base": kb + ".jsonl", "new": kb + "_run2.jsonl"},
             ["kernel", "compare", kb + ".jsonl", kb + "_run2.jsonl"]),
            ("goal_claim", {"owner": "agent-7", "id": goal}, None),
            ("goal_compare", {"id": goal}, ["goal", "compare", goal]),
            ("goal_report", {"id": goal}, ["goal", "report", goal]),
            ("goal_release", {"id": goal, "owner": "agent-7", "reason": "done for now"}, None),
            ("goal_list", {}, ["goal", "list"]),
            ("exp_history", {"name": "mcp-check"}, ["exp", "history", "--name", "mcp-check"]),
            ("exp_artifacts", {"id": ids[0]}, ["exp", "artifacts", ids[0]]),
            ("exp_logs", {"id": ids[0]}, None),
            ("pool_list", {}, ["pool", "list"]),
        ]
        for tool, args, command in cases:
            r = await s.call_tool(tool, args)
            check(not r.is_error, f"{tool}: no error {r.content[0].text[:300] if r.is_error else ''}")
            if command:
                check(r.structured_content == cli(*command), f"{tool} = `falcon {' '.join(command[:2])} --json`")
        logs = (await s.call_tool("exp_logs", {"id": ids[0]})).structured_content["logs"]
        check(any("to-stdout" in l["text"] for l in logs), "exp_logs: the job's stdout is in its log")

        r = await s.call_tool("exp_submit", {"spec_yaml": SPEC})
        queued = r.structured_content
        check(queued["status"] in ("PENDING", "PROVISIONING"), f"exp_submit without wait: {queued['id']} queued ({queued['status']})")
        r = await s.call_tool("exp_cancel", {"id": queued["id"]})
        check(not r.is_error and r.structured_content["id"] == queued["id"], f"exp_cancel {queued['id']}")

        await bisect(s)

        r = await s.call_tool("exp_show", {"id": "e-987654"})
        err = (r.structured_content or {}).get("error", {})
        check(r.is_error and err.get("code") == "not_found" and "e-987654" in err.get("message", ""),
              f"a missing experiment: tool error {err}")
        r = await s.call_tool("exp_show", {"id": "e-1", "bogus": 1})
        check(r.is_error and r.structured_content["error"]["code"] == "usage", "an unknown argument: usage error")


async def bisect(s):
    """A small generated repository whose commit 3 of 5 makes each step 30 % slower: bisect names it."""
    dest = os.path.join(tempfile.mkdtemp(prefix="falcon-mcp-bisect-"), "repo")
    made = subprocess.run(
        ["bash", f"{REPO}/examples/bisect/make-repo.sh", dest, "--commits", "5", "--culprit", "3", "--slowdown", "0.3",
         "--noise", "0.01", "--steps", "8", "--step-ms", "30"],
        check=True, capture_output=True, text=True)
    repo = json.loads(made.stdout)
    os.chmod(os.path.dirname(dest), 0o755)
    with open(os.path.join(dest, "falcon.yaml")) as f:
        spec = f.read()
    notes = []

    async def on_progress(progress, total, message):
        notes.append(message)

    r = await s.call_tool("bisect", {"spec": spec, "repo": dest, "good": "v-good", "bad": "v-bad", "wait": True,
                                     "timeout_s": 300}, progress_callback=on_progress)
    check(not r.is_error, f"bisect with wait: no error ({r.content[0].text[:300] if r.is_error else ''})")
    view = r.structured_content
    check(view["state"] == "decided" and (view["culprit"] or {}).get("commit") == repo["culprit"],
          f"bisect: {view['message']}")
    check(len(notes) > 0, f"bisect with wait: {len(notes)} progress notifications")
    r = await s.call_tool("bisect_show", {"id": view["session"]})
    check(r.structured_content == cli("bisect", "--session", view["session"]),
          "bisect_show = `falcon bisect --session --json`")


async def read_only():
    async with stdio_client(server("--read-only")) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        names = {t.name for t in (await s.list_tools()).tools}
        check(not (names & WRITES), f"--read-only: none of {sorted(WRITES)} offered")
        check({"exp_show", "profile_analyze", "exp_list"} <= names, f"--read-only: {len(names)} tools remain")
        try:
            r = await s.call_tool("exp_submit", {"spec_yaml": SPEC})
            refused = r.is_error
        except Exception as e:  # a JSON-RPC error: the tool does not exist here
            refused = "read-only" in str(e)
        check(refused, "--read-only: exp_submit refused")


asyncio.run(full())
asyncio.run(read_only())
print("check-mcp: every check passed", file=sys.stderr)
