// A real, small ext4 filesystem on a loop device, for tests of what the library does when the
// disk is full or turns read-only (issue 32). Making one needs root (losetup, mount); where that
// is not possible `loopfs` answers `{ skip: reason }` and the test runs its fault-injection
// variant (the Rust tests' `fsutil::faults`) or says why it skipped.
//
// Each filesystem gets a loop device of its own (`losetup --find --show`), and is unmounted and
// detached by `cleanup`, which runs after the test whether it passed or not (registered with
// `t.after` before anything is mounted) and may also be called earlier; it is idempotent. What
// the test opens on it is given to `hold` and closed first, so the unmount is not refused.
import { execFileSync } from 'node:child_process'
import { closeSync, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, truncateSync, unlinkSync, writeSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'

const run = (command, args) => execFileSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString().trim()

/** Why a loop-mounted filesystem cannot be made here, or null when it can be tried. */
function unavailable() {
  if (process.platform !== 'linux') return 'not Linux'
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'not root (mount needs it)'
  if (!existsSync('/dev/loop-control')) return 'no /dev/loop-control'
  return null
}

/**
 * Makes, mounts and returns an ext4 filesystem of `sizeMiB` MiB (mounted `errors=remount-ro`,
 * world-writable root), or `{ skip: reason }`.
 *
 * - `dir`: its mount point.
 * - `fill()`: writes a filler file until the filesystem refuses (`ENOSPC`), to the last block.
 * - `free()`: removes the filler and commits that (a directory fsync), so space is back at once.
 * - `failReadOnly()`: an ext4 error (`trigger_fs_error`, mounted `errors=remount-ro`): the
 *   journal is aborted and the filesystem turns read-only under files open for writing, which
 *   then get `EROFS`. One way: only unmounting (and fsck) ends it.
 * - `remountRo()`, `remountRw()`: a plain remount (refused with `EBUSY` while a file on it is
 *   open for writing).
 * - `hold(resource)`: `resource.close()` runs at cleanup, before the unmount; returns it.
 * - `cleanup()`: closes what is held, unmounts (lazily if something still holds it) and
 *   detaches the loop device.
 */
export function loopfs(t, { sizeMiB = 16 } = {}) {
  const reason = unavailable()
  if (reason) return { skip: reason }
  const base = mkdtempSync(join(tmpdir(), 'loa-loopfs-'))
  const image = join(base, 'disk.img')
  const dir = join(base, 'mnt')
  const filler = join(dir, 'filler')
  let device = null
  let mounted = false
  let cleaned = false
  const held = []
  const hold = (resource) => {
    held.push(resource)
    return resource
  }
  const cleanup = () => {
    if (cleaned) return
    cleaned = true
    for (const resource of held) {
      try {
        resource.close()
      } catch {}
    }
    if (mounted) {
      try {
        run('umount', [dir])
      } catch {
        try {
          run('umount', ['-l', dir]) // a store the test left open still holds files
        } catch {}
      }
    }
    if (device) {
      try {
        run('losetup', ['-d', device])
      } catch {}
    }
    rmSync(base, { recursive: true, force: true })
  }
  t.after(cleanup)
  try {
    writeFileSync(image, '')
    truncateSync(image, sizeMiB * 1024 * 1024)
    run('mkfs.ext4', ['-q', '-F', '-m', '0', image])
    device = run('losetup', ['--find', '--show', image])
    mkdirSync(dir)
    run('mount', ['-t', 'ext4', '-o', 'errors=remount-ro', device, dir])
    mounted = true
    run('chmod', ['0777', dir])
  } catch (err) {
    const why = `could not make a loop-mounted ext4: ${String(err.stderr ?? err.message).trim()}`
    cleanup()
    return { skip: why }
  }

  const fill = () => {
    const fd = openSync(filler, 'a')
    try {
      // Big writes first, then ever smaller ones, down to the last free byte.
      for (let size = 1 << 20; size >= 1; size >>= 1) {
        const chunk = Buffer.alloc(size, 0x5a)
        for (;;) {
          try {
            writeSync(fd, chunk)
          } catch (err) {
            if (err.code === 'ENOSPC') break
            throw err
          }
        }
      }
      try {
        fsyncSync(fd)
      } catch {}
    } finally {
      closeSync(fd)
    }
  }
  const free = () => {
    unlinkSync(filler)
    const fd = openSync(dir, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  }
  // `ro`, or `emergency_ro` (newer kernels, after an ext4 error) among the mount's options.
  const readOnly = () =>
    readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((line) => line.split(' '))
      .some((f) => f[1] === dir && f[3].split(',').some((o) => o === 'ro' || o === 'emergency_ro'))
  const failReadOnly = () => {
    writeFileSync(`/sys/fs/ext4/${basename(device)}/trigger_fs_error`, 'loa test: ext4 error, remount read-only')
    if (!readOnly()) throw new Error('the filesystem did not turn read-only')
  }
  const remountRo = () => run('mount', ['-o', 'remount,ro', dir])
  const remountRw = () => run('mount', ['-o', 'remount,rw', dir])
  return { dir, device, fill, free, failReadOnly, remountRo, remountRw, readOnly, hold, cleanup }
}
