// A request whose body nests very deep (answered 400: the endpoint takes 32 levels) is logged as its
// text: as parsed JSON it could not be written out again, and GET /_track/requests and the web view's
// request page answered 500 for as long as it was in the log.
import { expect, it } from 'vitest';
import { postJson } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();

it('answers the request log and its page with a 20,000-deep body in it, the body as its text', async () => {
  const emu = await servers.emulator();
  const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
  const text = `{"attributes":[{"external_id":"deep","x":${deep}}]}`;
  const sent = await fetch(`${emu.url}/users/track`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: text });
  expect(sent.status).toBe(400);
  // an ordinary one beside it, as JSON
  expect((await postJson(`${emu.url}/users/track`, 'k', { attributes: [{ external_id: 'plain' }] })).status).toBe(201);

  const log = await fetch(`${emu.url}/_track/requests`);
  expect(log.status).toBe(200);
  const { requests } = (await log.json()) as { requests: { body: unknown; status: number }[] };
  expect(requests.map((r) => r.status)).toEqual([201, 400]);
  expect(requests[0].body).toEqual({ attributes: [{ external_id: 'plain' }] });
  expect(requests[1].body).toBe(text);
  // the filter by user still finds it
  expect(((await (await fetch(`${emu.url}/_track/requests?external_id=deep`)).json()) as { requests: unknown[] }).requests).toHaveLength(1);
  expect(emu.requests({ externalId: 'deep' })[0].body).toBe(text);

  const page = await fetch(`${emu.url}/_track/?view=requests`);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain('{&#34;attributes&#34;:[{&#34;external_id&#34;:&#34;deep&#34;,&#34;x&#34;:[[[[');
});
