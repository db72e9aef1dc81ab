// ESLint (flat config): JavaScript's and typescript-eslint's recommended rules,
// without type-aware rules (fast, no tsconfig needed). Formatting is Prettier's
// (`npm run format`); `npm test` runs both checks before the suite.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  {
    ignores: [
      "node_modules/",
      ".wrangler/",
      "coverage/",
      "dist/",
      "src/worker-configuration.d.ts",
      "drizzle/meta/",
      "drizzle-person/meta/",
      "drizzle-person/migrations.js",
      "drizzle-company/meta/",
      "drizzle-company/migrations.js",
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    // The Worker and its tests run in workerd: web platform globals.
    files: ["src/**/*.ts", "test/**/*.ts"],
    languageOptions: { globals: { ...globals.serviceworker } },
  },
  {
    // Scripts, configs and the browser test run on Node.
    files: [
      "scripts/**",
      "*.config.{js,ts}",
      "drizzle/**",
      "drizzle-person/**",
      "drizzle-company/**",
      "test/vitest.config.ts",
    ],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    // What it hands to `page.evaluate` runs in the page.
    files: ["scripts/browser-test.mjs"],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    rules: {
      // `const { dropped: _, ...rest } = value` is how a test leaves a field out.
      "@typescript-eslint/no-unused-vars": [
        "error",
        { ignoreRestSiblings: true, varsIgnorePattern: "^_", argsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      // `catch {}` where a failure is expected and harmless (a process already gone).
      "no-empty": ["error", { allowEmptyCatch: true }],
    },
  },
);
