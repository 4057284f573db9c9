import * as assert from 'assert';

import { SavableDocument, saveDocuments } from '../../saveDocuments';

/** An open document that counts its saves (in `log` too) and answers them with `outcome`. */
function document(isDirty: boolean, outcome: boolean | Error = true, log: SavableDocument[] = []): SavableDocument & { saves: number } {
  const doc = {
    isDirty,
    saves: 0,
    async save(): Promise<boolean> {
      doc.saves++;
      log.push(doc);
      if (outcome instanceof Error) {
        throw outcome;
      }
      doc.isDirty = !outcome;
      return outcome;
    },
  };
  return doc;
}

suite('seri/saveDocuments', () => {
  test('saves the open documents with unsaved changes, in order, and lists them', async () => {
    const order: SavableDocument[] = [];
    const a = document(true, true, order);
    const b = document(true, true, order);
    const open = new Map<string, SavableDocument>([
      ['file:///w/a.py', a],
      ['file:///w/b.py', b],
    ]);
    const result = await saveDocuments({ uris: ['file:///w/b.py', 'file:///w/a.py'] }, (uri) => open.get(uri));
    assert.deepStrictEqual(result, { saved: ['file:///w/b.py', 'file:///w/a.py'] });
    assert.deepStrictEqual(order, [b, a]);
    assert.strictEqual(a.isDirty || b.isDirty, false);
  });

  test('a clean open document and a closed one count as saved without a save', async () => {
    const clean = document(false);
    const result = await saveDocuments({ uris: ['file:///w/clean.py', 'file:///w/closed.py'] }, (uri) =>
      uri.endsWith('clean.py') ? clean : undefined,
    );
    assert.deepStrictEqual(result.saved, ['file:///w/clean.py', 'file:///w/closed.py']);
    assert.strictEqual(clean.saves, 0);
  });

  test('a document that could not be saved is left out; the others are still saved', async () => {
    const refused = document(true, false);
    const broken = document(true, new Error('read-only file system'));
    const fine = document(true);
    const open: Record<string, SavableDocument> = {
      'file:///w/refused.py': refused,
      'file:///w/broken.py': broken,
      'file:///w/fine.py': fine,
    };
    const result = await saveDocuments({ uris: Object.keys(open) }, (uri) => open[uri]);
    assert.deepStrictEqual(result.saved, ['file:///w/fine.py']);
    assert.deepStrictEqual([refused.saves, broken.saves, fine.saves], [1, 1, 1]);
  });
});
