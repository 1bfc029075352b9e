"""Runs a cadre plan from Python with nothing of cadre installed: only Temporal's Python SDK.

Starts `runPlan` with the plan file's text as the document (or, with --fork-from, a fork of an
ended run: docs/forks.md), answers what the run asks (the `answer` update, which says why it
refuses a bad answer), reads the `diagnostics` query, and prints the result as JSON. See
docs/protocol.md.

    pip install temporalio
    python run_plan.py plan.yaml --id my-run --input who=Ada --answer confirm=yes
    python run_plan.py --fork-from my-run --from-step greet --set 'confirm="no"' --id my-run-what-if
"""

import argparse
import asyncio
import json
import os
import sys

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowQueryFailedError
from temporalio.exceptions import CancelledError
from temporalio.service import RPCError

ENDED = {"completed", "failed", "cancelled"}


def pairs(values):
    return dict(value.split("=", 1) for value in values)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan", nargs="?", help="a YAML or JSON plan file (not with --fork-from)")
    parser.add_argument("--fork-from", metavar="RUN", help="fork this ended run instead: its plan and inputs, run again from --from-step")
    parser.add_argument("--from-step", metavar="STEP", help="with --fork-from: the step to run again from")
    parser.add_argument("--set", action="append", default=[], metavar="STEP=JSON", help="with --fork-from: a restored step's output replaced")
    parser.add_argument("--id", required=True, help="the run's workflow id")
    parser.add_argument("--address", default=os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    parser.add_argument("--namespace", default=os.environ.get("TEMPORAL_NAMESPACE", "default"))
    parser.add_argument("--task-queue", default=os.environ.get("CADRE_TASK_QUEUE", "cadre"))
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--answer", action="append", default=[], metavar="WAIT_ID=VALUE")
    args = parser.parse_args()

    if (args.plan is None) == (args.fork_from is None) or (args.fork_from is not None) != (args.from_step is not None):
        parser.error("give a plan file, or --fork-from RUN with --from-step STEP")

    client = await Client.connect(args.address, namespace=args.namespace)
    if args.fork_from:
        # A fork: the old run's plan and inputs, from one step on; the worker says what cannot be forked.
        fork = {"from": args.fork_from, "step": args.from_step}
        if args.set:
            fork["set"] = {step: json.loads(value) for step, value in pairs(args.set).items()}
        start = {"fork": fork, "inputs": pairs(args.input)}
    else:
        with open(args.plan, encoding="utf-8") as file:
            document = file.read()
        # Relative paths in the plan resolve against baseDir, a directory on the worker's machine.
        start = {"document": document, "inputs": pairs(args.input), "baseDir": os.path.dirname(os.path.abspath(args.plan))}
    handle = await client.start_workflow("runPlan", start, id=args.id, task_queue=args.task_queue)
    answers = pairs(args.answer)
    while True:
        try:
            diagnostics = await handle.query("diagnostics")
        except (RPCError, WorkflowQueryFailedError):
            # No worker to answer: say so unless the run has ended (its result says the rest).
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                break
            raise
        if diagnostics["status"] in ENDED:
            break
        for wait in diagnostics["waiting"]:
            if wait["id"] in answers:
                await handle.execute_update("answer", {"waitId": wait["id"], "value": answers.pop(wait["id"])})
                print(f"answered {wait['id']}: {wait['prompt']}", file=sys.stderr)
        await asyncio.sleep(0.2)
    try:
        result = await handle.result()
    except WorkflowFailureError as err:
        # The cause is the plan's failure: its message lists every problem of a plan that did not validate.
        status = "cancelled" if isinstance(err.cause, CancelledError) else "failed"
        print(json.dumps({"status": status, "reason": str(err.cause)}))
        return 1
    print(json.dumps({"status": result["status"], "output": result.get("output"), "steps": [s["id"] + ":" + s["status"] for s in result["steps"]]}))
    return 0


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    # The SDK's native threads can crash the interpreter's teardown (temporalio/sdk-python#300).
    os._exit(code)
