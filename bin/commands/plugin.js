'use strict'
// `loa plugin install <dir>`: puts the OpenClaw plugin of this checkout where OpenClaw's loader
// accepts it: `<dir>/loa`, with this build of @loa/core installed inside it as npm would
// (`node_modules/@loa/core`: its published files and the native addon).
//
// For checkouts only. Users install the published package with OpenClaw's own installer
// (`openclaw plugins install @loa/openclaw-plugin`), which brings @loa/core and the addon of the
// host's platform through npm; extensions/loa/test/package.test.mjs tests that path. Here the
// plugin is copied as TypeScript source (OpenClaw compiles it for a `plugins.load.paths` entry),
// so no build of its dist/ is needed.
//
// Why not load `extensions/loa` in place: the plugin resolves @loa/core through `file:..`, so
// the core package's root is the whole checkout, which contains the plugin itself. OpenClaw
// captures a plugin and each of its dependencies as separate packages; the dependency's copy
// then claims the plugin's own files and the loader refuses the entry ("Plugin entry is outside
// its captured source package"), after copying the entire checkout, build output included.

const fs = require('node:fs')
const path = require('node:path')
const cli = require('../lib/cli.js')

const CORE_ROOT = path.resolve(__dirname, '..', '..')
const PLUGIN_SOURCE = path.join(CORE_ROOT, 'extensions', 'loa')
const PLUGIN_ID = 'loa'
// The plugin as source: its package.json `files` name the compiled dist/ that only a pack builds.
const PLUGIN_SOURCES = ['package.json', 'openclaw.plugin.json', 'README.md', 'index.ts', 'src']

function readJson(file) {
  return JSON.parse(cli.readInputFile(file, 1024 * 1024).toString('utf8'))
}

/** True when `dir` holds an earlier install of this plugin (so it may be replaced). */
function isOurInstall(dir) {
  try {
    return readJson(path.join(dir, 'openclaw.plugin.json')).id === PLUGIN_ID
  } catch {
    return false
  }
}

function copyInto(sourceRoot, names, targetRoot) {
  for (const name of names) {
    const from = path.join(sourceRoot, name)
    const to = path.join(targetRoot, name)
    fs.mkdirSync(path.dirname(to), { recursive: true })
    fs.cpSync(from, to, { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false })
  }
}

function install(dir, values) {
  if (!fs.existsSync(path.join(PLUGIN_SOURCE, 'openclaw.plugin.json'))) {
    throw new cli.CliError('E_IO', `${PLUGIN_SOURCE}: ENOENT (the plugin's sources come with a checkout of @loa/core; this installation has none)`)
  }
  const addons = fs.readdirSync(CORE_ROOT).filter((f) => f.endsWith('.node'))
  if (addons.length === 0) throw new cli.CliError('E_IO', `${CORE_ROOT}: ENOENT (no native addon built here; run npm run build first)`)
  cli.requireDir(dir, 'OpenClaw extensions directory')
  if (fs.realpathSync(dir) === fs.realpathSync(path.dirname(PLUGIN_SOURCE))) {
    throw cli.usage(`${dir} is this checkout's own extensions directory; install into OpenClaw's (for example ~/.openclaw/extensions)`)
  }
  const target = path.join(dir, PLUGIN_ID)
  let exists = true
  try {
    const stat = fs.lstatSync(target)
    if (!stat.isDirectory() || !isOurInstall(target)) {
      throw new cli.CliError('E_IO', `${target}: EEXIST (not an earlier install of this plugin; move it away first)`)
    }
  } catch (err) {
    if (err.code !== 'ENOENT') throw err
    exists = false
  }

  // Built next to the target and renamed into place: OpenClaw never sees half an install.
  const staging = path.join(dir, `.${PLUGIN_ID}.install-${process.pid}`)
  const old = path.join(dir, `.${PLUGIN_ID}.old-${process.pid}`)
  fs.rmSync(staging, { recursive: true, force: true })
  try {
    copyInto(PLUGIN_SOURCE, PLUGIN_SOURCES, staging)
    const core = readJson(path.join(CORE_ROOT, 'package.json'))
    const coreTarget = path.join(staging, 'node_modules', '@loa', 'core')
    copyInto(CORE_ROOT, ['package.json', ...(core.files ?? []), ...addons], coreTarget)
    if (exists) fs.renameSync(target, old)
    try {
      fs.renameSync(staging, target)
    } catch (err) {
      if (exists) fs.renameSync(old, target)
      throw err
    }
    if (exists) fs.rmSync(old, { recursive: true, force: true })
    const result = { installed: target, core: core.version, addons, replaced: exists }
    if (values.json) {
      cli.printJson(result)
    } else {
      process.stdout.write(
        `${exists ? 'replaced' : 'installed'} the ${PLUGIN_ID} plugin in ${target} (@loa/core ${core.version}, ${addons.join(', ')})\n` +
          `In the OpenClaw configuration: plugins.allow: ["${PLUGIN_ID}"], plugins.load.paths: [${JSON.stringify(target)}],\n` +
          `plugins.entries.${PLUGIN_ID}: { enabled: true, hooks: { allowConversationAccess: true } } (see extensions/loa/README.md)\n`,
      )
    }
    return cli.EXIT_OK
  } finally {
    fs.rmSync(staging, { recursive: true, force: true })
  }
}

module.exports = {
  help: `  loa plugin install <dir> [--json]
                                 install the OpenClaw plugin of this checkout into <dir>/loa (an
                                 OpenClaw extensions directory), with @loa/core and its addon`,
  accepts: ['json'],
  run({ action, target, args, values }) {
    if (action !== 'install') throw cli.badAction('plugin', action, ['install'])
    if (!target) throw cli.usage(`'loa plugin install' needs the OpenClaw extensions directory`)
    cli.expectArgs(args, 2, 'plugin install')
    return install(path.resolve(target), values)
  },
}
