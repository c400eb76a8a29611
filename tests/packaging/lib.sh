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

# Runs `reasonix-mcp doctor` (the binary given) and fails unless it exits 0 with no FAIL and the agent
# started; prints its report, which stays in $out.
doctor_passes() {
  out=$("$1" doctor 2>&1) || fail "$1 doctor exited $?:
$out"
  printf "%s\n" "$out" | grep -q '^\[FAIL\]' && fail "$1 doctor printed a FAIL:
$out"
  printf "%s\n" "$out" | grep -q '^\[ok  \] agent profile ' || fail "$1 doctor did not start the agent:
$out"
  echo "ok: $1 doctor passes"
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

# Fails when a process still runs a binary under dir.
no_process_from() {
  for exe in /proc/[0-9]*/exe; do
    case $(readlink "$exe" 2>/dev/null) in
      "$1"/*) fail "process ${exe#/proc/} left behind: $(tr '\0' ' ' <"${exe%/exe}/cmdline")" ;;
    esac
  done
}
