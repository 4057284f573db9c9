// `seri/saveDocuments` (server to client): before running the checks, which read the disk,
// the server asks the editor to save the documents a task changed through it. No
// `vscode` import here, so the rule is testable in plain Node; server.ts wires it to
// VS Code's open documents.

export interface SaveDocumentsParams {
  uris: string[];
}

export interface SaveDocumentsResult {
  /** The uris whose text is now on disk: saved now, with nothing unsaved, or not open. */
  saved: string[];
}

/** What the rule needs of an open document (`vscode.TextDocument` has it). */
export interface SavableDocument {
  readonly isDirty: boolean;
  save(): Thenable<boolean>;
}

/**
 * Save each open document among `params.uris` that has unsaved changes, in order.
 * `find` looks a uri up among the open documents (undefined: not open, the disk is all
 * there is). A document whose save fails or is refused is left out of `saved`.
 */
export async function saveDocuments(
  params: SaveDocumentsParams,
  find: (uri: string) => SavableDocument | undefined,
): Promise<SaveDocumentsResult> {
  const saved: string[] = [];
  for (const uri of params.uris ?? []) {
    const document = find(uri);
    if (!document || !document.isDirty) {
      saved.push(uri);
      continue;
    }
    try {
      if (await document.save()) {
        saved.push(uri);
      }
    } catch {
      // Left out: the server runs the checks anyway and says which documents were unsaved.
    }
  }
  return { saved };
}
