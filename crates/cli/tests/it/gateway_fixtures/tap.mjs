// Run a stdio MCP server and append every line it receives on stdin to a log file.
// Usage: node tap.mjs LOG COMMAND [ARGS...]
import { appendFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const [log, cmd, ...args] = process.argv.slice(2);
const child = spawn(cmd, args, { stdio: ['pipe', 'inherit', 'inherit'] });
// The gateway kills the whole process group; a write after the child went is not an error.
child.stdin.on('error', () => {});
process.stdout.on('error', () => {});
createInterface({ input: process.stdin }).on('line', line => {
  appendFileSync(log, line + '\n');
  child.stdin.write(line + '\n');
}).on('close', () => child.stdin.end());
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
