// The HTTP floor of the emulator bench: a bare node:http server that reads each request's body,
// parses its JSON and answers 201 with a count, doing nothing else. It prints its base URL.
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    // the counts of the arrays sent, as the endpoint answers them (events alone: `events_processed`)
    const out = { message: 'success' };
    for (const name of ['attributes', 'events', 'purchases']) if (Array.isArray(body[name])) out[`${name}_processed`] = body[name].length;
    const text = JSON.stringify(out);
    res.writeHead(201, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`bare server listening on http://127.0.0.1:${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
