// A scripted OpenAI Responses API on 127.0.0.1 for an agent that is Codex underneath (the ACP agent
// @zed-industries/codex-acp; Codex CLI as an MCP host streams through the same writer): rules match
// the conversation's newest user text (or, after a tool ran, the tool's name), and answer with
// streamed text or one tool call (a function tool with JSON arguments, or a freeform tool such as
// Codex's apply_patch with its raw input, as the request's tools array describes it). Requests
// without tools get a short text. Every request is kept, with the usage it was answered with;
// served() adds those up, so a test can compare what the agent reports with what the API billed.
import { createServer } from 'node:http';
import { once } from 'node:events';
import { servedSums } from './served_usage.mjs';
import { readRequest } from './http_body.mjs';

// Writes one server-sent event.
function sse(res, event, data) {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

// The usage a response reports when its rule names none, and the keys a rule may set.
const DEFAULT_USAGE = { input_tokens: 10, cached_tokens: 0, output_tokens: 5, reasoning_tokens: 0 };
const USAGE_KEYS = Object.keys(DEFAULT_USAGE);

// usage ({input_tokens, cached_tokens, output_tokens, reasoning_tokens}) as the Responses API
// writes it in response.completed.
export function responsesUsage(u) {
  return { input_tokens: u.input_tokens, input_tokens_details: { cached_tokens: u.cached_tokens },
    output_tokens: u.output_tokens, output_tokens_details: { reasoning_tokens: u.reasoning_tokens },
    total_tokens: u.input_tokens + u.output_tokens };
}

// Waits ms, or less when the client goes away (a cancelled turn drops its connection).
function pause(res, ms) {
  return new Promise((r) => { const t = setTimeout(r, ms); res.once('close', () => { clearTimeout(t); r(); }); });
}

// Streams one Responses response holding item (a message, function_call or custom_tool_call) with
// usage: created, the item added, its text in deltas (opts.chunk characters each, opts.delayMs
// apart), the item done, completed. Shared by the MCP-host tests' scripted API.
export async function streamResponse(res, item, n, { model = 'scripted', usage = DEFAULT_USAGE, chunk, delayMs } = {}) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const response = { id: `resp_${n}`, object: 'response', status: 'in_progress', model, output: [] };
  sse(res, 'response.created', { type: 'response.created', response });
  if (item.type === 'message') {
    const text = item.content[0].text;
    sse(res, 'response.output_item.added', { type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } });
    const size = chunk ?? Math.max(text.length, 1);
    for (let i = 0; i < text.length; i += size) {
      sse(res, 'response.output_text.delta', { type: 'response.output_text.delta', item_id: item.id, output_index: 0, content_index: 0, delta: text.slice(i, i + size) });
      if (delayMs) await pause(res, delayMs);
      if (res.destroyed) return;
    }
  } else {
    sse(res, 'response.output_item.added', { type: 'response.output_item.added', output_index: 0, item });
    if (delayMs) await pause(res, delayMs);
  }
  if (res.destroyed) return;
  sse(res, 'response.output_item.done', { type: 'response.output_item.done', output_index: 0, item });
  sse(res, 'response.completed', { type: 'response.completed', response: { ...response, status: 'completed', output: [item], usage: responsesUsage(usage) } });
  res.end();
}

// Text of a Responses input item's content (a string, or input_text/output_text parts).
function textOf(c) {
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) return '';
  return c.map((p) => p.text ?? '').join('\n');
}

// What the newest input of a request is: {text} for a user message, or {toolResult: name, text}
// after a tool ran (the name of the call it answers).
export function newest(body) {
  const input = Array.isArray(body.input) ? body.input : [];
  const last = input[input.length - 1];
  if (!last) return { text: '' };
  if (last.type === 'function_call_output' || last.type === 'custom_tool_call_output') {
    const call = input.find((i) => (i.type === 'function_call' || i.type === 'custom_tool_call') && i.call_id === last.call_id);
    const out = last.output;
    return { toolResult: call ? call.name : '?', text: typeof out === 'string' ? out : textOf(out?.content ?? out) };
  }
  return { text: last.role === 'user' ? textOf(last.content) : '' };
}

// The tools of a request, by name: {type: 'function' | 'custom' | …, def}.
function toolsByName(tools) {
  const out = new Map();
  for (const t of tools || []) {
    if (t.type === 'namespace' && Array.isArray(t.tools)) for (const n of t.tools) out.set(n.name, { type: n.type ?? 'function', def: n, namespace: t.name });
    else if (t.name) out.set(t.name, { type: t.type, def: t });
  }
  return out;
}

// The output item for action ({text} or {tool, input}) given the request's tools: a custom tool
// gets its input as the raw string; a function tool gets JSON arguments.
function itemFor(action, tools, n) {
  if (!action.tool) return { type: 'message', id: `msg_${n}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: action.text, annotations: [] }] };
  const t = tools.get(action.tool);
  if (t?.type === 'custom') {
    return { type: 'custom_tool_call', id: `ctc_${n}`, call_id: `call_${n}`, name: action.tool, status: 'completed',
      input: typeof action.input === 'string' ? action.input : JSON.stringify(action.input ?? {}) };
  }
  return { type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: action.tool, ...(t?.namespace ? { namespace: t.namespace } : {}),
    status: 'completed', arguments: typeof action.input === 'string' ? action.input : JSON.stringify(action.input ?? {}) };
}

// Starts the API with rules [{contains | afterTool, text | tool + input, usage?, chunk?, delayMs?}]
// (the first that matches answers; default: text "ok"). A rule's usage ({input_tokens,
// cached_tokens, output_tokens, reasoning_tokens}, missing keys 0) is what its response reports,
// else DEFAULT_USAGE. Resolves {url, requests, served(filter?), errors, stop()}: served adds up the
// usage of the /responses answers (those whose request passes filter), with their count as
// `responses`; errors lists tool calls a rule asked for that the request did not offer.
export async function startResponsesApi(rules, opts = {}) {
  const api = { requests: [], errors: [] };
  api.served = (filter) => servedSums(api.requests, USAGE_KEYS, filter);
  let n = 0;
  const server = createServer(async (req, res) => {
    const got = await readRequest(req, res);
    if (!got) return;
    const { method, path, body } = got;
    const record = { method, path, body };
    api.requests.push(record);
    n += 1;
    if (req.method === 'GET' && path.endsWith('/models')) { // a model list: none beyond the configured one
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ object: 'list', data: [], models: [] }));
    }
    if (!path.endsWith('/responses')) { res.writeHead(404); return res.end('{}'); }
    const last = newest(body);
    const tools = toolsByName(body.tools);
    const main = tools.size > 0;
    const rule = main ? rules.find((r) => (r.afterTool ? last.toolResult === r.afterTool : !last.toolResult && r.contains !== undefined && last.text.includes(r.contains))) : undefined;
    const action = rule ?? { text: 'ok' };
    if (action.tool && !tools.has(action.tool)) api.errors.push(new Error(`the request offered no tool ${action.tool} (it had ${[...tools.keys()].join(', ')})`));
    const usage = action.usage ? Object.fromEntries(USAGE_KEYS.map((k) => [k, action.usage[k] ?? 0])) : { ...DEFAULT_USAGE };
    Object.assign(record, { usage, main, last, rule });
    await streamResponse(res, itemFor(action, tools, n), n, { model: opts.model ?? body.model ?? 'scripted', usage, chunk: action.chunk, delayMs: action.delayMs });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  api.port = server.address().port;
  api.url = `http://127.0.0.1:${api.port}`;
  api.stop = () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); });
  return api;
}
