// Per test: a temporary folder, and the emulators and fault servers a test starts, all closed and
// removed after it.
import { afterEach, beforeEach } from 'vitest';
import { startEmulator, type Emulator } from '../../src/index.js';
import { tempDir } from './cli.js';
import { startFaultServer, type FaultServer, type Script } from './fault-server.js';

export function useServers() {
  let folder: ReturnType<typeof tempDir> | undefined;
  let emulators: Emulator[] = [];
  let faultServers: FaultServer[] = [];
  beforeEach(() => {
    folder = tempDir();
  });
  afterEach(async () => {
    for (const emu of emulators) await emu.close();
    for (const server of faultServers) await server.close();
    emulators = [];
    faultServers = [];
    folder?.cleanup();
  });
  return {
    /** This test's folder. */
    tmp: {
      get dir(): string {
        if (folder === undefined) throw new Error('no temporary folder outside a test');
        return folder.dir;
      },
    },
    /** An emulator in this process that takes the key `k`. */
    async emulator(options: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
      const emu = await startEmulator({ apiKeys: ['k'], ...options });
      emulators.push(emu);
      return emu;
    },
    async faultServer(script?: Script): Promise<FaultServer> {
      const server = await startFaultServer(script);
      faultServers.push(server);
      return server;
    },
  };
}
