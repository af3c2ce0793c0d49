// A loopback proxy in front of a real server (the S3 server of the tests): it counts the requests it
// passes on, by method and path, and can cut an answer's body off after some bytes, as a network
// that fails mid-read does. It mocks nothing: every answer is the real server's.
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CuttingProxy {
  url: string;
  /** Requests passed on so far, as `GET /bucket/key` (the query left out). */
  requests: string[];
  /** Cuts the next `times` answers to requests `matching` after `bytes` bytes of body (Infinity: every one). */
  cut(matching: (request: IncomingMessage) => boolean, bytes: number, times: number): void;
  close(): Promise<void>;
}

export async function startCuttingProxy(target: string): Promise<CuttingProxy> {
  const to = new URL(target);
  const requests: string[] = [];
  let rule: { matching: (request: IncomingMessage) => boolean; bytes: number; times: number } | undefined;
  const server: Server = createServer((incoming, outgoing) => {
    requests.push(`${incoming.method} ${(incoming.url ?? '').split('?')[0]}`);
    const cutting = rule !== undefined && rule.times > 0 && rule.matching(incoming) ? rule : undefined;
    if (cutting !== undefined) cutting.times -= 1;
    const forward = request(
      { host: to.hostname, port: to.port, method: incoming.method, path: incoming.url, headers: { ...incoming.headers, host: to.host } },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        if (cutting === undefined) {
          answer.pipe(outgoing);
          return;
        }
        let sent = 0;
        answer.on('data', (chunk: Buffer) => {
          const room = cutting.bytes - sent;
          if (room <= 0) return;
          outgoing.write(chunk.subarray(0, room));
          sent += Math.min(room, chunk.length);
          if (sent >= cutting.bytes) {
            answer.destroy();
            outgoing.socket?.destroy();
          }
        });
        answer.on('end', () => outgoing.end());
      },
    );
    forward.on('error', () => outgoing.socket?.destroy());
    incoming.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    cut(matching, bytes, times) {
      rule = { matching, bytes, times };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
