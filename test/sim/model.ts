/**
 * The simulation's reference model: what SPEC.md §4 "Delivery" and SPEC.md §5 "Runtime" say the runtime
 * does, written again and sharing no code with `src/`. Its own fold of `loop/change`
 * payloads, its own reading of a heartbeat, and the schedule's arithmetic.
 */

/** A loop as the model knows it. */
export interface ModelLoop {
  readonly id: string
  readonly prompt: string
  readonly seconds: number
  readonly nextAt: number
  /** Creation order: ties among due loops go to the older. */
  readonly order: number
}

/** The active loops of a session's `loop/change` payloads, by id, folded one payload at a time in log order. */
export class ModelFold {
  readonly loops = new Map<string, ModelLoop>()
  private created = 0

  /** Fold one payload; one the model does not know is an error. */
  apply(payload: unknown): void {
    const change = payload as {
      operation?: string
      id?: string
      ids?: string[]
      next_at?: number
      loop?: { id: string; prompt: string; time_in_seconds: number; next_at: number }
    }
    if (change.operation === 'create' && change.loop !== undefined) {
      const { id, prompt, time_in_seconds: seconds, next_at: nextAt } = change.loop
      this.loops.set(id, { id, prompt, seconds, nextAt, order: (this.created += 1) })
    } else if (change.operation === 'delete' && change.id !== undefined) this.loops.delete(change.id)
    else if (change.operation === 'dispatch' && change.id !== undefined) {
      const loop = this.loops.get(change.id)
      if (loop === undefined) throw new Error(`a dispatch of ${change.id}, which is not active`)
      this.loops.set(change.id, { ...loop, nextAt: change.next_at! })
    } else if (change.operation === 'fork') for (const id of change.ids ?? []) this.loops.delete(id)
    else throw new Error(`a loop/change the model does not know: ${JSON.stringify(payload)}`)
  }
}

const HEARTBEAT_TEXT =
  /^<heartbeat>\n {2}<loop_id>(loop_[A-Za-z0-9_-]+)<\/loop_id>\n {2}<prompt>[^<>]*<\/prompt>\n<\/heartbeat>$/

/** The loop a message is a heartbeat of: the plugin's source and a `<heartbeat>` text; else undefined. */
export function heartbeatOf(message: unknown): string | undefined {
  const { source, content } = (message ?? {}) as { source?: { kind?: string; plugin?: string }; content?: unknown }
  if (source?.kind !== 'plugin' || source.plugin !== 'loop' || !Array.isArray(content)) return undefined
  const text = content.map((block: { text?: string }) => block.text ?? '').join('')
  return HEARTBEAT_TEXT.exec(text)?.[1]
}

/**
 * Where a dispatch at `now` must move a loop (SPEC.md §5 "Runtime": missed intervals, the
 * clock moved back): due, to the first point of its grid after now; more than 1.5 intervals ahead, one
 * interval from now; otherwise it must not be dispatched at all.
 */
export function expectedDispatch(
  loop: ModelLoop,
  now: number,
): { kind: 'deliver' | 'reschedule'; nextAt: number } | undefined {
  const interval = loop.seconds * 1000
  // The whole intervals missed are skipped: the first point of the grid strictly after now.
  if (loop.nextAt <= now)
    return { kind: 'deliver', nextAt: loop.nextAt + (Math.floor((now - loop.nextAt) / interval) + 1) * interval }
  if (loop.nextAt - now > 1.5 * interval) return { kind: 'reschedule', nextAt: now + interval }
  return undefined
}

/** The loop a drive at `now` must handle first: the earliest due, ties in creation order; else the first skewed one. */
export function firstToDispatch(loops: Iterable<ModelLoop>, now: number): ModelLoop | undefined {
  const all = [...loops].sort((a, b) => a.order - b.order)
  let due: ModelLoop | undefined
  for (const loop of all) if (loop.nextAt <= now && (due === undefined || loop.nextAt < due.nextAt)) due = loop
  return due ?? all.find((loop) => expectedDispatch(loop, now) !== undefined)
}
