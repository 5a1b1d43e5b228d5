/**
 * Published mock models behind one loopback endpoint, each request routed to one
 * of them by what it carries: by default, requests whose newest user message is a
 * `<heartbeat>` go to one, everything else to the other. That is how a test tells
 * the task's answer from a heartbeat's answer (in a one-shot run, where the mock
 * alone would answer both with the same text), or a sub-agent's requests from its parent's.
 */
import { createServer, request as forward, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startMockLlmServer, type MockLlmServer, type MockLlmServerOptions } from '@deepseek-ai/dsh-llm-mock-server'
import { lastUserText } from '../../harness/dsh-stack.ts'
import { heartbeatLoopId } from '../support/heartbeat-xml.ts'
import type { ModelServer } from './rig.ts'

/** The default routes: a heartbeat's request, or the task's. */
export type Route = 'task' | 'heartbeat'

/** One request the router forwarded. */
export interface RoutedRequest<R extends string = Route> {
  /** One-based arrival order across every model. */
  readonly attempt: number
  /** The route that answered it. */
  readonly behavior: R
  readonly body: unknown
  /** Arrival time (epoch ms). */
  readonly time: number
}

/** The routed model: the {@link ModelServer} a rig uses, plus each route's own mock. */
export interface RoutedModel<R extends string = Route> extends ModelServer {
  readonly requests: readonly RoutedRequest<R>[]
  readonly sides: Readonly<Record<R, MockLlmServer>>
}

/** Script of one side (listener options are the router's business). */
export type SideScript = Omit<MockLlmServerOptions, 'host' | 'port'>

/** The default route of a chat-completions body. */
export function routeOf(body: unknown): Route {
  return heartbeatLoopId(lastUserText(body) ?? '') === undefined ? 'task' : 'heartbeat'
}

/** Read a whole request body. */
async function readBody(incoming: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of incoming) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/**
 * Start one mock model per route and the router on 127.0.0.1 (ephemeral ports).
 * @param scripts - each route's script.
 * @param route - picks the route of a chat-completions body; anything not JSON goes to `fallback`.
 * @param fallback - the route of a body that is not JSON (that model answers it with its own 4xx).
 * @returns the router; `close()` stops every server.
 */
export async function startRoutedModel<R extends string = Route>(
  scripts: Readonly<Record<R, SideScript>>,
  route: (body: unknown) => R = routeOf as (body: unknown) => R,
  fallback: R = 'task' as R,
): Promise<RoutedModel<R>> {
  const names = Object.keys(scripts) as R[]
  const started = await Promise.all(
    names.map((name) => startMockLlmServer({ host: '127.0.0.1', port: 0, ...scripts[name] })),
  )
  const sides = Object.fromEntries(names.map((name, index) => [name, started[index]!])) as Record<R, MockLlmServer>
  const requests: RoutedRequest<R>[] = []
  const server = createServer((incoming, outgoing) => {
    void readBody(incoming).then((raw) => {
      let body: unknown = undefined
      try {
        body = JSON.parse(raw.toString('utf8'))
      } catch {
        // Not JSON (not a chat request): the fallback model answers it with its own 4xx.
      }
      const chosen = body === undefined ? fallback : route(body)
      if (incoming.url?.endsWith('/chat/completions') === true)
        requests.push({ attempt: requests.length + 1, behavior: chosen, body, time: Date.now() })
      const target = sides[chosen]
      const upstream = forward(
        {
          host: '127.0.0.1',
          port: target.port,
          method: incoming.method,
          path: incoming.url,
          headers: { ...incoming.headers, host: `127.0.0.1:${target.port}` },
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(outgoing)
        },
      )
      upstream.on('error', () => outgoing.destroy())
      upstream.end(raw)
    })
  })
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  const port = (server.address() as AddressInfo).port
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    sides,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((closed) => server.close(() => closed()))
      await Promise.all(started.map((side) => side.close()))
    },
  }
}
