// The official `@anthropic-ai/sdk` npm package against `cflow serve`'s POST /v1/messages, as an
// agent or a script would use it: messages with a system prompt, streaming (messages.stream and
// its finalMessage), errors as the SDK's classes, and a tool_use / tool_result round trip.
// Usage: node anthropic_client_test.mjs --cflow PATH/TO/cflow --shared PATH/TO/shared
// Starts its servers on free loopback ports (--port 0, the URL read from the log): the bundled
// model for text, and a random-weight model (cflow synth) with Qwen 2.5's chat template from
// ../shared for tools, where tool_choice forces a call by grammar. Exits 0 when every check
// passed, 1 otherwise; without the shared template the tool checks are reported as skipped.
// ctest: anthropic_node_client.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Checks, option, startServer, stopServer } from '../node-harness/harness.mjs';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const cflow = option('--cflow');
const shared = option('--shared');
if (!cflow) {
  console.error('usage: node anthropic_client_test.mjs --cflow PATH [--shared PATH]');
  process.exit(2);
}
let Anthropic;
try {
  Anthropic = (await import('@anthropic-ai/sdk')).default;
} catch (error) {
  console.error('the @anthropic-ai/sdk npm package is not installed beside this script: run ' +
                '`npm ci --prefix tests/server/anthropic-node` (packaging/install-deps.sh --tests does it)\n' + error);
  process.exit(1);
}
const apiKey = 'test-key-' + Math.random().toString(36).slice(2);


const checks = new Checks();
const check = (name, fn) => checks.check(name, fn);

// The SDK's base URL is the server's root: it posts to /v1/messages.
const server = await startServer(cflow, ['--api-key', apiKey, '--parallel', '2', '--threads', '1']);
const client = new Anthropic({ baseURL: server.url, apiKey, maxRetries: 0, timeout: 60000 });
const models = await (await fetch(server.url + '/v1/models', { headers: { authorization: `Bearer ${apiKey}` } })).json();
const modelId = models.data[0].id;
const messages = [{ role: 'user', content: 'Tell me a short story about a little dog.' }];
const textOf = (message) => message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

await check('messages.create with a system prompt (a string or text blocks) answers a message', async () => {
  const params = { model: modelId, max_tokens: 40, temperature: 0, messages };
  const reply = await client.messages.create({ ...params, system: 'You are a storyteller for children.' });
  assert.equal(reply.type, 'message');
  assert.equal(reply.role, 'assistant');
  assert.match(reply.id, /^msg_[0-9a-f]{24}$/);
  assert.equal(reply.model, modelId);
  assert.equal(reply.content.length, 1);
  assert.equal(reply.content[0].type, 'text');
  assert.ok(reply.content[0].text.length > 0);
  assert.ok(['end_turn', 'max_tokens'].includes(reply.stop_reason), reply.stop_reason);
  assert.equal(reply.stop_reason === 'max_tokens', reply.usage.output_tokens === 40);
  assert.equal(reply.stop_sequence, null);
  assert.ok(reply.usage.input_tokens > 10, `input_tokens ${reply.usage.input_tokens}`);
  const blocks = await client.messages.create({
    ...params, system: [{ type: 'text', text: 'You are a storyteller ' }, { type: 'text', text: 'for children.' }] });
  assert.equal(textOf(blocks), textOf(reply), 'text blocks join into the same system prompt');
  assert.equal(blocks.usage.input_tokens, reply.usage.input_tokens);
});

await check('messages.stream: text events and finalMessage agree with the whole message', async () => {
  const params = { model: modelId, max_tokens: 48, temperature: 0, system: 'You are terse.', messages };
  const whole = await client.messages.create(params);
  const stream = client.messages.stream(params);
  let streamedText = '';
  const eventTypes = [];
  stream.on('text', (delta) => { streamedText += delta; });
  stream.on('streamEvent', (event) => eventTypes.push(event.type));
  const final = await stream.finalMessage();
  assert.equal(streamedText, textOf(whole));
  assert.equal(textOf(final), textOf(whole));
  assert.equal(final.stop_reason, whole.stop_reason);
  assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
  assert.equal(final.usage.input_tokens, whole.usage.input_tokens);
  assert.match(final.id, /^msg_/);
  // (the SDK passes no ping on; the raw order is checked in cflow_server_tests)
  assert.deepEqual(eventTypes.slice(0, 3), ['message_start', 'content_block_start', 'content_block_delta']);
  assert.deepEqual(eventTypes.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  assert.ok(eventTypes.filter((t) => t === 'content_block_delta').length > 3);
});

await check('create({stream: true}) iterates the raw events; stop_sequences end the reply', async () => {
  const params = { model: modelId, max_tokens: 48, temperature: 0, messages };
  const whole = textOf(await client.messages.create(params));
  const middle = [...whole.slice(whole.length / 2)].find((c) => c.charCodeAt(0) < 128 && c.trim() !== '');
  assert.ok(middle, `an ASCII character to stop at in ${JSON.stringify(whole)}`);
  const events = await client.messages.create({ ...params, stop_sequences: [middle], stream: true });
  let text = '';
  let delta = null;
  for await (const event of events) {
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    if (event.type === 'message_delta') delta = event.delta;
  }
  assert.equal(text, whole.slice(0, whole.indexOf(middle)));
  assert.equal(delta.stop_reason, 'stop_sequence');
  assert.equal(delta.stop_sequence, middle);
});

await check('errors: a wrong key is AuthenticationError, an unknown model NotFoundError, a bad field BadRequestError', async () => {
  const wrongKey = new Anthropic({ baseURL: server.url, apiKey: 'not-the-key', maxRetries: 0 });
  await assert.rejects(wrongKey.messages.create({ model: modelId, max_tokens: 8, messages }),
                       (e) => e instanceof Anthropic.AuthenticationError && e.status === 401 &&
                              e.error?.type === 'error' && e.error?.error?.type === 'authentication_error');
  await assert.rejects(client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 8, messages }),
                       (e) => e instanceof Anthropic.NotFoundError && e.error?.error?.type === 'not_found_error');
  await assert.rejects(client.messages.create({ model: modelId, messages }),
                       (e) => e instanceof Anthropic.BadRequestError && /max_tokens/.test(e.message));
  await assert.rejects(client.messages.create({ model: modelId, max_tokens: 8, temperature: 1.5, messages }),
                       (e) => e instanceof Anthropic.BadRequestError && /temperature/.test(e.message));
  const alive = await client.messages.create({ model: modelId, max_tokens: 4, messages });
  assert.equal(alive.type, 'message', 'the server lives on');
});
await stopServer(server);

