// What every npm-client test of `cflow serve` shares (tests/server/openai-node, anthropic-node):
// its command-line options, a `cflow serve` on a free port with its log, and the check runner
// with its summary and exit code. No dependencies: each test imports its own client package,
// which node resolves beside the test, not here.
import { spawn } from 'node:child_process';

// The value after `name` in the script's arguments (undefined when absent).
export function option(name) {
  const args = process.argv.slice(2);
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

// `cflow serve ...args --port 0` started; resolves to the child process with .url (the origin,
// http://127.0.0.1:PORT) and .log() (its stderr so far) once it prints where it listens.
export function startServer(cflow, args) {
  const child = spawn(cflow, ['serve', ...args, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.log = () => log;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('cflow serve did not start within 30 s:\n' + log)), 30000);
    child.stderr.on('data', (data) => {
      log += data.toString();
      const match = log.match(/on (http:\/\/127\.0\.0\.1:\d+)\/v1/);
      if (match && !child.url) {
        child.url = match[1];
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.on('exit', (code) => reject(new Error(`cflow serve exited with ${code}:\n${log}`)));
  });
}

// Stops a server started by startServer (SIGINT: it finishes what it serves) and waits for it.
export async function stopServer(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGINT');
  await exited;
}

// Named checks run one after the other; finish() prints the summary (and `log` when one failed)
// and exits with 1 when any failed.
export class Checks {
  constructor() {
    this.results = [];
  }

  async check(name, fn) {
    const started = Date.now();
    try {
      await fn();
      this.results.push({ name, ok: true });
      console.log(`ok   ${name} (${Date.now() - started} ms)`);
    } catch (error) {
      this.results.push({ name, ok: false });
      console.log(`FAIL ${name}: ${error.stack || error}`);
    }
  }

  finish(log) {
    const failed = this.results.filter((r) => !r.ok);
    console.log(`${this.results.length - failed.length} of ${this.results.length} checks passed`);
    if (failed.length && log) console.log('server log:\n' + log);
    process.exit(failed.length ? 1 : 0);
  }
}
