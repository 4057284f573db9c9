import * as assert from 'assert';

import { checksHeading, contextPercent, describeActivity, inEditorWords, plural, relativeTime } from '../../format';

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

  test('the working line says what the task waits for', () => {
    assert.strictEqual(describeActivity(null), 'Working…');
    assert.strictEqual(describeActivity({ state: 'model' }), 'Waiting for the model…');
    assert.strictEqual(describeActivity({ state: 'tool', detail: 'edit src/app.py' }), 'Running edit src/app.py…');
    // The `run` tool's detail is its command line: "Running run sleep 30…" said "run" twice.
    assert.strictEqual(describeActivity({ state: 'tool', detail: 'run sleep 30' }), 'Running `sleep 30`…');
    assert.strictEqual(describeActivity({ state: 'compacting' }), 'Compacting the conversation…');
    assert.strictEqual(describeActivity({ state: 'checks', detail: 'tests' }), 'Running the checks (tests)…');
    assert.strictEqual(describeActivity({ state: 'approval', detail: 'write a.py' }), 'Waiting for your approval');
    assert.strictEqual(describeActivity({ state: 'model' }, true), 'Waiting for your approval', 'a question on screen wins');
  });

  test('a retry says which of how many, when, and why; then that its call is in flight', () => {
    const retry = { state: 'retrying', detail: 'HTTP 503:\n busy', attempt: 1, maxAttempts: 4, delay: 1.6 };
    assert.strictEqual(describeActivity(retry), 'Retry 1/4 in 2 s: HTTP 503: busy');
    assert.strictEqual(describeActivity(retry, false, true), 'Waiting for the model (retry 1/4)…');
  });

  test('the server’s command names become the palette commands', () => {
    assert.strictEqual(
      inEditorWords('A task is running; wait for it to end or cancel it (seri.cancel) first.'),
      'A task is running; wait for it to end or cancel it (“Seri: Stop”) first.',
    );
    assert.strictEqual(inEditorWords('(seri.session.list lists the sessions)'), '(“Seri: Resume Session...” lists the sessions)');
    assert.strictEqual(inEditorWords('seri.trajectory.get has it'), 'seri.trajectory.get has it', 'no command of the editor: as is');
  });
});
