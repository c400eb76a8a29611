// A scripted Anthropic Messages API on 127.0.0.1 for an agent that is Claude Code underneath (the
// ACP adapters @zed-industries/claude-code-acp and @agentclientprotocol/claude-agent-acp): rules
// match the conversation's newest user text (or, after a tool ran, the tool's name), and answer with
// streamed text or one tool call. Requests without tools (titles, summaries) get a short text. Every
// request body is kept, with the usage it was answered with; served() adds those up, so a test can
// compare what the agent reports with what the API billed.
import { createServer } from 'node:http';
import { once } from 'node:events';
import { servedSums } from './served_usage.mjs';
import { readRequest } from './http_body.mjs';

// Writes one server-sent event.
function sse(res, event, data) {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

// Text of a content (a string, or blocks), without the reminders Claude Code adds.
function textOf(c) {
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) return '';
  return c.filter((b) => b.type === 'text' && !/^<system-reminder>/.test(b.text)).map((b) => b.text).join('\n');
}

// What the newest user text of a conversation is: {text} or {toolResult: name} after a tool ran.
function newest(body) {
  // For models it does not know, Claude Code sends its environment as a trailing system message.
  const msgs = (body.messages || []).filter((m) => m.role !== 'system');
  const last = msgs[msgs.length - 1];
  if (!last || last.role !== 'user') return { text: '' };
  const result = Array.isArray(last.content) && last.content.find((b) => b.type === 'tool_result');
  if (result) {
    const prev = msgs[msgs.length - 2];
    const use = prev && Array.isArray(prev.content) && prev.content.find((b) => b.type === 'tool_use' && b.id === result.tool_use_id);
    return { toolResult: use ? use.name : '?', text: textOf(result.content) };
  }
  return { text: textOf(last.content) };
}

// The usage a response reports when its rule names none.
const DEFAULT_USAGE = { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
const USAGE_KEYS = Object.keys(DEFAULT_USAGE);

// Streams action ({text, chunk?, delayMs?} or {tool, input}) as one Messages response of model,
// reporting usage as the real API does: the input side at message_start, the output at message_delta.
async function stream(res, action, n, model, usage) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  sse(res, 'message_start', { type: 'message_start', message: { id: `msg_${n}`, type: 'message', role: 'assistant', model,
    content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
  let stop = 'end_turn';
  if (action.tool) {
    stop = 'tool_use';
    sse(res, 'content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: `toolu_${n}`, name: action.tool, input: {} } });
    sse(res, 'content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(action.input ?? {}) } });
  } else {
    sse(res, 'content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const size = action.chunk ?? action.text.length;
    for (let i = 0; i < action.text.length; i += size) {
      sse(res, 'content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: action.text.slice(i, i + size) } });
      if (action.delayMs) await new Promise((r) => setTimeout(r, action.delayMs));
    }
  }
  sse(res, 'content_block_stop', { type: 'content_block_stop', index: 0 });
  sse(res, 'message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
  sse(res, 'message_stop', { type: 'message_stop' });
  res.end();
}

// Starts the API with rules [{contains | afterTool, ...action, usage?}] (the first that matches
// answers; default: text "ok"). A rule's usage ({input_tokens, output_tokens,
// cache_read_input_tokens, cache_creation_input_tokens}, missing keys 0) is what its response
// reports, else DEFAULT_USAGE; opts.model names the model responses carry (default: the one
// requested). Resolves {url, requests, served(filter?), stop()}: served adds up the usage of the
// /messages responses (those whose request passes filter), with their count as `responses`.
export async function startAnthropicApi(rules, opts = {}) {
  const api = { requests: [] };
  api.served = (filter) => servedSums(api.requests, USAGE_KEYS, filter);
  let n = 0;
  const server = createServer(async (req, res) => {
    const got = await readRequest(req, res);
    if (!got) return;
    const { path, body } = got;
    const record = { path, body };
    api.requests.push(record);
    n += 1;
    if (path.endsWith('/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ input_tokens: 10 }));
    }
    if (!path.endsWith('/messages')) { res.writeHead(404); return res.end('{}'); }
    const last = newest(body);
    const main = Array.isArray(body.tools) && body.tools.length > 0;
    const rule = main ? rules.find((r) => (r.afterTool ? last.toolResult === r.afterTool : !last.toolResult && last.text.includes(r.contains))) : undefined;
    const action = rule ?? { text: 'ok' };
    const usage = action.usage ? Object.fromEntries(USAGE_KEYS.map((k) => [k, action.usage[k] ?? 0])) : { ...DEFAULT_USAGE };
    const model = opts.model ?? body.model ?? 'scripted';
    record.usage = usage;
    record.main = main;
    if (body.stream === false) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ id: `msg_${n}`, type: 'message', role: 'assistant', model,
        content: [{ type: 'text', text: action.text ?? 'ok' }], stop_reason: 'end_turn', usage }));
    }
    await stream(res, action, n, model, usage);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  api.url = `http://127.0.0.1:${server.address().port}`;
  api.stop = () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); });
  return api;
}
