import base from './vitest.config.ts';
import { mergeConfig } from 'vitest/config';
export default mergeConfig(base, { test: { experimental: { viteModuleRunner: false, nodeLoader: false } } });
