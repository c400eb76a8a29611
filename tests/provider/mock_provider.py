#!/usr/bin/env python3
"""Offline OpenAI-compatible streaming provider for driving the real `reasonix acp` in tests.

Python 3 stdlib only. Binds 127.0.0.1, prints one line `{"port": N}` on stdout when ready, then
answers `GET /v1/models` and `POST /v1/chat/completions` (SSE streaming like OpenAI, or plain JSON
when `stream` is false) from scenario rules. See tests/support/README.md for the scenario format.

Control endpoints (tests only):
  POST /_mock/scenario   replace the scenario (same JSON as --scenario); use counters start afresh
  GET  /_mock/scenario   the scenario in force
  GET  /_mock/requests   every chat request logged so far (`?since=N` skips the first N)
  GET  /_mock/served     the usage the provider reported, summed over the streams it finished
                         ({"responses", "prompt_tokens", "completion_tokens", "total_tokens",
                         "cached_tokens", "reasoning_tokens"})

Exit: SIGTERM, SIGINT, and stdin EOF when --exit-on-stdin-eof is given (a test that dies closes
the pipe, so the provider never outlives it).
"""

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

DEFAULT_MODELS = ["mock-model"]
DEFAULT_ACTION = {"text": "ok"}
DEFAULT_USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
MATCHERS = ("last_role", "user_contains", "last_tool_name", "tool_result_contains",
            "request_index", "any_contains", "model")


def content_text(content):
    """Flatten an OpenAI message content (string or list of parts) to plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    out.append(part["text"])
            elif isinstance(part, str):
                out.append(part)
        return "".join(out)
    return json.dumps(content)


def normalize_scenario(raw):
    """Accept a list of rules or {"models", "rules", "default"}; validate the rule keys early."""
    if raw is None:
        raw = {}
    if isinstance(raw, list):
        raw = {"rules": raw}
    if not isinstance(raw, dict):
        raise ValueError("scenario must be a JSON object or a list of rules")
    rules = raw.get("rules") or []
    if not isinstance(rules, list):
        raise ValueError("scenario.rules must be a list")
    for i, r in enumerate(rules):
        if not isinstance(r, dict):
            raise ValueError("rule %d is not an object" % i)
        if "last_role" in r and r["last_role"] not in ("user", "tool", "assistant", "system"):
            raise ValueError("rule %d: last_role must be user|tool|assistant|system" % i)
    models = raw.get("models") or DEFAULT_MODELS
    if isinstance(models, str):
        models = [models]
    return {"models": list(models), "rules": rules,
            "default": raw.get("default") or dict(DEFAULT_ACTION)}


class Conversation:
    """Facts about one request's messages that rules match on."""

    def __init__(self, body):
        msgs = body.get("messages") or []
        self.messages = msgs
        self.model = body.get("model")
        last = msgs[-1] if msgs else {}
        self.last_role = last.get("role")
        self.last_user = ""
        for m in reversed(msgs):
            if m.get("role") == "user":
                self.last_user = content_text(m.get("content"))
                break
        self.tool_result = content_text(last.get("content")) if self.last_role == "tool" else None
        self.last_tool_name = None
        if self.last_role == "tool":
            self.last_tool_name = last.get("name")
            want = last.get("tool_call_id")
            for m in reversed(msgs):
                for tc in m.get("tool_calls") or []:
                    if tc.get("id") == want:
                        self.last_tool_name = (tc.get("function") or {}).get("name")
                        break
                else:
                    continue
                break
        parts = []
        for m in msgs:
            parts.append(content_text(m.get("content")))
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                parts.append(str(fn.get("name", "")))
                parts.append(str(fn.get("arguments", "")))
        self.all_text = "\n".join(parts)


def rule_matches(rule, conv, index):
    if "last_role" in rule and conv.last_role != rule["last_role"]:
        return False
    if "user_contains" in rule and rule["user_contains"] not in conv.last_user:
        return False
    if "last_tool_name" in rule and conv.last_tool_name != rule["last_tool_name"]:
        return False
    if "tool_result_contains" in rule:
        if conv.tool_result is None or rule["tool_result_contains"] not in conv.tool_result:
            return False
    if "request_index" in rule:
        want = rule["request_index"]
        if isinstance(want, list):
            if index not in want:
                return False
        elif index != want:
            return False
    if "any_contains" in rule and rule["any_contains"] not in conv.all_text:
        return False
    if "model" in rule and conv.model != rule["model"] and \
            (conv.model or "").split("/")[-1] != rule["model"]:
        return False
    return True


