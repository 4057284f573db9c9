// How a tool row is coloured: a call that was stopped (by its Stop, the task's, or seri
// stopping while it ran) is not drawn as failed.

import * as assert from 'assert';

import { toolStatus } from '../../webview/toolRow';

suite('toolStatus', () => {
  const result = (content: string, isError = true) => ({ id: 1, role: 'tool' as const, content, tool_call_id: 'c1', isError, createdAt: '' });

  test('stopped calls are stopped, refusals denied, the rest failed or done', () => {
    assert.strictEqual(toolStatus(undefined), 'pending');
    assert.strictEqual(toolStatus(result('exit code 0\nok', false)), 'ok');
    assert.strictEqual(toolStatus(result('stopped by the user\npartial')), 'stopped');
    assert.strictEqual(toolStatus(result('Cancelled: the user stopped the task before this call finished.')), 'stopped');
    assert.strictEqual(toolStatus(result('Interrupted: seri stopped (the editor closed or the server restarted) while this call ran.')), 'stopped');
    assert.strictEqual(toolStatus(result('Denied: the user denied this write.')), 'denied');
    assert.strictEqual(toolStatus(result('exit code 1\nboom')), 'error');
  });
});
