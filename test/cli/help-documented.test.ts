// The README's and docs' tables of options hold every option `--help` lists, and name none that is
// not there: a flag added to a command and not to a table, or a table row left behind by a flag
// renamed, fails here.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli.js';

const COMMANDS = ['upload', 'validate', 'emulate', 'inspect', 'cleanup', 'state', 'report'];

/** The long options a command's --help lists (but --help itself). */
function helpFlags(command: string): string[] {
  const help = runCli([command, '--help'], { env: { NO_COLOR: '1' } });
  expect(help.status, help.stderr).toBe(0);
  const flags = [...help.stdout.matchAll(/^ {2}(?:-\w, )?(--[a-z0-9-]+)/gm)].map((m) => m[1]);
  return flags.filter((flag) => flag !== '--help');
}

/** The rows of every Markdown table of README.md and docs/*.md. */
function tableRows(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join('docs', name));
  return ['README.md', ...docs].flatMap((path) => readFileSync(join(ROOT, path), 'utf8').split('\n').filter((line) => line.startsWith('|')));
}

describe('the documented options', () => {
  let rows: string[];
  let listed: Map<string, string[]>;
  beforeAll(() => {
    rows = tableRows();
    listed = new Map(COMMANDS.map((command) => [command, helpFlags(command)]));
  });

  it.each(COMMANDS)('of track %s: every option of its --help is in a table', (command) => {
    expect(listed.get(command)!.length).toBeGreaterThan(0);
    const missing = listed.get(command)!.filter((flag) => !rows.some((row) => new RegExp(`\`${flag}[ \`]`).test(row)));
    expect(missing).toEqual([]);
  });

  it('name no option that no command has', () => {
    const known = new Set([...listed.values()].flat());
    const named = new Set(rows.flatMap((row) => [...row.matchAll(/`(--[a-z0-9-]+)/g)].map((m) => m[1])));
    expect([...named].filter((flag) => !known.has(flag))).toEqual([]);
  });
});
