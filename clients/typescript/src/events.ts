import { GatewayError, type GatewayClient } from "./client.js";
import { getJob, isFinished, type Job, type Service } from "./jobs.js";

/** The event names' prefix of each service (docs/webhooks.md, Events). */
type EventPrefix = "transcription" | "translation" | "video-analysis" | "llm-task";

/** A lifecycle event's name: progress, then completed or failed. */
export type LifecycleEventName = `${EventPrefix}.${"progress" | "completed" | "failed"}`;

/**
 * An event of a job's stream (docs/api.md, Following a job live): `id` is
 * its id on the stream ("N", or "N.D" on a streamed llm-task's), `event`
 * its name, and `data` the `data` of its body.
 */
export type JobEvent =
  /** The job as of the event, as GET shows it, without meta.system. */
  | { id: string; event: LifecycleEventName; data: Job }
  /** A new piece of a streamed llm-task's answer (docs/api.md, Streamed answers). */
  | { id: string; event: "llm-task.delta"; data: { id: string; type: "llm-task-job"; attributes: { provider: string; text: string } } }
  /** The streamed answer starts again, from attributes.provider: drop the text so far. */
  | { id: string; event: "llm-task.restarted"; data: { id: string; type: "llm-task-job"; attributes: { provider: string } } };

/** Whether an event ends its job: *.completed or *.failed. */
export function isTerminalEvent(event: string): boolean {
  return event.endsWith(".completed") || event.endsWith(".failed");
}

export interface FollowOptions {
  /** Start after this event id, as a reconnect does; from the job's first event by default. */
  lastEventId?: string;
  signal?: AbortSignal;
  /** How long to wait before reconnecting, in milliseconds; 1000 by default. */
  retryDelayMs?: number;
  /** How many reconnects in a row may fail (a network error, 429 or 5xx) before the error is thrown; 5 by default. */
  maxRetries?: number;
}

/**
 * The job's events as they happen, from its first (or after
 * options.lastEventId), as an async iterator that ends after the job's
 * terminal event (*.completed or *.failed) once the gateway closes the
 * stream there (docs/api.md, Following a job live). A stream that ends
 * before it (the gateway stopped, or the client was slow for 30 s) is
 * opened again with Last-Event-ID, so no event comes twice. An error
 * answer (404, 410 JOB_DELETED, …) throws GatewayError.
 */
export async function* followJobEvents(
  client: GatewayClient,
  service: Service,
  id: string,
  options: FollowOptions = {},
): AsyncGenerator<JobEvent, void, undefined> {
  const retryDelay = options.retryDelayMs ?? 1000;
  const maxRetries = options.maxRetries ?? 5;
  let last = options.lastEventId;
  let failures = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const connection = new AbortController();
    const stop = () => connection.abort(options.signal?.reason);
    options.signal?.addEventListener("abort", stop);
    let received = 0;
    let failure: unknown;
    let terminal = false;
    try {
      const answer = await openStream(client, service, id, last, connection.signal);
      if (answer.error !== undefined || !answer.data) {
        const error = new GatewayError(answer.response, answer.error);
        if (!retryable(answer.response.status)) {
          throw error;
        }
        failure = error;
      } else {
        for await (const raw of readEventStream(answer.data)) {
          const body = JSON.parse(raw.data) as { event: JobEvent["event"]; data: JobEvent["data"] };
          last = raw.id ?? last;
          received++;
          failures = 0;
          terminal = isTerminalEvent(raw.event);
          yield { id: raw.id ?? "", event: body.event, data: body.data } as JobEvent;
        }
      }
    } catch (error) {
      if (error instanceof GatewayError || options.signal?.aborted) {
        throw error;
      }
      failure = error; // the connection failed: open it again
    } finally {
      options.signal?.removeEventListener("abort", stop);
      connection.abort();
    }
    if (terminal && failure === undefined) {
      return;
    }
    if (failure === undefined && received === 0) {
      // A stream that ended at once with nothing new: the job may have
      // ended with no event to send (one that finished before the gateway
      // recorded events), or the gateway is stopping.
      try {
        const { data } = await getJob(client, service, { params: { path: { id } }, signal: options.signal });
        if (data && isFinished(data.data)) {
          return;
        }
      } catch (error) {
        if (options.signal?.aborted) {
          throw error;
        }
        failure = error; // the gateway is down: try again, as for a stream
      }
    }
    if (failure !== undefined && ++failures > maxRetries) {
      throw failure;
    }
    await sleep(retryDelay, options.signal);
  }
}

function retryable(status: number): boolean {
  return status === 429 || status >= 500;
}

function openStream(client: GatewayClient, service: Service, id: string, lastEventId: string | undefined, signal: AbortSignal) {
  const init = {
    params: { path: { id }, header: lastEventId === undefined ? {} : { "Last-Event-ID": lastEventId } },
    headers: { Accept: "text/event-stream" },
    parseAs: "stream" as const,
    signal,
  };
  switch (service) {
    case "transcriptions":
      return client.GET("/v1/transcriptions/{id}/events", init);
    case "translations":
      return client.GET("/v1/translations/{id}/events", init);
    case "video-analyses":
      return client.GET("/v1/video-analyses/{id}/events", init);
    case "llm-tasks":
      return client.GET("/v1/llm-tasks/{id}/events", init);
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", done);
      resolve();
    }, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** One event of a text/event-stream: its id (the last one given), name and data. */
export interface ServerSentEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * The events of a text/event-stream body, parsed as the HTML standard's
 * server-sent events are: lines end in CRLF, LF or CR; comments (":") are
 * skipped; `data` lines are joined with "\n"; `id` carries over to later
 * events; an event unfinished when the body ends is dropped.
 */
export async function* readEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent, void, undefined> {
  const decoder = new TextDecoder("utf-8");
  const reader = body.getReader();
  let buffer = "";
  let id: string | undefined;
  let event = "";
  let data: string[] = [];
  let first = true;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      if (first && buffer.length > 0) {
        buffer = buffer.replace(/^\uFEFF/, "");
        first = false;
      }
      for (;;) {
        const end = buffer.search(/[\r\n]/);
        // A CR last in the buffer may be the first half of a CRLF.
        if (end < 0 || (end === buffer.length - 1 && buffer[end] === "\r" && !done)) {
          break;
        }
        const line = buffer.slice(0, end);
        buffer = buffer.slice(buffer.startsWith("\r\n", end) ? end + 2 : end + 1);
        if (line === "") {
          if (data.length > 0) {
            yield { id, event: event || "message", data: data.join("\n") };
          }
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) {
          continue;
        }
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) {
          value = value.slice(1);
        }
        if (field === "event") {
          event = value;
        } else if (field === "data") {
          data.push(value);
        } else if (field === "id" && !value.includes("\0")) {
          id = value;
        }
      }
      if (done) {
        return;
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
