// Types of minted-demo-keys.mjs (plain JavaScript, so the verifier image runs it without a build).
export declare const MINTED_DEMO_KEY_FILES: Readonly<{ algolia: string; s3: string }>;
export declare function mintedDemoKeys(): Record<string, string>;
export declare function makeMissingKeys(dir: string): void;
