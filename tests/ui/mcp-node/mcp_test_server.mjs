// An MCP server over stdio, written with the official @modelcontextprotocol/sdk, for the desktop's
// MCP client test (tests/ui/mcp_client_test.cpp). Its tools:
//   add    {a, b}  -> the sum, as text
//   echo   {text}  -> the text, in two text content blocks ("echo:" and the text)
//   fail   {}      -> a result with isError: true
//   hang   {}      -> never answers
//   crash  {}      -> writes two stderr lines and exits with code 3
//   garble {}      -> writes a line that is not JSON to stdout
//   env    {name}  -> the value of that environment variable ("" when unset)
// tools/list answers two tools a page (nextCursor), so the client must follow the cursor.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const object = (properties, required = []) => ({ type: 'object', properties, required });
const tools = [
  { name: 'add', description: 'Adds two numbers', inputSchema: object({ a: { type: 'number' }, b: { type: 'number' } }, ['a', 'b']) },
  { name: 'echo', description: 'Echoes its text', inputSchema: object({ text: { type: 'string' } }, ['text']) },
  { name: 'fail', description: 'Always reports an error', inputSchema: object({}) },
  { name: 'hang', description: 'Never answers', inputSchema: object({}) },
  { name: 'crash', description: 'Exits with code 3', inputSchema: object({}) },
  { name: 'garble', description: 'Writes a line that is not JSON', inputSchema: object({}) },
  { name: 'env', description: 'Reads an environment variable', inputSchema: object({ name: { type: 'string' } }, ['name']) },
];
const pageSize = 2;

const server = new Server({ name: 'cflow-mcp-test', version: '1.0.0' }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async (request) => {
  const start = request.params?.cursor ? Number(request.params.cursor) : 0;
  const page = tools.slice(start, start + pageSize);
  const next = start + pageSize < tools.length ? String(start + pageSize) : undefined;
  return next ? { tools: page, nextCursor: next } : { tools: page };
});

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const args = request.params.arguments ?? {};
  switch (request.params.name) {
    case 'add':
      return { content: [{ type: 'text', text: String(Number(args.a) + Number(args.b)) }] };
    case 'echo':
      return { content: [{ type: 'text', text: 'echo:' }, { type: 'text', text: String(args.text) }] };
    case 'fail':
      return { content: [{ type: 'text', text: 'the fail tool always fails' }], isError: true };
    case 'hang':
      return new Promise(() => {});
    case 'crash':
      process.stderr.write('crash tool: about to exit\ncrash tool: exit code 3\n');
      process.exit(3);
    case 'garble':
      process.stdout.write('this is not JSON\n');
      return new Promise(() => {});
    case 'env':
      return { content: [{ type: 'text', text: process.env[String(args.name)] ?? '' }] };
    default:
      return { content: [{ type: 'text', text: `no tool named ${request.params.name}` }], isError: true };
  }
});

await server.connect(new StdioServerTransport());
process.stderr.write('cflow-mcp-test: serving on stdio\n');
