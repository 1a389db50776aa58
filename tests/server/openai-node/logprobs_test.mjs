// Log probabilities through the official `openai` npm package against `cflow serve` on the
// bundled default model (issue 34): chat `logprobs` / `top_logprobs` whole and streamed (the
// client's stream helper hands each chunk's choices[0].logprobs.content; joined they equal the
// whole reply's), greedy so the chosen token heads its own top list, every list sorted; the
// legacy completions' `logprobs: N`; top_logprobs past 20 is a 400 naming the field.
// Usage: node logprobs_test.mjs --cflow PATH/TO/cflow [--model MODEL.cflow]
// ctest: openai_node_logprobs.
import assert from 'node:assert/strict';
import { Checks, option, startServer, stopServer } from '../node-harness/harness.mjs';

const cflow = option('--cflow');
const model = option('--model');
if (!cflow) {
  console.error('usage: node logprobs_test.mjs --cflow PATH [--model MODEL.cflow]');
  process.exit(2);
}
let OpenAI;
try {
  OpenAI = (await import('openai')).default;
} catch (error) {
  console.error('the openai npm package is not installed beside this script: run ' +
                '`npm ci --prefix tests/server/openai-node` (packaging/install-deps.sh --tests does it)\n' + error);
  process.exit(1);
}


const server = await startServer(cflow, [...(model ? [model] : []), '--threads', '1']);
const client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const modelId = (await client.models.list()).data[0].id;

const checks = new Checks();
const check = (name, fn) => checks.check(name, fn);

const request = {
  model: modelId,
  messages: [{ role: 'user', content: 'Tell me a story about a cat.' }],
  max_tokens: 24,
  temperature: 0,
  seed: 7,
  logprobs: true,
  top_logprobs: 4,
};

function checkEntries(content) {
  assert.ok(content.length > 0, 'some tokens');
  for (const entry of content) {
    assert.equal(typeof entry.token, 'string');
    assert.ok(entry.logprob <= 0, `a log probability: ${entry.logprob}`);
    assert.ok(Array.isArray(entry.bytes) && entry.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256));
    assert.equal(entry.top_logprobs.length, 4);
    for (let k = 1; k < 4; ++k) assert.ok(entry.top_logprobs[k - 1].logprob >= entry.top_logprobs[k].logprob, 'sorted');
    assert.deepEqual(entry.top_logprobs[0].bytes, entry.bytes, 'greedy: the chosen token is the most likely');
    assert.equal(entry.top_logprobs[0].logprob, entry.logprob);
  }
}

let wholeContent;
await check('chat logprobs, whole', async () => {
  const reply = await client.chat.completions.create(request);
  wholeContent = reply.choices[0].logprobs.content;
  checkEntries(wholeContent);
  assert.equal(wholeContent.length, reply.usage.completion_tokens);
});

await check('chat logprobs, streamed chunks join to the whole reply', async () => {
  const stream = await client.chat.completions.create({ ...request, stream: true });
  const joined = [];
  for await (const chunk of stream) {
    const logprobs = chunk.choices[0]?.logprobs;
    if (logprobs) joined.push(...logprobs.content);
  }
  assert.deepEqual(joined, wholeContent);
});

await check('legacy completions logprobs: N', async () => {
  const reply = await client.completions.create({ model: modelId, prompt: 'Once upon a time', max_tokens: 8,
                                                  temperature: 0, logprobs: 2 });
  const logprobs = reply.choices[0].logprobs;
  assert.equal(logprobs.tokens.length, reply.usage.completion_tokens);
  assert.equal(logprobs.token_logprobs.length, logprobs.tokens.length);
  assert.equal(logprobs.text_offset.length, logprobs.tokens.length);
  logprobs.top_logprobs.forEach((top, i) => assert.equal(top[logprobs.tokens[i]], logprobs.token_logprobs[i]));
});

await check('top_logprobs past 20 is a 400 naming the field', async () => {
  await assert.rejects(client.chat.completions.create({ ...request, top_logprobs: 21 }),
                       (error) => error.status === 400 && error.param === 'top_logprobs');
});

await stopServer(server);
checks.finish(server.log());
