/** Types of scripts/build-web.mjs, for the tests that build the web UI. */
export interface BuildWebOptions {
  /** Default: dist/web. */
  outDir?: string;
  /** Default true. */
  minify?: boolean;
  /** Default true. */
  sourcemap?: boolean;
}

export function buildWeb(options?: BuildWebOptions): Promise<{ outDir: string; files: string[]; bundleBytes: number }>;
