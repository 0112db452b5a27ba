'use strict'
// `loa recover`, `loa identity` and `loa heal`: boot-time recovery of the grimoire, SOUL.md from
// BEAUVOIR.md, and healing of the state zone, for boot scripts and terminals. Output names
// states, sources, paths and counts; never file contents.
//
// Pinned keys come from `--trust` only (repeatable), never from the workspace's configuration:
// whoever can tamper with the grimoire can rewrite `.loa.config.yaml` too, so a key pinned there
// would anchor nothing.

const path = require('node:path')
const core = require('../../index.js')
const cli = require('../lib/cli.js')

const { printJson, workspace, positiveInteger } = cli

/** A `--trust` file is a key list, not a store: larger is refused unread. */
const MAX_TRUST_FILE_BYTES = 1024 * 1024
const HEX_KEY = /^[0-9a-fA-F]{64}$/

/**
 * The pinned keys of `--trust`: each a public key (64 hex digits) or a file holding either
 * `loa keys list --json` output (KeyInfo[]) or hex keys, one a line.
 */
function trustedKeys(values) {
  const keys = []
  for (const given of values.trust ?? []) {
    if (HEX_KEY.test(given)) {
      keys.push(given)
      continue
    }
    if (given === '') throw cli.usage('--trust needs a public key (64 hex digits) or a file')
    const file = path.resolve(given)
    const text = cli.readInputFile(file, MAX_TRUST_FILE_BYTES).toString('utf8')
    if (text.trimStart().startsWith('[')) {
      let list
      try {
        list = JSON.parse(text)
      } catch {
        throw new cli.CliError('E_INVALID_ARGUMENT', `${file} is not valid JSON (expected loa keys list --json output)`)
      }
      keys.push(...list)
    } else {
      const lines = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))
      for (const line of lines) {
        if (!HEX_KEY.test(line)) throw new cli.CliError('E_INVALID_ARGUMENT', `${file} holds a line that is not a public key (64 hex digits)`)
        keys.push(line)
      }
    }
  }
  return keys
}

/**
 * The object store source when the workspace replicates (`replication.bucket` set) and the
 * loa-replicate binary is installed; otherwise none (`replica` in the sources then fails and the
 * next source is tried). What it fetches must verify against the pinned keys like every source.
 */
function replicaSource(ws) {
  if (!core.loadConfig(ws).config.replication.bucket) return {}
  try {
    return { replicaProgram: require('./replicate.js').findBinary() }
  } catch {
    return {}
  }
}

async function recover({ args, values }) {
  cli.expectArgs(args, 0, 'recover')
  const ws = workspace(values)
  const keys = trustedKeys(values)
  if (keys.length === 0) throw cli.usage("'loa recover' needs --trust KEY|FILE: the public keys the grimoire must be signed with, pinned outside the workspace")
  if ((values['git-remote'] === undefined) !== (values['git-branch'] === undefined)) throw cli.usage('--git-remote and --git-branch go together')
  const options = {
    workspaceDir: ws,
    trustedKeys: keys,
    checkOnly: values['check-only'] === true,
    ...(values.mount !== undefined ? { mountDir: path.resolve(values.mount) } : {}),
    ...(values['git-remote'] !== undefined
      ? { git: { remote: values['git-remote'], branch: values['git-branch'], ...(values['git-path'] !== undefined ? { path: values['git-path'] } : {}) } }
      : {}),
    ...(values['max-attempts'] !== undefined ? { maxAttempts: positiveInteger(values['max-attempts'], '--max-attempts') } : {}),
    ...replicaSource(ws),
  }
  const r = await core.recover(options)
  if (values.json) {
    printJson(r)
    return r.exitCode
  }
  const from = r.restoredFrom ? `, restored from ${r.restoredFrom}` : ''
  process.stdout.write(`${r.state}${r.checkOnly ? ' (check only)' : ''}: trust ${r.trust}${from}\n`)
  for (const p of r.problems) process.stdout.write(`  problem: ${p}\n`)
  for (const f of r.sourceFailures) process.stdout.write(`  source failed: ${f}\n`)
  for (const e of r.evidence) process.stdout.write(`  evidence kept in ${e}\n`)
  if (r.quarantinedState) process.stdout.write(`  corrupt recovery state moved to ${r.quarantinedState}\n`)
  if (r.loopDetected) process.stdout.write(`  loop detected: ${r.attemptsInWindow} runs in the window, no restore attempted\n`)
  if (r.critical) process.stdout.write(`  CRITICAL: degraded ${r.degradedCycles} runs in a row; a human must look\n`)
  return r.exitCode
}

