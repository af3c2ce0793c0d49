// GitHub Actions: the workflow-command formats as GitHub documents them, and an upload with
// GITHUB_ACTIONS=true whose step outputs and summary equal its --json summary and whose annotations
// name rows of its rejects file.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { annotatedRows, errorAnnotation, escapeData, escapeProperty, markdownCell, MAX_ANNOTATIONS, outputLine, UNANNOTATED } from '../../src/cli/output/github-actions.js';
import type { RejectRecord } from '../../src/model/request.js';
import { runCliAsync as runCli } from '../helpers/cli.js';
import { writeEventsCsv } from '../helpers/events.js';
import { checkedLines } from '../helpers/progress-events.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();

/** Reads $GITHUB_OUTPUT as the runner does: `name<<DELIMITER`, the value's lines, `DELIMITER`. */
function readOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const m = /^([^<=]+)<<(.+)$/.exec(lines[i]);
    if (m === null) continue;
    const end = lines.indexOf(m[2], i + 1);
    expect(end).toBeGreaterThan(i);
    out[m[1]] = lines.slice(i + 1, end).join('\n');
    i = end;
  }
  return out;
}

/** An annotation line, its properties unescaped as the runner reads them. */
function parseAnnotation(line: string): { props: Record<string, string>; message: string } {
  const m = /^::error (.*?)::(.*)$/.exec(line);
  expect(m).not.toBeNull();
  const unescape = (s: string): string => decodeURIComponent(s);
  const props = Object.fromEntries(m![1].split(',').map((kv) => [kv.slice(0, kv.indexOf('=')), unescape(kv.slice(kv.indexOf('=') + 1))]));
  return { props, message: unescape(m![2]) };
}

const reject = (line: number, error: string): RejectRecord => ({ file: 'a.csv', line, kind: 'events', row: {}, errors: [error] });

describe('workflow command formats', () => {
  it('escapes %, CR and LF in data, and : and , too in properties', () => {
    expect(escapeData('50% done\r\nnext')).toBe('50%25 done%0D%0Anext');
    expect(escapeProperty('a:b,c%\n')).toBe('a%3Ab%2Cc%25%0A');
    expect(errorAnnotation({ file: 'dir/x,y:z.csv', line: 12, title: 'bad: row' }, 'email: no\nway')).toBe('::error file=dir/x%2Cy%3Az.csv,line=12,title=bad%3A row::email: no%0Away');
    expect(errorAnnotation({ file: undefined, title: 't' }, 'm')).toBe('::error title=t::m');
  });

  it('writes an output under a delimiter the value does not hold', () => {
    const text = outputLine('summary-file', 'line one\nline two');
    expect(text).toMatch(/^summary-file<<(ghadelimiter_[0-9a-f-]{36})\nline one\nline two\n\1\n$/);
    expect(readOutputs(text)).toEqual({ 'summary-file': 'line one\nline two' });
  });

  it('keeps Markdown table cells to one cell of text', () => {
    expect(markdownCell('a | b <script> *c*\nd')).toBe('a \\| b &lt;script&gt; \\*c\\* d');
  });

  it('annotates the first row of each reason in turn, at most 10 in all', () => {
    const byReason = new Map([
      ['x', [reject(2, 'x'), reject(3, 'x'), reject(4, 'x')]],
      ['y', [reject(10, 'y')]],
      ['z', Array.from({ length: 20 }, (_, i) => reject(100 + i, 'z'))],
    ]);
    const rows = annotatedRows(byReason);
    expect(rows).toHaveLength(MAX_ANNOTATIONS);
    expect(rows.slice(0, 5).map((r) => r.line)).toEqual([2, 10, 100, 3, 101]);
  });
});

