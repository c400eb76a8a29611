#!/usr/bin/env python3
"""Smoke check of the offline rig: the REAL `reasonix acp` against tests/provider/mock_provider.py.

Runs one agent through: a streamed answer with reasoning, a plan (todo_write), a question (ask →
session/request_permission, answered), write_file, bash under danger-full-access, a mid-turn steer
on a slow stream, and a provider 400 (JSON-RPC -32603). With --cut it also checks a cut stream
(takes ~25 s: the agent retries 4 times). Exits non-zero on any failure; everything it starts runs
in its own process group or reads our pipe, and is ended on the way out.

    python3 tests/support/check_real_agent.py [--cut] [--keep] [--trace FILE]
"""

import argparse
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from acp_client import AcpClient, AcpError, text_of  # noqa: E402
from reasonix_home import find_agent, make_home, start_provider  # noqa: E402

TODOS = [{"content": "Inspect code", "status": "in_progress"},
         {"content": "Write fix", "status": "pending"},
         {"content": "Run tests", "status": "pending"}]
QUESTIONS = [{"header": "Library", "question": "Which library?", "multiSelect": False,
              "options": [{"label": "requests", "description": "popular"}, {"label": "httpx"}]},
             {"header": "Scope", "question": "Which parts?", "multiSelect": False,
              "options": [{"label": "api"}, {"label": "cli"}]}]

SCENARIO = {"rules": [
    {"name": "hello", "last_role": "user", "user_contains": "HELLO",
     "reasoning": "thinking about it", "text": "hello from mock", "chunk": 5},
    {"name": "plan", "last_role": "user", "user_contains": "PLAN",
     "tool_calls": [{"name": "todo_write", "arguments": {"todos": TODOS}}]},
    {"name": "plan-done", "last_tool_name": "todo_write", "text": "Plan done."},
    {"name": "ask", "last_role": "user", "user_contains": "ASK",
     "tool_calls": [{"name": "ask", "arguments": {"questions": QUESTIONS}}]},
    {"name": "ask-done", "last_tool_name": "ask", "text": "Got: ", "echo": "tool_result"},
    {"name": "write", "last_role": "user", "user_contains": "WRITE",
     "tool_calls": [{"name": "write_file",
                     "arguments": {"path": "notes/hello.txt", "content": "line1\nline2\n"}}]},
    {"name": "write-done", "last_tool_name": "write_file", "text": "Wrote it."},
    {"name": "bash", "last_role": "user", "user_contains": "BASH",
     "tool_calls": [{"name": "bash", "arguments": {"command": "echo bash-ok-$((6*7)) | tee bash_out.txt"}}]},
    {"name": "bash-done", "last_tool_name": "bash", "text": "Ran: ", "echo": "tool_result"},
    {"name": "slow", "last_role": "user", "user_contains": "SLOW",
     "text": "x" * 60, "chunk": 2, "delay": 0.1},
    {"name": "steered", "last_role": "user", "user_contains": "STEER-ONE", "text": "steered ok"},
    {"name": "e400", "last_role": "user", "user_contains": "FAIL400", "status": 400,
     "error": "mock says no", "times": 1},
    {"name": "cut", "last_role": "user", "user_contains": "CUTME", "text": "partial text",
     "chunk": 4, "cut_after": 2},
]}


