// The Chrome DevTools protocol over the pipe a browser started with `--remote-debugging-pipe` opens: it
// reads commands from its file descriptor 3 and writes answers and events to 4, each a JSON message ended
// by a NUL byte. Enough of a client to open a page, run script in it and take a screenshot, with no
// package and no socket.
import type { Readable, Writable } from "node:stream";
import type { Browser } from "./chromium.js";

interface Message {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
  sessionId?: string;
}

/** One page of the browser, attached in flat mode: its commands carry its session's id. */
export interface Page {
  send(method: string, params?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Evaluates `expression` in the page (awaiting a promise it gives) and returns its value. */
  evaluate<T>(expression: string): Promise<T>;
  /** Loads `url` and resolves once its load event has fired. */
  navigate(url: string): Promise<void>;
  /** Resolves once `expression` is truthy in the page, checking it again whenever the document changes. */
  waitFor(expression: string): Promise<void>;
  /** The exceptions the page's scripts threw that nothing caught, as their descriptions. */
  readonly errors: string[];
}

export interface DevTools {
  /** Opens a new page, attached. */
  newPage(): Promise<Page>;
}

export function connectDevTools(browser: Browser): DevTools {
  const input = browser.child.stdio[3] as Writable;
  const output = browser.child.stdio[4] as Readable;
  const pending = new Map<
    number,
    { resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void }
  >();
  const listeners = new Set<(message: Message) => void>();
  let nextId = 1;
  let buffered = "";
  output.setEncoding("utf8");
  output.on("data", (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf("\0"); end >= 0; end = buffered.indexOf("\0")) {
      const message = JSON.parse(buffered.slice(0, end)) as Message;
      buffered = buffered.slice(end + 1);
      if (message.id !== undefined) {
        const waiting = pending.get(message.id);
        pending.delete(message.id);
        if (message.error !== undefined) waiting?.reject(new Error(message.error.message));
        else waiting?.resolve(message.result ?? {});
      } else {
        for (const listener of listeners) listener(message);
      }
    }
  });
  // The browser may close its end first when it is killed; nothing is waiting then.
  input.on("error", () => {});

  const send = (method: string, params: Record<string, unknown> = {}, sessionId?: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      input.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    });

  return {
    async newPage() {
      const { targetId } = await send("Target.createTarget", { url: "about:blank" });
      const { sessionId } = (await send("Target.attachToTarget", { targetId, flatten: true })) as {
        sessionId: string;
      };
      const errors: string[] = [];
      let loaded: (() => void) | undefined;
      listeners.add((message) => {
        if (message.sessionId !== sessionId) return;
        if (message.method === "Page.loadEventFired") loaded?.();
        if (message.method === "Runtime.exceptionThrown") {
          const details = message.params?.exceptionDetails as {
            exception?: { description?: string };
            text?: string;
          };
          errors.push(details.exception?.description ?? details.text ?? "an exception");
        }
      });
      const page: Page = {
        errors,
        send: (method, params) => send(method, params, sessionId),
        async evaluate<T>(expression: string) {
          const { result, exceptionDetails } = (await page.send("Runtime.evaluate", {
            expression,
            awaitPromise: true,
            returnByValue: true,
          })) as { result: { value: T }; exceptionDetails?: { text: string } };
          if (exceptionDetails !== undefined) throw new Error(`${expression}: ${exceptionDetails.text}`);
          return result.value;
        },
        async navigate(url) {
          const load = new Promise<void>((resolve) => {
            loaded = resolve;
          });
          await page.send("Page.navigate", { url });
          await load;
        },
        async waitFor(expression) {
          // Checked again on every change of the document: no polling, no sleep.
          await page.evaluate(`new Promise((resolve) => {
            const observer = new MutationObserver(() => check());
            const check = () => {
              if (!(${expression})) return;
              observer.disconnect();
              resolve(true);
            };
            observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
            check();
          })`);
        },
      };
      await page.send("Page.enable");
      await page.send("Runtime.enable");
      return page;
    },
  };
}
