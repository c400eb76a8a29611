#!/bin/sh
# Inside the fresh Debian 12 root of deb.sh (pid 1 of its namespace, as root, the source tree
# read-only at /src): the .deb's Depends suffice, doctor says what is missing and then passes, MCP
# answers, the demo fleet runs from /usr/bin, and dpkg -r / --purge leave the root as it was.
# usage: deb_root.sh /pkgtest/reasonix-mcp_<version>_<arch>.deb
set -eu
. /pkgtest/lib.sh
deb=$1
work=/tmp/deb-test
mkdir -p "$work"
export DEBIAN_FRONTEND=noninteractive

# Every path outside the scratch, dpkg/apt state and log dirs, with its type and mode.
snapshot() {
  find / -xdev \( -path /proc -o -path /tmp -o -path /pkgtest -o -path /src -o -path /var/lib/dpkg -o -path /var/lib/apt \
    -o -path /var/cache/apt -o -path /var/cache/debconf -o -path /var/log \) -prune -o -printf '%p %y %m\n' | sort >"$1"
}

# Fails unless the root's paths are those of the snapshot named.
same_as() {
  snapshot "$work/now"
  diff "$1" "$work/now" >"$work/diff" || fail "$2 changed the root (< before, > after):
$(head -40 "$work/diff")"
}

started=$(date +%s)
apt-get update -qq || fail "apt-get update failed"
apt-get install -y -qq --no-install-recommends "$deb" >"$work/apt.log" 2>&1 || fail "apt-get install $deb failed:
$(tail -20 "$work/apt.log")"
echo "ok: apt-get install ./${deb##*/} in a fresh root, Depends from Debian: $(dpkg-query -W -f '${Depends}' reasonix-mcp) ($(($(date +%s) - started)) s)"
[ "$(command -v reasonix-mcp)" = /usr/bin/reasonix-mcp ] || fail "reasonix-mcp is not /usr/bin/reasonix-mcp"
lua_dir_is /usr/bin/reasonix-mcp /usr/share/reasonix-mcp/lua
private_homes "$work"
cd "$HOME"

# doctor without the agent: a FAIL that says what is missing and where to get it
if out=$(reasonix-mcp doctor 2>&1); then fail "doctor passed with no agent installed:
$out"; fi
printf '%s\n' "$out" | grep -q '^\[FAIL\] agent binary  *reasonix not found: put it on PATH' ||
  fail "doctor with no agent does not say so:
$out"
printf '%s\n' "$out" | grep '^\[FAIL\] agent binary' | grep -q 'reasonix-mcp setup claude|codex --install-agent`, or `npm install -g reasonix@' ||
  fail "doctor from the package does not name the package's ways to install the agent:
$out"
printf '%s\n' "$out" | grep -q 'scripts/install-agent' && fail "doctor from the package names a checkout's script:
$out"
echo "ok: doctor with no agent fails on it: $(printf '%s\n' "$out" | grep '^\[FAIL\] agent binary')"
cp /pkgtest/reasonix /usr/local/bin/reasonix # where `npm install -g reasonix` puts it
doctor_passes /usr/bin/reasonix-mcp
printf '%s\n' "$out" | grep -q '^\[ok  \] sandbox  *bubblewrap /usr/bin/bwrap works' || fail "bubblewrap does not work here"
mcp_probe reasonix-mcp

# The demo needs python3 (its offline provider): installed before the snapshot removal is checked against.
dpkg -r reasonix-mcp >/dev/null || fail "dpkg -r failed"
apt-get install -y -qq --no-install-recommends python3 >"$work/apt.log" 2>&1 || fail "apt-get install python3 failed:
$(tail -20 "$work/apt.log")"
snapshot "$work/before"
dpkg -i "$deb" >/dev/null || fail "dpkg -i failed"
RMCP_DEMO_OFFLINE=1 REASONIX_BIN=/usr/local/bin/reasonix reasonix-mcp script /src/examples/demo_fleet.lua >"$work/demo.out" 2>&1 ||
  fail "the demo fleet failed from /usr/bin/reasonix-mcp:
$(cat "$work/demo.out")"
grep -q '^== fleet: 3 session(s)' "$work/demo.out" || fail "the demo did not end with its fleet of 3:
$(cat "$work/demo.out")"
echo "ok: the demo fleet runs from /usr/bin/reasonix-mcp: $(grep '^== fleet' "$work/demo.out")"
# The demo asks agentd to shut down as it ends; the daemon (not its child) exits on its own soon
# after: wait for that, bounded, before anything still running counts as left behind. (No command
# substitution here: its own subshell would count.)
running() {
  left=""
  for pid in /proc/[0-9]*; do
    pid=${pid#/proc/}
    [ "$pid" = 1 ] || [ "$pid" = $$ ] || left="$left $pid"
  done
}
tries=0
running
while [ -n "$left" ] && [ $tries -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); running; done
for pid in $left; do
  [ -e /proc/"$pid" ] && fail "process $pid left behind: $(tr '\0' ' ' </proc/"$pid"/cmdline)"
done

dpkg -r reasonix-mcp >/dev/null || fail "dpkg -r failed"
same_as "$work/before" "install, use and dpkg -r"
dpkg -i "$deb" >/dev/null || fail "dpkg -i failed"
dpkg --purge reasonix-mcp >/dev/null || fail "dpkg --purge failed"
same_as "$work/before" "install and dpkg --purge"
if dpkg-query -W reasonix-mcp >/dev/null 2>&1 || ls /var/lib/dpkg/info/reasonix-mcp.* >/dev/null 2>&1; then
  fail "dpkg still knows reasonix-mcp after --purge"
fi
echo "ok: dpkg -r and dpkg --purge leave no file behind ($(wc -l <"$work/before") paths compared)"