class State:
    """Scenario, use counters and the request log, shared by the handler threads."""

    def __init__(self, scenario, log_path):
        self.lock = threading.Lock()
        self.scenario = scenario
        self.uses = [0] * len(scenario["rules"])
        self.requests = []
        self.served = {"responses": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
                       "cached_tokens": 0, "reasoning_tokens": 0}
        self.next_index = 0
        self.log_path = log_path
        self.t0 = time.time()

    def count_served(self, usage):
        """Adds one finished stream's usage to what the provider served."""
        with self.lock:
            sv = self.served
            sv["responses"] += 1
            for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
                sv[k] += int(usage.get(k) or 0)
            sv["cached_tokens"] += int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
            sv["reasoning_tokens"] += int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)

    def set_scenario(self, scenario):
        with self.lock:
            self.scenario = scenario
            self.uses = [0] * len(scenario["rules"])

    def pick(self, body, path, headers=None):
        """Log the request and choose its action: the first rule that matches and has uses left."""
        conv = Conversation(body)
        with self.lock:
            index = self.next_index
            self.next_index += 1
            chosen, label = None, "default"
            for i, rule in enumerate(self.scenario["rules"]):
                times = rule.get("times")
                if times is not None and self.uses[i] >= times:
                    continue
                if rule_matches(rule, conv, index):
                    self.uses[i] += 1
                    chosen = rule
                    label = rule.get("name", i)
                    break
            if chosen is None:
                chosen = self.scenario["default"]
            entry = {"index": index, "t": round(time.time() - self.t0, 3), "path": path,
                     "rule": label, "headers": headers or {}, "body": body}
            self.requests.append(entry)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry) + "\n")
        return index, chosen, conv


def usage_by_index(index):
    """A usage object different for every request index (tests sum what was served)."""
    prompt, completion = 1000 + 37 * index, 11 + 5 * index
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 100 * (index % 3)},
            "completion_tokens_details": {"reasoning_tokens": index % 4}}


def split_chunks(s, n):
    if not s:
        return []
    if not n or n <= 0:
        return [s]
    return [s[i:i + n] for i in range(0, len(s), n)]


class CutStream(Exception):
    """The rule's cut_after was reached: drop the connection without finishing the stream."""


