"""Follows a cadre run's event stream live from Python, with only Temporal's Python SDK.

Subscribes to the `events` topic of the Workflow Stream that every cadre run (a plan run or a
session) hosts, by workflow id, and shows what happens as it happens: an agent's text as the model
writes it, its tool calls and their results, steps starting and ending, approvals and questions
waiting for an answer (with the wait id to answer), and the run's end. `--json` prints each event
as one JSON object per line, with its `offset`; `--from OFFSET` resumes where an earlier reading
stopped. Exits 0 when the run completed, 1 otherwise. See docs/streaming.md.

    pip install temporalio
    python follow_run.py my-run
    python follow_run.py my-run --json --from 42
"""

import argparse
import asyncio
import json
import os
import sys

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowQueryFailedError
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.service import RPCError, RPCStatusCode

TOPIC = "events"
ENDED = {
    WorkflowExecutionStatus.COMPLETED: "completed",
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.CANCELED: "cancelled",
    WorkflowExecutionStatus.TERMINATED: "terminated",
    WorkflowExecutionStatus.TIMED_OUT: "timed out",
}


def short(value, limit=120):
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Printer:
    """Human output: text as it comes, everything else one line each."""

    def __init__(self):
        self.mid_line = False

    def text(self, text):
        sys.stdout.write(text)
        sys.stdout.flush()
        self.mid_line = not text.endswith("\n")

    def end_line(self):
        if self.mid_line:
            print(flush=True)
            self.mid_line = False

    def line(self, text):
        self.end_line()
        print(text, flush=True)

    def show(self, e):
        kind = e.get("type")
        where = e.get("step") or "run"
        if kind == "text_delta":
            self.text(e["text"])
        elif kind == "tool_call":
            self.line(f"→ {e['tool']}({short(e.get('args', {}))})")
        elif kind == "tool_result":
            self.line(f"← {e['tool']}{' error' if e.get('isError') else ''}: {short(e.get('preview', ''))}")
        elif kind == "message_complete":
            # The end of a model turn closes its text's line.
            self.end_line()
        elif kind == "step_started":
            self.line(f"▶ {where} ({e.get('kind')})")
        elif kind == "step_completed":
            self.line(f"✓ {where} {e.get('status')}{': ' + e['note'] if e.get('note') else ''}")
        elif kind == "step_failed":
            self.line(f"✗ {where} failed: {short(e.get('error', ''), 300)}")
        elif kind in ("approval_requested", "question_asked"):
            what = "approval" if kind == "approval_requested" else "question"
            choices = f" [{' / '.join(e['choices'])}]" if e.get("choices") else ""
            self.line(f"? {what} {e['waitId']}: {e['prompt']}{choices}")
        elif kind == "error":
            retry = " (will retry)" if e.get("retryable") else ""
            self.line(f"! {where} {e.get('errorType')}: {short(e.get('message', ''), 300)}{retry}")
        elif kind == "run_completed":
            self.line(f"run {e['status']}{': ' + e['error'] if e.get('error') else ''}")
        # message_start and types newer than this script: nothing to show.


async def ended_status(client, workflow_id):
    """The status of a run whose stream ended without `run_completed` (terminated, say)."""
    handle = client.get_workflow_handle(workflow_id)
    status = ENDED.get((await handle.describe()).status, "running")
    if status == "completed":
        try:
            result = await handle.result()
            if isinstance(result, dict) and isinstance(result.get("status"), str):
                return result["status"]
        except WorkflowFailureError:
            return "failed"
    return status


async def rest_of_ended_run(client, workflow_id, start, show):
    """The events from `start` of a run that has ended, by cadre's `stream` query.

    A subscription reads an ended run's retained events with the stream's
    `__temporal_workflow_stream_poll` query, which workers on TypeScript's
    @temporalio/workflow-streams 1.23 do not register (they serve only the poll update); cadre's
    own `stream` query gives the same events with the same offsets.
    """
    handle = client.get_workflow_handle(workflow_id)
    offset = start
    while True:
        page = await handle.query("stream", {"from": offset})
        for event in page["events"]:
            if show(event, event.pop("offset")):
                return
        offset = page["next"]
        if not page["more"]:
            return


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workflow_id", help="the run's workflow id")
    parser.add_argument("--from", dest="start", type=int, default=0, metavar="OFFSET", help="the first offset to show (default 0)")
    parser.add_argument("--json", action="store_true", help="one JSON object per event, with its offset")
    parser.add_argument("--address", default=os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    parser.add_argument("--namespace", default=os.environ.get("TEMPORAL_NAMESPACE", "default"))
    args = parser.parse_args()

    client = await Client.connect(args.address, namespace=args.namespace)
    stream = WorkflowStreamClient.create(client, args.workflow_id)
    printer = Printer()
    seen = {"next": args.start, "status": None}

    def show(event, offset):
        """Prints one event; True once the run has completed."""
        seen["next"] = offset + 1
        if not isinstance(event, dict):
            return False
        if args.json:
            print(json.dumps({**event, "offset": offset}, ensure_ascii=False), flush=True)
        else:
            printer.show(event)
        if event.get("type") == "run_completed":
            seen["status"] = event.get("status")
            return True
        return False

    try:
        try:
            # Long polls (the stream's update) while the run goes on; once it has ended, the rest
            # comes from its retained items; a session that continued as new is followed on.
            async for item in stream.subscribe([TOPIC], from_offset=args.start):
                if show(item.data, item.offset):
                    break
        except WorkflowQueryFailedError:
            # The run ended between two polls, and its worker has no poll query to read the rest.
            await rest_of_ended_run(client, args.workflow_id, seen["next"], show)
    except (RPCError, WorkflowQueryFailedError) as err:
        printer.end_line()
        gone = isinstance(err, RPCError) and err.status == RPCStatusCode.NOT_FOUND
        print(f"{'no workflow' if gone else 'cannot follow'} {args.workflow_id}: {getattr(err, 'message', err)}", file=sys.stderr)
        return 1
    status = seen["status"]
    if status is None:
        # Ended without `run_completed`: terminated, say, or started before cadre had streams.
        status = await ended_status(client, args.workflow_id)
        if args.json:
            print(f"the run ended without run_completed: {status}", file=sys.stderr)
        else:
            printer.line(f"run {status}")
    return 0 if status == "completed" else 1


if __name__ == "__main__":
    try:
        code = asyncio.run(main())
    except KeyboardInterrupt:
        code = 130
    sys.stdout.flush()
    sys.stderr.flush()
    # The SDK's native threads can crash the interpreter's teardown (temporalio/sdk-python#300).
    os._exit(code)
