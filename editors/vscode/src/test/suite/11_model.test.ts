import * as assert from 'assert';
import * as vscode from 'vscode';

import { Commands } from '../../ids';
import { activated, provider, stubWindow, waitFor } from './helpers';

suite('The model in the chat', () => {
  suiteSetup(async () => {
    await provider.reset();
    await activated();
    await vscode.commands.executeCommand(Commands.newSession);
  });

  test('the chat’s session carries the configured model', async () => {
    const api = await activated();
    await waitFor(() => api.model.currentSession?.model === 'test/model', 'the session to carry the setting’s model');
  });

  test('Select Model... lists the provider’s models with their windows and switches from the next prompt', async () => {
    const api = await activated();
    const stub = stubWindow([(items) => items.find((item) => item.label === 'other/model')]);
    let model: string | undefined;
    try {
      model = await vscode.commands.executeCommand<string>(Commands.selectModel);
    } finally {
      stub.restore();
    }
    assert.strictEqual(model, 'other/model');
    const picked = stub.quickPicks[0];
    assert.deepStrictEqual(
      picked.items.map((item) => [item.label, item.description]),
      [
        ['test/model', '128k context · in use'],
        ['other/model', '4.1k context'],
      ],
    );
    await waitFor(() => api.model.currentSession?.model === 'other/model', 'the header’s model to change');
    assert.strictEqual(api.model.currentUsage?.contextWindow, 4096, 'the window read again for the new model');
    await provider.script({ text: 'Answered by the other model.' });
    assert.strictEqual((await api.model.send('Which model?')).status, 'done');
    const log = await provider.log();
    assert.strictEqual(log.requests[log.requests.length - 1].model, 'other/model');
  });

  test('Select Model... with a model the provider does not list says why', async () => {
    const api = await activated();
    const stub = stubWindow([]);
    try {
      assert.strictEqual(await vscode.commands.executeCommand(Commands.selectModel, 'no/such-model'), undefined);
    } finally {
      stub.restore();
    }
    assert.strictEqual(stub.errors.length, 1, `one error (${stub.errors.join(' | ')})`);
    assert.match(stub.errors[0], /does not list the model 'no\/such-model'/);
    assert.strictEqual(api.model.currentSession?.model, 'other/model');
  });
});
