import * as assert from 'assert';

import { NoPython, environmentPython, pythonCandidates, unsuitable } from '../../pythons';

const CARRIED = ['3.11', '3.12', '3.13', '3.14'];

suite('Pythons for the carried server', () => {
  test('the seri.server.python setting is the only Python tried when it is set', () => {
    const tried = pythonCandidates('/opt/py/bin/python3', '/usr/bin/python3', 'linux');
    assert.deepStrictEqual(tried, [{ argv: ['/opt/py/bin/python3'], what: 'seri.server.python (/opt/py/bin/python3)' }]);
  });

  test("the Python extension's interpreter comes first, then python3 and python on PATH", () => {
    const tried = pythonCandidates('', '/home/me/.venv/bin/python', 'darwin').map((c) => c.argv.join(' '));
    assert.deepStrictEqual(tried, ['/home/me/.venv/bin/python', 'python3', 'python']);
  });

  test('on Windows the py launcher is tried before python', () => {
    const tried = pythonCandidates('', undefined, 'win32').map((c) => c.argv.join(' '));
    assert.deepStrictEqual(tried, ['py -3', 'python', 'python3']);
  });

  test('a CPython whose wheels are carried suits; others say why not', () => {
    assert.strictEqual(unsuitable('3.12 cpython\n', CARRIED), undefined);
    assert.strictEqual(unsuitable('3.10 cpython', CARRIED), 'Python 3.10; this build of the extension carries wheels for 3.11 to 3.14');
    assert.strictEqual(unsuitable('3.15 cpython', CARRIED), 'Python 3.15; this build of the extension carries wheels for 3.11 to 3.14');
    assert.strictEqual(unsuitable('3.11 pypy', CARRIED), 'pypy 3.11, not CPython');
    assert.strictEqual(unsuitable('Python was not found; run without arguments to install', CARRIED), 'does not run');
  });

  test("the environment's Python is in bin/, or Scripts\\ on Windows", () => {
    assert.match(environmentPython('/data/server', 'linux'), /\/data\/server\/bin\/python$/);
    assert.match(environmentPython('C:\\data\\server', 'win32'), /Scripts[\\/]python\.exe$/);
  });

  test('no Python says what was tried and how to fix it', () => {
    const error = new NoPython(['python3 on PATH: Python 3.10; this build carries wheels for 3.11 to 3.14'], CARRIED);
    assert.strictEqual(
      error.message,
      'Seri needs Python 3.11 to 3.14 to run its server and found none (tried python3 on PATH: Python 3.10; ' +
        "this build carries wheels for 3.11 to 3.14). Install Python from python.org (or your system's packages), " +
        'or set `seri.server.python` to the path of one.',
    );
  });
});
