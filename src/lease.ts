/**
 * The lease that lets only one long-lived host per DSH_HOME bring sessions
 * back at start (DSH takes no lock of its own, and two hosts resuming one
 * session would be two writers on one log). A file holding
 * `{ token, host, pid, startedAt, refreshedAt }`, created atomically (`link`
 * of a complete temporary file), refreshed by its holder, and taken over when
 * stale ({@link isLeaseStale}: the holder's process is gone, or the lease was
 * not refreshed within its time to live).
 *
 * Real time, not the runtime's clock port: a lease is read by other processes,
 * so its times are the machine's wall clock and process start; tests move the
 * injected `clock` function instead.
 * @module dsh-plugin-loop/lease
 */
import { randomBytes } from 'node:crypto'
import { link, mkdir, readFile, rm, stat, unlink } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { isLeaseStale, parseLease, type LeaseRecord } from './revive-plan.ts'
import { isMissing, writeAtomically } from './session-hints.ts'

/** A lease not refreshed for this long is stale, whatever its pid. */
export const LEASE_TTL_MS = 30_000
/** How often the holder refreshes it. */
export const LEASE_REFRESH_MS = 10_000

/** Whether a pid names a running process on this machine (EPERM: it runs as another user). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The outcome of one {@link Lease.acquire}. */
export type LeaseClaim = { readonly held: true } | { readonly held: false; readonly holder: LeaseRecord | undefined }

/** This process's side of the lease file in one DSH home. */
export class Lease {
  /** The file. */
  readonly path: string
  private readonly record: Omit<LeaseRecord, 'refreshedAt'>

  /**
   * @param dir - the plugin's directory in the home (`$DSH_HOME/storages/loop`).
   * @param clock - epoch ms now (tests move it).
   */
  constructor(
    private readonly dir: string,
    private readonly clock: () => number = Date.now,
  ) {
    this.path = join(dir, 'lease.json')
    const startedAt = Math.round(Date.now() - process.uptime() * 1000)
    const host = hostname()
    this.record = {
      token: `${host}:${process.pid}:${startedAt}:${randomBytes(4).toString('hex')}`,
      host,
      pid: process.pid,
      startedAt,
    }
  }

  private text(): string {
    return JSON.stringify({ ...this.record, refreshedAt: this.clock() })
  }

  /** The current lease, or undefined when there is none or it is unreadable. */
  async read(): Promise<LeaseRecord | undefined> {
    try {
      return parseLease(await readFile(this.path, 'utf8'))
    } catch (error) {
      if (isMissing(error)) return undefined
      throw error
    }
  }

  /**
   * Take the lease if it is free or stale.
   * @returns held, or who holds it (undefined while another process is taking it over).
   */
  async acquire(): Promise<LeaseClaim> {
    await mkdir(this.dir, { recursive: true })
    if (await this.create()) return { held: true }
    const current = await this.read()
    if (current?.token === this.record.token) return { held: true }
    if (current !== undefined && !this.stale(current)) return { held: false, holder: current }
    if (current === undefined && !(await this.unreadableLongEnough())) return { held: false, holder: undefined }
    return (await this.takeOver(current)) ? { held: true } : { held: false, holder: await this.read() }
  }

  /**
   * Refresh the lease; false when another process took it meanwhile.
   * @returns whether this process still holds it.
   */
  async refresh(): Promise<boolean> {
    const current = await this.read()
    if (current?.token !== this.record.token) return false
    await writeAtomically(this.path, this.text(), false)
    return true
  }

  /** Remove the lease if this process holds it (a clean stop hands over at once). */
  async release(): Promise<void> {
    try {
      if ((await this.read())?.token === this.record.token) await unlink(this.path)
    } catch {
      // Stopping anyway: a lease left behind is taken over once its process is gone or it expired.
    }
  }

  private stale(record: LeaseRecord): boolean {
    return isLeaseStale(record, this.clock(), LEASE_TTL_MS, {
      host: this.record.host,
      pidAlive: isProcessAlive(record.pid),
    })
  }

  /**
   * A complete lease appears at once or not at all: `link` of a written temporary
   * file fails if one exists. Any failed link (the file exists, or a filesystem
   * without hard links) falls through to the read and, if free, the locked takeover.
   */
  private async create(): Promise<boolean> {
    const temporary = `${this.path}.${randomBytes(4).toString('hex')}.tmp`
    await writeAtomically(temporary, this.text(), false)
    const created = await link(temporary, this.path).then(
      () => true,
      () => false,
    )
    await rm(temporary, { force: true })
    return created
  }

  /** An unparseable lease file is treated as stale once it is older than the time to live (a vanished one at once). */
  private async unreadableLongEnough(): Promise<boolean> {
    return stat(this.path).then(
      (file) => this.clock() - file.mtimeMs > LEASE_TTL_MS,
      () => true,
    )
  }

  /**
   * Replace a stale lease under a takeover lock (an exclusive `mkdir`), so two
   * processes that both saw it stale cannot both win. A lock left by a killed
   * taker is removed once older than the time to live.
   */
  private async takeOver(seen: LeaseRecord | undefined): Promise<boolean> {
    const lock = `${this.path}.takeover`
    const locked = await mkdir(lock).then(
      () => true,
      () => false,
    )
    if (!locked) {
      // Another taker holds the lock, or one was killed holding it: cleared once older than the time to live.
      if (this.clock() - (await stat(lock)).mtimeMs > LEASE_TTL_MS) await rm(lock, { recursive: true, force: true })
      return false
    }
    try {
      const current = await this.read()
      // Someone else took it over (or released and re-created it) since we looked.
      if (current?.token !== seen?.token) return false
      await writeAtomically(this.path, this.text(), false)
      return true
    } finally {
      await rm(lock, { recursive: true, force: true })
    }
  }
}
