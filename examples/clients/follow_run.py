"""Follows a cadre run's event stream live from Python, with only Temporal's Python SDK.

Subscribes to the `events` topic of the Workflow Stream that every cadre run (a plan run or a
session) hosts, by workflow id, and to the stream of each agent the run says it started
(`agent_started`: an agent streams its turns on its own workflow), and shows them as one feed:
an agent's text as the model writes it, its tool calls and their results, steps starting and
ending, approvals and questions waiting for an answer (with the wait id to answer), and the run's
end. An agent's events come after its `agent_started` and before the end of its step.

`--json` prints each event as one JSON object per line, with its `offset` in its stream and, for
an agent's events, `stream` (the agent's workflow id). `--from OFFSET` resumes the run's stream
where an earlier reading stopped, `--from AGENT_ID=OFFSET` each agent stream still open then
(Ctrl-C prints them). Exits 0 when the run completed, 1 otherwise. See docs/streaming.md.

A run takes a share of its updates in long polls (docs/streaming.md, "What a run can take"); a
poll it refuses (`StreamPollLimit`) is read on with cadre's `stream` query, which costs nothing.

    pip install temporalio
    python follow_run.py my-run
    python follow_run.py my-run --json --from 42 --from my-run/review=7
"""

import argparse
import asyncio
import json
import os
import sys
from datetime import timedelta

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowQueryFailedError, WorkflowUpdateFailedError
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
STEP_ENDS = ("step_completed", "step_failed")


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
        elif kind == "stream_shed":
            self.line(f"~ {where}: {e.get('reason')}")
        elif kind in ("limits_warning", "budget_warning"):
            self.line(f"! {e.get('message')}")
        elif kind == "budget_spent":
            self.line(f"$ budget: {e.get('used')} used")
        elif kind == "run_completed":
            self.line(f"run {e['status']}{': ' + e['error'] if e.get('error') else ''}")
        # message_start, agent_started, agent_ended and types newer than this script: nothing to show.


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


async def by_query(client, workflow_id, start, ended):
    """Events of a stream from `start` by cadre's `stream` query: (offset, event) pairs.

    Used where a long poll cannot serve: a run that ended (its worker, on TypeScript's
    @temporalio/workflow-streams 1.23, has no poll query), or one that refused a poll to keep room
    for people's answers. Stops after an event `ended` accepts, or once the workflow has ended and
    nothing is left.
    """
    handle = client.get_workflow_handle(workflow_id)
    offset = start
    while True:
        page = await handle.query("stream", {"from": offset})
        for event in page["events"]:
            at = event.pop("offset")
            yield at, event
            if ended(event):
                return
        offset = page["next"]
        if page["more"]:
            continue
        if ENDED.get((await handle.describe()).status) is not None:
            page = await handle.query("stream", {"from": offset})
            if not page["events"]:
                return
            continue
        await asyncio.sleep(0.25)


# Polls in a row the server dropped with their workflow task, before the follower gives up.
TASK_FAILURES_IN_A_ROW = 10


def workflow_task_failed(err):
    """A poll the server dropped because it refused the completion of the workflow task carrying it
    (seen under load): the run goes on, and a poll only reads, so it is asked again. The server says
    so with FAILED_PRECONDITION and a WorkflowNotReadyFailure detail."""
    if not isinstance(err, RPCError) or err.status != RPCStatusCode.FAILED_PRECONDITION:
        return False
    try:
        return any(d.type_url.endswith(".WorkflowNotReadyFailure") for d in err.grpc_status.details)
    except Exception:
        return False


async def stream_events(client, workflow_id, start, ended, cooldown):
    """A stream's events from `start`: long polls (the stock subscription), then the query when a poll cannot serve."""
    stream = WorkflowStreamClient.create(client, workflow_id)
    offset = start
    failures = 0
    while True:
        try:
            # A session or plan run that continued as new is followed on.
            async for item in stream.subscribe([TOPIC], from_offset=offset, poll_cooldown=cooldown):
                offset = item.offset + 1
                failures = 0
                yield item.offset, item.data
                if ended(item.data):
                    return
            break
        except RPCError as err:
            failures += 1
            if not workflow_task_failed(err) or failures > TASK_FAILURES_IN_A_ROW:
                raise
            await asyncio.sleep(0.2 * failures)
        except WorkflowUpdateFailedError as err:
            if getattr(err.cause, "type", None) != "StreamPollLimit":
                raise
            break
        except WorkflowQueryFailedError:
            # The workflow ended between two polls, and its worker has no poll query to read the rest.
            break
    async for at, event in by_query(client, workflow_id, offset, ended):
        yield at, event


async def agent_step(client, workflow_id):
    """An agent's step, from its own query: the end of that step waits for the agent's last events."""
    try:
        return (await client.get_workflow_handle(workflow_id).query("agentDiagnostics")).get("step")
    except (RPCError, WorkflowQueryFailedError):
        return None


