// One server named two ways: the delta state knows it under the name it was first given.
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { sameHostOtherName } from '../../src/upload/state-names.js';

describe('sameHostOtherName', () => {
  it('takes the names of this machine for one another, on the same port and path', () => {
    const names = ['localhost', '127.0.0.1', '[::1]', '127.0.1.1', hostname().toLowerCase()];
    for (const a of names) {
      for (const b of names) {
        if (a !== b) expect(sameHostOtherName(`http://${a}:4000/users/track`, `http://${b}:4000/users/track`), `${a} ${b}`).toBe(true);
      }
    }
  });

  it('tells apart other ports, schemes, paths and hosts, and a target from itself', () => {
    expect(sameHostOtherName('http://localhost:4000/users/track', 'http://127.0.0.1:4001/users/track')).toBe(false);
    expect(sameHostOtherName('http://localhost:4000/users/track', 'https://127.0.0.1:4000/users/track')).toBe(false);
    expect(sameHostOtherName('http://localhost:4000/a/users/track', 'http://127.0.0.1:4000/users/track')).toBe(false);
    expect(sameHostOtherName('https://rest.example.com/users/track', 'https://rest.example.org/users/track')).toBe(false);
    expect(sameHostOtherName('http://localhost:4000/users/track', 'http://localhost:4000/users/track')).toBe(false);
    expect(sameHostOtherName('https://rest.example.com./users/track', 'https://rest.example.com/users/track')).toBe(true);
  });
});
