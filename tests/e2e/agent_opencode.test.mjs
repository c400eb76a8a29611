// opencode (`agent: "opencode"`, pinned, real) driven through agentd by the MCP tools alone, against
// the scripted Chat Completions provider on 127.0.0.1, by the flow of agent_flow.mjs: spawn with
// tool_approval=ask → watch has the first turn's message → a second turn → a write asks
// (permission_request in watch), is allowed with respond_permission and lands in the session's cwd →
// configure (model, yolo; effort skipped) reaches opencode and the provider, a second write asks nobody →
// a message sent during a slow turn is `queued` and starts the next turn → stop → resume → the next
// request to the provider carries the earlier turns → stop leaves no opencode process. Prints spawn →
// first turn end through agentd against the agent driven directly, medians of 3. Then what its spend adds up to against what the
// provider served: each model step's cost, the last step's tokens (all opencode's wire carries).
// needs: agent python3 clients opencode
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { AGENT as OPENCODE, makeHome, startAgent, INIT } from './opencode_acp.mjs';
import { useFixture, tool, watchUntil } from './helpers.mjs';
import { agentFlow, assertHistoryKept, compareFirstTurn, finished } from './agent_flow.mjs';

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
let home;
after(() => home?.cleanup());
// opencode's home against the fixture's provider (made once): a second model, for configure to
// switch to, and a price per million tokens on both (input 1, output 10), so its usage_update carries
// what each model step cost.
function openHome() {
  if (home) return home;
  home = makeHome(fx.provider.url);
  const cfgFile = join(home.env.XDG_CONFIG_HOME, 'opencode', 'opencode.json');
  const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
  const models = cfg.provider.mock.models;
  models['mock-model'].cost = { input: 1, output: 10 };
  models['mock-large'] = { ...models['mock-model'], name: 'Mock Large' };
  writeFileSync(cfgFile, JSON.stringify(cfg));
  return home;
}
// agentd's env for opencode: its own XDG dirs and config; not makeHome's OPENCODE_PERMISSION (edits
// and commands ask): a spawn's tool_approval=ask must make it ask (the profile's approval_env sets it).
const agentdEnv = () => fx.env({ REASONIX_MCP_AGENT_OPENCODE: OPENCODE,
  ...Object.fromEntries(Object.entries(openHome().env).filter(([k]) => (k.startsWith('XDG_') || k.startsWith('OPENCODE_') || k === 'MOCK_API_KEY')
    && k !== 'OPENCODE_PERMISSION')) });
// The text of a provider request's messages, and of its last one.
const all = (q) => JSON.stringify(q.body.messages);
const last = (q) => JSON.stringify(q.body.messages.at(-1));

test('opencode through agentd: turns, an asked write allowed, a queued message, stop, resume with history, none left', { timeout: 120000 }, async () => {
  const target = join(fx.sb.ws, 'landed.txt');
  const again = join(fx.sb.ws, 'again.txt');
  await fx.provider.setScenario(scenario(target, again));
  const env = agentdEnv();

  await agentFlow(fx, {
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
      applied: { model: 'mock/mock-large', tool_approval: 'yolo' }, skipped: ['effort'],
      agentConfig: { model: 'mock/mock-large', mode: 'build' },
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
      assertHistoryKept(all((await fx.provider.requests(n)).find((x) => x.rule === 'three')));
    },
  });
});

test('spawn → first turn end: through agentd against opencode driven directly (medians of 3)', async () => {
  // directly: one home (agentd's was warmed by the test above)
  await compareFirstTurn(fx, {
    agent: 'opencode', client: 'opencode-time', env: agentdEnv(), answer: /first answer/, init: INIT,
    home: () => {
      const h = makeHome(fx.provider.url, { REASONIX_MCP_HOME: fx.sb.mcp });
      return { cwd: h.ws, start: () => startAgent(h.env, h.ws), remove: () => h.cleanup() };
    },
  });
});

test('opencode\'s spend through agentd: every model step\'s cost adds up; its tokens are the last step\'s, all its wire carries', async () => {
  const target = join(fx.sb.ws, 'spent.txt');
  await fx.provider.setScenario({ models: ['mock-model'], rules: [
    { name: 'title', any_contains: 'Generate a title', text: 'Title here', usage: false },
    { name: 'step1', last_role: 'user', user_contains: 'SPEND', tool_calls: [{ name: 'write', arguments: { filePath: target, content: 'x\n' } }],
      usage: { prompt_tokens: 400, completion_tokens: 40, total_tokens: 440 } },
    { name: 'step2', last_role: 'tool', last_tool_name: 'write', text: 'spent', usage: { prompt_tokens: 500, completion_tokens: 5, total_tokens: 505 } },
  ], default: { text: 'ok', usage: false } });
  const served = async () => (await fetch(`${fx.provider.url}/_mock/served`)).json();
  const served0 = await served();
  const { client } = await fx.connect({ name: 'opencode-spend', env: agentdEnv() });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'SPEND go', agent: 'opencode', tool_approval: 'yolo' });
  const r = (await watchUntil(client, [sid], finished))[sid];
  assert.match(r.message, /spent/);
  const served1 = await served();
  const [input, output, total] = ['prompt_tokens', 'completion_tokens', 'total_tokens'].map((k) => served1[k] - served0[k]);
  assert.deepEqual([input, output, total], [900, 45, 945], 'two model steps served');
  // cost: opencode's usage_update is the session's cumulative cost, every step in it
  assert.equal(r.usage.currency, 'USD', JSON.stringify(r.usage));
  assert.ok(Math.abs(r.usage.cost - (input * 1 + output * 10) / 1e6) < 1e-9, `cost of both steps: ${JSON.stringify(r.usage)}`);
  // tokens: its prompt answer carries the last step's only (opencode-ai 1.18.33), so fewer than served
  assert.equal(r.usage.turn, 505, JSON.stringify(r.usage));
  await tool(client, 'reasonix_stop', { session_id: sid });
});
