#!/bin/sh
# Inside the fresh Debian 12 root of fresh_machine.sh (pid 1 of its namespace, as root): makes the
# user ada (sudo without a password, as a desktop install's first user has it), then types what she
# types, as her, printing the transcript: each command, its output trimmed, its wall time, and the
# totals. usage: fresh_machine_root.sh DEB CLAUDE_VERSION PROVIDER_PORT API_PORT
set -eu
. /pkgtest/lib.sh
deb=$1 claude_version=$2 provider_port=$3 api_port=$4
work=/tmp/fresh-machine
mkdir -p "$work"

# the machine: the site's certificate authorities trusted (as every machine behind its TLS proxy
# has them; npm is told to use the system's list, since Node.js has its own), a user, sudo for her,
# its own name resolvable (else sudo complains)
cp /pkgtest/local-ca/*.crt /usr/local/share/ca-certificates/ 2>/dev/null && update-ca-certificates >/dev/null 2>&1
echo 'cafile=/etc/ssl/certs/ca-certificates.crt' >/etc/npmrc
useradd -m -s /bin/sh ada
echo 'ada ALL=(ALL:ALL) NOPASSWD: ALL' >/etc/sudoers.d/ada
echo "127.0.1.1 $(hostname)" >>/etc/hosts
cp "$deb" /home/ada/ && chown ada:ada "/home/ada/${deb##*/}"
user_env="HOME=/home/ada USER=ada LOGNAME=ada SHELL=/bin/sh PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TERM=dumb"
total_ms=0 ours_ms=0

# Milliseconds since the epoch.
now_ms() {
  echo $(($(date +%s%N) / 1000000))
}

# Prints output file $1, each line indented; one longer than $2 lines as its first and last lines.
trimmed() {
  n=$(wc -l <"$1")
  if [ "$n" -le "$2" ]; then sed 's/^/    /' "$1"; return; fi
  head -$(($2 / 2)) "$1" | sed 's/^/    /'
  echo "    … ($((n - $2 / 2 - 4)) lines left out)"
  tail -4 "$1" | sed 's/^/    /'
}

# Types command $3 as ada in her home ($1: ours when it is a reasonix-mcp step, else host), prints it,
# its output (up to $2 lines) and its wall time; the output stays in $work/out. Fails when it fails.
step() {
  kind=$1 lines=$2
  shift
  printf '\nada@fresh:~$ %s\n' "$2"
  started=$(now_ms)
  rc=0
  (cd /home/ada && setpriv --reuid=ada --regid=ada --init-groups env -i $user_env sh -c "$2") >"$work/out" 2>&1 || rc=$?
  ms=$(($(now_ms) - started))
  trimmed "$work/out" "$lines"
  printf '    [%s: %d.%01d s]\n' "$([ $rc = 0 ] && echo ok || echo "exit $rc")" $((ms / 1000)) $((ms % 1000 / 100))
  total_ms=$((total_ms + ms))
  [ "$kind" = ours ] && ours_ms=$((ours_ms + ms))
  [ $rc = 0 ] || fail "$2 exited $rc"
}

echo "A fresh Debian 12 machine ($(cat /etc/debian_version), $(dpkg-query -W -f '${binary:Package}\n' | wc -l) packages: mmdebstrap's apt variant + ca-certificates, sudo, passwd), user ada."
echo "(A chroot: the kernel refuses user namespaces to a chrooted process, so doctor's sandbox check is an [info] here.)"
echo "The model APIs stand on 127.0.0.1 for the internet: Claude Code's (a scripted model, port $api_port) and the agent's provider (port $provider_port)."
step ours 12 "sudo apt-get update -qq"
step ours 12 "sudo apt-get install -y ./${deb##*/}"
step host 12 "sudo apt-get install -y --no-install-recommends nodejs npm"
step host 12 "sudo npm install -g --no-audit --no-fund @anthropic-ai/claude-code@$claude_version"
step host 12 "claude --version"
# the agent's model provider: what a user writes once (docs/setup.md), here the offline provider
step ours 12 "mkdir -p ~/.reasonix && printf '%s\n' 'default_model = \"mock/mock-model\"' '[[providers]]' 'name = \"mock\"' 'kind = \"openai\"' \
'base_url = \"http://127.0.0.1:$provider_port/v1\"' 'models = [\"mock-model\"]' 'default = \"mock-model\"' 'api_key_env = \"MOCK_API_KEY\"' >~/.reasonix/config.toml && echo MOCK_API_KEY=mock-key >~/.reasonix/.env"
step ours 60 "reasonix-mcp setup claude --install-agent"
# Claude Code's login: its API at the scripted model, nothing else online
user_env="$user_env ANTHROPIC_BASE_URL=http://127.0.0.1:$api_port ANTHROPIC_API_KEY=scripted-key DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"
printf '\nada@fresh:~$ export ANTHROPIC_BASE_URL=http://127.0.0.1:%s ANTHROPIC_API_KEY=… DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\n' "$api_port"
mkdir /home/ada/project && chown ada:ada /home/ada/project
step ours 60 "cd project && claude -p 'Spawn a reasonix agent to say hello, watch it to the end of its turn, and tell me what it said.' --allowedTools mcp__reasonix"
grep -q 'FLEET-DONE agent rx-.* ended its turn (end_turn): fresh machine reply' "$work/out" ||
  fail "Claude Code did not report the agent's finished turn"
step ours 12 "reasonix-mcp ctl shutdown"
# nothing of the fleet outlives it (the exit of a process not ours to wait on has no event: looked
# at, for up to 10 s; zombies, whose cmdline is empty, are done)
for i in $(seq 100); do
  left=
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    case $p in 1 | "$$") continue ;; esac
    cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
    [ -n "$cmd" ] && left="$left
  $p $cmd"
  done
  [ -z "$left" ] && break
  [ "$i" = 100 ] && fail "left behind after ctl shutdown:$left"
  sleep 0.1
done
printf '\nTotal wall time %d.%01d s; the reasonix-mcp steps (install, agent config, setup, the fleet run) %d.%01d s; Node.js and Claude Code %d.%01d s.\n' \
  $((total_ms / 1000)) $((total_ms % 1000 / 100)) $((ours_ms / 1000)) $((ours_ms % 1000 / 100)) \
  $(((total_ms - ours_ms) / 1000)) $(((total_ms - ours_ms) % 1000 / 100))
