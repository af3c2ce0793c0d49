// An export is answered in pieces, with other requests let in between: a profile it found that is gone
// by the time its turn comes (an email shared by several profiles finds them all at once, and a reset
// or track cleanup runs while the first is written) is not in the answer, which stays one JSON text.
// It wrote the comma before it read the profile, so the answer was `[{...},,,]`, which no client reads.
import { request } from 'node:http';
import { expect, it } from 'vitest';
import { useServers } from '../helpers/servers.js';

const servers = useServers();
const PROFILES = 10;

it('answers valid JSON when a reset empties the file while the export is being written', async () => {
  const emu = await servers.emulator();
  // profiles of 2 MB of custom attributes each: the answer (20 MB) outgrows what the socket holds
  emu.store.transaction(() => {
    for (let p = 0; p < PROFILES; p += 1) {
      const profile = emu.store.newProfile({ externalId: `big-${p}`, email: 'shared@example.com' });
      profile.custom = Object.fromEntries(Array.from({ length: 8000 }, (_, k) => [`note_${k}`, 'x'.repeat(250)]));
      emu.store.saveProfile(profile);
    }
  });
  const ids = Array.from({ length: PROFILES }, (_, p) => `big-${p}`);
  const body = JSON.stringify({ email_address: 'shared@example.com', fields_to_export: ['external_id', 'custom_attributes'] });
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(`${emu.url}/users/export/ids`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' } }, (res) => {
      // read nothing until the reset is answered: the export waits on the full socket, a few profiles in
      res.pause();
      void (async () => {
        await new Promise((r) => setTimeout(r, 200));
        const reset = await fetch(`${emu.url}/_track/reset`, { method: 'POST' });
        expect(reset.status).toBe(200);
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.resume();
      })().catch(reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  const answer = JSON.parse(text) as { users: { external_id: string }[]; invalid_user_ids: string[] };
  // those written before the reset, most recently updated first, and none after it
  expect(answer.users.length).toBeGreaterThan(0);
  expect(answer.users.length).toBeLessThan(PROFILES);
  expect(answer.users.map((u) => u.external_id)).toEqual(ids.slice(PROFILES - answer.users.length).reverse());
  expect(answer.invalid_user_ids).toEqual([]);
});
