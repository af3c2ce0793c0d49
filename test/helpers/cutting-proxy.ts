// A loopback proxy in front of a real server (the S3 server of the tests): it counts the requests it
// passes on, by method and path, and can cut an answer's body off after some bytes, as a network
// that fails mid-read does. It mocks nothing: every answer is the real server's.
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CuttingProxy {
  url: string;
  /** Requests passed on so far, as `GET /bucket/key` (the query left out). */
  requests: string[];
  /**
   * Cuts the next `times` answers to requests `matching` after `bytes` bytes of body (Infinity: every
   * one); `bytes` may depend on the request. `stall`: the connection is kept open, silent, instead.
   */
  cut(matching: (request: IncomingMessage) => boolean, bytes: number | ((request: IncomingMessage) => number), times: number, stall?: boolean): void;
  close(): Promise<void>;
}

export async function startCuttingProxy(target: string): Promise<CuttingProxy> {
  const to = new URL(target);
  const requests: string[] = [];
  let rule: { matching: (request: IncomingMessage) => boolean; bytes: number | ((request: IncomingMessage) => number); times: number; stall?: boolean } | undefined;
  const server: Server = createServer((incoming, outgoing) => {
    requests.push(`${incoming.method} ${(incoming.url ?? '').split('?')[0]}`);
    const matched = rule !== undefined && rule.times > 0 && rule.matching(incoming) ? rule : undefined;
    if (matched !== undefined) matched.times -= 1;
    const cutting = matched === undefined ? undefined : { bytes: typeof matched.bytes === 'number' ? matched.bytes : matched.bytes(incoming) };
    const forward = request(
      { host: to.hostname, port: to.port, method: incoming.method, path: incoming.url, headers: { ...incoming.headers, host: to.host } },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        if (cutting === undefined) {
          answer.pipe(outgoing);
          return;
        }
        let sent = 0;
        // the connection is cut once the bytes let through have left (a destroy at once would drop them)
        const cut = (): void => {
          answer.destroy();
          if (matched?.stall !== true) outgoing.socket?.destroy();
        };
        answer.on('data', (chunk: Buffer) => {
          const room = cutting.bytes - sent;
          if (room <= 0) return cut();
          sent += Math.min(room, chunk.length);
          if (sent < cutting.bytes) outgoing.write(chunk);
          else outgoing.write(chunk.subarray(0, room), cut);
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
    cut(matching, bytes, times, stall) {
      rule = { matching, bytes, times, stall };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
