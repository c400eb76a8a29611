// A scripted model API on 127.0.0.1 that makes a real MCP host call the reasonix tools: Anthropic
// Messages (streaming SSE, for Claude Code via ANTHROPIC_BASE_URL) and OpenAI Responses (streaming
// SSE, for Codex via a model_provider's base_url). A test gives it a script: a list of steps, each
// a function of the previous tool result returning the next action, {call: 'reasonix_x', args} or
// {say: 'final text'}. Requests whose tools include no reasonix tool (a host's side requests:
// titles, summaries) get a short text; tools a host defers (Claude Code's tool search) are first
// loaded with one ToolSearch call. Every request body is kept, so a test can read the tool
// results the host sent back and the tools array it described to its model.
import { createServer } from 'node:http';
import { once } from 'node:events';
import { streamResponse } from '../e2e/openai_responses_api.mjs';
import { readRequest } from '../e2e/http_body.mjs';

// The host's tool definitions flattened: Codex nests an MCP server's tools in a namespace tool
// ({type: "namespace", name: "mcp__reasonix", tools}); each entry is {name, namespace?, def}.
function flatTools(tools) {
  const out = [];
  for (const t of tools || []) {
    if (t.type === 'namespace' && Array.isArray(t.tools)) for (const n of t.tools) out.push({ name: n.name, namespace: t.name, def: n });
    else if (t.name ?? t.function?.name) out.push({ name: t.name ?? t.function.name, def: t });
  }
  return out;
}

// The tool a host offers for a reasonix tool (Claude Code `mcp__reasonix__x`; Codex `x` in the
// namespace `mcp__reasonix`), or undefined.
function hostTool(tools, bare) {
  return flatTools(tools).find((t) => t.name === bare || t.name.endsWith('__' + bare));
}

// Text of a tool result's content as a host sends it back (a string, or a list of text blocks).
function contentText(c) {
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((b) => (typeof b === 'string' ? b : b.text ?? b.output ?? '')).join('');
  return c == null ? '' : JSON.stringify(c);
}

// The last tool result of an Anthropic Messages request: {text, isError} or null.
function lastAnthropicResult(body) {
  const msgs = body.messages || [];
  for (let i = msgs.length - 1; i >= 0 && msgs[i].role !== 'assistant'; i--) { // reminders may follow the result
    const r = Array.isArray(msgs[i].content) ? msgs[i].content.filter((b) => b.type === 'tool_result' && !/^toolsearch_/.test(b.tool_use_id)).pop() : undefined;
    if (r) return { text: contentText(r.content), isError: r.is_error === true };
  }
  return null;
}

// The last tool result of an OpenAI Responses request: {text, isError} or null.
function lastResponsesResult(body) {
  const input = Array.isArray(body.input) ? body.input : [];
  const last = input[input.length - 1];
  if (!last || last.type !== 'function_call_output') return null;
  const out = last.output;
  const text = typeof out === 'string' ? out : contentText(out?.content ?? out);
  return { text, isError: /"isError"\s*:\s*true/.test(text) || out?.success === false };
}

