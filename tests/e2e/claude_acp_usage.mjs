// What Claude Code's ACP agent (@agentclientprotocol/claude-agent-acp) reports about what it
// spends, seen from a bare ACP client over stdio (acp_stdio.mjs), offline against the scripted
// Anthropic API: initialize, session/new, two prompts, then a second process that session/loads the
// session and prompts once more. Prints every NDJSON line that carries usage (usage_update
// notifications and session/prompt results) and what the API served. Run: node
// tests/e2e/claude_acp_usage.mjs [model] (default claude-sonnet-4-5; an unknown name shows the cost
// of a model without a price).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAcp } from './acp_stdio.mjs';
import { startAnthropicApi } from './anthropic_api.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
export const AGENT = join(HERE, 'node_modules', '.bin', 'claude-agent-acp');

// The environment the agent runs offline in: the scripted API, a private Claude config dir and
// home, no updater, no telemetry, model as the session's model.
export function agentEnv(apiUrl, home, model) {
  return {
    PATH: process.env.PATH, HOME: home, CLAUDE_CONFIG_DIR: join(home, '.claude'),
    ANTHROPIC_BASE_URL: apiUrl, ANTHROPIC_API_KEY: 'scripted-key', ...(model ? { ANTHROPIC_MODEL: model } : {}),
    DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1',
  };
}

// Starts the agent; returns {request(method, params), lines, close()}: lines is every NDJSON line
// it wrote; requests it sends are answered (permissions allowed once, anything else refused). The
// agent ignores stdin EOF, so close signals its whole process group (its Claude Code child too)
// at once.
export function startAgent(env, cwd) {
  return startAcp(AGENT, [], env, cwd, { graceMs: 0 });
}

// The lines of lines that carry usage: usage_update notifications and results with a usage.
export function usageLines(lines) {
  return lines.filter((l) => /"usage_update"|"usage":\{/.test(l)).filter((l) => {
    const m = JSON.parse(l);
    return m.params?.update?.sessionUpdate === 'usage_update' || m.result?.usage;
  });
}

const INIT = { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } };

async function main() {
  const model = process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 'claude-sonnet-4-5';
  const api = await startAnthropicApi([
    { contains: 'TURN-ONE', text: 'first', usage: { input_tokens: 1000, output_tokens: 200, cache_read_input_tokens: 3000, cache_creation_input_tokens: 400 } },
    { contains: 'TURN-TWO', text: 'second', usage: { input_tokens: 50, output_tokens: 7, cache_read_input_tokens: 5000, cache_creation_input_tokens: 60 } },
    { contains: 'TURN-THREE', text: 'third', usage: { input_tokens: 11, output_tokens: 13, cache_read_input_tokens: 17, cache_creation_input_tokens: 19 } },
  ]);
  const home = mkdtempSync(join(tmpdir(), 'cca-usage-'));
  const env = agentEnv(api.url, home, model);
  const show = (label, lines) => { console.log(`== ${label}`); for (const l of usageLines(lines)) console.log(l); };
  let agent;
  try {
    agent = startAgent(env, home);
    const init = await agent.request('initialize', INIT);
    console.log(`== agent ${init.agentInfo?.name} ${init.agentInfo?.version}, loadSession ${init.agentCapabilities?.loadSession}`);
    const { sessionId } = await agent.request('session/new', { cwd: home, mcpServers: [] });
    for (const word of ['TURN-ONE', 'TURN-TWO']) {
      const before = agent.lines.length;
      await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: `${word} go` }] });
      show(`${word} (model ${model})`, agent.lines.slice(before));
      console.log(`   API served so far: ${JSON.stringify(api.served())}`);
    }
    await agent.close();
    console.log(`   API served by the first process: ${JSON.stringify(api.served())}`);
    if (process.argv.includes('--other-session-between')) {
      // Another session in the same project and config dir, between the stop and the load.
      agent = startAgent(env, home);
      await agent.request('initialize', INIT);
      const other = await agent.request('session/new', { cwd: home, mcpServers: [] });
      await agent.request('session/prompt', { sessionId: other.sessionId, prompt: [{ type: 'text', text: 'OTHER go' }] });
      show('OTHER session between', agent.lines);
      await agent.close();
    }
    agent = startAgent(env, home);
    await agent.request('initialize', INIT);
    await agent.request('session/load', { sessionId, cwd: home, mcpServers: [] });
    const before = agent.lines.length;
    show('session/load (replay)', agent.lines.slice(0, before));
    await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-THREE go' }] });
    show('TURN-THREE after session/load in a new process', agent.lines.slice(before));
    console.log(`   API served in all: ${JSON.stringify(api.served())}`);
    console.log(`   by request:\n${api.requests.filter((r) => r.usage).map((r) => JSON.stringify({ main: r.main, model: r.body.model, system: JSON.stringify(r.body.system ?? '').slice(0, 90), last: JSON.stringify(r.body.messages?.at(-1)?.content ?? '').slice(-90), ...r.usage })).join('\n')}`);
  } finally {
    await agent?.close();
    await api.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
