// The chat's slash commands are the server's: the list it advertises (initialize result,
// `seri.commands`) reaches the chat model, is gone while the server is stopped, and is
// read again from the restarted server. Needs a server that advertises the list.

import * as assert from 'assert';

import type { SeriExtensionApi } from '../../extension';
import type { SlashCommand } from '../../protocol';
import { activated, restart, waitFor } from './helpers';

/** The registry's order (seri_lsp/slash.py), as docs/protocol.md gives it. */
const REGISTRY_ORDER = ['compact', 'clear', 'rewind', 'max-turns', 'model', 'resume', 'continue', 'trajectory', 'fork', 'cost', 'context', 'rename'];

/** The chat model's list, once it holds one. */
async function heldCommands(api: SeriExtensionApi, what: string): Promise<SlashCommand[]> {
  await waitFor(() => api.model.snapshot().slashCommands.length > 0, what);
  return api.model.snapshot().slashCommands;
}

suite('Slash commands', () => {
  test('the chat holds the list the server advertises, /rename included', async () => {
    const api = await activated();
    const { commands } = await api.server.execute<{ commands: SlashCommand[] }>('seri.commands');
    assert.deepStrictEqual(
      commands.map((command) => command.name),
      REGISTRY_ORDER,
    );
    const held = await heldCommands(api, 'the chat model to hold the server’s slash commands');
    assert.deepStrictEqual(held, commands);
    const compact = held.find((command) => command.name === 'compact');
    assert.ok(compact?.usage.startsWith('/compact') && compact.summary && compact.argumentHint, JSON.stringify(compact));
  });

  test('no list while the server is stopped; the restarted server’s list is read again', async () => {
    const api = await activated();
    await api.server.stop();
    assert.deepStrictEqual(api.model.snapshot().slashCommands, []);
    await restart(api);
    const held = await heldCommands(api, 'the restarted server’s slash commands');
    assert.deepStrictEqual(
      held.map((command) => command.name),
      REGISTRY_ORDER,
    );
  });
});
