// A real headless Chromium for page tests, driven by playwright-core (no browser download: the
// browser is the one named by CHROME_PATH, else Debian's chromium-headless-shell, which .ci/run
// installs with apt where it is missing). Every request the page makes is recorded, as are the
// console messages (a Content-Security-Policy violation is one).
import { existsSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { requireDev } from './helpers.mjs'

const DEBIAN_HEADLESS_SHELL = '/usr/bin/chromium-headless-shell'

/** The browser to use; a missing one fails the test with one line saying how to get one. */
export function browserPath() {
  const given = process.env.CHROME_PATH
  if (given) {
    if (!existsSync(given)) throw new Error(`CHROME_PATH=${given} does not exist; point it at a Chromium or Chrome binary`)
    return given
  }
  if (existsSync(DEBIAN_HEADLESS_SHELL)) return DEBIAN_HEADLESS_SHELL
  throw new Error('no headless Chromium: install Debian\'s chromium-headless-shell (apt-get install chromium-headless-shell) or set CHROME_PATH to a Chromium or Chrome binary')
}

/**
 * Opens `file` (a path) in a fresh browser at `width`×`height`; returns the page, what it
 * requested besides itself, its console messages, and `close()`. Background networking is off
 * (the machine's network is closed: Chromium's own calls home would otherwise be noise).
 */
export async function openFile(file, { width = 1280, height = 900 } = {}) {
  const { chromium } = requireDev('playwright-core')
  const browser = await chromium.launch({
    executablePath: browserPath(),
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  })
  try {
    const page = await browser.newPage({ viewport: { width, height } })
    const url = pathToFileURL(file).href
    const requests = []
    const console = []
    page.on('request', (r) => {
      if (r.url() !== url) requests.push(r.url())
    })
    page.on('console', (m) => console.push(m.text()))
    await page.goto(url, { waitUntil: 'load' })
    return { page, requests, console, close: () => browser.close() }
  } catch (err) {
    await browser.close()
    throw err
  }
}
