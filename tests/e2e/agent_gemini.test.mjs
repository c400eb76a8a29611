// Gemini CLI (`agent: "gemini"`, pinned, real) driven through agentd by the MCP tools alone, against
// the scripted Gemini API on 127.0.0.1, by the flow of agent_flow.mjs: spawn with tool_approval=ask →
// watch has the first turn's message → a second turn → a write asks (permission_request in watch), is
// allowed with respond_permission and lands in the session's cwd → configure (model, yolo; effort
// skipped) reaches Gemini CLI and the API, and a second write asks nobody → a message sent during a slow turn
// is `queued` and starts the next turn → stop → resume → the next request to the API carries the
// earlier turns → stop leaves no Gemini process. Prints spawn → first turn end through agentd against the
// agent driven directly (initialize, session/new, first prompt), medians of 3, and their ratio.
// needs: agent python3 clients gemini
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync, mkdirSync } from 'node:fs';
import { AGENT as GEMINI, makeHome, agentEnv, startAgent, nextMinute, INIT } from './gemini_acp.mjs';
import { startGeminiApi } from './gemini_api.mjs';
import { useFixture, until } from './helpers.mjs';
import { agentFlow, assertHistoryKept, compareFirstTurn } from './agent_flow.mjs';

// (rules get the write's target once the fixture's sandbox exists: the API reads the array per request)
const rules = [
  { contains: 'TURN-ONE', text: 'first answer' },
  { contains: 'TURN-TWO', text: 'second answer' },
  { contains: 'SLOW', text: 'slow slow slow slow slow slow', chunk: 5, delayMs: 400 },
  { contains: 'QUEUED-MSG', text: 'queued answer' },
  { contains: 'TURN-THREE', text: 'third answer' },
  { afterTool: 'write_file', text: 'written' },
];
const api = await startGeminiApi(rules);
after(() => api.stop());
const fx = useFixture({});
// agentd's env for Gemini CLI against the scripted API, its home under the fixture's sandbox (made once).
function agentdEnv() {
  const home = join(fx.sb.root, 'gemini');
  if (!existsSync(home)) {
    mkdirSync(home, { recursive: true });
    makeHome(home);
  }
  const g = agentEnv(api.url, home);
  return fx.env({ REASONIX_MCP_AGENT_GEMINI: GEMINI, GEMINI_CLI_HOME: g.GEMINI_CLI_HOME, GEMINI_API_KEY: g.GEMINI_API_KEY,
    GOOGLE_GEMINI_BASE_URL: g.GOOGLE_GEMINI_BASE_URL, GEMINI_CLI_NO_RELAUNCH: 'true' });
}
// The text of the newest user turn of a request to the API.
const lastUser = (r) => JSON.stringify(r.body.contents?.at(-1) ?? {});
const mainRequests = () => api.requests.filter((r) => r.main);

test('gemini through agentd: turns, an asked write allowed, a queued message, stop, resume with history, none left', { timeout: 240000 }, async () => {
  const target = join(fx.sb.ws, 'landed.txt');
  const again = join(fx.sb.ws, 'again.txt');
  rules.unshift({ contains: 'WRITE-IT', tool: 'write_file', args: { file_path: target, content: 'landed\n' } },
    { contains: 'WRITE-AGAIN', tool: 'write_file', args: { file_path: again, content: 'again\n' } });
  const env = agentdEnv();

  // ask mode is Gemini's "default": write_file asks
  await agentFlow(fx, {
    agent: 'gemini', client: 'gemini-host', env,
    say: { one: 'TURN-ONE go', two: 'TURN-TWO go', write: 'WRITE-IT now', slow: 'SLOW go', queued: 'QUEUED-MSG after it', resume: 'TURN-THREE go' },
    answers: { one: /first answer/, two: /second answer/, wrote: /written/, queued: /queued answer/, resume: /third answer/ },
    target, content: 'landed\n', absentBeforeAnswer: true,
    asked: (pr) => assert.equal(pr.tool_call?.kind, 'edit', JSON.stringify(pr)),
    // configure: session/set_model and session/set_mode (yolo); Gemini CLI has no effort option
    configure: {
      set: { model: 'gemini-2.5-pro', effort: 'high', tool_approval: 'yolo' }, say: 'WRITE-AGAIN now', answer: /written/,
      target: again, content: 'again\n',
      applied: { model: 'gemini-2.5-pro', tool_approval: 'yolo' }, skipped: ['effort'],
      agentConfig: { model: 'gemini-2.5-pro', mode: 'yolo' },
      reached: () => assert.equal(mainRequests().find((r) => lastUser(r).includes('WRITE-AGAIN')).model, 'gemini-2.5-pro',
        'the new model reached the API'),
    },
    // (steer = "queue": a second prompt would cancel the turn)
    slowReached: () => until(() => api.requests.some((r) => r.main && lastUser(r).includes('SLOW go')), 20000, 'the slow turn reached the API'),
    queued: () => {
      const slowReq = mainRequests().find((r) => lastUser(r).includes('SLOW go'));
      assert.equal(slowReq.complete, true, 'the slow turn ran to its end, not cancelled');
      assert.ok(mainRequests().some((r) => lastUser(r).includes('QUEUED-MSG')), 'the queued message started its own turn');
    },
    // Gemini CLI 0.61.0 names its chat file by the minute the session was made; a session/load in
    // that same minute starts the file afresh and loses the history: wait for a minute after the one
    // the first turn ended in (the session was made before it; spawn's start may be a minute earlier).
    beforeResume: (t1) => nextMinute(t1),
    requestCount: () => api.requests.length,
    history: (n) => {
      assertHistoryKept(JSON.stringify(api.requests.slice(n).find((r) => r.main && lastUser(r).includes('TURN-THREE')).body.contents));
    },
  });
});

test('spawn → first turn end: through agentd against Gemini CLI driven directly (medians of 3)', async () => {
  // directly: one home (agentd's was warmed by the test above)
  await compareFirstTurn(fx, {
    agent: 'gemini', client: 'gemini-time', env: agentdEnv(), answer: /first answer/, init: INIT,
    home: () => {
      const home = join(fx.sb.root, 'gemini-direct');
      const cwd = join(home, 'work');
      mkdirSync(cwd, { recursive: true });
      makeHome(home);
      return { cwd, start: () => startAgent({ ...agentEnv(api.url, home), REASONIX_MCP_HOME: fx.sb.mcp }, cwd), remove: () => {} };
    },
  });
});
