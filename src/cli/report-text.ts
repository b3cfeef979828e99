/**
 * The words of a simulation's report page: what each experiment is and where it comes from, and what
 * each column of its table means, for a reader who has not read the simulator's code.
 */
import type { ScenarioName } from "../sim/simulate.js";

/** What each scenario simulates, and the published experiment it reruns. */
export const ABOUT: Readonly<Record<ScenarioName, string>> = {
  outage:
    "The overload experiment of the article “Exponential Backoff or how not to crash a server”: a population " +
    "of clients, each sending a request after a random pause (exponentially distributed, 10 s on average), " +
    "calls a server that answers in 100 ms while at most 30 requests are inside it and ever more slowly " +
    "beyond. The server then stops for a while (as if paused with SIGSTOP): requests that arrive meanwhile " +
    "wait in its listen queue (the backlog), and those beyond it are lost. When it resumes, does each retry " +
    "strategy let it recover, or keep it overloaded? Each client gives an attempt 2 s before it counts it " +
    "as failed.",
  contention:
    "The experiment of Marc Brooker's “Exponential Backoff And Jitter” (AWS Architecture Blog, 2015), as " +
    "its published simulator runs it: every client reads one row and writes it back under optimistic " +
    "concurrency, all at once; a write with a stale version fails, and its client backs off, reads again " +
    "and retries until its write lands. Each message crosses the network in about 10 ms (normally " +
    "distributed, 2 ms standard deviation). How much work does each backoff make the store do, and how " +
    "long until every client is done?",
  amplification:
    "Retry amplification: clients each start 10 requests per second, whatever happened to the earlier " +
    "ones, against a server that fails each request with a fixed probability, however loaded it is. With " +
    "k retries a request makes 1 + p + p² + … + pᵏ attempts on average; the rows show what that costs the " +
    "server, and what a shared retry budget or a circuit breaker saves.",
  "throttled-store":
    "Workers writing a batch to a store that refuses writes above its provisioned capacity and raises that " +
    "capacity when it is often refused, after a delay (the shared pacing controller's setting): how closely " +
    "does each strategy's write rate follow the capacity, and how soon is the batch written?",
  metastable:
    "A metastable failure (Bronson et al., “Metastable Failures in Distributed Systems”, HotOS 2021): a " +
    "server that is ten times slower above its capacity, offered a load just below it, with clients that " +
    "retry once after a timeout. After a short outage the retries alone can keep it above capacity, so it " +
    "never comes back, unless something limits the retries.",
  fleet:
    "The outage experiment's clients spread over many processes, as a service's replicas are, each process " +
    "with a retry budget and a circuit breaker of its own. In one row every process decides alone on what it " +
    "has seen; in the other the processes keep the budget's and the breaker's state in one shared store, so a " +
    "failure one process sees counts for all. What does sharing that state buy while the server is down?",
};

/** What each column of the report's table means, by its header. */
export const COLUMNS: Readonly<Record<string, string>> = {
  strategy: "The retry strategy: how a client waits and how often it tries again (each is described below).",
  clients: "How many simulated clients (or workers) ran at the same time.",
  "failure probability": "The chance that the server fails any one request, however loaded it is.",
  backlog:
    "How many requests the server's listen queue holds while it is paused; the requests beyond it are lost and their clients time out.",
  recovered:
    "Whether the server came back after the outage: its successful answers per second returned to their level before it, and stayed.",
  "recovery time (s)": "Seconds from the end of the outage until the server had recovered.",
  "peak concurrency":
    "The most requests inside the server at one moment, counting those whose clients had already given up: the higher, the slower it answers.",
  "attempts per request":
    "Tries per request, the first included: 1.00 means no retries; anything above is extra load that retries added.",
  "success rate":
    "The share of requests that finally succeeded; a request still retrying when the run ended counts as not.",
  "server work (requests)": "Requests the server accepted and worked on, retries included.",
  writes: "Writes the store handled, the failed ones included (the study's “calls”).",
  "completion time (ms)":
    "How long a request took on average, from its start to its end, its retries and the waits between them included.",
  "makespan (ms)": "Time from the start until the last client's write landed (the study's “time”).",
};
