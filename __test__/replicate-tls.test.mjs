// Replication over TLS: every other replication test talks plain HTTP to s3s-fs on loopback, so
// the part of loa-replicate a real bucket needs first (rustls with the aws-lc-rs provider, as
// compiled for the release by zig, and the certificate check) would otherwise never run. Here a
// real HTTPS proxy with a certificate made for this run sits in front of s3s-fs: push and pull
// go through it when the certificate is trusted (SSL_CERT_FILE), and nothing does when it is not.
//
// Linux only: there rustls-platform-verifier takes its roots from SSL_CERT_FILE
// (rustls-native-certs); on macOS it asks the system's trust store, which a test cannot extend.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { root, tempDir } from './helpers.mjs'
import { BUCKET, startProxy, startS3 } from './s3-server.mjs'

const LOA = join(root, 'bin', 'loa')
const skip = process.platform !== 'linux' && 'SSL_CERT_FILE is how the test trusts its certificate, on Linux only'

/** A self-signed certificate for 127.0.0.1 (openssl, P-256), made per run. */
function certificate(t) {
  const dir = tempDir(t, 'loa-tls-')
  const r = spawnSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=loa replication test',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-addext', 'basicConstraints=critical,CA:FALSE', '-addext', 'extendedKeyUsage=serverAuth',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
    { encoding: 'utf8' },
  )
  assert.equal(r.status, 0, `openssl req: ${r.error ?? r.stderr}`)
  return { file: join(dir, 'cert.pem'), key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }
}

/** `loa` run asynchronously (the proxy answers from this process). */
function loa(env, args) {
  const child = spawn(process.execPath, [LOA, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c) => (stdout += c))
  child.stderr.on('data', (c) => (stderr += c))
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })))
}

/** A workspace replicating through `endpoint`, as `origin`; https only (no allow_http). */
function workspace(t, endpoint, origin) {
  const ws = tempDir(t, `loa-ws-${origin}-`)
  writeFileSync(join(ws, '.loa.config.yaml'), `replication:\n  bucket: ${BUCKET}\n  endpoint: ${endpoint}\n  origin: ${origin}\n`)
  return ws
}

test('push and pull over TLS, through a certificate trusted by SSL_CERT_FILE', { skip }, async (t) => {
  const server = await startS3(t)
  const cert = certificate(t)
  const proxy = await startProxy(t, server.port, { tls: { key: cert.key, cert: cert.cert } })
  assert.match(proxy.endpoint, /^https:\/\//)
  const env = { ...server.env, SSL_CERT_FILE: cert.file }

  const a = workspace(t, proxy.endpoint, 'alpha')
  const content = 'Always run the integration tests before merging to main.'
  const captured = spawnSync(process.execPath, [LOA, 'capture', '--workspace', a, '--session', 'cli', '--content', content, '--json'], { encoding: 'utf8' })
  assert.equal(captured.status, 0, captured.stderr)

  const push = await loa(env, ['replicate', 'push', '--workspace', a, '--json'])
  assert.equal(push.status, 0, push.stderr)
  assert.equal(JSON.parse(push.stdout).segmentsUploaded, 1)

  // Another workspace, same origin: the deleted-workspace restore, read back over TLS.
  const b = workspace(t, proxy.endpoint, 'alpha')
  const pull = await loa(env, ['replicate', 'pull', '--workspace', b, '--json'])
  assert.equal(pull.status, 0, pull.stderr)
  assert.equal(JSON.parse(pull.stdout).segmentsRestored, 1)
  const dump = spawnSync(process.execPath, [LOA, 'wal', 'dump', join(b, '.loa', 'wal'), '--data', '--json'], { encoding: 'utf8' })
  assert.equal(dump.status, 0, dump.stderr)
  assert.ok(JSON.parse(dump.stdout).some((r) => r.data?.text?.includes(content)), 'the restored WAL holds the captured record')

  assert.ok(proxy.stats.requests >= 4, `every request went through the TLS proxy: ${JSON.stringify(proxy.stats)}`)
  assert.equal(proxy.stats.tlsErrors, 0, JSON.stringify(proxy.stats))
})

test('an untrusted certificate: nothing is sent, the replica is unavailable', { skip }, async (t) => {
  const server = await startS3(t)
  const cert = certificate(t)
  const other = certificate(t)
  const proxy = await startProxy(t, server.port, { tls: { key: cert.key, cert: cert.cert } })
  const ws = workspace(t, proxy.endpoint, 'alpha')

  // Trusting another certificate only; object_store retries (briefly: the backoff is capped).
  const status = await loa({ ...server.env, SSL_CERT_FILE: other.file }, ['replicate', 'status', '--workspace', ws])
  assert.equal(status.status, 2, status.stderr)
  assert.match(status.stderr, /^loa: E_REPLICA_UNAVAILABLE: /m)
  assert.equal(proxy.stats.requests, 0, `no request passed the handshake: ${JSON.stringify(proxy.stats)}`)
  assert.ok(proxy.stats.tlsErrors >= 1, JSON.stringify(proxy.stats))
})