const template = shared && join(shared, 'assets/chat-templates/llama.cpp-models-templates/Qwen-Qwen2.5-7B-Instruct.jinja');
if (!template || !existsSync(template)) {
  console.log(`skip the tool checks: ${template ?? '--shared'} is absent (the shared assets are not checked out)`);
} else {
  // A small random-weight Llama-shaped model with a byte vocabulary that can spell any call.
  const folder = mkdtempSync(join(tmpdir(), 'cflow-anthropic-tools-'));
  const model = join(folder, 'random.cflow');
  const synth = spawnSync(cflow, ['synth', '-o', model, '--d', '128', '--layers', '2', '--heads', '4', '--d-ff', '256',
                                  '--vocab', '4000', '--seed', '11'], { encoding: 'utf8' });
  assert.equal(synth.status, 0, 'cflow synth: ' + synth.stderr);
  const toolServer = await startServer(cflow, [model, '--template', template, '--ctx', '4096', '--api-key', apiKey,
                                               '--parallel', '2', '--threads', '1']);
  const tools = new Anthropic({ baseURL: toolServer.url, apiKey, maxRetries: 0, timeout: 120000 });
  const toolModel = (await (await fetch(toolServer.url + '/v1/models', { headers: { authorization: `Bearer ${apiKey}` } })).json()).data[0].id;
  const weather = {
    name: 'get_weather',
    description: 'The current weather in a city',
    input_schema: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city', 'unit'],
    },
  };
  const question = [{ role: 'user', content: 'What is the weather in Oslo?' }];
  const assertWeatherCall = (block) => {
    assert.equal(block.type, 'tool_use');
    assert.equal(block.name, 'get_weather');
    assert.match(block.id, /^toolu_/);
    assert.equal(typeof block.input.city, 'string');
    // maxLength counts characters (code points), as JSON Schema does; JS's length counts UTF-16
    // units, two for a character beyond the BMP, which a random-weight model writes often.
    assert.ok([...block.input.city].length <= 12, JSON.stringify(block.input));
    assert.ok(['celsius', 'fahrenheit'].includes(block.input.unit), JSON.stringify(block.input));
  };

  await check('a tool_use / tool_result round trip (tool_choice {type: "tool"} forces the call)', async () => {
    const first = await tools.messages.create({
      model: toolModel, max_tokens: 200, system: 'You answer with tools.', messages: question, tools: [weather],
      tool_choice: { type: 'tool', name: 'get_weather' } });
    assert.equal(first.stop_reason, 'tool_use', JSON.stringify(first));
    const uses = first.content.filter((b) => b.type === 'tool_use');
    assert.equal(uses.length, 1, JSON.stringify(first.content));
    assertWeatherCall(uses[0]);
    const second = await tools.messages.create({
      model: toolModel, max_tokens: 16, system: 'You answer with tools.', tools: [weather],
      messages: [...question, { role: 'assistant', content: first.content },
                 { role: 'user', content: [{ type: 'tool_result', tool_use_id: uses[0].id, content: '-3 C, light snow' }] }] });
    assert.equal(second.type, 'message');
    assert.ok(['end_turn', 'max_tokens', 'tool_use'].includes(second.stop_reason), second.stop_reason);
    assert.ok(second.usage.input_tokens > first.usage.input_tokens, 'the call and its result are in the prompt');
  });

  await check('a streamed tool_use (tool_choice any): input_json deltas build the finalMessage input', async () => {
    const stream = tools.messages.stream({
      model: toolModel, max_tokens: 200, messages: question, tools: [weather], tool_choice: { type: 'any' } });
    let partialJson = '';
    stream.on('inputJson', (delta) => { partialJson += delta; });
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    const uses = final.content.filter((b) => b.type === 'tool_use');
    assert.equal(uses.length, 1, JSON.stringify(final.content));
    assertWeatherCall(uses[0]);
    assert.deepEqual(JSON.parse(partialJson), uses[0].input);
  });
  await stopServer(toolServer);
  rmSync(folder, { recursive: true, force: true });
}

checks.finish(server.log());
