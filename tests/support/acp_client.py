"""A minimal ACP v1 client over NDJSON stdio, for driving the real `reasonix acp` in tests.

Python 3 stdlib only. The agent runs in its own process group so stop() can end it and anything it
started (bash tools). Agent->client requests (session/request_permission, fs/*) go to `on_request`;
the default answers permissions from `self.answers` (a list of optionIds or callables, used in
order) and refuses anything else.
"""

import json
import os
import subprocess
import threading
import time

from reasonix_home import find_agent, kill_group


class AcpError(Exception):
    def __init__(self, error):
        super().__init__("%s %s" % (error.get("code"), error.get("message")))
        self.code = error.get("code")
        self.message = error.get("message")
        self.error = error


class AcpClient:
    def __init__(self, env, cwd, args=None, agent=None, trace=None, cmd=None):
        """Start `<agent> acp <args>` (or exactly `cmd`, e.g. the fake agent) in cwd with env."""
        self.cmd = list(cmd) if cmd else [agent or find_agent(), "acp"] + list(args or [])
        self.proc = subprocess.Popen(self.cmd, env=env, cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.lock = threading.Condition()
        self.write_lock = threading.Lock()
        self.next_id = 1
        self.results = {}
        self.messages = []          # every message from the agent, in order
        self.updates = []           # session/update params
        self.agent_requests = []    # agent->client requests, with our reply
        self.answers = []           # queue for session/request_permission
        self.stderr = []
        self.trace = trace
        self.closed = False
        self.t0 = time.monotonic()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # ---- io ------------------------------------------------------------------------------
    def _log(self, direction, msg):
        if self.trace:
            self.trace.write(json.dumps({"t": round(time.monotonic() - self.t0, 3),
                                         "dir": direction, "msg": msg}) + "\n")
            self.trace.flush()

    def _send(self, msg):
        self._log("c->a", msg)
        data = (json.dumps(msg) + "\n").encode()
        with self.write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    def _read_stdout(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            self._log("a->c", msg)
            if "method" in msg and "id" in msg:
                threading.Thread(target=self._answer, args=(msg,), daemon=True).start()
            with self.lock:
                self.messages.append(msg)
                if msg.get("method") == "session/update":
                    self.updates.append(msg["params"])
                if "id" in msg and "method" not in msg:
                    self.results[msg["id"]] = msg
                self.lock.notify_all()
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def _answer(self, msg):
        try:
            result = self.on_request(msg)
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        except AcpError as e:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": e.error}
        with self.lock:
            self.agent_requests.append({"request": msg, "reply": reply})
        try:
            self._send(reply)
        except (BrokenPipeError, ValueError):
            pass

    def on_request(self, msg):
        """Default agent->client request handler: permissions from the answers queue."""
        if msg["method"] == "session/request_permission":
            if not self.answers:
                raise AcpError({"code": -32603, "message": "test has no answer queued"})
            ans = self.answers.pop(0)
            if callable(ans):
                ans = ans(msg["params"])
            if isinstance(ans, dict):
                return ans
            if ans == "cancelled":
                return {"outcome": {"outcome": "cancelled"}}
            return {"outcome": {"outcome": "selected", "optionId": ans}}
        raise AcpError({"code": -32601, "message": "method not found: %s" % msg["method"]})

    # ---- api -----------------------------------------------------------------------------
    def send_request(self, method, params):
        with self.lock:
            rid = self.next_id
            self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def notify(self, method, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_result(self, rid, timeout=30.0):
        """The raw response {id, result|error} for request `rid`."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while rid not in self.results:
                left = deadline - time.monotonic()
                if self.closed:
                    raise EOFError("agent closed stdout; stderr: %s" % "\n".join(self.stderr[-5:]))
                if left <= 0:
                    raise TimeoutError("no response to request %s within %.1fs" % (rid, timeout))
                self.lock.wait(left)
            return self.results[rid]

    def request(self, method, params, timeout=30.0):
        """Send a request and return its result, raising AcpError on a JSON-RPC error."""
        resp = self.wait_result(self.send_request(method, params), timeout)
        if "error" in resp:
            raise AcpError(resp["error"])
        return resp["result"]

    def mark(self):
        """A position in the message list, for wait_for(since=...)."""
        with self.lock:
            return len(self.messages)

    def wait_for(self, pred, timeout=30.0, since=0):
        """Wait until pred(message) is true for a message from the agent at or after position
        `since` (see mark()); return it."""
        deadline = time.monotonic() + timeout
        seen = since
        with self.lock:
            while True:
                for m in self.messages[seen:]:
                    if pred(m):
                        return m
                seen = len(self.messages)
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise TimeoutError("condition not met within %.1fs" % timeout)
                self.lock.wait(left)

    def initialize(self):
        return self.request("initialize", {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                   "terminal": False},
            "clientInfo": {"name": "reasonix-mcp-tests", "version": "0"}})

    def new_session(self, cwd, timeout=30.0):
        return self.request("session/new", {"cwd": cwd, "mcpServers": []}, timeout)

    def set_config(self, sid, config_id, value):
        return self.request("session/set_config_option",
                            {"sessionId": sid, "configId": config_id, "value": value})

    def prompt(self, sid, text, timeout=60.0):
        """Run one turn; returns (result or None, error or None, updates of this turn)."""
        start = len(self.updates)
        resp = self.wait_result(self.send_request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}), timeout)
        with self.lock:
            ups = [u["update"] for u in self.updates[start:] if u.get("sessionId") == sid]
        return resp.get("result"), resp.get("error"), ups

    def stop(self):
        """Close stdin (the agent exits on EOF), then end its whole process group."""
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            self.proc.wait(2)
        except subprocess.TimeoutExpired:
            pass
        return kill_group(self.proc)


def text_of(updates, kind="agent_message_chunk"):
    """Concatenated text of the updates of one kind (agent_message_chunk, agent_thought_chunk)."""
    return "".join((u.get("content") or {}).get("text", "") for u in updates
                   if u.get("sessionUpdate") == kind)
