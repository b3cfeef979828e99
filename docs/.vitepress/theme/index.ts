// The docs site's theme: VitePress's default, with the policy explorer as a component every page may use.
import type { Theme } from "vitepress";
import DefaultTheme from "vitepress/theme";
import PolicyExplorer from "./PolicyExplorer.vue";

const theme: Theme = {
  extends: DefaultTheme,
  enhanceApp({ app }) {
    app.component("PolicyExplorer", PolicyExplorer);
  },
};
export default theme;
