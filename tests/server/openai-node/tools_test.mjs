// Tool calling through the official `openai` npm package against `cflow serve`: a random-weight
// model (cflow synth) served with a real model family's chat template (Qwen 2.5's, from
// ../shared) whose tools section the server renders. The weights are random, so the text is
// garbage, but under tool_choice required / named the grammar makes every reply a well-formed call
// in the template's own format, which the server reads back into tool_calls.
// Usage: node tools_test.mjs --cflow PATH/TO/cflow --shared PATH/TO/shared
// Exits 0 when every check passed, 1 otherwise, 77 (ctest: skipped) without the shared template.
// ctest: openai_node_tools.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Checks, option, startServer, stopServer } from '../node-harness/harness.mjs';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const cflow = option('--cflow');
const shared = option('--shared');
if (!cflow || !shared) {
  console.error('usage: node tools_test.mjs --cflow PATH --shared PATH');
  process.exit(2);
}
// One family per tool-call format the server reads: its real template renders the tools.
const templates = join(shared, 'assets/chat-templates/llama.cpp-models-templates');
const families = [
  ['hermes (Qwen 2.5)', 'Qwen-Qwen2.5-7B-Instruct.jinja'],
  ['llama3.1', 'meta-llama-Llama-3.1-8B-Instruct.jinja'],
  ['mistral (Nemo)', 'mistralai-Mistral-Nemo-Instruct-2407.jinja'],
  ['harmony (gpt-oss)', 'openai-gpt-oss-120b.jinja'],
].map(([label, file]) => ({ label, template: join(templates, file) }));
if (!families.every((f) => existsSync(f.template))) {
  console.log(`skipped: the chat templates under ${templates} are absent (the shared assets are not checked out)`);
  process.exit(77);
}
let OpenAI;
try {
  OpenAI = (await import('openai')).default;
} catch (error) {
  console.error('the openai npm package is not installed beside this script: run ' +
                '`npm ci --prefix tests/server/openai-node` (packaging/install-deps.sh --tests does it)\n' + error);
  process.exit(1);
}

// A small random-weight Llama-shaped model: fast on two cores, a SentencePiece byte vocabulary
// that can spell any call.
const folder = mkdtempSync(join(tmpdir(), 'cflow-tools-'));
const model = join(folder, 'random.cflow');
const synth = spawnSync(cflow, ['synth', '-o', model, '--d', '128', '--layers', '2', '--heads', '4', '--d-ff', '256',
                                '--vocab', '4000', '--seed', '11'], { encoding: 'utf8' });
if (synth.status !== 0) {
  console.error('cflow synth failed:\n' + synth.stderr);
  process.exit(1);
}

const apiKey = 'test-key-' + Math.random().toString(36).slice(2);

let server;
let client;
let modelId;
async function serveWith(template) {
  server = await startServer(cflow, [model, '--template', template, '--api-key', apiKey, '--parallel', '2', '--threads', '1',
                                     '--ctx', '4096']);
  client = new OpenAI({ baseURL: server.url + '/v1', apiKey, maxRetries: 0, timeout: 120000 });
  modelId = (await client.models.list()).data[0].id;
}

const checks = new Checks();
const check = (name, fn) => checks.check(name, fn);

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The current weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 12 }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      description: 'The local time in a time zone',
      parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] },
    },
  },
];
const messages = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'What is the weather in Oslo?' },
];
const toolNames = tools.map((t) => t.function.name);

// Each call is well formed: a known tool, an id, arguments that are a JSON object valid under
// the tool's schema (the fields this test's schemas use).
function assertValidCall(call, onlyName) {
  assert.equal(call.type, 'function');
  assert.match(call.id, /^[A-Za-z0-9_-]+$/, `call id ${call.id}`);
  assert.ok(toolNames.includes(call.function.name), `a known tool: ${call.function.name}`);
  if (onlyName) assert.equal(call.function.name, onlyName);
  assert.equal(typeof call.function.arguments, 'string', 'arguments are a JSON string');
  const argumentsObject = JSON.parse(call.function.arguments);
  if (call.function.name === 'get_weather') {
    assert.deepEqual(Object.keys(argumentsObject).sort(), ['city', 'unit']);
    assert.equal(typeof argumentsObject.city, 'string');
    assert.ok([...argumentsObject.city].length <= 12, 'maxLength counts code points');
    assert.ok(['celsius', 'fahrenheit'].includes(argumentsObject.unit));
  } else {
    assert.ok(['UTC', 'CET'].includes(argumentsObject.zone), call.function.arguments);
  }
  return argumentsObject;
}

// The raw chunks reassembled by hand, as the OpenAI docs describe: per index, the first delta
// carries id, type and name, every delta's arguments are appended.
async function streamedCalls(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  const calls = [];
  let content = '';
  let finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    content += choice.delta?.content ?? '';
    for (const delta of choice.delta?.tool_calls ?? []) {
      if (!calls[delta.index]) {
        assert.ok(delta.id && delta.function?.name, `the first delta of call ${delta.index} names it`);
        calls[delta.index] = { id: delta.id, type: delta.type, function: { name: delta.function.name, arguments: '' } };
      }
      calls[delta.index].function.arguments += delta.function?.arguments ?? '';
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { calls, content, finish };
}

const withoutIds = (calls) => calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments }));

