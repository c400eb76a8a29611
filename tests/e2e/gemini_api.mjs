// A scripted Gemini API (generativelanguage v1beta) on 127.0.0.1 for Gemini CLI: rules match the
// conversation's newest user text (or, after a tool ran, the tool's name) and answer with text or
// one function call, streamed (`:streamGenerateContent?alt=sse`) or whole (`:generateContent`).
// Requests without tools (Gemini CLI's side requests: routing, next speaker, titles) get a short
// text, or `{}` when they ask for JSON. Every request is kept with the usageMetadata it was answered
// with; served() adds those up, so a test can compare what the agent reports with what was billed.
import { createServer } from 'node:http';
import { once } from 'node:events';
import { servedSums } from './served_usage.mjs';
import { readRequest } from './http_body.mjs';

// The usageMetadata keys a response reports, and its value when a rule names none.
const DEFAULT_USAGE = { promptTokenCount: 10, candidatesTokenCount: 5, cachedContentTokenCount: 0, thoughtsTokenCount: 0 };
const USAGE_KEYS = Object.keys(DEFAULT_USAGE);

// What the newest user turn of contents is: {text} or {toolResult: name, text} after a tool ran.
function newest(body) {
  const contents = body.contents || [];
  const last = contents[contents.length - 1];
  if (!last || (last.role ?? 'user') !== 'user') return { text: '' };
  const parts = last.parts || [];
  const fr = parts.find((p) => p.functionResponse);
  if (fr) return { toolResult: fr.functionResponse.name, text: JSON.stringify(fr.functionResponse.response ?? {}) };
  return { text: parts.filter((p) => typeof p.text === 'string').map((p) => p.text).join('\n') };
}

// The usageMetadata of usage as the API writes it (totalTokenCount = prompt + candidates + thoughts).
function metadata(u) {
  const m = { promptTokenCount: u.promptTokenCount, candidatesTokenCount: u.candidatesTokenCount,
    totalTokenCount: u.promptTokenCount + u.candidatesTokenCount + u.thoughtsTokenCount };
  if (u.cachedContentTokenCount) m.cachedContentTokenCount = u.cachedContentTokenCount;
  if (u.thoughtsTokenCount) m.thoughtsTokenCount = u.thoughtsTokenCount;
  return m;
}

// The response chunks of action ({text, chunk?, delayMs?} or {tool, args}): text in chunks, the
// last one carrying finishReason and the usage, as the real API streams them.
function chunks(action, usage, model) {
  const out = [];
  if (action.tool) {
    out.push({ parts: [{ functionCall: { name: action.tool, args: action.args ?? {} } }] });
  } else {
    const size = action.chunk ?? Math.max(action.text.length, 1);
    for (let i = 0; i < action.text.length; i += size) out.push({ parts: [{ text: action.text.slice(i, i + size) }] });
    if (out.length === 0) out.push({ parts: [{ text: '' }] });
  }
  return out.map((content, i) => {
    const last = i === out.length - 1;
    return { candidates: [{ content: { role: 'model', ...content }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }],
      ...(last ? { usageMetadata: metadata(usage) } : {}), modelVersion: model, responseId: `resp_${i}` };
  });
}

// Starts the API with rules [{contains | afterTool, text | tool + args, chunk?, delayMs?, usage?}]
// (the first that matches a request with tools answers; default: text "ok"). A rule's usage
// ({promptTokenCount, candidatesTokenCount, cachedContentTokenCount, thoughtsTokenCount}, missing
// keys 0) is what its response reports, else DEFAULT_USAGE. Resolves {url, requests, served(filter?),
// stop()}: requests are {path, body, method, main?, rule?, usage?, complete?}; served adds up the
// usage of the generate responses sent whole (complete: not cut off by a cancel) whose request
// passes filter, with their count as `responses`.
export async function startGeminiApi(rules, opts = {}) {
  const api = { requests: [] };
  api.served = (filter = () => true) => servedSums(api.requests, USAGE_KEYS, (r) => r.complete && filter(r));
  const server = createServer(async (req, res) => {
    const got = await readRequest(req, res);
    if (!got) return;
    const { method, path, body } = got;
    const record = { method, path, body };
    res.on('close', () => { record.complete = res.writableFinished; });
    api.requests.push(record);
    const json = (status, value) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(value)); };
    const m = /\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens|embedContent)$/.exec(path);
    if (!m) {
      if (/\/models$/.test(path)) return json(200, { models: [] });
      return json(404, { error: { code: 404, message: `scripted API: no ${req.method} ${path}`, status: 'NOT_FOUND' } });
    }
    const [, model, verb] = m;
    if (verb === 'countTokens') return json(200, { totalTokens: 10 });
    if (verb === 'embedContent') return json(200, { embedding: { values: [0] } });
    const last = newest(body);
    const main = Array.isArray(body.tools) && body.tools.length > 0;
    const rule = main ? rules.find((r) => (r.afterTool ? last.toolResult === r.afterTool : !last.toolResult && last.text.includes(r.contains))) : undefined;
    const wantsJson = body.generationConfig?.responseMimeType === 'application/json';
    const action = rule ?? { text: wantsJson ? '{}' : 'ok' };
    const usage = action.usage ? Object.fromEntries(USAGE_KEYS.map((k) => [k, action.usage[k] ?? 0])) : { ...DEFAULT_USAGE };
    record.main = main;
    record.model = model;
    record.usage = usage;
    record.rule = rule ? (rule.contains ?? `after ${rule.afterTool}`) : null;
    const out = chunks(action, usage, opts.model ?? model);
    if (verb === 'generateContent') {
      const whole = { ...out[out.length - 1] };
      const text = out.map((c) => c.candidates[0].content.parts[0].text ?? '').join('');
      if (!action.tool) whole.candidates = [{ ...whole.candidates[0], content: { role: 'model', parts: [{ text }] } }];
      return json(200, whole);
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const c of out) {
      if (res.destroyed) break;
      res.write(`data: ${JSON.stringify(c)}\r\n\r\n`);
      if (action.delayMs) await new Promise((r) => setTimeout(r, action.delayMs));
    }
    res.end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  api.url = `http://127.0.0.1:${server.address().port}`;
  api.stop = () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); });
  return api;
}
