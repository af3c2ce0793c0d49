// The HTTP floor of the emulator bench: a bare node:http server that reads each request's body,
// parses its JSON and answers 201 with a count, doing nothing else. It prints its base URL.
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const text = JSON.stringify({ message: 'success', events_processed: body.events?.length ?? 0 });
    res.writeHead(201, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`bare server listening on http://127.0.0.1:${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
