// What Claude Code's ACP agent (@agentclientprotocol/claude-agent-acp) reports about what it spends,
// against the scripted Anthropic API's exact usage: each session/prompt result's `usage` is that
// turn's main-loop tokens, and the usage_update's `cost` is the session's running total in USD,
// priced from every request of the session (side requests too) and kept across session/load in a
// new process. Then the same agent through agentd as the built-in `agent: "claude"` (rules/agents/claude.lua).
// needs: python3 clients acp-agent
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicApi } from './anthropic_api.mjs';
import { startAgent, agentEnv, usageLines, AGENT } from './claude_acp_usage.mjs';
import { useFixture, tool, until, sandboxProcesses, leftovers, RUN_ID } from './helpers.mjs';

const TURNS = {
  'TURN-ONE': { input_tokens: 1000, output_tokens: 200, cache_read_input_tokens: 3000, cache_creation_input_tokens: 400 },
  'TURN-TWO': { input_tokens: 50, output_tokens: 7, cache_read_input_tokens: 5000, cache_creation_input_tokens: 60 },
  'TURN-THREE': { input_tokens: 11, output_tokens: 13, cache_read_input_tokens: 17, cache_creation_input_tokens: 19 },
};
const api = await startAnthropicApi(Object.entries(TURNS).map(([word, usage]) => ({ contains: word, text: `${word} done`, usage })));
after(() => api.stop());

// USD of usage at claude-sonnet-4-5's prices ($ per million tokens: 3 in, 15 out, 0.30 cache read, 3.75 cache write).
const price = (u) => (3 * u.input_tokens + 15 * u.output_tokens + 0.3 * u.cache_read_input_tokens + 3.75 * u.cache_creation_input_tokens) / 1e6;
const close = (a, b) => Math.abs(a - b) < 1e-12;
const INIT = { protocolVersion: 1, clientCapabilities: {} };

test('usage per turn in each prompt result; cost the running total, kept across session/load', async () => {
  const home = mkdtempSync(join(tmpdir(), 'cca-usage-'));
  const env = { ...agentEnv(api.url, home, 'claude-sonnet-4-5'), RMCP_E2E_RUN: RUN_ID }; // marked for the leftover check
  let agent;
  // One turn: its prompt result and the usage_update with a cost, parsed.
  const turn = async (sessionId, word) => {
    const from = agent.lines.length;
    const result = await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: `${word} go` }] });
    const costs = usageLines(agent.lines.slice(from)).map((l) => JSON.parse(l).params?.update).filter((u) => u?.cost);
    assert.equal(costs.length, 1, `one usage_update with a cost per turn: ${agent.lines.slice(from).join('\n')}`);
    const u = TURNS[word];
    assert.deepEqual(result.usage, { inputTokens: u.input_tokens, outputTokens: u.output_tokens, cachedReadTokens: u.cache_read_input_tokens,
      cachedWriteTokens: u.cache_creation_input_tokens, totalTokens: Object.values(u).reduce((a, b) => a + b) }, `${word}: the turn's own tokens`);
    assert.equal(costs[0].cost.currency, 'USD');
    return costs[0];
  };
  try {
    agent = startAgent(env, home);
    await agent.request('initialize', INIT);
    const { sessionId } = await agent.request('session/new', { cwd: home, mcpServers: [] });
    const one = await turn(sessionId, 'TURN-ONE');
    assert.equal(one.size, 200000);
    assert.ok(one.cost.amount >= price(TURNS['TURN-ONE']) - 1e-12 && one.cost.amount <= price(api.served()) + 1e-12,
      `cost ${one.cost.amount}: the turn's price plus side requests (titles), at most all that was served`);
    const two = await turn(sessionId, 'TURN-TWO');
    assert.ok(two.cost.amount >= one.cost.amount + price(TURNS['TURN-TWO']) - 1e-12 && two.cost.amount <= price(api.served()) + 1e-12,
      `cost ${two.cost.amount} after ${one.cost.amount}: cumulative, not per turn`);
    await agent.close();

    agent = startAgent(env, home);
    await agent.request('initialize', INIT);
    await agent.request('session/load', { sessionId, cwd: home, mcpServers: [] });
    const three = await turn(sessionId, 'TURN-THREE');
    assert.ok(three.cost.amount >= two.cost.amount + price(TURNS['TURN-THREE']) - 1e-12 && three.cost.amount <= price(api.served()) + 1e-12,
      `cost ${three.cost.amount} after a load: goes on from ${two.cost.amount}`);
    assert.ok(!close(three.cost.amount, two.cost.amount));
  } finally {
    await agent?.close();
    rmSync(home, { recursive: true, force: true });
  }
  assert.deepEqual(leftovers().filter((p) => /claude/.test(p.cmd)), [], 'close ended the agent and its Claude CLI');
});

