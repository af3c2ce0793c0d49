// CSV files carrying what the service's docs show, through the real CLI into an emulator on port 0,
// read back from its store: purchase properties of every type (annotated and inferred), a 10-digit
// U.S. phone without --default-country, a display time zone, and email_subscription_info refused.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exportUser } from '../../src/emulator/export.js';
import { inspectProfiles } from '../../src/emulator/inspect.js';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator } = useServers();

function write(name: string, text: string): string {
  const path = join(tmp.dir, name);
  writeFileSync(path, text);
  return path;
}

const run = (args: string[]) => runCliAsync(args, { cwd: tmp.dir, env: { TRACK_URL: '', TRACK_API_KEY: '', NO_COLOR: '1' } });

describe('purchase properties from CSV columns', () => {
  it('sends :boolean, :json, :array, :time, :string and inferred booleans, and the emulator stores them', async () => {
    const file = write(
      'purchases.csv',
      [
        'external_id,product_id,currency,price,time,properties.gift:boolean,properties.products:json,properties.tags:array,properties.shipped_at:time,properties.code:string,properties.wrapped,properties.count',
        'u1,Completed Order,USD,219.98,2024-03-07T10:00:00Z,yes,"[{""name"":""Monitor"",""amount"":19.99},{""name"":""Keyboard"",""amount"":199.99}]","[""a"",""b""]",2024-03-08,007,true,2',
        'u1,pencil,USD,2,2024-03-07T11:00:00Z,no,,,,,false,',
      ].join('\n'),
    );
    const check = await run(['validate', file, '--json']);
    expect(check.status, check.stderr).toBe(0);
    expect(JSON.parse(check.stdout)).toMatchObject({ rejected: 0, estimate: { dataPoints: 1 + 7 + (1 + 2) } });

    const emu = await emulator();
    const r = await run(['upload', file, '--url', emu.url, '--api-key', 'k', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const [profile] = inspectProfiles(emu.store, { externalId: 'u1' });
    expect((profile.purchase_log as { properties: unknown }[]).map((p) => p.properties)).toEqual([
      {
        gift: true,
        products: [{ name: 'Monitor', amount: 19.99 }, { name: 'Keyboard', amount: 199.99 }],
        tags: ['a', 'b'],
        shipped_at: '2024-03-08T00:00:00.000Z',
        code: '007',
        wrapped: true,
        count: 2,
      },
      { gift: false, wrapped: false },
    ]);
  }, 60_000);

  it('rejects a purchase row whose properties are over 50 KB, naming its line, and sends the others', async () => {
    const products = JSON.stringify(Array.from({ length: 220 }, () => ({ sku: 's'.repeat(230), n: 1 }))).replaceAll('"', '""');
    const file = write(
      'big.csv',
      ['external_id,product_id,currency,price,time,properties.products:json', `u1,a,USD,1,2024-03-07T10:00:00Z,"${products}"`, 'u1,b,USD,1,2024-03-07T10:00:00Z,[]'].join('\n'),
    );
    const emu = await emulator();
    const r = await run(['upload', file, '--url', emu.url, '--api-key', 'k', '--json']);
    expect(r.status).toBe(1);
    const [reject] = readFileSync(join(tmp.dir, 'big.csv.rejects.ndjson'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(reject).toMatchObject({ line: 2, errors: ["properties: a purchase's properties are at most 50 KB as JSON"] });
    expect((inspectProfiles(emu.store, { externalId: 'u1' })[0].purchase_log as { product_id: string }[]).map((p) => p.product_id)).toEqual(['b']);
  }, 60_000);

  it('sends a purchase whose property is null, as it sends such an event', async () => {
    const file = write(
      'orders.ndjson',
      [
        { external_id: 'u1', name: 'Viewed', time: '2024-03-07T10:00:00Z', properties: { coupon: null } },
        { external_id: 'u1', product_id: 'p', currency: 'USD', price: 1, time: '2024-03-07T10:00:00Z', properties: { coupon: null } },
      ].map((item) => JSON.stringify(item)).join('\n'),
    );
    const check = await run(['validate', file, '--json']);
    expect(check.status, check.stderr).toBe(0);
    expect(JSON.parse(check.stdout)).toMatchObject({ rejected: 0 });
    const emu = await emulator();
    const r = await run(['upload', file, '--url', emu.url, '--api-key', 'k', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const [profile] = inspectProfiles(emu.store, { externalId: 'u1' });
    expect((profile.purchase_log as { properties: unknown }[]).map((p) => p.properties)).toEqual([{ coupon: null }]);
  }, 60_000);
});

describe('emails the service refuses', () => {
  it('rejects a row whose email has whitespace, a period at an end of its local part or a domain not in Punycode, naming file, line and field; nothing is trimmed', async () => {
    const file = write(
      'emails.csv',
      ['external_id,email', 'u1,ann@example.com ', 'u2," ann@example.com"', 'u3,ann.@example.com', 'u4,ann@exämple.com', 'u5,bo@example.com'].join('\n'),
    );
    const emu = await emulator();
    const r = await run(['upload', file, '--url', emu.url, '--api-key', 'k', '--json']);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ rejected: 4 });
    const rejects = readFileSync(join(tmp.dir, 'emails.csv.rejects.ndjson'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(rejects.map((x) => [x.file, x.line, x.errors])).toEqual([
      [file, 2, ['email: is not a valid email address (it has a space at its end), got "ann@example.com "']],
      [file, 3, ['email: is not a valid email address (it has a space at its start), got " ann@example.com"']],
      [file, 4, ['email: is not a valid email address (the part before the @ ends with a period), got "ann.@example.com"']],
      [file, 5, ['email: is not a valid email address (its domain is not ASCII: give it in Punycode, xn--...), got "ann@exämple.com"']],
    ]);
    expect(rejects[0].row).toEqual({ external_id: 'u1', email: 'ann@example.com ' });
    expect(emu.store.counts().profiles).toBe(1);
    expect(exportUser(emu.store, emu.store.profileByExternalId('u5')!)).toMatchObject({ email: 'bo@example.com' });
  }, 60_000);
});

describe('attributes the docs show', () => {
  it('reads a 10-digit U.S. phone without --default-country, keeps a display time zone as its zone, and rejects email_subscription_info', async () => {
    const file = write(
      'users.csv',
      ['phone,first_name,time_zone,email_subscription_info', '4155552671,Ann,Eastern Time (US & Canada),', '(415) 555-2672,Bo,,opted_in', '2071838750,Cy,,'].join('\n'),
    );
    const emu = await emulator();
    const r = await run(['upload', file, '--url', emu.url, '--api-key', 'k', '--json']);
    expect(r.status).toBe(1);
    const summary = JSON.parse(r.stdout);
    expect(summary).toMatchObject({ rejected: 2 });
    expect(summary.warnings ?? 0).toBe(0);
    const rejects = readFileSync(join(tmp.dir, 'users.csv.rejects.ndjson'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(rejects.map((x) => [x.line, x.errors[0]])).toEqual([
      [3, 'email_subscription_info: is not a valid attribute'],
      [4, expect.stringMatching(/^phone: is not a valid phone number without its country code; give --default-country/)],
    ]);
    const profiles = emu.store.allProfiles().map((p) => exportUser(emu.store, p));
    expect(profiles).toEqual([expect.objectContaining({ phone: '+14155552671', first_name: 'Ann', time_zone: 'America/New_York' })]);
    expect(profiles[0].custom_attributes).toEqual({});
  }, 60_000);
});
