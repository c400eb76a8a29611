"""Private homes for the real `reasonix acp` agent, and the mock provider it talks to.

Python 3 stdlib only. Mirrors tests/support/reasonix_home.lua. Typical use:

    from reasonix_home import find_agent, start_provider, make_home
    prov = start_provider({"rules": [{"last_role": "user", "text": "hi"}]})
    home = make_home(prov.port)
    subprocess.Popen([find_agent(), "acp"], env=home.env, cwd=home.workspace, ...)
    ...
    home.cleanup(); prov.stop()

See tests/support/README.md.
"""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT_VERSION = "v1.38.11"
PROVIDER_SCRIPT = os.path.join(REPO, "tests", "provider", "mock_provider.py")
DEFAULT_MODEL = "mock/mock-model"
PRODUCT_DEFAULT_MODEL = "opencode-go/deepseek-v4-flash"
API_KEY_ENV = "MOCK_API_KEY"
API_KEY_VALUE = "mock-key"


def find_agent():
    """Path of the real agent: $REASONIX_BIN, then <repo>/.agent/…, then `reasonix` on PATH."""
    env = os.environ.get("REASONIX_BIN")
    if env:
        return env
    local = os.path.join(REPO, ".agent", "node_modules", "@reasonix", "cli-linux-x64", "bin", "reasonix")
    if os.access(local, os.X_OK):
        return local
    on_path = shutil.which("reasonix")
    if on_path:
        return on_path
    raise FileNotFoundError("reasonix agent not found: set REASONIX_BIN or run scripts/install-agent.sh")


def toml_str(s):
    return json.dumps(str(s))  # a JSON string is a valid TOML basic string


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return toml_str(v)


def config_toml(port, model=DEFAULT_MODEL, models=None, provider="mock", api_key_env=API_KEY_ENV,
                model_overrides=None, declare_product_default=False, extra_toml=""):
    """The config.toml text that points the agent at the mock provider on 127.0.0.1:<port>.

    models: model names the provider offers (default: ["mock-model"] plus the model part of `model`).
    model_overrides: {model: {"supported_efforts": [...], "default_effort": "high", ...}}.
    declare_product_default: also declare provider `opencode-go` with `deepseek-v4-flash` on the
    same mock, so the product's default model resolves (it also brings the DeepSeek effort option).
    """
    base_url = "http://127.0.0.1:%d/v1" % port
    if models is None:
        models = ["mock-model"]
        if model.startswith(provider + "/") and model.split("/", 1)[1] not in models:
            models.append(model.split("/", 1)[1])
    lines = [
        "# Written by tests/support/reasonix_home: the agent talks only to the local mock provider.",
        "default_model = %s" % toml_str(model),
        "",
        "[telemetry]",
        'cli_metrics = "off"',
        "",
        "[[providers]]",
        "name        = %s" % toml_str(provider),
        'kind        = "openai"',
        "base_url    = %s" % toml_str(base_url),
        "models      = %s" % toml_value(list(models)),
        "default     = %s" % toml_str(models[0]),
        "api_key_env = %s" % toml_str(api_key_env),
    ]
    for name, fields in sorted((model_overrides or {}).items()):
        lines += ["", "[providers.model_overrides.%s]" % toml_str(name)]
        for k, v in sorted(fields.items()):
            lines.append("%s = %s" % (k, toml_value(v)))
    if declare_product_default:
        lines += [
            "",
            "[[providers]]",
            'name        = "opencode-go"',
            'kind        = "openai"',
            "base_url    = %s" % toml_str(base_url),
            'models      = ["deepseek-v4-flash", "deepseek-v4-pro"]',
            'default     = "deepseek-v4-flash"',
            "api_key_env = %s" % toml_str(api_key_env),
        ]
    if extra_toml:
        lines += ["", extra_toml.strip()]
    return "\n".join(lines) + "\n"


