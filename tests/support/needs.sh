#!/bin/sh
# Runs one test command after checking what it needs. A missing piece fails the test with what is
# missing and how to install it (exit 1); only when a person asks for skips (RMCP_TEST_ALLOW_SKIP=1)
# does it skip instead (exit 77, which ctest reports as Skipped and scripts/test.sh counts).
# usage: needs.sh [agent] [python3] [clients] [hosts] [browser] [acp-agent] [codex-acp] [gemini] [sshd] [git] [bwrap] [opencode] [debroot] [npm] -- COMMAND ARGS...
#   agent    the pinned real agent (REASONIX_BIN, else <repo>/.agent/…)
#   codex-acp  Codex's ACP agent pinned in scripts/agents/codex, in .agent/codex with its native binary
#   python3  the interpreter the mock provider runs on
#   clients  Node.js >= 20 and the MCP SDK client + Inspector CLI in tests/e2e/node_modules
#   hosts    the pinned MCP hosts (Claude Code, Codex CLI) in tests/hosts/node_modules, runnable
#   browser  Debian's chromium and playwright-core in tests/e2e/node_modules (the dashboard tests)
#   bwrap    Debian's bubblewrap, working here (the sandbox tests)
#   opencode the pinned opencode (OPENCODE_BIN, else <repo>/.agent/opencode/…, from scripts/agents/opencode)
#   npm      Node.js and npm (the npm package test installs it with them)
#   debroot  mmdebstrap and root (the .deb test installs the package in a fresh Debian 12 root)
#   gemini   Gemini CLI pinned in scripts/agents/gemini, installed into <repo>/.agent/gemini (GEMINI_BIN overrides)
repo=${RMCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
missing=""
what=""

# Adds one missing piece (what, and how to install it) to the report.
lack() {
  missing="$missing
  - $1: $2"
  what="${what:+$what; }$1"
}

while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    agent)
      bin=${REASONIX_BIN:-$repo/.agent/node_modules/@reasonix/cli-linux-x64/bin/reasonix}
      [ -x "$bin" ] || lack "the real agent ($bin)" "scripts/install-agent.sh (npm reasonix@1.38.11 into .agent/)" ;;
    python3)
      python3 -c 'import sys' >/dev/null 2>&1 || lack "python3 (the mock provider runs on it)" "apt-get install python3, or scripts/install-deps.sh" ;;
    clients)
      if ! command -v node >/dev/null 2>&1; then
        lack "Node.js (runs the MCP SDK client tests)" "apt-get install nodejs npm, or scripts/install-deps.sh"
      elif [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 20 ]; then
        lack "Node.js >= 20 (found $(node --version))" "install a newer nodejs"
      fi
      for p in sdk inspector; do
        [ -f "$repo/tests/e2e/node_modules/@modelcontextprotocol/$p/package.json" ] ||
          lack "@modelcontextprotocol/$p in tests/e2e/node_modules" "npm ci --prefix tests/e2e, or scripts/install-deps.sh"
      done ;;
    hosts)
      for h in claude codex; do
        "$repo/tests/hosts/node_modules/.bin/$h" --version >/dev/null 2>&1 ||
          lack "the $h host (tests/hosts/node_modules/.bin/$h)" "npm ci --prefix tests/hosts, or scripts/install-deps.sh"
      done ;;
    browser)
      [ -x /usr/bin/chromium ] || lack "chromium (/usr/bin/chromium)" "apt-get install chromium, or scripts/install-deps.sh"
      [ -f "$repo/tests/e2e/node_modules/playwright-core/package.json" ] ||
        lack "playwright-core in tests/e2e/node_modules" "npm ci --prefix tests/e2e, or scripts/install-deps.sh" ;;
    sshd)
      [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1 ||
        lack "sshd, ssh and ssh-keygen (the remote-agent test runs its own sshd on 127.0.0.1)" "apt-get install openssh-server openssh-client, or scripts/install-deps.sh" ;;
    git)
      command -v git >/dev/null 2>&1 || lack "git (isolate=worktree runs it)" "apt-get install git, or scripts/install-deps.sh" ;;
    bwrap)
      if ! command -v bwrap >/dev/null 2>&1; then
        lack "bubblewrap (bwrap: the sandbox agentd starts agents in)" "apt-get install bubblewrap, or scripts/install-deps.sh"
      elif ! bwrap --unshare-pid --unshare-net --ro-bind / / --dev /dev --proc /proc -- true >/dev/null 2>&1; then
        lack "a bubblewrap that can make a sandbox here (user namespaces?)" "allow unprivileged user namespaces, or run the tests as root"
      fi ;;
    acp-agent)
      # Both Claude Code adapters; the newer one runs the native Claude CLI of its SDK's platform package.
      for b in claude-code-acp claude-agent-acp; do
        [ -x "$repo/tests/e2e/node_modules/.bin/$b" ] ||
          lack "a second ACP agent (tests/e2e/node_modules/.bin/$b)" "npm ci --prefix tests/e2e, or scripts/install-deps.sh"
      done
      ls "$repo"/tests/e2e/node_modules/@anthropic-ai/claude-agent-sdk-linux-*/claude >/dev/null 2>&1 ||
        lack "the Claude CLI of claude-agent-acp (@anthropic-ai/claude-agent-sdk-linux-<arch>, an optional dependency)" "npm ci --prefix tests/e2e (without --omit=optional), or scripts/install-deps.sh" ;;
    opencode)
      oc=${OPENCODE_BIN:-$repo/.agent/opencode/node_modules/opencode-linux-x64/bin/opencode}
      [ "$("$oc" --version 2>/dev/null)" = "1.18.33" ] ||
        lack "opencode 1.18.33 ($oc)" "scripts/install-agent.sh opencode" ;;
    codex-acp)
      # The npm launcher runs the native binary of its platform package (an optional dependency).
      how="scripts/install-agent.sh codex"
      [ -x "$repo/.agent/codex/node_modules/.bin/codex-acp" ] ||
        lack "Codex's ACP agent (.agent/codex/node_modules/.bin/codex-acp)" "$how"
      ls "$repo"/.agent/codex/node_modules/@zed-industries/codex-acp-linux-*/bin/codex-acp >/dev/null 2>&1 ||
        lack "the native codex-acp of this platform (@zed-industries/codex-acp-linux-<arch>, an optional dependency)" "$how (without --omit=optional)" ;;
    gemini)
      # The pinned version answers --version without a network or a config.
      gbin=${GEMINI_BIN:-$repo/.agent/gemini/node_modules/.bin/gemini}
      want=$(sed -n 's/.*"@google\/gemini-cli": "\(.*\)".*/\1/p' "$repo/scripts/agents/gemini/package.json")
      [ "$(GEMINI_CLI_NO_RELAUNCH=true "$gbin" --version 2>/dev/null)" = "$want" ] ||
        lack "Gemini CLI $want ($gbin)" "scripts/install-agent.sh gemini" ;;
    npm)
      command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
        lack "Node.js and npm (the npm package is installed with them)" "apt-get install nodejs npm, or scripts/install-deps.sh" ;;
    debroot)
      command -v mmdebstrap >/dev/null 2>&1 ||
        lack "mmdebstrap (makes the Debian 12 root the .deb test installs the package in)" "apt-get install mmdebstrap, or scripts/install-deps.sh"
      [ "$(id -u)" -eq 0 ] || lack "root (the .deb test chroots into that root)" "run the tests as root" ;;
    *) echo "needs.sh: unknown requirement '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ "$1" = "--" ] && shift

if [ -n "$missing" ]; then
  if [ "${RMCP_TEST_ALLOW_SKIP:-}" = "1" ]; then
    for file; do :; done
    cases=$(grep -cE '^test\(' "$file" || true)
    [ "${cases:-0}" -gt 0 ] || cases=1 # a check program without test() cases counts as one
    echo "# skipped file: $file, $cases case(s) (RMCP_TEST_ALLOW_SKIP=1), missing $what"
    exit 77
  fi
  echo "FAIL: this test cannot run; missing:$missing" >&2
  echo "(set RMCP_TEST_ALLOW_SKIP=1 to skip such tests instead)" >&2
  exit 1
fi
exec "$@"
