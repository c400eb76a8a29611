/* test_lua_host.c: the Lua host and the rmcp.* bindings as Lua sees them: luv on our loop,
 * errors in callbacks logged and survived, luv-style failure values, and the reasonix-mcp binary:
 * exit codes (sys.stop, runs dry, main raises) and a teardown that flushes pending writes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lua_host.h"
#include "modules.h"
#include "proc.h"
#include "testloop.h"

/* The modules the binary has (main.c's list): the bindings are what this test drives. */
static const luaL_Reg modules[] = {
  {"rmcp.channel", luaopen_rmcp_channel}, {"rmcp.proc", luaopen_rmcp_proc}, {"rmcp.sock", luaopen_rmcp_sock},
  {"rmcp.sys", luaopen_rmcp_sys}, {"rmcp.fswatch", luaopen_rmcp_fswatch}, {"rmcp.json", luaopen_rmcp_json},
  {"rmcp.relay", luaopen_rmcp_relay}, {NULL, NULL},
};

static char tmp[PATH_MAX];
static lua_host_t *H;
static int lua_done;

/* Lua: ok(cond, what) records a check. */
static int l_ok(lua_State *L)
{
  if (!lua_toboolean(L, 1)) {
    lua_Debug ar;
    int line = lua_getstack(L, 1, &ar) && lua_getinfo(L, "l", &ar) ? ar.currentline : -1;
    fprintf(stderr, "  FAIL (lua line %d): %s\n", line, luaL_optstring(L, 2, "?"));
    check_failures++;
  }
  return 0;
}

/* Lua: done() ends the current run. */
static int l_done(lua_State *L)
{
  (void)L;
  lua_done = 1;
  return 0;
}

/* Run a chunk, then the loop until done() (or a 10 s deadline). */
static void run_lua(const char *name, const char *chunk)
{
  lua_State *L = H->L;
  lua_done = 0;
  int r = luaL_loadbuffer(L, chunk, strlen(chunk), name);
  CHECKF(r == LUA_OK, "load %s: %s", name, lua_tostring(L, -1));
  if (r != LUA_OK) {
    lua_pop(L, 1);
    return;
  }
  CHECKF(lua_host_pcall(L, 0, 0) == LUA_OK, "%s raised", name);
  CHECKF(run_until(H->loop, &lua_done, 10000), "%s: done() not reached", name);
}

