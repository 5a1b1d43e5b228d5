/** A CSS module compiles to its class-name map (see `build/dsh-client.ts`; Vite does the same in tests). */
declare module '*.module.css' {
  const classes: { readonly [className: string]: string }
  export default classes
}