const fx = useFixture({});

// The tokens of one scripted turn as agentd counts them: every input token (cached ones too) and the output.
const tokens = (u) => u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens + u.output_tokens;

test('as the built-in agent "claude" through agentd: each turn counted exactly, its cost the agent\'s, across a resume; stop leaves no process', async () => {
  const env = fx.env({
    REASONIX_MCP_AGENT_CLAUDE: AGENT, ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: 'scripted-key', CLAUDE_CONFIG_DIR: join(fx.sb.home, '.claude'),
    ANTHROPIC_MODEL: 'claude-sonnet-4-5', DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  });
  const { client } = await fx.connect({ name: 'acp-usage-host', env });
  const servedBefore = price(api.served());
  const s = await tool(client, 'reasonix_spawn', { task: 'TURN-ONE through agentd', agent: 'claude' });
  const sid = s.session_id;
  const w = await tool(client, 'reasonix_watch', { session_ids: [sid] });
  assert.match(w.results[sid].message, /TURN-ONE done/);
  const one = w.results[sid].usage;
  assert.equal(one.turn, tokens(TURNS['TURN-ONE']), 'the prompt result\'s tokens, counted through the acp profile');
  assert.equal(one.total, one.turn);
  assert.equal(one.currency, 'USD');
  assert.ok(one.cost >= price(TURNS['TURN-ONE']) - 1e-9 && one.cost <= price(api.served()) - servedBefore + 1e-9,
    `cost ${one.cost}: the agent's own (its turn, side requests at most)`);
  await tool(client, 'reasonix_send', { session_id: sid, message: 'TURN-TWO now' });
  const two = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid].usage;
  assert.equal(two.turn, tokens(TURNS['TURN-TWO']));
  assert.equal(two.total, tokens(TURNS['TURN-ONE']) + tokens(TURNS['TURN-TWO']));
  assert.ok(two.cost >= one.cost + price(TURNS['TURN-TWO']) - 1e-9);
  // a resume starts a new agent process whose cumulative cost goes on from the session's: counted once
  await tool(client, 'reasonix_stop', { session_id: sid });
  await tool(client, 'reasonix_resume', { session_id: sid });
  await tool(client, 'reasonix_send', { session_id: sid, message: 'TURN-THREE now' });
  let three;
  for (let i = 0; i < 5 && three === undefined; i += 1) { // (the resume's own result may come first)
    const r = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
    if (r.status === 'idle' && r.usage && r.usage.turn === tokens(TURNS['TURN-THREE'])) three = r.usage;
  }
  assert.ok(three, 'the third turn ended with its usage');
  assert.equal(three.total, tokens(TURNS['TURN-ONE']) + tokens(TURNS['TURN-TWO']) + tokens(TURNS['TURN-THREE']));
  // (the agent's side requests can land after a turn's result and be lost with its process: its
  // cumulative cost after a resume may start a little below the last one counted, so only "more")
  assert.ok(three.cost > two.cost, 'the cost goes on');
  assert.ok(three.cost <= price(api.served()) - servedBefore + 1e-9, `cost ${three.cost}: never the history counted twice`);
  await tool(client, 'reasonix_stop', { session_id: sid });
  await until(() => sandboxProcesses(fx.sb).filter((p) => /claude-agent-acp|claude-agent-sdk/.test(p.cmd)).length === 0, 10000, 'the agent is gone after stop');
});