async function identity({ args, values }) {
  cli.expectArgs(args, 0, 'identity')
  const ws = workspace(values)
  const config = core.loadConfig(ws).config
  const keys = trustedKeys(values)
  const entry = path.posix.relative(path.posix.dirname(config.signing.manifestPath), config.identity.beauvoirPath)
  const report = await core.generateSoul({
    workspaceDir: ws,
    beauvoirPath: config.identity.beauvoirPath,
    soulPath: config.identity.soulPath,
    checkOnly: values.check === true,
    ...(keys.length ? { trustedKeys: keys, manifestPath: config.signing.manifestPath, manifestEntry: entry } : {}),
  })
  const status = report.status === 'generated' || report.status === 'up_to_date' ? 0 : 1
  if (values.json) {
    printJson(report)
    return status
  }
  const said = {
    generated: `${config.identity.soulPath} generated from ${config.identity.beauvoirPath}`,
    up_to_date: `${config.identity.soulPath} is up to date`,
    stale: `${config.identity.soulPath} is missing or stale (loa identity writes it)`,
    hand_edited: `${config.identity.soulPath} was edited by hand: left alone (move it away to regenerate)`,
  }
  process.stdout.write(said[report.status] + '\n')
  if (report.missingSections.length) process.stdout.write(`  ${config.identity.beauvoirPath} lacks: ${report.missingSections.join(', ')}\n`)
  if (report.unrecognizedSections.length) {
    process.stdout.write(`  carried as written (not a known section): ${report.unrecognizedSections.join(', ')}\n`)
  }
  return status
}

async function heal({ args, values }) {
  cli.expectArgs(args, 0, 'heal')
  const ws = workspace(values)
  const config = core.loadConfig(ws).config
  const report = await core.heal({
    workspaceDir: ws,
    notesPath: config.memory.notesPath,
    trajectoryDir: config.trajectory.dir,
    checkOnly: values['check-only'] === true,
  })
  if (values.json) {
    printJson(report)
    return report.exitCode
  }
  const acted = report.items.filter((i) => i.from || i.error)
  if (acted.length === 0) process.stdout.write('healthy: nothing to heal\n')
  for (const i of acted) {
    if (i.error) process.stdout.write(`  ${i.path}: cannot heal: ${i.error}\n`)
    else process.stdout.write(`  ${i.path}: ${report.checkOnly ? 'would heal' : 'healed'} from ${i.from}\n`)
  }
  return report.exitCode
}

const options = {
  workspace: { type: 'string' },
  trust: { type: 'string', multiple: true },
  mount: { type: 'string' },
  'git-remote': { type: 'string' },
  'git-branch': { type: 'string' },
  'git-path': { type: 'string' },
  'max-attempts': { type: 'string' },
  'check-only': { type: 'boolean' },
  check: { type: 'boolean' },
}

module.exports = {
  trustedKeys,
  recover: {
    help: `  loa recover --trust KEY|FILE... [--mount DIR] [--git-remote URL --git-branch B [--git-path P]]
              [--check-only] [--workspace DIR] [--json]
                                 check the grimoire against its signed manifest and the pinned
                                 keys; restore it (mount, replica, git, template) when it does not verify.
                                 Exit 0 running, 1 degraded, 2 error`,
    optionHelp: `  --trust KEY|FILE recover, identity, replicate pull: a pinned public key (64 hex digits), or
                a file of them (loa keys list --json output, or one hex key a line); repeatable.
                Never read from the workspace's configuration (nor the bucket). replicate pull
                restores this origin's sealed grimoire only when it verifies against one
  --check-only  recover, heal: report, write nothing
  --mount DIR   recover: the mounted backup (default: recovery.mount_dir of the configuration)
  --git-remote URL, --git-branch B, --git-path P
                recover: the git source (never from the workspace's configuration); without
                --git-path, the grimoire's place in the workspace's own repository, else
                grimoires/loa, else the root, whichever holds the manifest`,
    options,
    accepts: ['json', 'workspace', 'trust', 'mount', 'git-remote', 'git-branch', 'git-path', 'max-attempts', 'check-only'],
    run: recover,
  },
  identity: {
    help: `  loa identity [--check] [--trust KEY|FILE...] [--workspace DIR] [--json]
                                 generate SOUL.md from BEAUVOIR.md (--trust: BEAUVOIR.md must be
                                 covered by the signed manifest); --check: exit 1 when stale`,
    options,
    accepts: ['json', 'workspace', 'trust', 'check'],
    run: identity,
  },
  heal: {
    help: `  loa heal [--check-only] [--workspace DIR] [--json]
                                 bring back a missing or empty NOTES.md, beads and trajectory
                                 directory (from git HEAD, else the template). Exit 0 healthy,
                                 1 healed, 2 error`,
    options,
    accepts: ['json', 'workspace', 'check-only'],
    run: heal,
  },
}
