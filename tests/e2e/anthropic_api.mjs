// A scripted Anthropic Messages API on 127.0.0.1 for an agent that is Claude Code underneath (the
// ACP adapter @zed-industries/claude-code-acp): rules match the conversation's newest user text
// (or, after a tool ran, the tool's name), and answer with streamed text or one tool call. Requests
// without tools (titles, summaries) get a short text. Every request body is kept.
import { createServer } from 'node:http';
import { once } from 'node:events';

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

// What the newest user message of a conversation is: {text} or {toolResult: name} after a tool ran.
function newest(body) {
  const msgs = body.messages || [];
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

// Streams action ({text, chunk?, delayMs?} or {tool, input}) as one Messages response.
async function stream(res, action, n) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  sse(res, 'message_start', { type: 'message_start', message: { id: `msg_${n}`, type: 'message', role: 'assistant', model: 'scripted',
    content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } });
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
  sse(res, 'message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } });
  sse(res, 'message_stop', { type: 'message_stop' });
  res.end();
}

// Starts the API with rules [{contains | afterTool, ...action}] (the first that matches answers;
// default: text "ok"); resolves {url, requests, stop()}.
export async function startAnthropicApi(rules) {
  const api = { requests: [] };
  let n = 0;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => { raw += d; });
    req.on('end', async () => {
      let body = {};
      try { body = JSON.parse(raw || '{}'); } catch { /* kept raw */ }
      const path = req.url.split('?')[0];
      api.requests.push({ path, body });
      n += 1;
      if (path.endsWith('/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ input_tokens: 10 }));
      }
      if (!path.endsWith('/messages')) { res.writeHead(404); return res.end('{}'); }
      const last = newest(body);
      const main = Array.isArray(body.tools) && body.tools.length > 0;
      const rule = main && rules.find((r) => (r.afterTool ? last.toolResult === r.afterTool : !last.toolResult && last.text.includes(r.contains)));
      const action = rule ?? { text: 'ok' };
      if (body.stream === false) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ id: `msg_${n}`, type: 'message', role: 'assistant', model: 'scripted',
          content: [{ type: 'text', text: action.text ?? 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 1 } }));
      }
      await stream(res, action, n);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  api.url = `http://127.0.0.1:${server.address().port}`;
  api.stop = () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); });
  return api;
}
