import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, resolve, sep } from 'node:path';

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

const securityHeaders = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-cache',
};

/**
 * Serves the web UI's files from `root` (GET and HEAD only). Paths are resolved inside the root:
 * `..`, encoded separators and absolute paths cannot reach a file outside it.
 */
export async function serveStatic(
  root: string | undefined,
  request: IncomingMessage,
  response: ServerResponse,
  pathname: string,
): Promise<void> {
  if (request.method !== 'GET' && request.method !== 'HEAD')
    return send(response, 405, 'Method not allowed.\n', { Allow: 'GET, HEAD' });
  if (!root)
    return send(response, 404, 'This Parley server has no web UI folder (start it with a web root, e.g. dist/web).\n');
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return send(response, 400, 'Bad path.\n');
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return send(response, 400, 'Bad path.\n');
  const base = resolve(root);
  const relative = decoded === '/' || decoded === '' ? 'index.html' : decoded.replace(/^\/+/, '');
  const target = resolve(join(base, relative));
  if (target !== base && !target.startsWith(base + sep)) return send(response, 404, 'Not found.\n');
  let file = target;
  try {
    let info = await stat(file);
    if (info.isDirectory()) {
      file = join(file, 'index.html');
      info = await stat(file);
    }
    if (!info.isFile()) return send(response, 404, 'Not found.\n');
    response.writeHead(200, {
      ...securityHeaders,
      'Content-Type': contentTypes[extname(file).toLowerCase()] ?? 'application/octet-stream',
      'Content-Length': info.size,
    });
    if (request.method === 'HEAD') {
      response.end();
      return;
    }
    await new Promise<void>((done) => {
      const stream = createReadStream(file);
      stream.on('error', () => {
        response.destroy();
        done();
      });
      stream.on('end', done);
      stream.pipe(response);
    });
  } catch {
    send(response, 404, 'Not found.\n');
  }
}

function send(response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { ...securityHeaders, 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  response.end(body);
}
