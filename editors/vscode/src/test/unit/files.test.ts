import * as assert from 'assert';

import { rankFiles, resolvePath } from '../../chat/files';

const FILES = ['README.md', 'src/app.py', 'src/util/app_helpers.py', 'docs/guide.md', 'tests/test_app.py', 'src/parser/lexer.py'];

suite('workspace files', () => {
  test('the @ picker ranks names that start with the query first, then names and paths that hold it', () => {
    assert.deepStrictEqual(rankFiles(FILES, 'app'), ['src/app.py', 'src/util/app_helpers.py', 'tests/test_app.py']);
    assert.deepStrictEqual(rankFiles(FILES, 'GUIDE'), ['docs/guide.md'], 'case does not matter');
    assert.deepStrictEqual(rankFiles(FILES, 'src/par'), ['src/parser/lexer.py'], 'a path');
    assert.deepStrictEqual(rankFiles(FILES, 'splx'), ['src/parser/lexer.py'], 'letters in order');
    assert.deepStrictEqual(rankFiles(FILES, 'nothing'), []);
  });

  test('with nothing typed, open files come first, then the shallowest', () => {
    assert.deepStrictEqual(rankFiles(FILES, '', 3, new Set(['tests/test_app.py'])), ['tests/test_app.py', 'README.md', 'src/app.py']);
  });

  test('a name in a reply is the file it names, or the shortest one it ends', () => {
    assert.strictEqual(resolvePath(FILES, 'src/app.py'), 'src/app.py');
    assert.strictEqual(resolvePath(FILES, './src/app.py'), 'src/app.py');
    assert.strictEqual(resolvePath(FILES, 'app.py'), 'src/app.py');
    assert.strictEqual(resolvePath([...FILES, 'a/b/src/app.py'], 'app.py'), 'src/app.py');
    assert.strictEqual(resolvePath(FILES, 'lexer.py'), 'src/parser/lexer.py');
    assert.strictEqual(resolvePath(FILES, '/home/me/app/src/app.py', '/home/me/app'), 'src/app.py');
  });

  test('a name that is no file of the project is none', () => {
    assert.strictEqual(resolvePath(FILES, 'main.rs'), undefined);
    assert.strictEqual(resolvePath(FILES, 'pp.py'), undefined, 'the end of a name is no name');
    assert.strictEqual(resolvePath(FILES, '../src/app.py'), undefined);
    assert.strictEqual(resolvePath(FILES, '/etc/passwd', '/home/me/app'), undefined);
  });
});
