// Lets TypeScript import the theme's single-file components; VitePress compiles them.
declare module "*.vue" {
  import type { DefineComponent } from "vue";

  const component: DefineComponent;
  export default component;
}
