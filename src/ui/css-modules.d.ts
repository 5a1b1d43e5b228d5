/** A CSS module compiles to its class-name map (see `scripts/dsh-client-build.ts`; Vite does the same in tests). */
declare module '*.module.css' {
  const classes: { readonly [className: string]: string }
  export default classes
}
