// The official `openai` npm package against `cflow serve`, as an editor or a script would use it.
// Usage: node openai_client_test.mjs --cflow PATH/TO/cflow [--model MODEL.cflow]
// Starts its own server on a free loopback port (--port 0, the URL read from its log), runs
// every check, stops the server, exits 0 when all passed and 1 otherwise. ctest: openai_node_client.
import assert from 'node:assert/strict';
import { Checks, option, startServer, stopServer } from '../node-harness/harness.mjs';

const cflow = option('--cflow');
const model = option('--model');
if (!cflow) {
  console.error('usage: node openai_client_test.mjs --cflow PATH [--model MODEL.cflow]');
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
const apiKey = 'test-key-' + Math.random().toString(36).slice(2);


const server = await startServer(cflow, [...(model ? [model] : []), '--api-key', apiKey, '--parallel', '2', '--threads', '1']);
const baseURL = server.url + '/v1';
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });
const modelId = (await client.models.list()).data[0].id;

const checks = new Checks();
const check = (name, fn) => checks.check(name, fn);

const messages = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Tell me a short story about a little dog.' },
];

async function streamedText(params, options) {
  const stream = await client.chat.completions.create({ ...params, stream: true }, options);
  let text = '';
  let finish = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += 1;
    for (const choice of chunk.choices) {
      text += choice.delta?.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, finish, chunks };
}

await check('models.list names the served model', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].object, 'model');
  assert.equal(typeof list.data[0].id, 'string');
  const one = await client.models.retrieve(modelId);
  assert.equal(one.id, modelId);
});

await check('a streamed chat completion joins to the non-streamed text for the same seed', async () => {
  const params = { model: modelId, messages, seed: 42, temperature: 0.8, max_tokens: 48 };
  const whole = await client.chat.completions.create(params);
  assert.equal(whole.object, 'chat.completion');
  const content = whole.choices[0].message.content;
  assert.ok(content.length > 0, 'the reply has text');
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.ok(whole.usage.prompt_tokens > 10 && whole.usage.completion_tokens > 0);
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);
  const streamed = await streamedText(params);
  assert.equal(streamed.text, content);
  assert.equal(streamed.finish, whole.choices[0].finish_reason);
  assert.ok(streamed.chunks >= 3, 'role chunk, content chunks, finish chunk');
});

await check('max_tokens ends the reply with finish_reason length', async () => {
  const reply = await client.chat.completions.create({ model: modelId, messages, seed: 1, max_tokens: 2 });
  assert.ok(reply.usage.completion_tokens <= 2);
  assert.equal(reply.choices[0].finish_reason, reply.usage.completion_tokens === 2 ? 'length' : 'stop');
  const streamed = await streamedText({ model: modelId, messages, seed: 1, max_tokens: 2 });
  assert.equal(streamed.finish, reply.choices[0].finish_reason);
  const completion = await client.completions.create({ model: modelId, prompt: 'Once upon a time', max_tokens: 3, seed: 5 });
  assert.equal(completion.object, 'text_completion');
  assert.equal(completion.choices[0].finish_reason, completion.usage.completion_tokens === 3 ? 'length' : 'stop');
});

await check('a stop sequence ends the reply before it, streamed or not', async () => {
  const params = { model: modelId, messages, seed: 7, max_tokens: 64 };
  const free = (await client.chat.completions.create(params)).choices[0].message.content;
  const words = free.split(' ').filter((w) => /^[A-Za-z]{3,}$/.test(w));
  assert.ok(words.length >= 2, `the free reply has words to stop at: ${JSON.stringify(free)}`);
  const stop = ' ' + words[Math.floor(words.length / 2)];
  const expected = free.slice(0, free.indexOf(stop));
  const stopped = await client.chat.completions.create({ ...params, stop: [stop, '\u0001never'] });
  assert.equal(stopped.choices[0].message.content, expected);
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  const streamed = await streamedText({ ...params, stop });
  assert.equal(streamed.text, expected);
  assert.equal(streamed.finish, 'stop');
});