def build_deltas(action, index, conv):
    """The list of delta dicts the response streams, and the finish reason."""
    n = int(action.get("chunk") or 0)
    deltas = []
    for piece in split_chunks(action.get("reasoning") or "", n):
        deltas.append({"reasoning_content": piece})
    text = action.get("text") or ""
    echo = action.get("echo")
    if echo:
        if echo is True or echo == "last_user":
            text += conv.last_user
        elif echo == "tool_result":
            text += conv.tool_result or ""
        elif echo == "all":
            text += conv.all_text
    for piece in split_chunks(text, n):
        deltas.append({"content": piece})
    calls = action.get("tool_calls") or []
    for k, call in enumerate(calls):
        args = call.get("arguments", {})
        if not isinstance(args, str):
            args = json.dumps(args)
        call_id = call.get("id") or "call_%d_%d" % (index, k)
        pieces = split_chunks(args, n) or [""]
        deltas.append({"tool_calls": [{"index": k, "id": call_id, "type": "function",
                                       "function": {"name": call["name"], "arguments": pieces[0]}}]})
        for piece in pieces[1:]:
            deltas.append({"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
    finish = action.get("finish_reason") or ("tool_calls" if calls else "stop")
    return deltas, finish, text, calls


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-provider/1"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("mock_provider: " + (fmt % args) + "\n")

    # ---- plumbing -------------------------------------------------------------------------
    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            return data
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def sse(self, obj):
        payload = obj if isinstance(obj, str) else json.dumps(obj)
        self.write_chunk(("data: %s\n\n" % payload).encode())

    def drop_connection(self):
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ---- routes ---------------------------------------------------------------------------
    def do_GET(self):
        url = urlparse(self.path)
        st = self.server.state
        if url.path in ("/v1/models", "/models"):
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "mock"}
                    for m in st.scenario["models"]]
            return self.send_json(200, {"object": "list", "data": data})
        if url.path == "/_mock/requests":
            since = int((parse_qs(url.query).get("since") or ["0"])[0])
            with st.lock:
                reqs = st.requests[since:]
            return self.send_json(200, reqs)
        if url.path == "/_mock/scenario":
            return self.send_json(200, st.scenario)
        if url.path == "/_mock/served":
            with st.lock:
                return self.send_json(200, dict(st.served))
        if url.path == "/_mock/health":
            return self.send_json(200, {"ok": True})
        self.send_json(404, {"error": {"message": "no route %s" % url.path, "type": "not_found"}})

    def do_POST(self):
        url = urlparse(self.path)
        raw = self.read_body()
        try:
            body = json.loads(raw or b"{}")
        except ValueError as e:
            return self.send_json(400, {"error": {"message": "bad json: %s" % e,
                                                  "type": "invalid_request_error"}})
        if url.path == "/_mock/scenario":
            try:
                self.server.state.set_scenario(normalize_scenario(body))
            except ValueError as e:
                return self.send_json(400, {"error": {"message": str(e)}})
            return self.send_json(200, {"ok": True})
        if url.path in ("/v1/chat/completions", "/chat/completions"):
            return self.chat(body, url.path)
        self.send_json(404, {"error": {"message": "no route %s" % url.path, "type": "not_found"}})

    def chat(self, body, path):
        headers = {k.lower(): v for k, v in self.headers.items()
                   if k.lower() in ("authorization", "user-agent", "accept")}
        index, action, conv = self.server.state.pick(body, path, headers)
        if action.get("delay_first"):
            time.sleep(float(action["delay_first"]))
        status = action.get("status")
        if status and int(status) >= 400:
            msg = action.get("error") or "mock error %s" % status
            err = {"error": {"message": msg, "type": action.get("error_type", "invalid_request_error"),
                             "code": action.get("error_code", status)}}
            return self.send_json(int(status), err)
        deltas, finish, text, calls = build_deltas(action, index, conv)
        model = body.get("model") or self.server.state.scenario["models"][0]
        cid = "chatcmpl-mock-%d" % index
        created = int(time.time())
        usage = action.get("usage", DEFAULT_USAGE)  # false: the provider reports none
        if usage == "by_index":  # different for every response, from its request index
            usage = usage_by_index(index)
        if not body.get("stream"):
            msg = {"role": "assistant", "content": text or None}
            if action.get("reasoning"):
                msg["reasoning_content"] = action["reasoning"]
            if calls:
                msg["tool_calls"] = []
                for k, call in enumerate(calls):
                    a = call.get("arguments", {})
                    msg["tool_calls"].append({
                        "id": call.get("id") or "call_%d_%d" % (index, k), "type": "function",
                        "function": {"name": call["name"],
                                     "arguments": a if isinstance(a, str) else json.dumps(a)}})
            return self.send_json(200, {"id": cid, "object": "chat.completion", "created": created,
                                        "model": model, "choices": [{"index": 0, "message": msg,
                                                                     "finish_reason": finish}],
                                        "usage": usage})

        def chunk(delta, finish_reason=None):
            return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        delay = float(action.get("delay") or 0)
        cut_after = action.get("cut_after")
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.sse(chunk({"role": "assistant", "content": ""}))
            for k, d in enumerate(deltas):
                if cut_after is not None and k >= int(cut_after):
                    raise CutStream()
                if delay and k > 0:
                    time.sleep(delay)
                self.sse(chunk(d))
            if cut_after is not None:
                raise CutStream()
            self.sse(chunk({}, finish))
            opts = body.get("stream_options") or {}
            if opts.get("include_usage") and usage is not False:
                self.sse({"id": cid, "object": "chat.completion.chunk", "created": created,
                          "model": model, "choices": [], "usage": usage})
                # served once written (the agent may end its turn before the body's end is sent)
                self.server.state.count_served(usage)
            if action.get("done", True):
                self.sse("[DONE]")
            self.write_chunk(b"")
        except CutStream:
            if action.get("cut_mode", "eof") == "eof":
                # End the HTTP body cleanly but without finish_reason or [DONE].
                try:
                    self.write_chunk(b"")
                except OSError:
                    pass
            self.drop_connection()
        except (BrokenPipeError, ConnectionResetError, OSError):
            # The client went away (a cancelled turn): nothing to finish.
            self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # A client dropping a kept-alive connection (the agent cancelling, or exiting) is normal.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionResetError, BrokenPipeError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--scenario", help="JSON file: a list of rules or {models, rules, default}")
    ap.add_argument("--log", help="append every chat request as a JSON line")
    ap.add_argument("--port-file", help="write the bound port here when ready")
    ap.add_argument("--exit-on-stdin-eof", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)

    scenario = {}
    if args.scenario:
        with open(args.scenario, encoding="utf-8") as f:
            scenario = json.load(f)
    state = State(normalize_scenario(scenario), args.log)
    srv = Server((args.host, args.port), Handler)
    srv.state = state
    srv.verbose = args.verbose
    port = srv.server_address[1]

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.exit_on_stdin_eof:
        def watch_stdin():
            try:
                while os.read(0, 4096):
                    pass
            except OSError:
                pass
            stop.set()
        threading.Thread(target=watch_stdin, daemon=True).start()

    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    sys.stdout.write(json.dumps({"port": port}) + "\n")
    sys.stdout.flush()

    while not stop.wait(1.0):
        pass
    srv.shutdown()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
