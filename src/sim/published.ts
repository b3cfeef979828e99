/**
 * Published figures that the built-in scenarios reproduce, so that a table or a chart can show them beside
 * the simulated ones.
 */

/** One point of a published experiment: at `clients` clients, the mean work and the mean makespan. */
export interface PublishedPoint {
  readonly clients: number;
  /** Writes the store handled (the study's "calls"), mean per run. */
  readonly work: number;
  /** ms until the last client finished (the study's "time"), mean per run. */
  readonly makespan: number;
}

/** A published experiment's figures, by the name of the strategy that reproduces each of its curves. */
export interface PublishedFigures {
  readonly title: string;
  readonly source: string;
  /** How the numbers were obtained. */
  readonly how: string;
  readonly runs: number;
  readonly strategies: Readonly<Record<string, readonly PublishedPoint[]>>;
}

const points = (rows: readonly (readonly [number, number, number])[]): PublishedPoint[] =>
  rows.map(([clients, work, makespan]) => ({ clients, work, makespan }));

/**
 * AWS Architecture Blog, "Exponential Backoff And Jitter" (Marc Brooker, 2015). The post draws its
 * results as charts; these are the figures of the study's own simulator
 * (github.com/aws-samples/aws-arch-backoff-simulator, `backoff_simulator.py`) run unchanged under
 * Python 2.7: 10 to 190 clients, each point the mean of 100 runs, as the post's charts were made.
 * Reruns of it differ by under 2 % (the simulator seeds its randomness from the clock).
 */
export const AWS_BACKOFF_STUDY: PublishedFigures = {
  title: 'AWS Architecture Blog, "Exponential Backoff And Jitter" (2015)',
  source: "aws-samples/aws-arch-backoff-simulator, backoff_simulator.py, run unchanged (Python 2.7)",
  how: "the study's simulator run as published: 100 runs per point; the post shows the same as charts",
  runs: 100,
  strategies: {
    "no-backoff": points([
      [10, 50, 379],
      [20, 151, 601],
      [30, 287, 779],
      [40, 467, 960],
      [50, 690, 1141],
      [60, 955, 1322],
      [70, 1261, 1500],
      [80, 1611, 1680],
      [90, 1997, 1856],
      [100, 2426, 2033],
      [110, 2887, 2192],
      [120, 3386, 2372],
      [130, 3936, 2538],
      [140, 4518, 2711],
      [150, 5141, 2877],
      [160, 5799, 3041],
      [170, 6500, 3208],
      [180, 7234, 3379],
      [190, 7998, 3540],
    ]),
    "aws-exponential": points([
      [10, 50, 3383],
      [20, 148, 14245],
      [30, 273, 21895],
      [40, 436, 29648],
      [50, 627, 36155],
      [60, 834, 42951],
      [70, 1060, 48599],
      [80, 1300, 53170],
      [90, 1569, 58741],
      [100, 1856, 63799],
      [110, 2165, 68165],
      [120, 2491, 72776],
      [130, 2813, 77099],
      [140, 3174, 80955],
      [150, 3558, 85871],
      [160, 3923, 89544],
      [170, 4319, 93644],
      [180, 4741, 97684],
      [190, 5167, 101764],
    ]),
    "aws-full-jitter": points([
      [10, 39, 477],
      [20, 100, 1023],
      [30, 171, 1595],
      [40, 249, 2316],
      [50, 333, 2893],
      [60, 420, 3411],
      [70, 509, 3859],
      [80, 603, 4175],
      [90, 697, 4499],
      [100, 796, 4927],
      [110, 896, 5182],
      [120, 999, 5570],
      [130, 1103, 5849],
      [140, 1209, 6026],
      [150, 1319, 6384],
      [160, 1428, 6677],
      [170, 1541, 6908],
      [180, 1657, 7244],
      [190, 1771, 7397],
    ]),
    "aws-equal-jitter": points([
      [10, 42, 738],
      [20, 108, 1648],
      [30, 182, 2656],
      [40, 263, 3474],
      [50, 346, 4227],
      [60, 434, 4736],
      [70, 525, 5373],
      [80, 619, 5811],
      [90, 714, 6222],
      [100, 811, 6606],
      [110, 911, 6883],
      [120, 1013, 7418],
      [130, 1115, 7621],
      [140, 1216, 7985],
      [150, 1326, 8312],
      [160, 1431, 8654],
      [170, 1539, 9002],
      [180, 1649, 9214],
      [190, 1759, 9464],
    ]),
    "aws-decorrelated-jitter": points([
      [10, 37, 441],
      [20, 100, 824],
      [30, 181, 1252],
      [40, 271, 1794],
      [50, 374, 2164],
      [60, 485, 2716],
      [70, 608, 3265],
      [80, 730, 3751],
      [90, 863, 4127],
      [100, 1004, 4537],
      [110, 1141, 4904],
      [120, 1287, 5501],
      [130, 1450, 5724],
      [140, 1608, 6100],
      [150, 1758, 6515],
      [160, 1922, 6925],
      [170, 2093, 7091],
      [180, 2259, 7565],
      [190, 2428, 7800],
    ]),
  },
};
