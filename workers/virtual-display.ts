import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';

let xvfb: ChildProcess | null = null;

/**
 * Headed Chromium needs a display. When the process has none, start Debian's Xvfb on a free
 * display number once and point DISPLAY at it (Chromium inherits the environment).
 */
export async function ensureDisplay(): Promise<string> {
  if (process.env.DISPLAY) return process.env.DISPLAY;
  for (let n = 90 + (process.pid % 100); n < 300; n++) {
    if (existsSync(`/tmp/.X11-unix/X${n}`) || existsSync(`/tmp/.X${n}-lock`)) continue;
    const child = spawn('Xvfb', [`:${n}`, '-screen', '0', '1366x900x24', '-nolisten', 'tcp'], { stdio: 'ignore' });
    const started = await new Promise<boolean>((resolve) => {
      child.once('error', () => resolve(false));
      child.once('exit', () => resolve(false));
      const poll = setInterval(() => {
        if (existsSync(`/tmp/.X11-unix/X${n}`)) {
          clearInterval(poll);
          resolve(true);
        }
      }, 50);
      setTimeout(() => {
        clearInterval(poll);
        resolve(existsSync(`/tmp/.X11-unix/X${n}`));
      }, 5000);
    });
    if (!started) {
      child.kill();
      continue;
    }
    child.unref();
    xvfb = child;
    process.once('exit', () => xvfb?.kill());
    process.env.DISPLAY = `:${n}`;
    return process.env.DISPLAY;
  }
  throw new Error('No display for a headed browser: install Xvfb (apt-get install xvfb) or set DISPLAY');
}
