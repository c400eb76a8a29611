// The request body of the scripted model APIs (anthropic_api.mjs, gemini_api.mjs,
// openai_responses_api.mjs, ../hosts/scripted_api.mjs), read one way: the bytes whole before they
// are decoded (a character split between two chunks stays whole), at most MAX_BODY of them, parsed
// as JSON. What a scripted API cannot read it answers itself, with a status and a message saying
// why, so an agent's bad request shows as that error, not as a conversation the rules never matched.

// The largest body read: far above any conversation a test sends.
export const MAX_BODY = 16 * 1024 * 1024;

// Answers res with status and an error object every one of the APIs' clients reads a message from.
function refuse(res, status, message) {
  res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
  res.end(JSON.stringify({ type: 'error', error: { code: status, type: 'invalid_request_error', message: `scripted API: ${message}` } }));
}

// Reads req's body: resolves {body, raw} (an empty body is {}), or undefined after answering 413
// (over maxBytes, default MAX_BODY; the rest is read and dropped) or 400 (not JSON) on res.
export async function readJsonBody(req, res, maxBytes = MAX_BODY) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size <= maxBytes) chunks.push(chunk);
  }
  if (size > maxBytes) return refuse(res, 413, `the request body has ${size} bytes, over the ${maxBytes} read`);
  const raw = Buffer.concat(chunks).toString('utf8');
  if (raw === '') return { body: {}, raw };
  try {
    return { body: JSON.parse(raw), raw };
  } catch (e) {
    return refuse(res, 400, `the request body is not JSON (${e.message}): ${raw.slice(0, 200)}`);
  }
}

// Reads req as a scripted API records it: resolves {method, path (without the query), body, raw},
// or undefined once readJsonBody answered res itself.
export async function readRequest(req, res) {
  const got = await readJsonBody(req, res);
  if (!got) return undefined;
  return { method: req.method, path: req.url.split('?')[0], body: got.body, raw: got.raw };
}
