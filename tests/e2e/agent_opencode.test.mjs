// opencode (`agent: "opencode"`, pinned, real) driven through agentd by the MCP tools alone, against
// the scripted Chat Completions provider on 127.0.0.1, by the flow of agent_flow.mjs: spawn with
// tool_approval=ask → watch has the first turn's message → a second turn → a write asks
// (permission_request in watch), is allowed with respond_permission and lands in the session's cwd →
// configure (model, yolo; effort skipped) reaches opencode and the provider, a second write asks nobody →
// a message sent during a slow turn is `queued` and starts the next turn → stop → resume → the next
// request to the provider carries the earlier turns → stop leaves no opencode process. Prints spawn →
// first turn end through agentd and driven directly.
// needs: agent python3 clients opencode
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { AGENT as OPENCODE, makeHome, startAgent, INIT } from './opencode_acp.mjs';
import { useFixture } from './helpers.mjs';
import { agentFlow, directFirstTurn, reportFirstTurn } from './agent_flow.mjs';

const scenario = (target, again) => ({
  models: ['mock-model', 'mock-large'],
  rules: [
    { name: 'title', any_contains: 'Generate a title', text: 'Title here' },
    { name: 'one', last_role: 'user', user_contains: 'TURN-ONE', text: 'first answer' },
    { name: 'two', last_role: 'user', user_contains: 'TURN-TWO', text: 'second answer' },
    { name: 'write', last_role: 'user', user_contains: 'WRITE-IT', tool_calls: [{ name: 'write', arguments: { filePath: target, content: 'landed\n' } }] },
    { name: 'again', last_role: 'user', user_contains: 'WRITE-AGAIN', tool_calls: [{ name: 'write', arguments: { filePath: again, content: 'again\n' } }] },
    { name: 'written', last_role: 'tool', last_tool_name: 'write', text: 'written' },
    { name: 'slow', last_role: 'user', user_contains: 'SLOW', text: 'x'.repeat(40), chunk: 2, delay: 0.1 },
    { name: 'queued', last_role: 'user', user_contains: 'QUEUED-MSG', text: 'queued answer' },
    { name: 'three', last_role: 'user', user_contains: 'TURN-THREE', text: 'third answer' },
  ],
  default: { text: 'ok' },
});
const fx = useFixture({});
const timings = {};
let home;
after(() => home?.cleanup());
// The text of a provider request's messages, and of its last one.
const all = (q) => JSON.stringify(q.body.messages);
const last = (q) => JSON.stringify(q.body.messages.at(-1));

test('opencode through agentd: turns, an asked write allowed, a queued message, stop, resume with history, none left', { timeout: 120000 }, async () => {
  const target = join(fx.sb.ws, 'landed.txt');
  const again = join(fx.sb.ws, 'again.txt');
  await fx.provider.setScenario(scenario(target, again));
  home = makeHome(fx.provider.url);
  // a second model, for configure to switch to
  const cfgFile = join(home.env.XDG_CONFIG_HOME, 'opencode', 'opencode.json');
  const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
  cfg.provider.mock.models['mock-large'] = { ...cfg.provider.mock.models['mock-model'], name: 'Mock Large' };
  writeFileSync(cfgFile, JSON.stringify(cfg));
  // its own XDG dirs and config; not makeHome's OPENCODE_PERMISSION (edits and commands ask): the
  // spawn's tool_approval=ask must make it ask (the profile's approval_env sets it)
  const env = fx.env({ REASONIX_MCP_AGENT_OPENCODE: OPENCODE,
    ...Object.fromEntries(Object.entries(home.env).filter(([k]) => (k.startsWith('XDG_') || k.startsWith('OPENCODE_') || k === 'MOCK_API_KEY')
      && k !== 'OPENCODE_PERMISSION')) });

  timings.agentd = await agentFlow(fx, {
    agent: 'opencode', client: 'opencode-host', env,
    say: { one: 'TURN-ONE go', two: 'TURN-TWO go', write: 'WRITE-IT now', slow: 'SLOW go', queued: 'QUEUED-MSG after it', resume: 'TURN-THREE go' },
    answers: { one: /first answer/, two: /second answer/, wrote: /written/, queued: /queued answer/, resume: /third answer/ },
    target, content: 'landed\n', absentBeforeAnswer: true,
    spawned: (sp) => assert.deepEqual(sp.warnings ?? [], [], 'ask applied, nothing to warn about'),
    asked: (pr) => assert.equal(pr.tool_call?.kind, 'edit', JSON.stringify(pr)),
    // configure: the model through opencode's config option; yolo keeps mode build, and since its
    // asking was set in its environment at start, agentd answers what it still asks; no effort option
    configure: {
      set: { model: 'mock/mock-large', effort: 'high', tool_approval: 'yolo' }, say: 'WRITE-AGAIN now', answer: /written/,
      target: again, content: 'again\n',
      check: (c) => {
        assert.deepEqual(c.applied, { model: 'mock/mock-large', tool_approval: 'yolo' }, JSON.stringify(c));
        assert.match(c.skipped?.effort ?? '', /effort high not applied: this agent has no such option/, JSON.stringify(c));
        assert.deepEqual([c.agent_config.model, c.agent_config.mode], ['mock/mock-large', 'build'], JSON.stringify(c));
      },
      reached: async () => {
        const reqs = await fx.provider.requests();
        assert.equal(reqs.find((x) => x.rule === 'again').body.model, 'mock-large', 'the new model reached the provider');
        assert.equal(reqs.filter((x) => x.rule === 'again').length, 1);
      },
    },
    // (steer = "queue": opencode answers both prompts only at the turn's end)
    slowReached: async () => {
      for (let t = Date.now(); !(await fx.provider.requests()).some((q) => q.rule === 'slow'); ) {
        assert.ok(Date.now() - t < 20000, 'the slow turn reached the provider');
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    queued: async () => {
      const reqs = await fx.provider.requests();
      const iSlow = reqs.findIndex((x) => x.rule === 'slow');
      const iQueued = reqs.findIndex((x) => x.rule === 'queued');
      assert.ok(iQueued > iSlow && !all(reqs[iSlow]).includes('QUEUED-MSG'), 'the queued message came after the slow turn, in a request of its own');
      assert.match(last(reqs[iQueued]), /QUEUED-MSG/);
    },
    requestCount: async () => (await fx.provider.requests()).length,
    history: async (n) => {
      const sent = all((await fx.provider.requests(n)).find((x) => x.rule === 'three'));
      for (const t of ['TURN-ONE go', 'first answer', 'TURN-TWO go', 'second answer', 'written', 'QUEUED-MSG', 'queued answer']) {
        assert.ok(sent.includes(t), `history kept across the resume: ${t}`);
      }
    },
  });
});

test('the same first turn, opencode driven directly (initialize, session/new, prompt)', async () => {
  const direct = makeHome(fx.provider.url, { REASONIX_MCP_HOME: fx.sb.mcp });
  const r = await directFirstTurn({ start: () => startAgent(direct.env, direct.ws), cwd: direct.ws, init: INIT,
    close: async (a) => { await a.close(); direct.cleanup(); } });
  timings.direct = r.ms;
  assert.equal(r.stopReason, 'end_turn');
  reportFirstTurn('opencode', [timings.agentd], [timings.direct]);
});