class ReasonixHome:
    """A private temp dir: home/ (HOME), rxhome/ (REASONIX_HOME, with config.toml), ws/ (a workspace)."""

    def __init__(self, root, env, keep=False):
        self.root = root
        self.home = os.path.join(root, "home")
        self.rxhome = os.path.join(root, "rxhome")
        self.workspace = os.path.join(root, "ws")
        self.config_path = os.path.join(self.rxhome, "config.toml")
        self.env = env
        self.keep = keep

    def cleanup(self):
        # A second pass covers a file the agent wrote while the first pass ran.
        for _ in range(3):
            if self.keep or not os.path.exists(self.root):
                return
            shutil.rmtree(self.root, ignore_errors=True)
            time.sleep(0.05)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()


def agent_env(home, rxhome, api_key_env=API_KEY_ENV, base=None):
    """The environment to give the agent: nothing of the caller's HOME or real keys leaks in."""
    env = {
        "HOME": home,
        "REASONIX_HOME": rxhome,
        api_key_env: API_KEY_VALUE,
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "REASONIX_LANG": "en",
        "LANG": "C.UTF-8",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }
    if base:
        env.update(base)
    return env


def make_home(port, root=None, keep=False, api_key_env=API_KEY_ENV, extra_env=None, **config):
    """Create the private dirs and config.toml for a provider on `port`; returns a ReasonixHome.

    `config` keywords go to config_toml (model, models, provider, model_overrides,
    declare_product_default, extra_toml).
    """
    root = root or tempfile.mkdtemp(prefix="rx-home-")
    for d in ("home", "rxhome", "ws"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    with open(os.path.join(root, "rxhome", "config.toml"), "w", encoding="utf-8") as f:
        f.write(config_toml(port, api_key_env=api_key_env, **config))
    # The agent reads provider keys only from <REASONIX_HOME>/.env (the environment variable named
    # by api_key_env is ignored at run time); without this it sends no Authorization header.
    dotenv = os.path.join(root, "rxhome", ".env")
    with open(os.open(dotenv, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write("%s=%s\n" % (api_key_env, API_KEY_VALUE))
    env = agent_env(os.path.join(root, "home"), os.path.join(root, "rxhome"), api_key_env, extra_env)
    return ReasonixHome(root, env, keep)


class Provider:
    """A running mock_provider.py; stop() ends it (its stdin closing would too)."""

    def __init__(self, proc, port, log_path, own_dir=None):
        self.proc = proc
        self.port = port
        self.log_path = log_path
        self.own_dir = own_dir
        self.base_url = "http://127.0.0.1:%d" % port

    def _http(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"null")

    def requests(self, since=0):
        """Every chat request so far: [{index, t, path, rule, body}]."""
        return self._http("GET", "/_mock/requests?since=%d" % since)

    def set_scenario(self, scenario):
        return self._http("POST", "/_mock/scenario", scenario)

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        if self.own_dir:
            shutil.rmtree(self.own_dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start_provider(scenario=None, log=None, workdir=None, timeout=10.0, verbose=False):
    """Start mock_provider.py with `scenario` (dict/list, or a path), wait for its `{"port":N}` line.

    The provider reads our pipe as stdin and exits when it closes, so it never outlives the test.
    Without `workdir`, a temp dir holds scenario.json and requests.jsonl and goes away on stop().
    """
    own_dir = None
    if workdir is None:
        workdir = own_dir = tempfile.mkdtemp(prefix="rx-prov-")
    if scenario is None or isinstance(scenario, (dict, list)):
        path = os.path.join(workdir, "scenario.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(scenario or {}, f)
    else:
        path = scenario
    log = log or os.path.join(workdir, "requests.jsonl")
    cmd = [sys.executable, PROVIDER_SCRIPT, "--port", "0", "--scenario", path, "--log", log,
           "--exit-on-stdin-eof"]
    if verbose:
        cmd.append("--verbose")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    # Wait for the ready line (or EOF: the provider died); the deadline guards a hang.
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            proc.kill()
            proc.wait()
            raise TimeoutError("mock provider did not report its port within %.1fs" % timeout)
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            proc.wait()
            raise RuntimeError("mock provider exited (rc=%s) before reporting its port" % proc.returncode)
        buf += chunk
    port = json.loads(buf.split(b"\n", 1)[0])["port"]
    return Provider(proc, port, log, own_dir)


def kill_group(proc, grace=2.0):
    """End the process group led by `proc` (started with start_new_session=True): SIGTERM, then
    SIGKILL for whatever is left, the leader's own children (bash tools) included."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return proc.wait()
