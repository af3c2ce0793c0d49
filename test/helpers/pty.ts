// Runs a command under a real pseudo-terminal (python3's pty module: a new session whose controlling
// terminal is the pty), so that what a person types reaches it through the terminal's line
// discipline: Ctrl-C is the byte 0x03 written to the terminal, turned into SIGINT by the kernel only
// while the terminal is not in raw mode.
import { spawn, spawnSync } from 'node:child_process';

const DRIVER = String.raw`
import fcntl, json, os, pty, re, select, struct, sys, termios, time
argv = json.loads(sys.argv[1]); triggers = [re.compile(t.encode()) for t in json.loads(sys.argv[2])]; deadline = float(sys.argv[3]); columns = int(sys.argv[4]); key = sys.argv[5].encode()
hangup = re.compile(sys.argv[6].encode()) if sys.argv[6] else None
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
# a terminal of 30 rows of 120 columns (a new pty has none, as a terminal of 0 columns says)
if columns > 0:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 30, columns, 0, 0))
out = b''; sent = 0; start = time.time(); killed = False; hung = False
while not hung:
    r, _, _ = select.select([fd], [], [], 0.05)
    if r:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    if sent < len(triggers) and triggers[sent].search(out):
        os.write(fd, key); sent += 1
    if hangup is not None and hangup.search(out):
        # the terminal closes: the kernel sends SIGHUP to the command, and its writes fail (EIO)
        os.close(fd); hung = True
    if not killed and time.time() - start > deadline:
        os.kill(pid, 9); killed = True
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if not killed and time.time() - start > deadline:
        os.kill(pid, 9); killed = True
    time.sleep(0.05)
sys.stdout.write(json.dumps({"status": os.waitstatus_to_exitcode(status), "ctrlC": sent, "killed": killed, "hungUp": hung, "out": out.decode("utf-8", "replace")}))
`;

export const hasPython = spawnSync('python3', ['-c', 'import pty'], { encoding: 'utf8' }).status === 0;

export interface PtyRun {
  /** Exit status; a negative number is the signal that ended it. */
  status: number;
  /** How many Ctrl-C (or keys) were typed. */
  ctrlC: number;
  /** The deadline passed and the command was killed. */
  killed: boolean;
  /** The terminal was closed under the command (`hangUpAfter`). */
  hungUp: boolean;
  /** Everything the command wrote to the terminal (stdout and stderr together), until it was closed. */
  out: string;
}

/**
 * Runs argv in a terminal; each time the output first matches the next of `ctrlCAfter` (regular
 * expressions, Python's syntax), types Ctrl-C (or `key`: '\x1c' is Ctrl-\). The command is killed
 * after `deadlineMs`. The terminal is 120 columns wide, or `columns` (0: a pseudo-terminal whose
 * size was never set). Once the output matches `hangUpAfter`, the terminal is closed under the
 * command, as a terminal window closed or an SSH session dropped closes it.
 */
export function runInTerminal(
  argv: string[],
  options: { ctrlCAfter: string[]; deadlineMs: number; cwd?: string; env?: Record<string, string>; columns?: number; key?: string; hangUpAfter?: string },
): Promise<PtyRun> {
  // a person's terminal: the progress spinner draws only where no CI variable is set
  const env: NodeJS.ProcessEnv = { ...process.env, TERM: process.env.TERM ?? 'xterm', ...options.env };
  delete env.CI;
  return new Promise((resolve, reject) => {
    const args = [JSON.stringify(argv), JSON.stringify(options.ctrlCAfter), String(options.deadlineMs / 1000), String(options.columns ?? 120), options.key ?? '\x03', options.hangUpAfter ?? ''];
    const child = spawn('python3', ['-c', DRIVER, ...args], {
      cwd: options.cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', () => {
      try {
        resolve(JSON.parse(stdout) as PtyRun);
      } catch {
        reject(new Error(`the terminal driver failed: ${stderr}${stdout}`));
      }
    });
  });
}
