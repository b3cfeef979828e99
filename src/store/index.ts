export { type MemoryStoreOptions, memoryStore } from "./memory.js";
export type { SharingOptions } from "./replica.js";
export { type Store, type StoreEntry, StoreTimeoutError, type StoreWrite } from "./store.js";