/* Capture fd 2 into a file while fn runs; returns the captured text (malloc'd). */
static char *capture_stderr(const char *name, const char *chunk)
{
  char path[PATH_MAX + 32];
  snprintf(path, sizeof(path), "%s/stderr.txt", tmp);
  fflush(stderr);
  int saved = dup(2);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(saved >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
  run_lua(name, chunk);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char *buf = calloc(1, 65536);
  fd = open(path, O_RDONLY);
  if (read(fd, buf, 65535) < 0) buf[0] = '\0';
  close(fd);
  return buf;
}

static const char *lua_env =
  "local host = require 'rmcp.host'\n"
  "ok(host.lua_dir == TMP, 'rmcp.host.lua_dir')\n"
  "ok(host.version == '" RMCP_VERSION "', 'rmcp.host.version')\n"
  "ok(host.exe:match('/test_lua_host$'), 'rmcp.host.exe is the realpath of /proc/self/exe: ' .. host.exe)\n"
  "ok(host.invoked == host.exe, 'rmcp.host.invoked defaults to exe')\n"
  "ok(package.path:sub(1, #TMP + 7) == TMP .. '/?.lua;', 'package.path starts with the lua dir')\n"
  "ok(package.path:find(TMP .. '/?/init.lua;', 1, true), 'init.lua pattern')\n"
  "local uv = require 'luv'\n"
  "ok(package.loaded.luv == uv and package.loaded['luv'] == uv, 'luv registered once')\n"
  "local cjson = require 'cjson'; local safe = require 'cjson.safe'\n"
  "ok(cjson.encode({a=1}) == '{\"a\":1}', 'cjson')\n"
  "local v, e = safe.decode('{'); ok(v == nil and e, 'cjson.safe returns nil, err')\n"
  "for _, m in ipairs{'rmcp.channel','rmcp.proc','rmcp.sock','rmcp.sys'} do ok(require(m), m) end\n"
  "local t = uv.new_timer()\n"
  "t:start(1, 0, function() t:close(); done() end)\n";

static const char *lua_cb_errors =
  "local uv = require 'luv'\n"
  "local t1, t2 = uv.new_timer(), uv.new_timer()\n"
  "t1:start(1, 0, function() t1:close(); error('boom in luv timer') end)\n"
  "t2:start(20, 0, function() t2:close()\n"
  "  local proc = require 'rmcp.proc'\n"
  "  local n = 0\n"
  "  assert(proc.spawn{file='/bin/sh', args={'-c','echo a; echo b'}, stdin='null',\n"
  "    on_line=function(l) n = n + 1; error('boom in on_line ' .. l) end,\n"
  "    on_exit=function(code) ok(n == 2 and code == 0, 'on_exit after erroring on_line'); done() end})\n"
  "end)\n";

static const char *lua_proc =
  "local proc = require 'rmcp.proc'\n"
  "local p, err, code = proc.spawn{file='/no/such/bin'}\n"
  "ok(p == nil and code == 'ENOENT' and err:match('^ENOENT: .*/no/such/bin'), 'ENOENT: ' .. tostring(err))\n"
  "p, err, code = proc.spawn{file='/bin/sh', cwd='/no/such/dir'}\n"
  "ok(p == nil and code == 'ENOENT' and err:match('chdir /no/such/dir'), 'bad cwd: ' .. tostring(err))\n"
  "ok(not pcall(proc.spawn, {file=1}), 'file must be a string')\n"
  "ok(not pcall(proc.spawn, {file='/bin/sh', stdout='bogus'}), 'bad stdout raises')\n"
  "ok(not pcall(proc.spawn, {file='/bin/sh', on_exit=42}), 'callback must be a function')\n"
  "ok(not pcall(proc.spawn, {file='/bin/sh', pdeathsig='BOGUS'}), 'an unknown pdeathsig signal raises')\n"
  "local lines, errs = {}, ''\n"
  "local p1; p1 = assert(proc.spawn{file='/bin/sh', args={'-c','read x; echo \"got $x\"; echo oops >&2; exit 2'},\n"
  "  on_line=function(l) lines[#lines+1] = l end, on_stderr=function(c) errs = errs .. c end,\n"
  "  on_exit=function(c, s)\n"
  "    ok(c == 2 and s == 0, 'exit code 2')\n"
  "    ok(lines[1] == 'got hello' and errs == 'oops\\n', 'lines and stderr')\n"
  "    ok(p1 and not p1:running(), 'not running after exit')\n"
  "    local p2 = assert(proc.spawn{file='sleep', args={'300'}, stdin='null',\n"
  "      on_exit=function(c2, s2) ok(c2 == 143 and s2 == 15, 'TERM: ' .. c2 .. ' ' .. s2)\n"
  "        ok(p1:kill('KILL') == false, 'kill after exit is a no-op'); done() end})\n"
  "    ok(type(p2:pid()) == 'number' and p2:running(), 'pid, running')\n"
  "    ok(p2:kill('SIGTERM') == true, 'kill sends')\n"
  "  end})\n"
  "ok(p1.stdin:write('hello') == 0 or true, 'write')\n"
  "ok(not pcall(p1.stdin.write, p1.stdin, 'a\\nb'), 'ndjson stdin refuses an embedded newline')\n"
  "p1.stdin:shutdown()\n";

static const char *lua_proc_stdio =
  "local proc, channel, uv = require 'rmcp.proc', require 'rmcp.channel', require 'luv'\n"
  "local lines = {}\n"
  "local p; p = assert(proc.spawn{file='/bin/sh',\n"
  "  args={'-c', 'read x; printf \"got %s\\\\npart\" \"$x\"; read y; echo \"ial $y\"; echo e >&2; exit 5'},\n"
  "  on_line=function(l) lines[#lines+1] = l end,\n"
  "  on_exit=function(code)\n"
  "    ok(code == 5 and lines[2] == 'partial two', 'lines through the pipes: ' .. tostring(lines[2]))\n"
  "    ok(not p.stdout:is_closed(), 'the pipes are open inside on_exit')\n"
  "    local t = uv.new_timer(); t:start(0, 0, function() t:close()\n"
  "      ok(p.stdin:is_closed() and p.stdout:is_closed() and p.stderr:is_closed(), 'closed after exit')\n"
  "      local pok, perr = pcall(p.stdout.pause, p.stdout)\n"
  "      ok(not pok and tostring(perr):match('channel is closed'), 'pause of a closed pipe raises: ' .. tostring(perr))\n"
  "      ok(not pcall(p.stderr.resume, p.stderr), 'resume of a closed pipe raises')\n"
  "      local w, _, wcode = p.stdin:write('x'); ok(w == nil and wcode == 'EPIPE', 'write after exit: EPIPE')\n"
  "      ok(p.stdin:queued() == 0 and p.stdout:buffered() == 0, 'queued and buffered are 0')\n"
  "      local f, _, fcode = p.stdout:fileno(); ok(f == nil and fcode == 'EBADF', 'no fd after exit')\n"
  "      ok(p.stdin:shutdown() == nil, 'shutdown after exit: nil, err')\n"
  "      p.stdout:close(); collectgarbage(); collectgarbage()\n"
  "      done() end)\n"
  "  end})\n"
  "ok(tostring(p.stdin):match('^rmcp.channel') and getmetatable(p.stdout) == getmetatable(p.stdin), 'pipes are channel objects')\n"
  "ok(p.stdin ~= p.stdout and p.stdout == p.stdout, 'one object per pipe')\n"
  "ok(math.type(p.stdin:fileno()) == 'integer' and p.stdin:fileno() ~= p.stdout:fileno(), 'fileno of each pipe')\n"
  "ok(p.kill and p.pid and p.bogus == nil, 'methods are still found')\n"
  "ok(p.write == nil and p.queued == nil and p.close_stdin == nil and p.pause == nil and p.resume == nil\n"
  "  and p.buffered == nil and p.fds == nil, 'no channel method is re-exported on the process')\n"
  "ok(p.stdin:write('one') == 0, 'stdin write')\n"
  "ok(not pcall(p.stdin.write, p.stdin, 'a\\nb'), 'ndjson stdin refuses an embedded newline')\n"
  "local t = uv.new_timer()\n"
  "t:start(5, 5, function()\n"
  "  if p.stdout:buffered() == 0 then return end\n"
  "  t:close()\n"
  "  ok(#lines == 1 and lines[1] == 'got one', 'first line, then a partial one buffered')\n"
  "  p.stdout:pause(); p.stderr:pause()\n"
  "  ok(p.stdin:write('two') == 0, 'second write'); p.stdin:shutdown()\n"
  "  local t2 = uv.new_timer(); t2:start(200, 0, function() t2:close()\n"
  "    ok(#lines == 1, 'paused: nothing delivered, no exit before EOF')\n"
  "    p.stdout:resume(); p.stderr:resume() end)\n"
  "end)\n"
  "local n = assert(proc.spawn{file='/bin/true', stdin='null', stdout='null', stderr='pipe', on_exit=function() end})\n"
  "ok(n.stdin == nil and n.stdout == nil and n.stderr, 'no channel where there is no pipe')\n";

static const char *lua_proc_close_pipe =
  "local proc = require 'rmcp.proc'\n"
  "local q; q = assert(proc.spawn{file='/bin/sh', args={'-c', 'read x; echo late; exit 3'},\n"
  "  on_exit=function(code, sig)\n"
  "    ok(code == 3 or sig == 13, 'on_exit fires after its holder closed stdout: ' .. code .. ' ' .. sig)\n"
  "    local out = q.stdout; q = nil; collectgarbage(); collectgarbage()\n"
  "    ok(out:is_closed() and out:buffered() == 0, 'a pipe outlives its process object, closed')\n"
  "    done() end})\n"
  "q.stdout:close(); q.stderr:close(); q.stdout:close()\n"
  "ok(q.stdout:is_closed() and q:running(), 'a pipe closed by its holder; the process runs on')\n"
  "ok(not pcall(q.stdout.pause, q.stdout), 'pause after close raises')\n"
  "ok(q.stdin:write('go') == 0, 'stdin still writes'); q.stdin:shutdown()\n";

static const char *lua_channel_sock =
  "local channel, sock, sys = require 'rmcp.channel', require 'rmcp.sock', require 'rmcp.sys'\n"
  "local ok2, err, code = sock.secure_dir('/proc/nope/x')\n"
  "ok(ok2 == nil and type(err) == 'string' and type(code) == 'string', 'secure_dir failure: ' .. tostring(err))\n"
  "local dir = TMP .. '/home'\n"
  "assert(sock.secure_dir(dir))\n"
  "local l1 = assert(sys.flock(dir .. '/lock'))\n"
  "local l2, lerr, lcode = sys.flock(dir .. '/lock')\n"
  "ok(l2 == nil and lerr == 'locked' and lcode == 'EWOULDBLOCK', 'second flock is refused')\n"
  "sys.unlock(l1)\n"
  "local l3 = sys.flock(dir .. '/lock'); ok(l3, 'flock after unlock'); sys.unlock(l3)\n"
  "ok(sys.geteuid() >= 0, 'geteuid')\n"
  "local path = dir .. '/s.sock'\n"
  "local srv; srv = assert(sock.listen(path, function(fd, uid, pid)\n"
  "  ok(uid == sys.geteuid(), 'peer uid')\n"
  "  local n, ch = 0\n"
  "  ch = assert(channel.open(fd, {on_line=function(line)\n"
  "    n = n + 1\n"
  "    if n == 2 then ch:write('bye ' .. line); ch:close(); srv:close() end\n"
  "  end}))\n"
  "end))\n"
  "local fd = assert(sock.connect(path))\n"
  "local got = {}\n"
  "local c; c = assert(channel.open(fd, {on_line=function(l) got[#got+1] = l end,\n"
  "  on_eof=function(e) ok(e == nil and got[1] == 'bye two', 'reply then EOF: ' .. tostring(got[1]))\n"
  "    ok(not c:is_closed(), 'open until closed'); ok(c:buffered() == 0, 'nothing buffered at EOF')\n"
  "    c:close(); ok(c:is_closed(), 'is_closed')\n"
  "    c:close(); ok(c:queued() == 0 and c:buffered() == 0, 'closed: queued 0, buffered 0')\n"
  "    local f, ferr, fcode = c:fileno(); ok(f == nil and fcode == 'EBADF', 'fileno after close: ' .. tostring(ferr))\n"
  "    local pok, perr = pcall(c.pause, c); ok(not pok and perr:match('channel is closed'), 'pause after close raises')\n"
  "    ok(not pcall(c.resume, c), 'resume after close raises')\n"
  "    local w, werr, wcode = c:write('x'); ok(w == nil and wcode == 'EPIPE', 'write after close')\n"
  "    done() end}))\n"
  "ok(not pcall(c.write, c, 'a\\nb'), 'ndjson write refuses an embedded newline')\n"
  "ok(not pcall(channel.open, 0, {mode='bogus'}), 'bad mode raises')\n"
  "local bad, berr, bcode = channel.open(999)\n"
  "ok(bad == nil and bcode == 'EBADF', 'bad fd: ' .. tostring(berr))\n"
  "ok(c:write('one') == 0 and c:write('two') == 0, 'writes go out directly')\n"
  "ok(c:queued() == 0, 'queued')\n"
  "ok(c:fileno() == fd, 'fileno is the fd it was opened on')\n";

static const char *lua_relay =
  "local relay, uv = require 'rmcp.relay', require 'luv'\n"
  "local function pair() return uv.socketpair(nil, nil, {nonblock = true}, {nonblock = true}) end\n"
  "local a, b = pair(), pair()\n"
  "local ends, ga, gb = 0, '', ''\n"
  "local function finish() ends = ends + 1; if ends == 2 then done() end end\n"
  "local r; r = assert(relay.pipe(a[2], b[1], {to_a = 'OK\\n', to_b = 'HEAD\\n', on_done = function(ab, ba, err)\n"
  "  ok(ab == 5 and ba == 5 and err == nil, 'on_done: ' .. ab .. ' ' .. ba .. ' ' .. tostring(err))\n"
  "  ok(r:is_closed(), 'closed once done'); local x, y = r:stats(); ok(x == 5 and y == 5, 'stats kept')\n"
  "  r:close(); finish() end}))\n"
  "ok(not r:is_closed() and select('#', r:stats()) == 2, 'open, stats')\n"
  "uv.fs_close(a[2]); uv.fs_close(b[1])\n"
  "local pa, pb = uv.new_pipe(), uv.new_pipe(); pa:open(a[1]); pb:open(b[2])\n"
  "pb:read_start(function(err, data)\n"
  "  if data then gb = gb .. data; return end\n"
  "  ok(gb == 'HEAD\\nhello', 'b: the prefix, then a\\'s bytes, then EOF: ' .. gb)\n"
  "  pb:write('world'); pb:shutdown(function() pb:close() end) end)\n"
  "pa:read_start(function(err, data)\n"
  "  if data then ga = ga .. data; return end\n"
  "  ok(ga == 'OK\\nworld', 'a: the prefix, then b\\'s bytes, then EOF: ' .. ga); pa:close(); finish() end)\n"
  "pa:write('hello'); pa:shutdown()\n"
  "local n, nerr, ncode = relay.pipe(999, 998)\n"
  "ok(n == nil and ncode == 'EBADF' and nerr:match('^EBADF'), 'a bad fd: nil, err, code: ' .. tostring(nerr))\n"
  "local c, d = pair(), pair()\n"
  "ok(not pcall(relay.pipe, c[1], d[1], {to_a = 5}), 'a prefix that is not a string raises')\n"
  "ok(not pcall(relay.pipe, c[1], d[1], {on_done = 5}), 'on_done must be a function')\n"
  "local q = assert(relay.pipe(c[1], d[1], {on_done = function() ok(false, 'no on_done after close') end}))\n"
  "q:close(); q:close(); ok(q:is_closed(), 'close is idempotent')\n"
  "for _, fd in ipairs{c[1], c[2], d[1], d[2]} do uv.fs_close(fd) end\n";

/* Runs the binary with main_lua as its rmcp.main and args on the shell command line; out gets its
 * stdout, and its stderr too when with_stderr (else stderr goes to <tmp>/stub/stderr: a sanitizer's
 * own notes, such as LeakSanitizer's "Unable to get registers from thread", must not change what a
 * test reads as stdout). Returns the exit code (128 + signal when killed). */
static int run_bin(const char *main_lua, const char *args, int with_stderr, char *out, size_t cap)
{
  const char *bin = getenv("RMCP_BIN");
  char dir[PATH_MAX + 32], file[PATH_MAX + 64], cmd[2 * PATH_MAX + 256];
  snprintf(dir, sizeof(dir), "%s/stub/rmcp", tmp);
  mkdir(dir, 0700);
  snprintf(file, sizeof(file), "%s/main.lua", dir);
  FILE *f = fopen(file, "w");
  REQUIRE(f);
  fputs(main_lua, f);
  fclose(f);
  if (with_stderr)
    snprintf(cmd, sizeof(cmd), "REASONIX_MCP_LUA_DIR=%s/stub %s %s 2>&1", tmp, bin, args);
  else
    snprintf(cmd, sizeof(cmd), "REASONIX_MCP_LUA_DIR=%s/stub %s 2>%s/stub/stderr %s", tmp, bin, tmp, args);
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_binary(void)
{
  const char *bin = getenv("RMCP_BIN");
  if (bin == NULL || access(bin, X_OK) != 0) {
    TEST("(skipped: RMCP_BIN not set; run through ctest)");
    return;
  }
  char tmpd[PATH_MAX + 32];
  snprintf(tmpd, sizeof(tmpd), "%s/stub", tmp);
  mkdir(tmpd, 0700);
  static char out[4 * 1024 * 1024];
  TEST("binary: argv reaches main(); sys.stop(code) is the exit code");
  int rc = run_bin("return {main = function(argv)\n"
                   "  io.stdout:write(argv[1], ' ', argv[2], ' ', tostring(argv[0]:match('reasonix%-mcp$') ~= nil), '\\n')\n"
                   "  io.stdout:flush(); require('rmcp.sys').stop(7) end}\n",
                   "alpha beta", 0, out, sizeof(out));
  CHECKF(rc == 7 && strcmp(out, "alpha beta true\n") == 0, "rc %d out %s", rc, out);

  TEST("binary: exits 0 when the loop runs dry");
  rc = run_bin("return {main = function() local uv = require 'luv'; local t = uv.new_timer()\n"
               "  t:start(5, 0, function() t:close(); print('tick') end) end}\n",
               "", 0, out, sizeof(out));
  CHECKF(rc == 0 && strcmp(out, "tick\n") == 0, "rc %d out %s", rc, out);

  TEST("binary: main() raising is logged with a traceback and exits 1");
  rc = run_bin("return {main = function() error('no such subcommand') end}\n", "x", 1, out, sizeof(out));
  CHECKF(rc == 1 && strstr(out, "reasonix-mcp: lua error:") && strstr(out, "no such subcommand") &&
           strstr(out, "stack traceback"),
         "rc %d out %s", rc, out);

  TEST("binary: a callback error is survived; stdout written before sys.stop is flushed");
  rc = run_bin("return {main = function()\n"
               "  local uv, sys = require 'luv', require 'rmcp.sys'\n"
               "  local out = assert(require('rmcp.channel').open(1, {read = false}))\n"
               "  local t = uv.new_timer()\n"
               "  t:start(1, 0, function() t:close(); error('in a timer') end)\n"
               "  local t2 = uv.new_timer()\n"
               "  t2:start(10, 0, function() t2:close()\n"
               "    for i = 1, 3000 do out:write(string.rep('y', 1000)) end\n"
               "    out:write('end'); sys.stop(3) end) end}\n",
               "", 1, out, sizeof(out));
  char *end = strstr(out, "\nend\n");
  CHECKF(rc == 3 && strstr(out, "in a timer") && end, "rc %d, %zu bytes", rc, strlen(out));

  TEST("binary: teardown flushes queued channel writes to a reader that starts late (bounded)");
  rc = run_bin("return {main = function()\n"
               "  local out = assert(require('rmcp.channel').open(1, {read = false, mode = 'raw'}))\n"
               "  local s = string.rep('q', 65536)\n"
               "  for i = 1, 48 do out:write(s) end\n"
               "  if out:queued() > 1024 * 1024 then out:write('queued\\n') end\n"
               "  require('rmcp.sys').stop(0) end}\n",
               "| (sleep 0.3; wc -c)", 0, out, sizeof(out));
  CHECKF(rc == 0 && atol(out) == 48L * 65536 + 7, "rc %d, reader got %s", rc, out);
}

int main(void)
{
  printf("test_lua_host\n");
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/rmcp-test-host-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != NULL);
  REQUIRE(realpath(tmpl, tmp) != NULL);
  uv_loop_t loop;
  uv_loop_init(&loop);
  H = lua_host_new(&loop, tmp, NULL, NULL, modules);
  REQUIRE(H);
  lua_register(H->L, "ok", l_ok);
  lua_register(H->L, "done", l_done);
  lua_pushstring(H->L, tmp);
  lua_setglobal(H->L, "TMP");

  TEST("host: rmcp.host info, package.path, luv (one loop, registered once), cjson, preloads");
  run_lua("env", lua_env);
  TEST("errors in luv and rmcp callbacks are logged with a traceback and survived");
  char *err = capture_stderr("cb_errors", lua_cb_errors);
  CHECKF(strstr(err, "reasonix-mcp: lua error:") && strstr(err, "boom in luv timer") &&
           strstr(err, "boom in on_line a") && strstr(err, "boom in on_line b") && strstr(err, "stack traceback"),
         "stderr was: %s", err);
  free(err);
  TEST("rmcp.proc from Lua: failures as nil, msg, code; programmer errors raise; exit, kill");
  run_lua("proc", lua_proc);
  TEST("rmcp.proc pipes are rmcp.channel objects: write, shutdown, pause, buffered, fileno; closed after exit");
  run_lua("proc_stdio", lua_proc_stdio);
  TEST("a pipe its holder closes counts as EOF: on_exit still fires");
  run_lua("proc_close_pipe", lua_proc_close_pipe);
  TEST("rmcp.channel, rmcp.sock, rmcp.sys from Lua");
  run_lua("channel_sock", lua_channel_sock);
  TEST("rmcp.relay from Lua: prefixes, both ways, half-close, on_done and stats; failures; close");
  run_lua("relay", lua_relay);
  proc_teardown();
  lua_host_free(H);
  loop_finish(&loop);
  test_binary();
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmp);
  return check_done();
}
