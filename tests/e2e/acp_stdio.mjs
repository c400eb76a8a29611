// A bare ACP client over stdio, shared by the standalone agent drivers (claude_acp_usage, codex_acp,
// gemini_acp, opencode_acp): spawns the agent in its own process group, reads its NDJSON lines,
// sends requests (with ids and timeouts) and notifications, answers the requests the agent sends
// (session/request_permission allowed once by default), and ends the whole group on close.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

// The permission option a request gets when nobody says otherwise.
const allowOnce = (params) => params.options.find((o) => o.kind === 'allow_once');

// Starts bin with args in env and cwd, detached; returns {child, lines, asked, permissions, exited,
// stderr(), request(method, params, timeoutMs), notify(method, params), next(test, timeoutMs),
// alive(), close(graceMs)}. lines is every NDJSON line the agent wrote (with echoSent also `> ` +
// each line sent); asked every request it sent, permissions each session/request_permission as
// {line, params}. A request is answered by onRequest(msg) ({result} or {error}, or a promise of one)
// if given, else a permission by answerPermission(params)'s option (default allow_once; none:
// cancelled) and anything else refused. exited resolves {code, signal}.
export function startAcp(bin, args, env, cwd, { onRequest, answerPermission = allowOnce, echoSent = false, graceMs = 3000 } = {}) {
  const child = spawn(bin, args, { env, cwd, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const lines = [];
  const asked = [];
  const permissions = [];
  const pending = new Map();
  const waiters = [];
  let next = 1;
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const send = (msg) => { const l = JSON.stringify(msg); if (echoSent) lines.push(`> ${l}`); child.stdin.write(l + '\n'); };
  const answer = onRequest ?? ((msg) => {
    if (msg.method !== 'session/request_permission') return { error: { code: -32601, message: 'not supported' } };
    const opt = answerPermission(msg.params);
    return { result: { outcome: opt ? { outcome: 'selected', optionId: opt.optionId } : { outcome: 'cancelled' } } };
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    let msg;
    try { msg = JSON.parse(line); } catch { return; }
    for (const w of waiters.slice()) if (w.test(msg)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(msg); }
    if (msg.id !== undefined && msg.method) {
      asked.push(msg);
      if (msg.method === 'session/request_permission') permissions.push({ line, params: msg.params });
      Promise.resolve(answer(msg)).then((a) => send({ jsonrpc: '2.0', id: msg.id, ...a }));
    } else if (msg.id !== undefined && pending.has(msg.id)) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) p.reject(Object.assign(new Error(`${p.method}: ${JSON.stringify(msg.error)}`), { rpc: msg.error })); else p.resolve(msg.result);
    }
  });
  let leaderGone = false;
  const exited = new Promise((r) => child.on('exit', (code, signal) => { leaderGone = true; r({ code, signal }); }));
  const group = (sig) => { try { process.kill(-child.pid, sig); return true; } catch { return false; } };
  // Rejects after timeoutMs with the stderr tail; unref'd, so a message that never comes does not
  // keep the client alive by itself.
  const deadline = (what, timeoutMs, reject) => {
    const t = setTimeout(() => reject(new Error(`${what} in ${timeoutMs} ms\n${stderr.slice(-2000)}`)), timeoutMs);
    t.unref();
    return t;
  };
  return {
    child, lines, asked, permissions, exited,
    stderr: () => stderr,
    notify(method, params) { send({ jsonrpc: '2.0', method, params }); },
    // Sends a request; resolves its result, rejects its error (as .rpc) or a timeout.
    request(method, params, timeoutMs = 60000) {
      const id = next++;
      send({ jsonrpc: '2.0', id, method, params });
      return new Promise((resolve, reject) => {
        const t = deadline(`${method}: no answer`, timeoutMs, reject);
        pending.set(id, { method, resolve: (v) => { clearTimeout(t); resolve(v); }, reject: (e) => { clearTimeout(t); reject(e); } });
      });
    },
    // Resolves with the first message the agent writes from now on that passes test.
    next(test, timeoutMs = 60000) {
      return new Promise((resolve, reject) => {
        const t = deadline('no matching message', timeoutMs, reject);
        waiters.push({ test, resolve: (m) => { clearTimeout(t); resolve(m); } });
      });
    },
    // Whether any of the group is still there.
    alive: () => group(0),
    // Ends the agent: stdin EOF, graceMs for it to leave by itself, then SIGTERM to whatever is left
    // of its process group and SIGKILL 3 s later; resolves {code, signal, by: 'eof' | 'SIGTERM' |
    // 'SIGKILL'} (how the agent itself ended) once none of the group is left.
    async close(grace = graceMs) {
      child.stdin.end();
      const byEof = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), grace))]);
      let by = byEof ? 'eof' : 'SIGTERM';
      group('SIGTERM');
      for (let t0 = Date.now(); group(0);) {
        if (Date.now() - t0 > 3000) { if (!leaderGone) by = 'SIGKILL'; group('SIGKILL'); }
        await new Promise((r) => setTimeout(r, 50));
      }
      return { ...(await exited), by };
    },
  };
}
