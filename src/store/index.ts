export { type MemoryStoreOptions, memoryStore } from "./memory.js";
export { MAX_SKEW, type SharingOptions } from "./replica.js";
export { type Store, type StoreEntry, StoreTimeoutError, type StoreWrite } from "./store.js";
