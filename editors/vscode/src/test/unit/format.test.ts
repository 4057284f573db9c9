import * as assert from 'assert';

import { checksHeading, contextPercent, plural, relativeTime } from '../../format';

suite('format', () => {
  test('context use is a whole percentage, at least 1 once anything is used', () => {
    assert.strictEqual(contextPercent(0, 128_000), 0);
    assert.strictEqual(contextPercent(10, 128_000), 1);
    assert.strictEqual(contextPercent(64_000, 128_000), 50);
    assert.strictEqual(contextPercent(5, 0), 0);
  });

  test('relative dates read like the rest of VS Code', () => {
    const now = Date.parse('2025-03-10T12:00:00Z');
    assert.strictEqual(relativeTime('2025-03-10T11:57:00Z', now), '3 minutes ago');
    assert.strictEqual(relativeTime('2025-03-09T12:00:00Z', now), 'yesterday');
    assert.strictEqual(relativeTime('2025-02-24T12:00:00Z', now), '2 weeks ago');
    assert.strictEqual(relativeTime('not a date', now), 'not a date');
  });

  test('plural', () => {
    assert.strictEqual(plural(1, 'message'), '1 message');
    assert.strictEqual(plural(3, 'message'), '3 messages');
  });

  test('failing checks are headed by their names, read from the server’s message', () => {
    const content = [
      'The checks failed after your changes (round 1 of 3):',
      '',
      'tests: `pytest -q` exited with 1.',
      '```',
      'FAILED tests/test_app.py::test_main - assert 1 == 2',
      'error: `main` is not defined',
      '```',
      '',
      'lint: `ruff check .` exited with 1.',
      '(no output)',
      '',
      'Fix what they report. They run again when you finish after changing files.',
    ].join('\n');
    assert.strictEqual(checksHeading(content), 'Checks failed: tests, lint');
    assert.strictEqual(checksHeading('Something else went wrong'), 'Checks failed');
  });
});