class Check:
    def __init__(self):
        self.passed, self.failed = [], []

    def ok(self, cond, name, detail=""):
        (self.passed if cond else self.failed).append(name)
        print("%s %s%s" % ("ok  " if cond else "FAIL", name, "" if cond else ": %s" % detail))
        return cond


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cut", action="store_true", help="also check a cut stream (slow: ~25 s)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dirs")
    ap.add_argument("--trace", help="write the ACP traffic here as NDJSON")
    args = ap.parse_args()

    agent = find_agent()
    print("agent:", agent)
    chk = Check()
    prov = client = home = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        prov = start_provider(SCENARIO)
        home = make_home(prov.port, keep=args.keep)
        trace = open(args.trace, "w") if args.trace else None
        client = AcpClient(home.env, home.workspace, agent=agent, trace=trace)

        t = time.monotonic()
        init = client.initialize()
        chk.ok(init.get("protocolVersion") == 1, "initialize protocolVersion 1 (%.2fs)" % (time.monotonic() - t))
        sess = client.new_session(home.workspace)
        sid = sess["sessionId"]
        opts = {o["id"]: o for o in sess.get("configOptions", [])}
        chk.ok(opts.get("model", {}).get("currentValue") == "mock/mock-model", "session/new model mock/mock-model",
               opts.get("model"))
        chk.ok("tool_approval" in opts, "session/new has tool_approval option")

        # 1. streamed text + reasoning
        res, err, ups = client.prompt(sid, "HELLO there")
        chk.ok(res == {"stopReason": "end_turn"}, "prompt end_turn", err)
        chk.ok(text_of(ups) == "hello from mock", "streamed text", repr(text_of(ups)))
        chk.ok(text_of(ups, "agent_thought_chunk") == "thinking about it", "streamed reasoning",
               repr(text_of(ups, "agent_thought_chunk")))

        # 2. plan
        res, err, ups = client.prompt(sid, "PLAN something")
        plans = [u for u in ups if u.get("sessionUpdate") == "plan"]
        chk.ok(res == {"stopReason": "end_turn"} and plans and
               [e["content"] for e in plans[-1]["entries"]] == [t["content"] for t in TODOS],
               "plan via todo_write", plans or err)
        chk.ok(text_of(ups) == "Plan done.", "plan turn text", repr(text_of(ups)))

        # 3. question answered (two questions → two permission requests)
        client.answers = ["q1:2", "q2:1"]
        res, err, ups = client.prompt(sid, "ASK me")
        asked = [r["request"]["params"]["toolCall"]["title"] for r in client.agent_requests]
        chk.ok(asked == ["Which library?", "Which parts?"], "ask raised request_permission per question", asked)
        chk.ok(res == {"stopReason": "end_turn"} and "- Library: httpx" in text_of(ups)
               and "- Scope: api" in text_of(ups), "ask answer reached the model", (err, text_of(ups)))

        # 4. write_file (workspace-write default: no permission needed)
        res, err, ups = client.prompt(sid, "WRITE a file")
        path = os.path.join(home.workspace, "notes", "hello.txt")
        content = open(path).read() if os.path.exists(path) else None
        chk.ok(res == {"stopReason": "end_turn"} and content == "line1\nline2\n", "write_file on disk",
               (err, content))

        # 5. bash under danger-full-access (no bwrap here)
        client.set_config(sid, "tool_approval", "danger-full-access")
        res, err, ups = client.prompt(sid, "BASH run")
        chk.ok(res == {"stopReason": "end_turn"} and "bash-ok-42" in text_of(ups), "bash ran",
               (err, text_of(ups)))
        chk.ok(os.path.exists(os.path.join(home.workspace, "bash_out.txt")), "bash output file in workspace")

        # 6. steer during a slow stream
        mark = client.mark()
        rid = client.send_request("session/prompt", {"sessionId": sid,
                                                     "prompt": [{"type": "text", "text": "SLOW please"}]})
        client.wait_for(lambda m: m.get("method") == "session/update" and
                        m["params"]["update"].get("sessionUpdate") == "agent_message_chunk", since=mark)
        steer = client.request("_reasonix.io/session/steer",
                               {"sessionId": sid, "prompt": [{"type": "text", "text": "STEER-ONE use email"}]})
        resp = client.wait_result(rid, 30)
        chk.ok(steer.get("disposition") == "steer_accepted", "steer accepted", steer)
        last = prov.requests()[-1]["body"]["messages"][-1]
        chk.ok(resp.get("result") == {"stopReason": "end_turn"} and last["role"] == "user"
               and "Mid-turn steer" in last["content"] and "STEER-ONE" in last["content"],
               "steer reached the model as a user message", last)
        try:
            client.request("_reasonix.io/session/steer",
                           {"sessionId": sid, "prompt": [{"type": "text", "text": "late"}]})
            chk.ok(False, "steer while idle is refused")
        except AcpError as e:
            chk.ok(e.code == -32600, "steer while idle → -32600", e)

        # 7. provider 400
        res, err, ups = client.prompt(sid, "FAIL400 now")
        chk.ok(res is None and err and err.get("code") == -32603 and "status 400" in err.get("message", ""),
               "provider 400 → -32603", err)

        # 8. cut stream (optional: retried 4 times over ~22 s)
        if args.cut:
            res, err, ups = client.prompt(sid, "CUTME", timeout=90)
            chk.ok(err and err.get("code") == -32603 and "stream ended before completion" in err["message"],
                   "cut stream → -32603 after retries", err)

        # what the model received
        reqs = prov.requests()
        chk.ok(all(r["headers"].get("authorization") == "Bearer mock-key" for r in reqs),
               "api key from REASONIX_HOME/.env sent", {r["headers"].get("authorization") for r in reqs})
        tool_msgs = {}
        for r in reqs:
            for m in r["body"]["messages"]:
                if m.get("role") == "tool":
                    tool_msgs[m.get("tool_call_id")] = m.get("content")
        chk.ok(any('"counts"' in str(c) for c in tool_msgs.values()), "todo_write result reached the model")
        chk.ok(any("The user answered:" in str(c) for c in tool_msgs.values()), "ask answer in tool message")
        chk.ok(any("wrote 12 bytes" in str(c) for c in tool_msgs.values()), "write_file result in tool message",
               list(tool_msgs.values()))

        rc = client.stop()
        client = None
        chk.ok(rc == 0, "agent exits 0 on stdin EOF", rc)
    except Exception as e:  # report, then clean up
        chk.ok(False, "unexpected %s" % type(e).__name__, e)
    finally:
        if client:
            client.stop()
        if prov:
            prov.stop()
        if home:
            home.cleanup()
    print("%d passed, %d failed" % (len(chk.passed), len(chk.failed)))
    return 1 if chk.failed else 0


if __name__ == "__main__":
    sys.exit(main())
