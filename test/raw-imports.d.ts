/** Vite's `?raw` imports (a file's text), used to check docs against the code. */
declare module "*?raw" {
  const text: string;
  export default text;
}

/** Vite's glob import, as test/platform/architecture.test.ts uses it: each matching file's text, by its path. */
interface ImportMeta {
  glob(patterns: string | string[], options: { query: "?raw"; import: "default"; eager: true }): Record<string, string>;
}
