// The S3-protocol server the replication tests run against: the `s3s-fs` crate's binary, built
// once by `cargo install` into target/s3s-fs and reused (it is a test-only build, cached like the
// other builds under target/). `npm install` runs this, so `npm test` never spends minutes
// building a server; the test setup calls `s3sFs()` as well, in case target/ was cleaned since.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

// 0.15 and later need a newer rustc than 1.95, the one this was built with.
export const S3S_FS_VERSION = '0.14.1'
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const installRoot = join(root, 'target', 's3s-fs')
const binary = join(installRoot, 'bin', 's3s-fs')

/** The s3s-fs binary's path, installed with cargo on first use (a few minutes, once). */
export function s3sFs() {
  if (existsSync(binary)) return binary
  const r = spawnSync(
    'cargo',
    ['install', `s3s-fs@${S3S_FS_VERSION}`, '--features', 'binary', '--locked', '--root', installRoot],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  )
  if (r.status !== 0 || !existsSync(binary)) throw new Error(`cargo install s3s-fs@${S3S_FS_VERSION} failed (${r.status})`)
  return binary
}

if (process.argv[1] === fileURLToPath(import.meta.url)) s3sFs()
