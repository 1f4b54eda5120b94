import { type GatewayClient, unwrap } from "./client.js";
import type { components } from "./schema.js";

/** A job resource (docs/api.md, Jobs). */
export type Service = "transcriptions" | "translations" | "video-analyses" | "llm-tasks";
/** Every Service, in the order of docs/api.md's table. */
export const services: readonly Service[] = ["transcriptions", "translations", "video-analyses", "llm-tasks"];

export type Job = components["schemas"]["Job"];
export type JobDocument = components["schemas"]["JobDocument"];
export type JobStatus = components["schemas"]["JobStatus"];
export type Batch = components["schemas"]["Batch"];
export type BatchDocument = components["schemas"]["BatchDocument"];

/** Whether a job has ended: completed or failed. */
export function isFinished(job: Job): boolean {
  return job.attributes.status === "completed" || job.attributes.status === "failed";
}

/** A job was still running when the wait for it ended; `job` is as it then was. */
export class JobWaitTimeoutError extends Error {
  override readonly name = "JobWaitTimeoutError";
  constructor(readonly job: Job) {
    super(`job ${job.id} is still ${job.attributes.status}`);
  }
}

export interface WaitOptions {
  /** How long to wait in all, in milliseconds; 10 minutes by default. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The longest Prefer wait the gateway honours, in seconds (docs/api.md, Waiting for a job). */
const longestWait = 60;

/**
 * Waits until the job is completed or failed and returns it, asking the
 * gateway to hold each GET with `Prefer: wait=N` (docs/api.md, Waiting for
 * a job) rather than polling. Throws JobWaitTimeoutError when the job is
 * still running after timeoutMs, and GatewayError for an error answer (a
 * deleted job's 410 JOB_DELETED, say).
 */
export async function waitForJob(client: GatewayClient, service: Service, id: string, options: WaitOptions = {}): Promise<Job> {
  const deadline = Date.now() + (options.timeoutMs ?? 10 * 60_000);
  for (;;) {
    const seconds = Math.min(longestWait, Math.max(1, Math.ceil((deadline - Date.now()) / 1000)));
    const init = { params: { path: { id }, header: { Prefer: `wait=${seconds}` } }, signal: options.signal };
    const { data: job } = await unwrap(getJob(client, service, init));
    if (isFinished(job)) {
      return job;
    }
    if (Date.now() >= deadline) {
      throw new JobWaitTimeoutError(job);
    }
  }
}

type GetJobInit = { params: { path: { id: string }; header?: { Prefer?: string } }; signal?: AbortSignal };

/** GET /v1/{service}/{id}. */
export function getJob(client: GatewayClient, service: Service, init: GetJobInit) {
  switch (service) {
    case "transcriptions":
      return client.GET("/v1/transcriptions/{id}", init);
    case "translations":
      return client.GET("/v1/translations/{id}", init);
    case "video-analyses":
      return client.GET("/v1/video-analyses/{id}", init);
    case "llm-tasks":
      return client.GET("/v1/llm-tasks/{id}", init);
  }
}

/** Batch statuses after which nothing changes (docs/api.md, Batches). */
const batchEnded: ReadonlySet<Batch["attributes"]["status"]> = new Set(["completed", "failed", "cancelled"]);

export interface BatchWaitOptions extends WaitOptions {
  /** How long between two reads of the batch, in milliseconds; 500 by default. */
  intervalMs?: number;
}

/**
 * Reads the batch until it is completed, failed or cancelled and returns
 * it. Throws an Error when it has not ended after timeoutMs.
 */
export async function waitForBatch(client: GatewayClient, id: string, options: BatchWaitOptions = {}): Promise<Batch> {
  const deadline = Date.now() + (options.timeoutMs ?? 10 * 60_000);
  const interval = options.intervalMs ?? 500;
  for (;;) {
    const { data: batch } = await unwrap(client.GET("/v1/batches/{id}", { params: { path: { id } }, signal: options.signal }));
    if (batchEnded.has(batch.attributes.status)) {
      return batch;
    }
    if (Date.now() + interval > deadline) {
      throw new Error(`batch ${id} is still ${batch.attributes.status}`);
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/** One line of GET /v1/batches/{id}/results (docs/api.md, Batches). */
export type BatchResultLine =
  | { custom_id: string; job_id: string; status: "completed"; result: Record<string, unknown> }
  | { custom_id: string; job_id: string; status: "failed"; error: components["schemas"]["JobError"] };

/** The results of a batch's finished jobs, one per job, in job id order; after resumes after a job id. */
export async function batchResults(client: GatewayClient, id: string, after?: string): Promise<BatchResultLine[]> {
  const text = await unwrap(
    client.GET("/v1/batches/{id}/results", { params: { path: { id }, query: after === undefined ? {} : { after } }, parseAs: "text" }),
  );
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as BatchResultLine);
}
