// The README's picture of `loa report`: runs the demo (npm start) on a fresh workspace, opens the
// page it writes in headless Chromium (CHROME_PATH, else Debian's chromium-headless-shell) and
// saves the top of it to docs/report.png. Run by hand after a change to the page:
// `node scripts/report-screenshot.mjs`.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openFile } from '../__test__/browser.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const ws = mkdtempSync(join(tmpdir(), 'loa-report-shot-'))
try {
  execFileSync(process.execPath, [join(root, 'bin', 'loa'), 'demo', '--workspace', ws], { stdio: 'ignore' })
  const browser = await openFile(join(ws, 'loa-report.html'), { width: 1280, height: 1600 })
  try {
    await browser.page.screenshot({ path: join(root, 'docs', 'report.png') })
  } finally {
    await browser.close()
  }
  process.stdout.write(`wrote docs/report.png from ${ws}/loa-report.html\n`)
} finally {
  rmSync(ws, { recursive: true, force: true })
}
