# Shared by the packaging tests (POSIX sh: deb_root.sh runs it inside the Debian root too). The
# caller sets work, a private temp dir, and RMCP_VERSION.

# Ends the test with a message.
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Sets HOME, REASONIX_MCP_HOME and REASONIX_HOME under dir, with an agent config whose provider has a
# key (the agent's own check; no provider is started), as tests/support/reasonix_home.lua writes it.
private_homes() {
  mkdir -p "$1/home/.reasonix"
  export HOME="$1/home" REASONIX_MCP_HOME="$1/mcp" REASONIX_HOME="$1/home/.reasonix"
  cat >"$REASONIX_HOME/config.toml" <<'EOF'
default_model = "mock/mock-model"

[telemetry]
cli_metrics = "off"

[[providers]]
name        = "mock"
kind        = "openai"
base_url    = "http://127.0.0.1:9/v1"
models      = ["mock-model"]
default     = "mock-model"
api_key_env = "MOCK_API_KEY"
EOF
  echo "MOCK_API_KEY=mock-key" >"$REASONIX_HOME/.env"
}

# Speaks MCP to the command given (as a host starts it): initialize, initialized, tools/list; fails
# unless both answers come, naming our server, its version and the spawn tool.
mcp_probe() {
  out=$(printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"packaging-test","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | "$@" 2>"$work/mcp_probe.err") ||
    fail "$* exited $?: $(cat "$work/mcp_probe.err")"
  init=$(printf "%s\n" "$out" | grep '"id":1[,}]') || fail "$*: no initialize answer: $out $(cat "$work/mcp_probe.err")"
  printf "%s\n" "$init" | grep -q '"serverInfo":{[^}]*"name":"reasonix-mcp"' || fail "$*: initialize does not name reasonix-mcp: $init"
  printf "%s\n" "$init" | grep -q "\"serverInfo\":{[^}]*\"version\":\"$RMCP_VERSION\"" ||
    fail "$*: initialize does not say version $RMCP_VERSION: $init"
  printf "%s\n" "$out" | grep '"id":2[,}]' | grep -q '"tools":\[.*"name":"reasonix_spawn"' ||
    fail "$*: no tools/list answer with reasonix_spawn: $out"
  echo "ok: $* answers initialize and tools/list"
}

# Runs `reasonix-mcp doctor` (the command given, "$@") and fails unless it exits 0 with no FAIL and the agent
# started; prints its report, which stays in $out.
doctor_passes() {
  out=$("$@" doctor 2>&1) || fail "$* doctor exited $?:
$out"
  printf "%s\n" "$out" | grep -q '^\[FAIL\]' && fail "$* doctor printed a FAIL:
$out"
  printf "%s\n" "$out" | grep -q '^\[ok  \] agent profile ' || fail "$* doctor did not start the agent:
$out"
  echo "ok: $* doctor passes"
  printf "%s\n" "$out" | sed 's/^/    /'
}

# Fails unless the binary given uses the Lua tree dir (resolved), found on its own.
lua_dir_is() {
  echo 'print(require("rmcp.host").lua_dir)' >"$work/lua_dir.lua"
  got=$(env -u REASONIX_MCP_LUA_DIR "$1" script "$work/lua_dir.lua") || fail "$1 script failed"
  want=$(cd "$2" && pwd -P)
  [ "$got" = "$want" ] || fail "$1 uses the Lua tree $got, not its own $want"
  echo "ok: $1 finds its Lua tree $got"
}

# Sets found to a process (/proc/PID) that runs a binary under dir $1, or to "".
process_from() {
  found=""
  for exe in /proc/[0-9]*/exe; do
    case $(readlink "$exe" 2>/dev/null) in
      "$1"/*) found=${exe%/exe} ;;
    esac
  done
}

# Fails when a process still runs a binary under dir $1 after a bounded wait (a daemon asked to
# shut down exits on its own shortly after the answer).
no_process_from() {
  tries=0
  process_from "$1"
  while [ -n "$found" ] && [ $tries -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); process_from "$1"; done
  [ -z "$found" ] || fail "process ${found#/proc/} left behind: $(tr '\0' ' ' <"$found/cmdline" 2>/dev/null)"
}

# Starts a server ("$@") that prints {"port": N} as its first line on stdout, reading it from a pipe
# this shell holds open (fd 9, so the server never writes into a closed pipe; one server at a time
# per fd); sets server_pid and server_port.
start_server() {
  rm -f "$work/server.out"
  mkfifo "$work/server.out"
  "$@" >"$work/server.out" &
  server_pid=$!
  exec 9<"$work/server.out"
  read -r line <&9 || fail "$* did not report its port"
  server_port=$(printf '%s\n' "$line" | sed -n 's/.*"port": *\([0-9]*\).*/\1/p')
  [ -n "$server_port" ] || fail "$* reported no port: $line"
}

# Starts tests/provider/mock_provider.py (python3) on a free port, answering a task holding QUICK
# with "$1"; sets provider_pid and provider_port.
start_provider() {
  printf '{"rules":[{"last_role":"user","user_contains":"QUICK","text":"%s"}]}\n' "$1" >"$work/scenario.json"
  start_server python3 "$RMCP_SOURCE_DIR/tests/provider/mock_provider.py" --port 0 --scenario "$work/scenario.json"
  provider_pid=$server_pid provider_port=$server_port
  exec 8<&9 9<&-
}

# Points the agent config of private_homes at the mock provider.
use_provider() {
  sed -i "s|http://127.0.0.1:9/v1|http://127.0.0.1:$provider_port/v1|" "$REASONIX_HOME/config.toml"
}

# Spawns an agent through the reasonix-mcp command given ("$@", e.g. npx reasonix-mcp) and watches it
# to the end of its first turn, which must end with end_turn and the provider's text "$reply".
spawn_and_watch() {
  out=$("$@" ctl --json spawn "QUICK say hello" 2>&1) || fail "$* ctl spawn failed: $out"
  sid=$(printf '%s\n' "$out" | sed -n 's/.*"session_id": *"\([^"]*\)".*/\1/p' | head -1)
  [ -n "$sid" ] || fail "$* ctl spawn gave no session id: $out"
  out=$("$@" ctl --json watch "$sid" 2>&1) || fail "$* ctl watch $sid failed: $out"
  printf '%s\n' "$out" | grep -q '"stop_reason": *"end_turn"' || fail "$sid did not end its turn: $out"
  printf '%s\n' "$out" | grep -qF "$reply" || fail "$sid did not answer $reply: $out"
  "$@" ctl shutdown >/dev/null 2>&1 || fail "$* ctl shutdown failed"
  echo "ok: $* spawned $sid, which ended its first turn (end_turn: $reply)"
}

# Unpacks a fresh Debian 12 root into $work/root from the cached tarball build/packaging-cache/$1
# (made by mmdebstrap's apt variant with the packages "$2" includes, comma-separated, when it is not
# there; delete it for a new one), with the host's resolv.conf. Sets cache and root.
debian_root() {
  cache=$RMCP_BUILD_DIR/packaging-cache
  mkdir -p "$cache/apt-archives"
  if [ ! -s "$cache/$1" ]; then
    started=$(date +%s)
    mmdebstrap --quiet --variant=apt ${2:+--include="$2"} --format=tar bookworm "$cache/$1.part" || fail "mmdebstrap failed"
    mv "$cache/$1.part" "$cache/$1"
    echo "made a Debian 12 root in $(($(date +%s) - started)) s"
  fi
  root=$work/root
  mkdir "$root"
  tar -C "$root" -xf "$cache/$1"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
}