await check('the API key is enforced', async () => {
  const wrong = new OpenAI({ baseURL, apiKey: 'not-the-key', maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  await assert.rejects(wrong.chat.completions.create({ model: modelId, messages }),
                       (e) => e instanceof OpenAI.AuthenticationError);
  const bare = await fetch(baseURL + '/models');
  assert.equal(bare.status, 401);
  assert.ok((await bare.json()).error.message.includes('API key'));
});

await check('an unknown model is 404', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o', messages }),
                       (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
});

await check('8 concurrent clients are all answered', async () => {
  const replies = await Promise.all(Array.from({ length: 8 }, (_, i) =>
    i % 2 ? streamedText({ model: modelId, messages, seed: 100 + (i % 4), max_tokens: 24 })
          : client.chat.completions.create({ model: modelId, messages, seed: 100 + (i % 4), max_tokens: 24 })
              .then((r) => ({ text: r.choices[0].message.content, finish: r.choices[0].finish_reason }))));
  for (const reply of replies) {
    assert.ok(reply.text.length > 0);
    assert.ok(reply.finish === 'stop' || reply.finish === 'length');
  }
  // Same seed, same messages: the same text whichever slot and mode answered.
  for (let i = 4; i < 8; ++i) assert.equal(replies[i].text, replies[i - 4].text, `client ${i}`);
});

await check('a client aborting mid-stream does not disturb the others', async () => {
  const controller = new AbortController();
  const aborted = (async () => {
    const stream = await client.chat.completions.create(
      { model: modelId, messages, temperature: 0, max_tokens: 480, stream: true }, { signal: controller.signal });
    // Greedy, this prompt runs to max_tokens (a sampled reply ends after ~100 tokens, which a
    // fast machine generates in ~30 ms, before the client's abort reaches the server); abort at
    // the first chunk.
    try {
      for await (const chunk of stream) {
        void chunk;
        controller.abort();
      }
    } catch (error) {
      return error;
    }
    return null;
  })();
  const others = Promise.all([1, 2, 3].map((i) => streamedText({ model: modelId, messages, seed: i, max_tokens: 32 })));
  const abortError = await aborted;
  assert.ok(abortError === null || abortError instanceof OpenAI.APIUserAbortError || abortError.name === 'AbortError',
            `the abort surfaced as ${abortError}`);
  for (const reply of await others) assert.ok(reply.finish === 'stop' || reply.finish === 'length');
  const after = await client.chat.completions.create({ model: modelId, messages, max_tokens: 4 });
  assert.ok(after.choices[0].message.content !== undefined, 'the server still answers');
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.match(server.log(), /client disconnected/, 'the server saw the disconnect and cancelled that generation');
});

await check('response_format json_object gives a JSON object, streamed or whole; a json_schema without a name is a 400', async () => {
  for (const seed of [1, 2, 3]) {
    const reply = await client.chat.completions.create({
      model: modelId, messages, seed, max_tokens: 200, response_format: { type: 'json_object' } });
    const { content } = reply.choices[0].message;
    assert.equal(content[0], '{', `seed ${seed}: ${JSON.stringify(content)}`);
    if (reply.choices[0].finish_reason === 'stop') {
      const parsed = JSON.parse(content);
      assert.ok(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed), content);
    } else {
      assert.equal(reply.choices[0].finish_reason, 'length');
    }
    const streamed = await streamedText({ model: modelId, messages, seed, max_tokens: 200,
                                          response_format: { type: 'json_object' } });
    assert.equal(streamed.text, content, 'the streamed deltas join to the same object');
  }
  // json_schema itself is served (structured_output_test.mjs); one without its name is refused.
  await assert.rejects(client.chat.completions.create({
    model: modelId, messages, response_format: { type: 'json_schema', json_schema: { schema: {} } } }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format.json_schema.name');
});

await check('malformed JSON, wrong types and huge bodies get 4xx and the server lives on', async () => {
  const post = (body, type = 'application/json') => fetch(baseURL + '/chat/completions', {
    method: 'POST', headers: { 'Content-Type': type, Authorization: `Bearer ${apiKey}` }, body });
  for (const [body, status] of [
    ['{"messages": [', 400],
    ['[1, 2, 3]', 400],
    [JSON.stringify({ messages: 'hello' }), 400],
    [JSON.stringify({ messages, temperature: 'hot' }), 400],
    [JSON.stringify({ messages, max_tokens: -5 }), 400],
    [JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }), 400],
    ['['.repeat(100000), 400],
    ['"' + 'x'.repeat(9 * 1024 * 1024) + '"', 413],
  ]) {
    const res = await post(body);
    assert.equal(res.status, status, `${body.slice(0, 40)} -> ${res.status}`);
    const error = (await res.json()).error;
    assert.ok(error && typeof error.message === 'string' && error.message.length > 0);
  }
  await assert.rejects(client.chat.completions.create({ model: modelId, messages, temperature: 'hot' }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
  const long = [{ role: 'user', content: 'word '.repeat(20000) }];
  await assert.rejects(client.chat.completions.create({ model: modelId, messages: long }),
                       (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
  const alive = await client.chat.completions.create({ model: modelId, messages, max_tokens: 4 });
  assert.ok(alive.choices.length === 1, 'the server lives on');
});

await stopServer(server);
checks.finish(server.log());
