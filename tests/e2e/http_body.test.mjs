// The scripted model APIs read a request body one way (http_body.mjs): a character split between two
// chunks arrives whole, a body over the bound is refused with 413 and one that is not JSON with 400,
// each with a message, by every one of the four APIs (not taken as an empty conversation).
// needs: clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { request } from 'node:http';
import { readJsonBody } from './http_body.mjs';
import { startAnthropicApi } from './anthropic_api.mjs';
import { startGeminiApi } from './gemini_api.mjs';
import { startResponsesApi } from './openai_responses_api.mjs';
import { startScriptedApi } from '../hosts/scripted_api.mjs';

// A response that keeps what a handler answered: {status, body} once ended.
function fakeResponse() {
  const out = {};
  return { out, writeHead(status) { out.status = status; }, end(text) { out.body = JSON.parse(text); } };
}

// POSTs text to url + path; resolves {status, body (parsed)}.
function post(url, path, text) {
  return new Promise((resolve, reject) => {
    const req = request(url + path, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let raw = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { raw += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(raw) }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

test('a character split between two chunks arrives whole; an empty body is {}', async () => {
  const bytes = Buffer.from(JSON.stringify({ text: 'héllo ✓' }));
  const cut = bytes.indexOf(0xc3) + 1; // inside the two bytes of é
  const res = fakeResponse();
  const got = await readJsonBody(Readable.from([bytes.subarray(0, cut), bytes.subarray(cut)]), res);
  assert.deepEqual(got.body, { text: 'héllo ✓' });
  assert.equal(res.out.status, undefined, 'nothing answered');
  assert.deepEqual((await readJsonBody(Readable.from([]), fakeResponse())).body, {});
});

test('a body over the bound is answered 413, one that is not JSON 400, each saying why', async () => {
  const big = fakeResponse();
  assert.equal(await readJsonBody(Readable.from([Buffer.alloc(600, 32), Buffer.alloc(600, 32)]), big, 1000), undefined);
  assert.equal(big.out.status, 413);
  assert.match(big.out.body.error.message, /1200 bytes, over the 1000 read/);
  const bad = fakeResponse();
  assert.equal(await readJsonBody(Readable.from([Buffer.from('{"messages": [')]), bad), undefined);
  assert.equal(bad.out.status, 400);
  assert.match(bad.out.body.error.message, /not JSON .*\{"messages": \[/);
});

test('each scripted API answers a body that is not JSON with 400 and keeps no request for it', async (t) => {
  const apis = {
    anthropic: [await startAnthropicApi([]), '/v1/messages'],
    gemini: [await startGeminiApi([]), '/v1beta/models/scripted:streamGenerateContent'],
    responses: [await startResponsesApi([]), '/v1/responses'],
    hosts: [await startScriptedApi(), '/v1/messages'],
  };
  t.after(() => Promise.all(Object.values(apis).map(([api]) => (api.stop ?? api.close)())));
  for (const [name, [api, path]] of Object.entries(apis)) {
    const res = await post(api.url, path, '{"model": "x", ');
    assert.equal(res.status, 400, name);
    assert.match(res.body.error.message, /^scripted API: the request body is not JSON/, name);
    assert.equal(api.requests.length, 0, `${name} kept no request`);
  }
});
