// The command rules sent to the server keep the workspace's allow rules apart from the user's.

import * as assert from 'assert';

import { commandRulesOption } from '../../commandRules';

suite('permissions.commands', () => {
  test("the user's allow rules go as allow, the workspace's as workspaceAllow, deny rules from every level as deny", () => {
    const option = commandRulesOption({
      globalValue: { allow: ['npm test'], deny: ['git push *'] },
      workspaceValue: { allow: ['make *', 7], deny: ['rm *'] },
      workspaceFolderValue: { allow: ['make *', 'curl *'] },
    });
    assert.deepStrictEqual(option, {
      allow: ['npm test'],
      deny: ['git push *', 'rm *'],
      workspaceAllow: ['make *', 'curl *'],
    });
  });

  test('a workspace alone allows nothing by itself, and nothing set sends nothing', () => {
    assert.deepStrictEqual(commandRulesOption({ workspaceValue: { allow: ['rm -rf *'] } }), { workspaceAllow: ['rm -rf *'] });
    assert.strictEqual(commandRulesOption({}), undefined);
    assert.strictEqual(commandRulesOption(undefined), undefined);
    assert.strictEqual(commandRulesOption({ globalValue: 'npm test' }), undefined);
  });
});