class Feed:
    """The run's stream and its agents' as one feed: each event goes to `emit(stream, offset, event)` in order."""

    def __init__(self, client, workflow_id, emit, cooldown):
        self.client = client
        self.workflow_id = workflow_id
        self.emit = emit
        self.cooldown = cooldown
        # Agent workflow id -> (its step, set once its stream has ended, its task).
        self.agents = {}

    def follow_agent(self, workflow_id, step, start):
        if workflow_id in self.agents:
            return
        done = asyncio.Event()
        task = asyncio.create_task(self.read_agent(workflow_id, start, done))
        self.agents[workflow_id] = (step, done, task)

    async def read_agent(self, workflow_id, start, done):
        try:
            async for offset, event in stream_events(self.client, workflow_id, start, lambda e: isinstance(e, dict) and e.get("type") == "agent_ended", self.cooldown):
                if not isinstance(event, dict):
                    continue
                if event.get("type") == "agent_started":
                    self.follow_agent(event["workflowId"], event.get("step"), 0)
                step, _, _ = self.agents[workflow_id]
                if step is None and event.get("step"):
                    self.agents[workflow_id] = (event["step"], done, self.agents[workflow_id][2])
                self.emit(workflow_id, offset, event)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
        finally:
            done.set()

    async def until_agents_end(self, event):
        """Before the end of a step, its agents' last events; before the run's end, every agent's."""
        if event.get("type") == "run_completed":
            owned = list(self.agents.values())
        else:
            step = event.get("step", "")
            owned = [a for a in self.agents.values() if a[0] is not None and (a[0] == step or a[0].startswith(step + "[") or a[0].startswith(step + "/"))]
        for _, done, _ in owned:
            await done.wait()

    async def run(self, start):
        ended = lambda e: isinstance(e, dict) and e.get("type") == "run_completed"
        async for offset, event in stream_events(self.client, self.workflow_id, start, ended, self.cooldown):
            if not isinstance(event, dict):
                continue
            if event.get("type") == "agent_started":
                self.follow_agent(event["workflowId"], event.get("step"), 0)
            if event.get("type") in STEP_ENDS or event.get("type") == "run_completed":
                await self.until_agents_end(event)
            self.emit(None, offset, event)
        for _, done, task in list(self.agents.values()):
            await done.wait()
            await task


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workflow_id", help="the run's workflow id")
    parser.add_argument("--from", dest="start", action="append", default=[], metavar="OFFSET", help="where to resume: the run's offset, and AGENT_ID=OFFSET for each open agent stream")
    parser.add_argument("--json", action="store_true", help="one JSON object per event, with its offset (and an agent's, its stream)")
    parser.add_argument("--poll-cooldown", type=float, default=100, metavar="MS", help="the subscription's pause between polls once caught up (default 100)")
    parser.add_argument("--address", default=os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    parser.add_argument("--namespace", default=os.environ.get("TEMPORAL_NAMESPACE", "default"))
    args = parser.parse_args()

    start, opened = 0, {}
    for value in args.start:
        agent, _, offset = value.rpartition("=")
        if not offset.isdigit():
            parser.error(f"--from takes OFFSET or AGENT_ID=OFFSET: {value}")
        if agent:
            opened[agent] = int(offset)
        else:
            start = int(offset)

    client = await Client.connect(args.address, namespace=args.namespace)
    printer = Printer()
    seen = {"status": None, "next": start, "streams": dict(opened)}

    def emit(stream, offset, event):
        if stream is None:
            seen["next"] = offset + 1
        elif event.get("type") == "agent_ended":
            seen["streams"].pop(stream, None)
        else:
            seen["streams"][stream] = offset + 1
        if args.json:
            print(json.dumps({**event, "offset": offset, **({"stream": stream} if stream else {})}, ensure_ascii=False), flush=True)
        else:
            printer.show(event)
        if event.get("type") == "run_completed":
            seen["status"] = event.get("status")

    feed = Feed(client, args.workflow_id, emit, timedelta(milliseconds=args.poll_cooldown))
    for agent, offset in opened.items():
        feed.follow_agent(agent, await agent_step(client, agent), offset)
    try:
        await feed.run(start)
    except (RPCError, WorkflowQueryFailedError, WorkflowUpdateFailedError) as err:
        printer.end_line()
        gone = isinstance(err, RPCError) and err.status == RPCStatusCode.NOT_FOUND
        print(f"{'no workflow' if gone else 'cannot follow'} {args.workflow_id}: {getattr(err, 'message', err)}", file=sys.stderr)
        return 1
    except asyncio.CancelledError:
        resume = " ".join([f"--from {seen['next']}"] + [f"--from {s}={o}" for s, o in seen["streams"].items()])
        print(f"stopped following; resume with {resume}", file=sys.stderr)
        return 130
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
