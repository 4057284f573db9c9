// Apply to File (`seri.code.merge`): where a code block of a reply goes in a file.

/** How the block went in: a new file, the whole file, one unit of it, or added at its end. */
export type CodeMergeMode = 'create' | 'whole' | 'fragment' | 'append';

export interface CodeMerge {
  /** The file's whole new content. */
  text: string;
  mode: CodeMergeMode;
  /** For a fragment: the old lines it replaced, 1-based and inclusive. */
  range?: { startLine: number; endLine: number };
}
