/**
 * One worker's messages in the order they were sent: every message not yet answered, any of which may
 * have failed. Delivery takes them in order, so the delivered ones are always a prefix; a crash puts that
 * prefix back, and the next delivery starts again from the oldest, keeping the original order.
 */

/** Waiting to be delivered. */
export const WAITING = 0;
/** Delivered, not yet acknowledged. */
export const IN_FLIGHT = 1;
/** Answered, dropped or dead-lettered: no longer held. */
export const DONE = 2;

/** What a mailbox holds: anything with an id and a state. */
export interface Letter {
  readonly id: number;
  state: typeof WAITING | typeof IN_FLIGHT | typeof DONE;
}

/**
 * An array with a head and a cursor: [head, cursor) is delivered or done, [cursor, end) waiting or done.
 * Done letters leave a hole until they reach the head; the array is compacted when half of it is behind
 * the head, so every operation is amortised O(1) but a lookup by id, which scans the delivered prefix
 * (at most `concurrency` long, plus holes).
 */
export class Mailbox<L extends Letter> {
  #items: (L | undefined)[] = [];
  #head = 0;
  #cursor = 0;
  /** Letters held: waiting or in flight. */
  held = 0;
  /** Letters in flight. */
  inFlight = 0;

  /** Adds a letter at the end, waiting. */
  push(letter: L): void {
    letter.state = WAITING;
    this.#items.push(letter);
    this.held += 1;
  }

  /** The oldest waiting letter, left in place. */
  peekWaiting(): L | undefined {
    const items = this.#items;
    while (this.#cursor < items.length && (items[this.#cursor] as L).state === DONE) this.#cursor += 1;
    return items[this.#cursor];
  }

  /** The oldest waiting letter, now in flight. */
  takeWaiting(): L | undefined {
    const letter = this.peekWaiting();
    if (letter !== undefined) {
      letter.state = IN_FLIGHT;
      this.#cursor += 1;
      this.inFlight += 1;
    }
    return letter;
  }

  /** The in-flight letter with this id, if any. */
  findInFlight(id: number): L | undefined {
    const items = this.#items;
    for (let i = this.#head; i < this.#cursor; i++) {
      const letter = items[i] as L;
      if (letter.id === id) return letter.state === IN_FLIGHT ? letter : undefined;
    }
    return undefined;
  }

  /** Marks a held letter done and releases what it held. */
  finish(letter: L): void {
    if (letter.state === DONE) return;
    if (letter.state === IN_FLIGHT) this.inFlight -= 1;
    letter.state = DONE;
    this.held -= 1;
    this.#trim();
  }

  /** Puts every in-flight letter back to waiting, in order, and returns them: the next delivery starts from the oldest. */
  returnInFlight(): L[] {
    const back: L[] = [];
    const items = this.#items;
    for (let i = this.#head; i < this.#cursor; i++) {
      const letter = items[i] as L;
      if (letter.state === IN_FLIGHT) {
        letter.state = WAITING;
        back.push(letter);
      }
    }
    this.inFlight = 0;
    this.#cursor = this.#head;
    return back;
  }

  /** Every held letter, oldest first. */
  heldLetters(): L[] {
    const out: L[] = [];
    const items = this.#items;
    for (let i = this.#head; i < items.length; i++) {
      const letter = items[i] as L;
      if (letter.state !== DONE) out.push(letter);
    }
    return out;
  }

  #trim(): void {
    const items = this.#items;
    while (this.#head < items.length && (items[this.#head] as L).state === DONE) {
      items[this.#head] = undefined;
      this.#head += 1;
    }
    if (this.#head === items.length) {
      this.#items = [];
      this.#head = 0;
      this.#cursor = 0;
      return;
    }
    if (this.#cursor < this.#head) this.#cursor = this.#head;
    if (this.#head >= 1024 && this.#head * 2 >= items.length) {
      this.#items = items.slice(this.#head);
      this.#cursor -= this.#head;
      this.#head = 0;
    }
  }
}
