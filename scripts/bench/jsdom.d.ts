/** The part of jsdom's API the dock bench touches (jsdom ships no types; the scripts typecheck without the DOM lib). */
declare module 'jsdom' {
  interface BenchElement {
    appendChild(child: BenchElement): BenchElement
    remove(): void
    querySelector(selector: string): BenchElement | null
    querySelectorAll(selector: string): { readonly length: number }
    click(): void
    readonly textContent: string | null
  }
  interface BenchDocument {
    readonly body: BenchElement
    createElement(tag: string): BenchElement
    addEventListener(type: string, listener: unknown, options?: unknown): void
    removeEventListener(type: string, listener: unknown, options?: unknown): void
  }
  interface BenchWindow {
    readonly document: BenchDocument
    readonly navigator: unknown
    readonly HTMLElement: unknown
    readonly Node: unknown
    readonly Element: unknown
    readonly MouseEvent: unknown
    readonly KeyboardEvent: unknown
    requestAnimationFrame: (callback: unknown) => number
    cancelAnimationFrame: (handle: number) => void
    close(): void
  }
  export class JSDOM {
    constructor(html: string, options?: { readonly pretendToBeVisual?: boolean; readonly url?: string })
    readonly window: BenchWindow
  }
}
