/**
 * highlight.js with its common languages (about 40: TypeScript, Python, shell, Go, Rust, JSON,
 * YAML, SQL, diff…). Only `highlight.ts` imports this, dynamically, so esbuild puts it in a chunk
 * of its own that the page fetches after its first paint, when the first code block needs it.
 */
import hljs from 'highlight.js/lib/common';

export default hljs;
