// What a scripted model API served, added up: the one sum behind the served() of anthropic_api,
// openai_responses_api and gemini_api, so a test compares what an agent reports with one rule.
// Per key of keys, the usage of the requests answered with one that pass filter; `responses` counts them.
export function servedSums(requests, keys, filter = () => true) {
  const sum = Object.fromEntries(keys.map((k) => [k, 0]));
  sum.responses = 0;
  for (const r of requests.filter((x) => x.usage && filter(x))) {
    for (const k of keys) sum[k] += r.usage[k];
    sum.responses += 1;
  }
  return sum;
}