// Writes one server-sent event.
function sse(res, event, data) {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

// Streams an action as an Anthropic Messages response.
function anthropicStream(res, action, tool, n) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  sse(res, 'message_start', { type: 'message_start', message: { id: `msg_${n}`, type: 'message', role: 'assistant', model: 'scripted',
    content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } });
  let stop = 'end_turn';
  if (action.call) {
    stop = 'tool_use';
    sse(res, 'content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: tool?.id ?? `toolu_${n}`, name: tool?.name, input: {} } });
    sse(res, 'content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(action.args ?? {}) } });
  } else {
    sse(res, 'content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    sse(res, 'content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: action.say } });
  }
  sse(res, 'content_block_stop', { type: 'content_block_stop', index: 0 });
  sse(res, 'message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } });
  sse(res, 'message_stop', { type: 'message_stop' });
  res.end();
}

// Streams an action as an OpenAI Responses response (the writer tests/e2e's Responses API uses).
function responsesStream(res, action, tool, n) {
  const item = action.call
    ? { type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: tool?.name, ...(tool?.namespace ? { namespace: tool.namespace } : {}), arguments: JSON.stringify(action.args ?? {}), status: 'completed' }
    : { type: 'message', id: `msg_${n}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: action.say, annotations: [] }] };
  return streamResponse(res, item, n);
}

// How many tool results a conversation holds, not counting the tool search's: the index of the
// step that answers it. For Responses, only those after the user's last message count (a resumed
// conversation carries the earlier run's).
function resultCount(body, anthropic) {
  if (anthropic) return (body.messages || []).reduce((n, m) => n + (Array.isArray(m.content) ? m.content.filter((b) => b.type === 'tool_result' && !/^toolsearch_/.test(b.tool_use_id)).length : 0), 0);
  const input = Array.isArray(body.input) ? body.input : [];
  const lastUser = input.findLastIndex((i) => i.role === 'user' && (i.type === 'message' || i.type === undefined));
  return input.slice(lastUser + 1).filter((i) => i.type === 'function_call_output').length;
}

// The reasonix tools a host lists as deferred (Claude Code's default: MCP tools are named in a
// message and fetched with its ToolSearch tool), when they are not loaded yet; else [].
function deferredReasonix(body) {
  if (!(body.tools || []).some((t) => t.name === 'ToolSearch') || hostTool(body.tools, 'reasonix_spawn')) return [];
  return [...new Set(JSON.stringify(body.messages || []).match(/mcp__reasonix__reasonix_[a-z_]+/g) || [])];
}

// Starts the API; resolves {url, port, requests, script(steps), results, waitStep(n), toolsBytes(), close()}.
export async function startScriptedApi() {
  const api = { requests: [], results: [], steps: [], actions: [], waiters: [], errors: [] };
  // Resolves once the script has handed out step n (0-based).
  api.waitStep = (n) => (api.actions[n] ? Promise.resolve() : new Promise((resolve) => api.waiters.push({ n, resolve })));
  // Replaces the script (a new host run starts again at step 0).
  api.script = (steps) => { api.steps = steps; api.actions = []; api.results = []; };
  // The action of step n given the previous tool result; a host asking again (a retry, a side
  // request with the same conversation) gets the same answer.
  const next = (n, prev) => {
    if (api.actions[n]) return api.actions[n];
    if (n > 0 && !prev) return { say: 'ok' }; // a side request on the conversation (a summary, a title)
    if (prev) api.results.push(prev);
    const fn = api.steps[n];
    let action = { say: 'SCRIPT-EXHAUSTED' };
    if (fn) {
      try { action = fn(prev); } catch (e) { api.errors.push(e); action = { say: `SCRIPT-FAILED: ${e.message}` }; }
    }
    api.actions[n] = action;
    for (const w of [...api.waiters]) if (api.actions[w.n]) { api.waiters.splice(api.waiters.indexOf(w), 1); w.resolve(); }
    return action;
  };
  const server = createServer(async (req, res) => {
    const got = await readRequest(req, res);
    if (!got) return;
    const { path, body, raw } = got;
    api.requests.push({ path, body, raw });
    if (path.endsWith('/messages/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ input_tokens: 10 }));
    }
    const anthropic = path.endsWith('/messages');
    if (!anthropic && !path.endsWith('/responses')) { res.writeHead(404); return res.end('{}'); }
    const deferred = anthropic ? deferredReasonix(body) : [];
    const n = api.requests.length;
    if (deferred.length) { // load them first, as a model does: one ToolSearch selecting them all
      return anthropicStream(res, { call: 'ToolSearch', args: { query: `select:${deferred.join(',')}`, max_results: deferred.length } },
        { name: 'ToolSearch', id: `toolsearch_${n}` }, n);
    }
    const main = hostTool(body.tools, 'reasonix_spawn') !== undefined;
    const action = main ? next(resultCount(body, anthropic), anthropic ? lastAnthropicResult(body) : lastResponsesResult(body)) : { say: 'ok' };
    const tool = action.call ? hostTool(body.tools, action.call) : undefined;
    if (action.call && !tool) api.errors.push(new Error(`the host offered no tool for ${action.call}`));
    if (anthropic && body.stream === false) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ id: 'msg_side', type: 'message', role: 'assistant', model: 'scripted',
        content: [{ type: 'text', text: action.say ?? 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 1 } }));
    }
    (anthropic ? anthropicStream : responsesStream)(res, action, tool, n);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  api.port = server.address().port;
  api.url = `http://127.0.0.1:${api.port}`;
  // Bytes of the reasonix tools' definitions in the first main request, as the host sent them
  // (Codex: the namespace tool whole, its description included), and of all its tools.
  api.toolsBytes = () => {
    const first = api.requests.find((r) => hostTool(r.body.tools, 'reasonix_spawn'));
    if (!first) return null;
    const ns = first.body.tools.find((t) => t.type === 'namespace' && /reasonix/.test(t.name));
    const ours = ns ? [ns] : first.body.tools.filter((t) => /reasonix_/.test(t.name ?? ''));
    const out = { tools: flatTools(ours).length, bytes: Buffer.byteLength(JSON.stringify(ours)),
      all_tools: flatTools(first.body.tools).length, all_bytes: Buffer.byteLength(JSON.stringify(first.body.tools)) };
    // with tool search the model first reads the definitions in the search's result
    const search = (first.body.messages || []).flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .find((b) => b.type === 'tool_result' && /^toolsearch_/.test(b.tool_use_id));
    if (search) out.search_result_bytes = Buffer.byteLength(JSON.stringify(search.content));
    return out;
  };
  // Stops the server, dropping the connections a killed host left open.
  api.close = () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); });
  return api;
}
