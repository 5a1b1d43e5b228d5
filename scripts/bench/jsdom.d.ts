/**
 * The part of jsdom's API the dock benchmark touches. jsdom ships no types and
 * the scripts are typechecked without the DOM lib, so the shapes are declared
 * here, narrowly.
 */
declare module 'jsdom' {
  /** A DOM element as the benchmark uses it. */
  export interface BenchElement {
    appendChild(child: BenchElement): BenchElement
    remove(): void
    querySelector(selector: string): BenchElement | null
    querySelectorAll(selector: string): { readonly length: number }
    click(): void
    readonly textContent: string | null
  }

  /** The document as the benchmark uses it. */
  export interface BenchDocument {
    readonly body: BenchElement
    createElement(tag: string): BenchElement
    addEventListener(type: string, listener: unknown, options?: unknown): void
    removeEventListener(type: string, listener: unknown, options?: unknown): void
  }

  /** The window as the benchmark uses it. */
  export interface BenchWindow {
    readonly document: BenchDocument
    readonly navigator: unknown
    readonly HTMLElement: unknown
    readonly Node: unknown
    readonly Element: unknown
    readonly MouseEvent: unknown
    readonly KeyboardEvent: unknown
    setInterval: unknown
    clearInterval: unknown
    requestAnimationFrame: (callback: unknown) => number
    cancelAnimationFrame: (handle: number) => void
    close(): void
  }

  /** A jsdom instance. */
  export class JSDOM {
    constructor(html: string, options?: { readonly pretendToBeVisual?: boolean; readonly url?: string })
    readonly window: BenchWindow
  }
}
