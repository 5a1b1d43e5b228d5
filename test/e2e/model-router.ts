/**
 * Two published mock models behind one loopback endpoint: requests whose newest
 * user message is a `<heartbeat>` go to one, everything else to the other. That is
 * how a test tells the task's answer from a heartbeat's answer in a one-shot run,
 * where the mock alone would answer both with the same text.
 */
import { createServer, request as forward, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startMockLlmServer, type MockLlmServer, type MockLlmServerOptions } from '@deepseek-ai/dsh-llm-mock-server'
import { lastUserText } from '../../scripts/dsh-stack.ts'
import { heartbeatLoopId } from '../support/heartbeat-xml.ts'
import type { ModelServer } from './rig.ts'

/** Which of the two models answered. */
export type Route = 'task' | 'heartbeat'

/** One request the router forwarded. */
export interface RoutedRequest {
  /** One-based arrival order across both models. */
  readonly attempt: number
  readonly behavior: Route
  readonly body: unknown
  /** Arrival time (epoch ms). */
  readonly time: number
}

/** The routed model: the {@link ModelServer} a rig uses, plus each side's own record. */
export interface RoutedModel extends ModelServer {
  readonly requests: readonly RoutedRequest[]
  readonly task: MockLlmServer
  readonly heartbeat: MockLlmServer
}

/** Script of one side (listener options are the router's business). */
export type SideScript = Omit<MockLlmServerOptions, 'host' | 'port'>

/** The route of a chat-completions body. */
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
 * Start both mock models and the router on 127.0.0.1 (ephemeral ports).
 * @returns the router; `close()` stops all three.
 */
export async function startRoutedModel(scripts: Readonly<Record<Route, SideScript>>): Promise<RoutedModel> {
  const task = await startMockLlmServer({ host: '127.0.0.1', port: 0, ...scripts.task })
  const heartbeat = await startMockLlmServer({ host: '127.0.0.1', port: 0, ...scripts.heartbeat })
  const requests: RoutedRequest[] = []
  const server = createServer((incoming, outgoing) => {
    void readBody(incoming).then((raw) => {
      let body: unknown = undefined
      try {
        body = JSON.parse(raw.toString('utf8'))
      } catch {
        // Not JSON (not a chat request): the task model answers it with its own 4xx.
      }
      const route = body === undefined ? 'task' : routeOf(body)
      if (incoming.url?.endsWith('/chat/completions') === true)
        requests.push({ attempt: requests.length + 1, behavior: route, body, time: Date.now() })
      const target = route === 'heartbeat' ? heartbeat : task
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
    task,
    heartbeat,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((closed) => server.close(() => closed()))
      await Promise.all([task.close(), heartbeat.close()])
    },
  }
}
