// Every schema of tests/data/json-schemas through `cflow chat --json-schema`, several seeds each,
// every reply parsed with JSON.parse and validated by ajv (draft 2020-12, ajv-formats): the
// issue 33 proof that grammar-constrained outputs validate. A reply the grammar did not bring to
// completion (cut by -n or by the context) is a failure too.
// Usage: node schema_corpus_test.mjs --cflow PATH/TO/cflow --schemas DIR (--random | --model M.cflow)
//        [--seeds N] [--string-max N] [--array-max N] [--recursion-max N] [--max-tokens N]
// The caps (--json-string-max-chars, --json-array-max-items, --json-recursion-max-depth) steer
// models that would never close a string, an array or a recursion (random weights sample
// uniformly-ish); they narrow the grammar, so every output must still validate.
// --random: a random-weight llama-shaped model (32k vocabulary) from `cflow synth`; without
// --random or --model: the bundled default model. ctest: json_schema_corpus_random / _default.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const cflow = option('--cflow');
const schemasDir = option('--schemas');
if (!cflow || !schemasDir) {
  console.error('usage: node schema_corpus_test.mjs --cflow PATH --schemas DIR (--random | --model M) [--seeds N]');
  process.exit(2);
}
const seeds = Number(option('--seeds', '3'));
const stringMax = option('--string-max', '16');
const arrayMax = option('--array-max', '3');
const recursionMax = option('--recursion-max', '3');
const maxTokens = option('--max-tokens', '1500');

let Ajv2020, addFormats;
try {
  Ajv2020 = (await import('ajv/dist/2020.js')).default;
  addFormats = (await import('ajv-formats')).default;
} catch (error) {
  console.error('ajv is not installed beside this script: run `npm ci --prefix tests/engine/schema-node` ' +
                '(packaging/install-deps.sh --tests does it)\n' + error);
  process.exit(1);
}

function run(argv, input) {
  return new Promise((resolve) => {
    const child = spawn(cflow, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d.toString(); });
    child.stderr.on('data', (d) => { err += d.toString(); });
    child.on('close', (code) => resolve({ code, out, err }));
    child.stdin.end(input);
  });
}

const scratch = mkdtempSync(join(tmpdir(), 'cflow-schema-corpus-'));
let model = option('--model');
let label = model ?? 'the bundled default model';
if (args.includes('--random')) {
  model = join(scratch, 'random.cflow');
  const made = await run(['synth', '-o', model, '--d', '64', '--layers', '2', '--heads', '4', '--d-ff', '128',
                          '--vocab', '32000', '--seed', '7'], '');
  if (made.code !== 0) {
    console.error('cflow synth failed:\n' + made.err);
    process.exit(1);
  }
  label = 'a random-weight model (d 64, 2 layers, vocab 32000)';
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const files = readdirSync(schemasDir).filter((f) => f.endsWith('.json')).sort();
const jobs = [];
for (const file of files) {
  const schema = JSON.parse(readFileSync(join(schemasDir, file), 'utf8'));
  const validate = ajv.compile(schema);
  for (let seed = 1; seed <= seeds; ++seed) jobs.push({ file, validate, seed });
}

const failures = [];
let passed = 0;
async function check({ file, validate, seed }) {
  const argv = ['chat', ...(model ? [model] : []), '--json-schema', join(schemasDir, file), '--seed', String(seed),
                '--temp', '1', '-n', maxTokens, '--threads', '1', '--json-string-max-chars', stringMax,
                '--json-array-max-items', arrayMax, '--json-recursion-max-depth', recursionMax];
  const r = await run(argv, 'Reply with one JSON value.\n');
  const where = `${file} seed ${seed}`;
  if (r.code !== 0) return failures.push(`${where}: exit ${r.code}: ${r.err}`);
  if (/before its JSON was complete|context is full/.test(r.err)) return failures.push(`${where}: cut short: ${r.err.trim()}`);
  const text = r.out.endsWith('\n') ? r.out.slice(0, -1) : r.out;
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return failures.push(`${where}: not JSON (${error.message}): ${text}`);
  }
  if (!validate(value)) return failures.push(`${where}: invalid: ${ajv.errorsText(validate.errors)}: ${text}`);
  passed += 1;
}

const started = Date.now();
const workers = 2;  // the CI machines' cores
let next = 0;
await Promise.all(Array.from({ length: workers }, async () => {
  while (next < jobs.length) await check(jobs[next++]);
}));
rmSync(scratch, { recursive: true, force: true });
for (const failure of failures) console.log('FAIL ' + failure);
console.log(`${passed} of ${jobs.length} outputs (${files.length} schemas x ${seeds} seeds) of ${label} parse and ` +
            `validate under ajv, in ${((Date.now() - started) / 1000).toFixed(1)} s`);
if (files.length < 60) {
  console.log(`FAIL the corpus has ${files.length} schemas, fewer than 60`);
  process.exit(1);
}
process.exit(failures.length === 0 && passed === jobs.length ? 0 : 1);