async function familyChecks(label) {
  await check(label + ': a full round trip: tool_choice required gives tool_calls, a tool message gets an answer', async () => {
    const first = await client.chat.completions.create({
      model: modelId, messages, tools, tool_choice: 'required', seed: 3, max_tokens: 1000 });
    const choice = first.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
    assert.equal(choice.message.content, null, 'a reply of only calls has content null');
    assert.ok(choice.message.tool_calls.length >= 1);
    for (const call of choice.message.tool_calls) assertValidCall(call);
    const followUp = [
      ...messages,
      choice.message,
      ...choice.message.tool_calls.map((call) => ({
        role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature: -3, sky: 'snow' }) })),
    ];
    const answer = await client.chat.completions.create({ model: modelId, messages: followUp, tools, tool_choice: 'none',
                                                          seed: 4, max_tokens: 12 });
    assert.equal(typeof answer.choices[0].message.content, 'string');
    assert.ok(answer.choices[0].message.content.length > 0, 'an answer in text');
    assert.ok(!answer.choices[0].message.tool_calls?.length, 'tool_choice none: no calls');
    assert.ok(['stop', 'length'].includes(answer.choices[0].finish_reason));
    // The call and its result were rendered into the prompt by the template: the same request
    // without them is shorter by at least the call's arguments and the result.
    const without = await client.chat.completions.create({ model: modelId, messages, tools, tool_choice: 'none', max_tokens: 1 });
    assert.ok(answer.usage.prompt_tokens > without.usage.prompt_tokens + 10,
              `${answer.usage.prompt_tokens} prompt tokens with the call and its result, ${without.usage.prompt_tokens} without`);
  });

  await check(label + ': streamed tool-call deltas reassemble to the non-streamed calls (by hand and by the client helper)', async () => {
    for (const seed of [5, 6]) {
      const params = { model: modelId, messages, tools, tool_choice: 'required', seed, max_tokens: 1000 };
      const whole = (await client.chat.completions.create(params)).choices[0];
      assert.equal(whole.finish_reason, 'tool_calls');
      const streamed = await streamedCalls(params);
      assert.equal(streamed.finish, 'tool_calls');
      assert.equal(streamed.content, '', 'no text beside the calls');
      for (const call of streamed.calls) assertValidCall(call);
      assert.deepEqual(withoutIds(streamed.calls), withoutIds(whole.message.tool_calls), `seed ${seed}`);
      // The client's own accumulator (ChatCompletionStream) builds the same message.
      const helper = client.chat.completions.stream(params);
      const final = await helper.finalChatCompletion();
      assert.equal(final.choices[0].finish_reason, 'tool_calls');
      assert.deepEqual(withoutIds(final.choices[0].message.tool_calls), withoutIds(whole.message.tool_calls));
    }
  });

  await check(label + ': tool_choice naming a function calls that function', async () => {
    for (const seed of [7, 8]) {
      const reply = await client.chat.completions.create({
        model: modelId, messages, tools, tool_choice: { type: 'function', function: { name: 'get_time' } }, seed,
        max_tokens: 1000 });
      const choice = reply.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.ok(choice.message.tool_calls.length >= 1);
      for (const call of choice.message.tool_calls) assertValidCall(call, 'get_time');
    }
  });

  await check(label + ': parallel_tool_calls false returns one call', async () => {
    const reply = await client.chat.completions.create({
      model: modelId, messages, tools, tool_choice: 'required', parallel_tool_calls: false, seed: 9, max_tokens: 1000 });
    assert.equal(reply.choices[0].message.tool_calls.length, 1);
    const streamed = await streamedCalls({ model: modelId, messages, tools, tool_choice: 'required',
                                           parallel_tool_calls: false, seed: 9, max_tokens: 1000 });
    assert.equal(streamed.calls.length, 1);
  });

  await check(label + ': malformed tools, unknown tool_choice names and non-JSON arguments are 400s naming the field', async () => {
    const refused = async (params, param) => {
      await assert.rejects(client.chat.completions.create({ model: modelId, max_tokens: 4, ...params }),
                           (e) => e instanceof OpenAI.BadRequestError && e.param === param, param);
    };
    await refused({ messages, tools, tool_choice: { type: 'function', function: { name: 'get_stock_price' } } }, 'tool_choice');
    await refused({ messages, tools: [{ type: 'function', function: { name: 'no spaces allowed' } }] },
                  'tools[0].function.name');
    await refused({ messages, tools: [{ type: 'function', function: { name: 'f', parameters: 'object' } }] },
                  'tools[0].function.parameters');
    await refused({ messages, tool_choice: 'required' }, 'tool_choice');
    await refused({
      messages: [...messages, { role: 'assistant', content: null, tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{city: Oslo' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '-3' }],
    }, 'messages[2].tool_calls[0].function.arguments');
    await refused({ messages: [...messages, { role: 'tool', content: 'no id' }] }, 'messages[2].tool_call_id');
    const alive = await client.chat.completions.create({ model: modelId, messages, max_tokens: 4 });
    assert.equal(alive.choices.length, 1, 'the server lives on');
  });
}

const failedLogs = [];
for (const { label, template } of families) {
  await serveWith(template);
  const before = checks.results.filter((r) => !r.ok).length;
  await familyChecks(label);
  await stopServer(server);
  if (checks.results.filter((r) => !r.ok).length > before) failedLogs.push(`${label}:\n${server.log()}`);
}

// A template that renders no tools (the built-in plain one) cannot be made to call one.
await serveWith('plain');
await check('plain template: tool_choice required is a 400 that says the template has no tool-call format', async () => {
  await assert.rejects(client.chat.completions.create({ model: modelId, messages, tools, tool_choice: 'required', max_tokens: 4 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice' && /template/.test(e.message));
  const auto = await client.chat.completions.create({ model: modelId, messages, tools, max_tokens: 4 });
  assert.equal(typeof auto.choices[0].message.content, 'string', 'auto: a text reply');
});
await stopServer(server);
rmSync(folder, { recursive: true, force: true });
checks.finish(failedLogs.join('\n') + server.log());
