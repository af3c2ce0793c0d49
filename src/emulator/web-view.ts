// The web view at GET /_track/: one server-rendered page, no script, no asset from anywhere else.
// Three views by query string: profiles (?q= searches, ?page= pages), one profile
// (?profile=SERVICE_ID), and the request log (?view=requests); the run page (run-page.ts) shares
// its layout. Everything that comes from the data is escaped: attribute values and request bodies
// are whatever a client sent.
import { grouped } from '../charts/svg.js';
import { exportUser } from './export.js';
import { LOGGED_BODY_BYTES, userFilters, type RequestLog, type LoggedRequest } from './request-log.js';
import { limitParam, limitProblem, QUERY_FILTERS, statusProblem } from './request-log-query.js';
import type { Store } from './store.js';

const PROFILES_SHOWN = 100;
const ACTIVITY_SHOWN = 500;
const REQUESTS_SHOWN = 200;

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#20303f;color:#fff;padding:10px 20px;display:flex;gap:24px;align-items:baseline;flex-wrap:wrap}
header h1{font-size:16px;margin:0}header a{color:#cfe3ff;text-decoration:none}header a.here{color:#fff;font-weight:600;text-decoration:underline}
header .totals{margin-left:auto;color:#b9c4cf}
main{padding:16px 20px;max-width:1200px}
form.search{display:flex;gap:8px;margin:0 0 12px;flex-wrap:wrap}form.search input{padding:5px 8px;font:inherit}
table{border-collapse:collapse;width:100%;background:#fff;margin:0 0 16px}
th,td{border:1px solid #d9dee3;padding:4px 8px;text-align:left;vertical-align:top}th{background:#eef1f4}
td.body pre{min-width:32em}td.time{white-space:nowrap}
td.json,pre{font:12px/1.35 ui-monospace,monospace;white-space:pre-wrap;word-break:break-all;margin:0}
.count{font-size:15px;margin:0 0 10px}.empty{color:#6b7680;font-style:italic}
.status-2xx{color:#17692d;font-weight:600}.status-4xx,.status-5xx,.status-dropped{color:#a1161b;font-weight:600}
tr.has-minor-errors>td{background:#fff5d6}
ul.minor-errors{margin:0;padding:0 0 0 16px}
li.minor-error{background:#ffe08a;color:#5c3b00;border-left:4px solid #d98e04;padding:1px 6px;margin:2px 0;list-style:none}
.fatal{color:#a1161b}
h2{font-size:15px;margin:18px 0 6px}
nav.pages{display:flex;gap:16px;margin:0 0 16px}
svg.chart{display:block;max-width:100%;height:auto;background:#fff;border:1px solid #d9dee3;margin:0 0 12px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:0 16px}
figure{margin:0}figure h2{margin:6px 0 4px}
`;

/** Text as HTML: the only way data reaches the page. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const json = (value: unknown): string => escapeHtml(JSON.stringify(value, null, 2));

/** A count with its noun, singular for one: `1 event`, `2 events`, `1,234 profiles`. */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${grouped(n)} ${n === 1 ? one : many}`;
}

export type PageName = 'profiles' | 'requests' | 'run' | 'login';

export function layout(title: string, here: PageName, nav: string, main: string): string {
  const link = (view: typeof here, href: string, text: string): string =>
    `<a href="${href}"${view === here ? ' class="here" aria-current="page"' : ''}>${text}</a>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} - track emulator</title><style>${STYLE}</style></head>
<body><header><h1>track emulator</h1>${here === 'login' ? '' : `${link('profiles', '/_track/', 'Profiles')}${link('requests', '/_track/?view=requests', 'Requests')}${link('run', '/_track/run', 'Run')}`}${nav}</header>
<main>${main}</main></body></html>`;
}

function table(headings: string[], rows: string[], empty: string): string {
  if (rows.length === 0) return `<p class="empty">${escapeHtml(empty)}</p>`;
  return `<table><thead><tr>${headings.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** Links to the page before and after this one of a list, keeping its search. */
function pageLinks(q: string, page: number, pages: number): string {
  if (pages <= 1) return '';
  const href = (n: number): string => `/_track/?${new URLSearchParams({ ...(q === '' ? {} : { q }), page: String(n) }).toString()}`;
  const before = page > 1 ? `<a rel="prev" href="${escapeHtml(href(page - 1))}">← previous ${PROFILES_SHOWN}</a>` : '';
  const after = page < pages ? `<a rel="next" href="${escapeHtml(href(page + 1))}">next ${PROFILES_SHOWN} →</a>` : '';
  return `<nav class="pages" aria-label="pages">${before}<span>page ${grouped(page)} of ${grouped(pages)}</span>${after}</nav>`;
}

/** `?page=N` from 1; anything else is the first page. */
function pageNumber(text: string | null): number {
  return text !== null && /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : 1;
}

function profilesView(store: Store, q: string, page: number): string {
  const { total, profiles } = store.findProfiles(q, PROFILES_SHOWN, (page - 1) * PROFILES_SHOWN);
  const pages = Math.max(1, Math.ceil(total / PROFILES_SHOWN));
  const what = counted(total, 'profile');
  const count = q === '' ? what : `${what} matching “${escapeHtml(q)}”`;
  const first = (page - 1) * PROFILES_SHOWN + 1;
  const shown = profiles.length < total && profiles.length > 0 ? ` (${grouped(first)}–${grouped(first + profiles.length - 1)} shown)` : '';
  const rows = profiles.map((p) => {
    const aliases = store.aliasesOf(p.id).map((a) => `${a.alias_name}:${a.alias_label}`).join(', ');
    const name = p.externalId ?? `(no external_id) ${p.serviceId}`;
    return `<tr data-service-id="${escapeHtml(p.serviceId)}"><td><a href="/_track/?profile=${encodeURIComponent(p.serviceId)}">${escapeHtml(name)}</a></td>` +
      `<td>${escapeHtml(p.email ?? '')}</td><td>${escapeHtml(p.phone ?? '')}</td><td>${escapeHtml(aliases)}</td><td>${escapeHtml(p.updatedAt)}</td></tr>`;
  });
  return `<form class="search" method="get" action="/_track/"><label for="q">Search</label>
<input id="q" name="q" type="search" value="${escapeHtml(q)}" placeholder="external_id, email, phone or alias" size="40"><button type="submit">Search</button></form>
<p class="count" id="profile-count">${count}${shown}</p>
${table(['external_id', 'email', 'phone', 'aliases', 'updated'], rows, q === '' ? 'No profiles yet.' : page > 1 ? 'No profiles on this page.' : 'No profile matches.')}${pageLinks(q, page, pages)}`;
}

function keyValueRows(values: Record<string, unknown>): string[] {
  return Object.entries(values).filter(([, value]) => value !== undefined).map(([key, value]) => `<tr><th scope="row">${escapeHtml(key)}</th><td class="json">${json(value)}</td></tr>`);
}

function profileView(store: Store, serviceId: string): string | undefined {
  const profile = store.profileByServiceId(serviceId);
  if (profile === undefined) return undefined;
  const user = exportUser(store, profile);
  const { custom_attributes: custom, custom_events: _events, purchases: _purchases, push_tokens: tokens, subscription_groups: groups, user_aliases: aliases, ...fields } = user;
  // the newest rows alone are read, and the rest only counted, along the profile's own rows
  const { events, purchases, counts } = store.recentActivity(profile.id, ACTIVITY_SHOWN);
  const note = (shown: number, all: number, what = ''): string => (shown < all ? `<p>The newest ${grouped(shown)} of ${grouped(all)}${what}.</p>` : '');
  const eventRows = events.map((e) => `<tr><td>${escapeHtml(e.time)}</td><td>${escapeHtml(e.name)}</td><td>${escapeHtml(e.appId ?? '')}</td><td class="json">${e.properties == null ? '' : json(e.properties)}</td></tr>`);
  const purchaseRows = purchases.map((x) =>
    `<tr><td>${escapeHtml(x.time)}</td><td>${escapeHtml(x.productId)}</td><td>${escapeHtml(x.price)} ${escapeHtml(x.currency)}</td><td>${escapeHtml(x.quantity)}</td><td class="json">${x.properties == null ? '' : json(x.properties)}</td></tr>`);
  const title = profile.externalId ?? profile.serviceId;
  return `<h2 id="profile-title">Profile ${escapeHtml(title)}</h2>
${requestsLink(profile, store.aliasesOf(profile.id))}
${table(['field', 'value'], keyValueRows({ ...fields, user_aliases: aliases, push_import: profile.pushImport || undefined, created_at: profile.createdAt, updated_at: profile.updatedAt }), '')}
<h2>Custom attributes</h2>${table(['attribute', 'value'], keyValueRows(custom as Record<string, unknown>), 'None.')}
<h2 id="events">Events (${grouped(counts.events)})</h2>${note(eventRows.length, counts.events)}${table(['time', 'name', 'app_id', 'properties'], eventRows, 'None.')}
<h2 id="purchases">Purchases (${grouped(counts.purchases)})</h2>${note(purchaseRows.length, counts.purchaseRows, ' rows (a row of quantity X is X purchases)')}${table(['time', 'product_id', 'price', 'quantity', 'properties'], purchaseRows, 'None.')}
<h2>Push tokens</h2>${table(['app_id', 'token', 'device_id'], (tokens as { app_id: string; token: string; device_id: string | null }[]).map((t) => `<tr><td>${escapeHtml(t.app_id)}</td><td>${escapeHtml(t.token)}</td><td>${escapeHtml(t.device_id ?? '')}</td></tr>`), 'None.')}
<h2>Subscription groups</h2>${table(['group', 'state'], (groups as { subscription_group_id: string; subscription_state: string }[]).map((g) => `<tr><td>${escapeHtml(g.subscription_group_id)}</td><td>${escapeHtml(g.subscription_state)}</td></tr>`), 'None.')}`;
}

/** The request log filtered by what names this profile: its external_id, else its email, phone or first alias. */
function requestsLink(profile: { externalId?: string | null; email?: string | null; phone?: string | null }, aliases: { alias_name: string; alias_label: string }[]): string {
  const alias = aliases[0];
  const filter: [string, string] | undefined =
    profile.externalId != null ? ['external_id', profile.externalId]
    : profile.email != null ? ['email', profile.email]
    : profile.phone != null ? ['phone', profile.phone]
    : alias !== undefined ? ['alias', `${alias.alias_name}:${alias.alias_label}`]
    : undefined;
  if (filter === undefined) return '';
  const href = `/_track/?${new URLSearchParams([['view', 'requests'], filter]).toString()}`;
  return `<p><a id="profile-requests" href="${escapeHtml(href)}">Requests naming ${escapeHtml(filter[0])} ${escapeHtml(filter[1])}</a> (from the request log)</p>`;
}

function statusClass(r: LoggedRequest): string {
  return r.status === null ? 'status-dropped' : `status-${String(r.status)[0]}xx`;
}

function requestRow(r: LoggedRequest): string {
  const counts = Object.entries(r.processed).map(([name, n]) => `${escapeHtml(name)} ${n}`).join(', ');
  const errors = r.errors.length === 0
    ? ''
    : `<ul class="minor-errors">${r.errors.map((e) => `<li class="minor-error">${escapeHtml(`${e.input_array}[${e.index}]: ${e.type}`)}</li>`).join('')}</ul>`;
  const fatal = r.errors.length === 0 && r.status !== null && r.status >= 400 ? `<span class="fatal">${escapeHtml(r.message ?? '')}</span>` : '';
  const status = r.status === null ? `dropped (${escapeHtml(r.dropped)})` : String(r.status);
  const bodyText = r.body_omitted !== undefined ? r.body_omitted : typeof r.body === 'string' ? r.body : JSON.stringify(r.body, null, 2);
  const size = `${r.body_bytes} bytes${r.body_truncated ? `, cut at ${LOGGED_BODY_BYTES / 1024} KB` : ''}`;
  return `<tr class="request${r.errors.length > 0 ? ' has-minor-errors' : ''}" data-request-id="${r.id}"><td class="time">${escapeHtml(r.time)}</td><td>${escapeHtml(r.method)} ${escapeHtml(r.path)}</td>` +
    `<td class="${statusClass(r)}">${status}</td><td>${counts}</td><td>${errors}${fatal}</td>` +
    `<td class="body"><details><summary>body (${size})</summary><pre>${escapeHtml(bodyText)}</pre></details></td></tr>`;
}

/** The requests page's query parameters: its view, the filters of its form, and how many to show. */
const REQUESTS_PAGE = ['view', 'limit', ...QUERY_FILTERS];
/** The most requests the page shows (a page of HTML; GET /_track/requests gives more). */
const MOST_SHOWN = 1000;

/** What is wrong with the requests page's parameters (a URL typed or edited: the form sends none of these), or undefined. */
function filterProblem(params: URLSearchParams, users: ReturnType<typeof userFilters>): string | undefined {
  const names = [...params.keys()];
  const unknown = names.find((name) => !REQUESTS_PAGE.includes(name));
  if (unknown !== undefined) return `unknown filter ${JSON.stringify(unknown)}: the filters are ${QUERY_FILTERS.join(', ')} (and limit, how many to show)`;
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) return `${twice}: given more than once; give each ${QUERY_FILTERS.includes(twice) ? 'filter' : 'parameter'} once`;
  const limit = limitParam(params.get('limit'), REQUESTS_SHOWN);
  if (limit === undefined) return limitProblem(params.get('limit'));
  if (limit > MOST_SHOWN) return `limit: the page shows at most ${grouped(MOST_SHOWN)} requests; GET /_track/requests?limit=${params.get('limit')} gives more`;
  return statusProblem(params.get('status') || undefined) ?? (typeof users === 'string' ? users : undefined);
}

function requestsView(log: RequestLog, params: URLSearchParams): string {
  const filter = (name: string): string | undefined => (params.get(name) || undefined);
  const users = userFilters(params);
  // a filter the page cannot use shows no request, and says why: not every request, as though it matched
  const problem = filterProblem(params, users);
  const limit = limitParam(params.get('limit'), REQUESTS_SHOWN) ?? REQUESTS_SHOWN;
  const requests = problem !== undefined || typeof users === 'string' ? [] : log.query({ limit, status: filter('status'), path: filter('path'), ...users });
  const filtered = QUERY_FILTERS.some((name) => filter(name) !== undefined);
  const empty = problem !== undefined ? 'No requests shown: the page cannot use what the address asks (above).' : filtered ? 'No logged request matches these filters.' : 'No requests logged.';
  const input = (name: string, label: string, size: number): string =>
    `<label for="${name}">${label}</label><input id="${name}" name="${name}" value="${escapeHtml(params.get(name) ?? '')}" size="${size}">`;
  // the form keeps a limit the address gave that the page can use (whatever else is wrong, to be mended in the form)
  const given = limitParam(params.get('limit'), REQUESTS_SHOWN);
  const kept = params.get('limit') === null || params.getAll('limit').length > 1 || given === undefined || given > MOST_SHOWN ? '' : `<input type="hidden" name="limit" value="${given}">`;
  return `<form class="search" method="get" action="/_track/"><input type="hidden" name="view" value="requests">${kept}
${input('status', 'Status', 5)}${input('path', 'Path', 16)}${input('external_id', 'external_id', 16)}${input('email', 'email', 16)}${input('phone', 'phone', 12)}${input('alias', 'alias', 16)}<button type="submit">Filter</button></form>
${problem !== undefined ? `<p class="fatal" role="alert">${escapeHtml(problem)}</p>` : ''}<p class="count" id="request-count">${counted(requests.length, 'request')} shown, newest first (${grouped(log.length)} in the log, which keeps the last ${grouped(log.size)})</p>
${table(['time', 'request', 'status', 'processed', 'errors', 'body'], requests.map(requestRow), empty)}`;
}

/** The page for a query string; undefined for a profile that does not exist (a 404). */
export function renderPage(store: Store, log: RequestLog, params: URLSearchParams): string | undefined {
  const totals = totalsOf(store);
  const serviceId = params.get('profile');
  if (serviceId !== null) {
    const main = profileView(store, serviceId);
    return main === undefined ? undefined : layout(`Profile ${serviceId}`, 'profiles', totals, main);
  }
  if (params.get('view') === 'requests') return layout('Requests', 'requests', totals, requestsView(log, params));
  return layout('Profiles', 'profiles', totals, profilesView(store, params.get('q') ?? '', pageNumber(params.get('page'))));
}

/** The header's totals of what the store holds. */
export function totalsOf(store: Store): string {
  const counts = store.counts();
  return `<span class="totals">${counted(counts.profiles, 'profile')}, ${counted(counts.events, 'event')}, ${counted(counts.purchases, 'purchase')}</span>`;
}

/** The page for a profile that is not there. */
export function notFoundPage(what: string): string {
  return layout('Not found', 'profiles', '', `<p class="empty">${escapeHtml(what)}</p>`);
}

/** The login form a non-loopback emulator shows in place of the page: it takes one of the emulator's keys. */
export function loginPage(refused: boolean): string {
  const note = refused ? '<p class="fatal" role="alert">That is not one of this emulator\'s API keys.</p>' : '';
  return layout('Log in', 'login', '', `<h2>Log in</h2>
<p>This emulator listens on a network address: its pages need one of its API keys (the key is not kept in the browser; a session is).</p>${note}
<form method="post" action="/_track/login" class="search"><label for="key">API key</label><input id="key" name="key" type="password" autocomplete="off" size="40" required><button type="submit">Log in</button></form>`);
}