describe('an upload in GitHub Actions', () => {
  it('writes outputs and a summary that equal --json, and annotates rows of the rejects file', async () => {
    // user-3's requests are refused whole by the server; rows 0, 7, 14, ... before sending
    const emulator = await servers.emulator({ blocklist: ['user-3'] });
    const file = writeEventsCsv(servers.tmp.dir, 300, 'events.csv', { bad: (i) => i % 7 === 0, users: 40 });
    const output = join(servers.tmp.dir, 'github-output');
    const stepSummary = join(servers.tmp.dir, 'step-summary.md');
    writeFileSync(output, '');
    writeFileSync(stepSummary, '# earlier step\n');
    const env = { GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: output, GITHUB_STEP_SUMMARY: stepSummary, GITHUB_WORKSPACE: servers.tmp.dir, RUNNER_TEMP: servers.tmp.dir };
    const r = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--json', '--concurrency', '1'], { env });
    expect(r.status).toBe(1);
    const summary = JSON.parse(r.stdout);
    const refused = summary.delivery.items.events.rejected;
    expect(refused).toBeGreaterThan(0);
    expect(summary.rejected).toBe(43);

    const outputs = readOutputs(readFileSync(output, 'utf8'));
    expect(outputs).toMatchObject({
      rows: String(summary.rows),
      rejected: String(summary.rejected + refused),
      requests: String(summary.delivery.requestsSent),
      'data-points': String(summary.dataPoints.sent),
      'exit-status': '1',
      'rejects-file': summary.rejectsPath,
    });
    expect(JSON.parse(readFileSync(outputs['summary-file'], 'utf8'))).toEqual(summary);

    const markdown = readFileSync(stepSummary, 'utf8');
    expect(markdown.startsWith('# earlier step\n')).toBe(true);
    expect(markdown).toContain(`| rows read | ${summary.rows} |`);
    expect(markdown).toContain(`| rejected | ${summary.rejected + refused} |`);
    for (const [reason, n] of Object.entries({ ...summary.rejectReasons, ...summary.refusedReasons })) expect(markdown).toContain(`| ${n} | ${markdownCell(reason)} |`);

    // with --json the annotations go to stderr, stdout holding the summary alone
    const annotations = r.stderr.split('\n').filter((l) => l.startsWith('::error')).map(parseAnnotation);
    expect(annotations.length).toBe(MAX_ANNOTATIONS);
    const rejects = readFileSync(summary.rejectsPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    for (const { props, message } of annotations) {
      expect(props.file).toBe('events.csv');
      const row = rejects.find((x) => x.line === Number(props.line));
      expect(row, `line ${props.line}`).toBeDefined();
      expect(message).toBe(row.errors.join('; '));
    }
    // both reasons are annotated: the refused before sending and the refused by the server
    for (const { props } of annotations) expect(props.title.startsWith('track: rejected events row')).toBe(true);
    expect(annotations.some((a) => /name: missing; must be/.test(a.message))).toBe(true);
    expect(annotations.some((a) => /blocklist/i.test(a.message))).toBe(true);
  });

  it("names --summary-file in the summary-file output when one is given, and writes no other", async () => {
    const emulator = await servers.emulator();
    const file = writeEventsCsv(servers.tmp.dir, 30, 'given.csv', { users: 5 });
    const output = join(servers.tmp.dir, 'given-output');
    const temp = join(servers.tmp.dir, 'runner-temp');
    mkdirSync(temp);
    writeFileSync(output, '');
    const env = { GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: output, RUNNER_TEMP: temp };
    const r = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--summary-file', 'shard.json'], { env, cwd: servers.tmp.dir });
    expect(r.status, r.stderr).toBe(0);
    const outputs = readOutputs(readFileSync(output, 'utf8'));
    expect(outputs['summary-file']).toBe('shard.json');
    expect(JSON.parse(readFileSync(join(servers.tmp.dir, 'shard.json'), 'utf8')).exitStatus).toBe(0);
    expect(readdirSync(temp)).toEqual([]);
  });

  it('writes the step outputs although the step summary and $RUNNER_TEMP cannot be written, and names each file it could not write', async () => {
    const file = writeEventsCsv(servers.tmp.dir, 20, 'events.csv', { bad: (i) => i === 3 });
    const output = join(servers.tmp.dir, 'github-output');
    writeFileSync(output, '');
    const missing = join(servers.tmp.dir, 'no', 'such', 'dir');
    const env = { GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: output, GITHUB_STEP_SUMMARY: join(missing, 'summary.md'), RUNNER_TEMP: missing };
    const eventsPath = join(servers.tmp.dir, 'run.events');
    const r = await runCli(['validate', file, '--json', '--events', eventsPath], { env });
    // the run's own outcome stands
    expect(r.status).toBe(1);
    const summary = JSON.parse(r.stdout);
    const outputs = readOutputs(readFileSync(output, 'utf8'));
    expect(outputs).toMatchObject({ rows: String(summary.rows), rejected: '1', requests: String(summary.requests), 'exit-status': '1', 'rejects-file': summary.rejectsPath });
    // no summary file was written, so none is named
    expect(outputs).not.toHaveProperty('summary-file');
    expect(r.stderr).toMatch(/warning: GitHub Actions: cannot write \$GITHUB_STEP_SUMMARY .*summary\.md \(ENOENT\)/);
    expect(r.stderr).toMatch(/warning: GitHub Actions: cannot write \$RUNNER_TEMP .*\.json \(ENOENT\)/);
    // the events file, closed last, holds the warnings too
    const warnings = checkedLines(readFileSync(eventsPath, 'utf8')).filter((e) => e.type === 'warning');
    expect(warnings.map((e) => e.message)).toEqual([expect.stringMatching(/\$RUNNER_TEMP/), expect.stringMatching(/\$GITHUB_STEP_SUMMARY/)]);
  });

  it('keeps stderr to events with --progress ndjson: annotations on stdout, or none with --json too (told as a warning event)', async () => {
    const file = writeEventsCsv(servers.tmp.dir, 30, 'events.csv', { bad: (i) => i % 10 === 0 });
    const output = join(servers.tmp.dir, 'github-output');
    writeFileSync(output, '');
    const env = { GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: output };
    const human = await runCli(['validate', file, '--progress', 'ndjson'], { env });
    expect(human.status).toBe(1);
    expect(checkedLines(human.stderr).at(-1)!.type).toBe('end');
    expect(human.stdout.split('\n').filter((l) => l.startsWith('::error')).map((l) => parseAnnotation(l).props.line)).toEqual(['2', '12', '22']);

    const json = await runCli(['validate', file, '--progress', 'ndjson', '--json'], { env });
    expect(json.status).toBe(1);
    const summary = JSON.parse(json.stdout);
    const events = checkedLines(json.stderr);
    expect(events.find((e) => e.type === 'end')!.summary).toEqual(summary);
    expect(events.filter((e) => e.type === 'warning').map((e) => e.message)).toEqual([UNANNOTATED]);
    // the step outputs are written all the same
    expect(readOutputs(readFileSync(output, 'utf8'))).toMatchObject({ rows: '30', rejected: '3', 'exit-status': '1' });
  });

  it('does nothing of it with --no-ci-output; without --json annotates on stdout', async () => {
    const emulator = await servers.emulator();
    const file = writeEventsCsv(servers.tmp.dir, 20, 'events.csv', { bad: (i) => i === 3 });
    const output = join(servers.tmp.dir, 'github-output');
    writeFileSync(output, '');
    const env = { GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: output, GITHUB_STEP_SUMMARY: join(servers.tmp.dir, 'none.md') };
    const off = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--no-ci-output'], { env });
    expect(off.status).toBe(1);
    expect(readFileSync(output, 'utf8')).toBe('');
    expect(off.stdout + off.stderr).not.toContain('::error');
    const on = await runCli(['validate', file], { env });
    expect(on.status).toBe(1);
    // without --json the annotation is on stdout, before the summary
    expect(on.stdout).toMatch(/^::error file=.*events\.csv,line=5,title=.*::name: missing; must be/m);
    expect(readOutputs(readFileSync(output, 'utf8'))).toMatchObject({ rows: '20', rejected: '1', 'exit-status': '1' });
  });

  it('says in the step summary that a row refused for several reasons counts under each, where the counts add up to more than the rows', async () => {
    const file = join(servers.tmp.dir, 'multi.csv');
    writeFileSync(file, 'external_id,visits:integer,vip:boolean\nr-1,abc,maybe\nr-2,1,true\nr-3,x,true\n');
    const one = join(servers.tmp.dir, 'one.csv');
    writeFileSync(one, 'external_id,visits:integer\nr-1,abc\nr-2,1\n');
    const summaryOf = async (path: string): Promise<string> => {
      const stepSummary = join(servers.tmp.dir, `${path.replace(/\W/g, '')}.md`);
      const r = await runCli(['validate', path], { env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: stepSummary, RUNNER_TEMP: servers.tmp.dir } });
      expect(r.status).toBe(1);
      return readFileSync(stepSummary, 'utf8');
    };
    const several = await summaryOf(file);
    expect(several).toMatch(/\| rejected \| 2 \|/);
    expect(several).toMatch(/#### Rejects by reason\n\nA row refused for several reasons counts under each\.\n\n\| rows \| reason/);
    expect(several).toMatch(/\| 2 \| visits: /);
    expect(await summaryOf(one)).toMatch(/#### Rejects by reason\n\n\| rows \| reason/);
  });

  it('annotates a rejected element of a JSON array at the line of the file where it begins, as the rejects file keeps its place as its line', async () => {
    const emulator = await servers.emulator();
    const file = join(servers.tmp.dir, 'pretty.json');
    writeFileSync(file, '[\n  {"external_id": "j-1",\n   "first_name": "J1"},\n  {\n    "external_id": "j-2",\n    "email": "nope"\n  }\n]\n');
    for (const args of [['validate', file], ['upload', file, '--url', emulator.url, '--api-key', 'k']]) {
      const stepSummary = join(servers.tmp.dir, `${args[0]}-pretty.md`);
      const rejects = join(servers.tmp.dir, `${args[0]}-pretty.rejects.ndjson`);
      const r = await runCli([...args, '--rejects', rejects], { env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: stepSummary, RUNNER_TEMP: servers.tmp.dir } });
      expect(r.status, r.stderr).toBe(1);
      const annotations = r.stdout.split('\n').filter((l) => l.startsWith('::error')).map((l) => parseAnnotation(l).props);
      expect(annotations).toEqual([expect.objectContaining({ line: '4' })]);
      expect(readFileSync(stepSummary, 'utf8')).toMatch(/pretty\.json \| 4 \(row 2\) \| attributes \| email: /);
      // the rejects file keeps the element's place, and no other field
      expect(readFileSync(rejects, 'utf8').trim().split('\n').map((l) => JSON.parse(l))).toEqual([
        { file, line: 2, kind: 'attributes', row: { external_id: 'j-2', email: 'nope' }, errors: [expect.stringMatching(/^email: /)] },
      ]);
    }
  });

  it('annotates a row the server refused, of a JSON array, at the line where its element begins too', async () => {
    const emulator = await servers.emulator({ blocklist: ['bad1'] });
    const file = join(servers.tmp.dir, 'refused.json');
    writeFileSync(file, '[\n  {"external_id": "g1",\n   "plan": "a"},\n  {\n    "external_id": "bad1",\n    "plan": "b"\n  }\n]\n');
    const stepSummary = join(servers.tmp.dir, 'refused.md');
    const rejects = join(servers.tmp.dir, 'refused.rejects.ndjson');
    const r = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--rejects', rejects], { env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: stepSummary, RUNNER_TEMP: servers.tmp.dir } });
    expect(r.status, r.stderr).toBe(1);
    const annotations = r.stdout.split('\n').filter((l) => l.startsWith('::error')).map((l) => parseAnnotation(l));
    expect(annotations).toEqual([{ props: expect.objectContaining({ line: '4' }), message: expect.stringMatching(/blocklisted/) }]);
    expect(readFileSync(stepSummary, 'utf8')).toMatch(/refused\.json \| 4 \(row 2\) \| attributes \| /);
    expect(readFileSync(rejects, 'utf8').trim().split('\n').map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ line: 2, row: { external_id: 'bad1', plan: 'b' } })]);
    expect(Object.keys(JSON.parse(readFileSync(rejects, 'utf8')))).not.toContain('fileLine');
  });
});
