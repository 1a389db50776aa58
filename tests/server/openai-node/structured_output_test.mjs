// Structured output through the official `openai` npm package against `cflow serve` on the bundled
// default model (issue 33): response_format json_schema written by zod (`zodResponseFormat` from
// 'openai/helpers/zod'), parsed by the client (`chat.completions.parse`, which runs zod on the
// reply) and checked again with zod here, over several seeds, streamed and whole; a schema the
// converter refuses is a 400 naming response_format.json_schema.schema and the keyword's pointer.
// Usage: node structured_output_test.mjs --cflow PATH/TO/cflow [--model MODEL.cflow]
// ctest: openai_node_structured_output.
import assert from 'node:assert/strict';
import { Checks, option, startServer, stopServer } from '../node-harness/harness.mjs';

const cflow = option('--cflow');
const model = option('--model');
if (!cflow) {
  console.error('usage: node structured_output_test.mjs --cflow PATH [--model MODEL.cflow]');
  process.exit(2);
}
let OpenAI, zodResponseFormat, z;
try {
  OpenAI = (await import('openai')).default;
  ({ zodResponseFormat } = await import('openai/helpers/zod'));
  ({ z } = await import('zod'));
} catch (error) {
  console.error('the openai and zod npm packages are not installed beside this script: run ' +
                '`npm ci --prefix tests/server/openai-node` (packaging/install-deps.sh --tests does it)\n' + error);
  process.exit(1);
}
const apiKey = 'test-key-' + Math.random().toString(36).slice(2);


const server = await startServer(cflow, [...(model ? [model] : []), '--api-key', apiKey, '--parallel', '2', '--threads', '1']);
const client = new OpenAI({ baseURL: server.url + '/v1', apiKey, maxRetries: 0, timeout: 120000 });
// The served model's name (the file's stem), as a client finds it.
const modelId = (await client.models.list()).data[0].id;

const checks = new Checks();
const check = (name, fn) => checks.check(name, fn);

// Bounded strings and lists: the bundled model is a tiny story model that would otherwise write
// until max_tokens inside one string.
const Character = z.object({
  name: z.string().max(24),
  age: z.number().int().min(0).max(120),
  mood: z.enum(['happy', 'sad', 'curious']),
  friends: z.array(z.string().max(16)).max(3),
  pet: z.object({ kind: z.enum(['dog', 'cat', 'bird']), name: z.string().max(16) }).nullable(),
});
const messages = [
  { role: 'system', content: 'You describe story characters as JSON.' },
  { role: 'user', content: 'Describe the little dog from the story.' },
];

await check('chat.completions.parse with a zod schema: every seed parses and validates', async () => {
  for (const seed of [1, 2, 3, 4]) {
    const completion = await client.chat.completions.parse({
      model: modelId, messages, seed, temperature: 1, max_tokens: 600,
      response_format: zodResponseFormat(Character, 'character'),
    });
    const choice = completion.choices[0];
    assert.equal(choice.finish_reason, 'stop', `seed ${seed}: ${choice.message.content}`);
    assert.ok(choice.message.parsed, `seed ${seed}: nothing parsed from ${choice.message.content}`);
    const again = Character.safeParse(JSON.parse(choice.message.content));
    assert.ok(again.success, `seed ${seed}: ${JSON.stringify(again.error?.issues)}: ${choice.message.content}`);
    assert.deepEqual(choice.message.parsed, again.data);
  }
});

await check('streamed json_schema reply reassembles into a valid value', async () => {
  const stream = await client.chat.completions.create({
    model: modelId, messages, seed: 9, temperature: 1, max_tokens: 600, stream: true,
    response_format: zodResponseFormat(Character, 'character'),
  });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      text += choice.delta?.content ?? '';
      finish = choice.finish_reason ?? finish;
    }
  }
  assert.equal(finish, 'stop', text);
  const parsed = Character.safeParse(JSON.parse(text));
  assert.ok(parsed.success, `${JSON.stringify(parsed.error?.issues)}: ${text}`);
});

await check('a schema the grammar cannot check is a 400 naming the schema and the pointer', async () => {
  const format = {
    type: 'json_schema',
    json_schema: { name: 'code', strict: true, schema: { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]+$' } },
                                                         required: ['code'], additionalProperties: false } },
  };
  await assert.rejects(
    client.chat.completions.create({ model: modelId, messages, max_tokens: 20, response_format: format }),
    (error) => {
      assert.equal(error.status, 400);
      assert.equal(error.param, 'response_format.json_schema.schema');
      assert.match(error.message, /#\/properties\/code\/pattern/);
      return true;
    });
});

await stopServer(server);
checks.finish(server.log());
