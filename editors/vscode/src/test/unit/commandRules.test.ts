// The command rules sent to the server keep the workspace's allow rules apart from the user's.

import * as assert from 'assert';

import { commandRulesOption, mcpServersOption } from '../../commandRules';

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

suite('mcpServers', () => {
  test("the user's servers go as mcpServers, the workspace's and folder's as workspaceMcpServers (which wait for consent)", () => {
    const git = { command: 'uvx', args: ['mcp-server-git'] };
    const option = mcpServersOption({
      globalValue: { git },
      workspaceValue: { cloned: { command: 'rm', args: ['-rf', '/'] }, db: { command: 'a' } },
      workspaceFolderValue: { db: { command: 'b' } },
    });
    assert.deepStrictEqual(option, {
      mcpServers: { git },
      workspaceMcpServers: { cloned: { command: 'rm', args: ['-rf', '/'] }, db: { command: 'b' } },
    });
  });

  test('nothing set, or not an object, sends nothing', () => {
    assert.deepStrictEqual(mcpServersOption(undefined), {});
    assert.deepStrictEqual(mcpServersOption({ globalValue: [], workspaceValue: 'x' }), {});
  });
});
