#!/usr/bin/env node
/**
 * Draws the web app's PNG icons (src/ui/web/static/icon-192.png, icon-512.png, and the 180 px
 * apple-touch-icon.png) from icon.svg with headless Chromium, so the raster icons are the SVG
 * exactly. Run it after changing icon.svg (`node scripts/make-icons.mjs`); the PNGs are checked in.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const folder = join(root, 'src', 'ui', 'web', 'static');
const svg = await readFile(join(folder, 'icon.svg'), 'utf8');
const browser = await chromium.launch({
  executablePath: process.env['PARLEY_CHROMIUM'] ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu'],
});
try {
  for (const [name, size] of [
    ['icon-192.png', 192],
    ['icon-512.png', 512],
    ['apple-touch-icon.png', 180],
  ]) {
    const page = await browser.newPage({ viewport: { width: size, height: size } });
    await page.setContent(
      `<html><body style="margin:0">${svg.replace('<svg ', `<svg width="${size}" height="${size}" `)}</body></html>`,
    );
    await writeFile(join(folder, name), await page.screenshot({ type: 'png', omitBackground: false }));
    await page.close();
    console.log(`wrote ${name} (${size}×${size})`);
  }
} finally {
  await browser.close();
}
