/** Types of scripts/build-web.mjs, for the tests that build the web UI. */
export interface BuildWebOptions {
  /** Default: dist/web. */
  outDir?: string;
  /** Default true. */
  minify?: boolean;
  /** Default true. */
  sourcemap?: boolean;
}

export function buildWeb(options?: BuildWebOptions): Promise<{
  outDir: string;
  /** Paths written, relative to outDir (app.js, chunks/…, the static files). */
  files: string[];
  /** app.js, what the first paint needs. */
  bundleBytes: number;
  /** The chunks loaded on first need (highlight.js). */
  lazyBytes: number;
}>;
