// A real S3-protocol server on loopback for the replication tests: the `s3s-fs` crate's binary
// (built once into target/s3s-fs by `cargo install`, then reused), started on 127.0.0.1 with a
// port of its own choosing and a temp data directory, always behind a watchdog that kills it
// when the test process exits. Also a small HTTP proxy over real TCP, placed between
// loa-replicate and the server to inject faults: a 500 on every n-th request, a slow link, the
// server killed in the middle of an upload; or to put TLS in front of the server (which speaks
// plain HTTP only).
import { spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { fixture, tempDir, WATCHDOG_MS } from './helpers.mjs'
import { s3sFs } from '../scripts/install-s3s-fs.mjs'

export const BUCKET = 'loa-test'

/** Starts s3s-fs behind its watchdog; resolves once it listens. */
function launch(dataDir, port, credentials) {
  const args = [fixture('s3-watchdog.mjs'), s3sFs(), '--host', '127.0.0.1', '--port', String(port)]
  args.push('--access-key', credentials.accessKeyId, '--secret-key', credentials.secretAccessKey, dataDir)
  const watchdog = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, RUST_LOG: 'info', NO_COLOR: '1' } })
  let output = ''
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error(`s3s-fs did not start: ${output}`)), WATCHDOG_MS)
    watchdog.stdout.setEncoding('utf8')
    watchdog.stdout.on('data', (chunk) => {
      output += chunk
      const pid = /^pid (\d+)$/m.exec(output)
      const at = /server is running at http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
      if (pid && at) {
        clearTimeout(guard)
        resolve({ watchdog, pid: Number(pid[1]), port: Number(at[1]) })
      }
    })
    watchdog.on('exit', (code) => {
      clearTimeout(guard)
      reject(new Error(`s3s-fs exited (${code}) before listening: ${output}`))
    })
  })
}

/**
 * A running server with a fresh data directory holding one bucket. `env` is what loa-replicate
 * needs in its environment (credentials made up per run); `kill()` SIGKILLs the server,
 * `restart()` starts it again on the same port and data; stopped after the test.
 */
export async function startS3(t) {
  const dataDir = tempDir(t, 'loa-s3-')
  mkdirSync(join(dataDir, BUCKET))
  const credentials = { accessKeyId: `loa${randomBytes(6).toString('hex')}`, secretAccessKey: randomBytes(20).toString('hex') }
  let running = await launch(dataDir, 0, credentials)
  const server = {
    dataDir,
    credentials,
    port: running.port,
    endpoint: `http://127.0.0.1:${running.port}`,
    env: {
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_REGION: 'us-east-1',
    },
    /** SIGKILLs the server (its watchdog exits with it). */
    async kill() {
      const exited = new Promise((resolve) => running.watchdog.once('exit', resolve))
      process.kill(running.pid, 'SIGKILL')
      await exited
    },
    async restart() {
      running = await launch(dataDir, server.port, credentials)
    },
    async stop() {
      if (running.watchdog.exitCode !== null) return
      const exited = new Promise((resolve) => running.watchdog.once('exit', resolve))
      running.watchdog.stdin.end()
      await exited
    },
  }
  t.after(() => server.stop())
  return server
}

/**
 * An HTTP proxy on 127.0.0.1 in front of `upstreamPort`, forwarding every request as it came
 * (the Host header too, which the request's signature covers). Faults:
 * - `failEvery: n`: every n-th request is answered 500 (an S3 InternalError) by the proxy.
 * - `bytesPerTick`: bodies both ways pass in chunks of at most this many bytes, one per
 *   event-loop turn after a short pause (a slow link; bounded: it only slows, never stalls).
 * - `onBody(request, bytesSoFar)`: called as a request body streams through (to kill the
 *   server mid-upload).
 * - `tls: { key, cert }` (PEM): the proxy speaks HTTPS with this certificate (endpoint https://).
 * `stats` counts requests, failures injected, upstream errors and failed TLS handshakes.
 */
export async function startProxy(t, upstreamPort, { failEvery = 0, bytesPerTick = 0, onBody, tls } = {}) {
  const stats = { requests: 0, injected: 0, upstreamErrors: 0, tlsErrors: 0, methods: {} }
  const slow = async (chunk, write) => {
    if (!bytesPerTick) return write(chunk)
    for (let at = 0; at < chunk.length; at += bytesPerTick) {
      await new Promise((resolve) => setTimeout(resolve, 2))
      write(chunk.subarray(at, at + bytesPerTick))
    }
  }
  const handle = async (req, res) => {
    stats.requests += 1
    stats.methods[req.method] = (stats.methods[req.method] ?? 0) + 1
    if (failEvery && stats.requests % failEvery === 0) {
      stats.injected += 1
      req.resume()
      req.on('end', () => {
        res.writeHead(500, { 'content-type': 'application/xml' })
        res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected</Message></Error>')
      })
      return
    }
    const upstream = http.request({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers: req.headers })
    upstream.on('response', async (up) => {
      res.writeHead(up.statusCode, up.headers)
      for await (const chunk of up) await slow(chunk, (c) => res.write(c))
      res.end()
    })
    upstream.on('error', () => {
      stats.upstreamErrors += 1
      if (!res.headersSent) res.writeHead(502).end()
      else res.destroy()
    })
    let seen = 0
    try {
      for await (const chunk of req) {
        seen += chunk.length
        await slow(chunk, (c) => upstream.write(c))
        if (onBody) await onBody(req, seen)
      }
      upstream.end()
    } catch {
      upstream.destroy()
    }
  }
  const server = tls ? https.createServer(tls, handle) : http.createServer(handle)
  server.on('tlsClientError', () => (stats.tlsErrors += 1))
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise((resolve) => server.close(resolve)))
  server.closeAllConnections && t.after(() => server.closeAllConnections())
  return { endpoint: `${tls ? 'https' : 'http'}://127.0.0.1:${server.address().port}`, stats }
}
