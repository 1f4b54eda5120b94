import { createPublicKey, verify, type KeyObject } from "node:crypto";

import { type GatewayClient, unwrap } from "./client.js";
import type { Batch, Job } from "./jobs.js";
import type { LifecycleEventName } from "./events.js";
import type { components } from "./schema.js";

/** How far webhook-timestamp may be from the receiver's clock, either way (docs/webhooks.md, Signatures). */
export const defaultToleranceSeconds = 5 * 60;

/** The prefix of a public key's text form (Standard Webhooks). */
const publicKeyPrefix = "whpk_";
/** The signature version of Ed25519 signatures. */
const signatureVersion = "v1a";

/** Why a webhook request was refused. */
export type WebhookFailure = "missing_header" | "bad_timestamp" | "timestamp_too_old" | "timestamp_too_new" | "no_valid_signature";

/** A webhook request that does not verify: reject it (a 4xx), do not act on it. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
  constructor(
    readonly reason: WebhookFailure,
    message: string,
  ) {
    super(message);
  }
}

/** The body of a webhook request (docs/webhooks.md, Payload; Budget and batch events). */
export type WebhookEvent =
  | { event: LifecycleEventName; data: Job }
  | { event: `${"transcription" | "translation" | "video-analysis" | "llm-task"}.deleted`; data: components["schemas"]["TombstoneDocument"]["data"] }
  | { event: "batch.completed"; data: Batch }
  | { event: "budget.threshold"; data: BudgetThreshold };

/** A budget.threshold event's data (docs/api.md, Budgets). */
export interface BudgetThreshold {
  tenant: string;
  budget: string;
  application: string | null;
  api_key: string | null;
  period: string;
  period_start: string;
  threshold: number;
  spent: number;
  limit: number;
  currency: string;
}

/** A verified webhook request. */
export interface VerifiedWebhook {
  /** webhook-id: the same on every attempt of the event, to drop duplicates by. */
  id: string;
  /** webhook-timestamp: when this attempt was sent. */
  timestamp: Date;
  /** The body, parsed. */
  payload: WebhookEvent;
}

/** Request headers: a fetch Headers, or Node's IncomingHttpHeaders (names in lower case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** The receiver's clock; now by default. */
  now?: Date;
  /** defaultToleranceSeconds by default. */
  toleranceSeconds?: number;
}

/**
 * Parses the whpk_ text form of a public key (data.attributes.public_key
 * of GET /v1/webhooks/public-key) into a key for verifyWebhook.
 */
export function webhookPublicKey(text: string): KeyObject {
  const trimmed = text.trim();
  if (!trimmed.startsWith(publicKeyPrefix)) {
    throw new Error(`a webhook public key starts with ${publicKeyPrefix}`);
  }
  const raw = decodeStandardBase64(trimmed.slice(publicKeyPrefix.length));
  if (raw === undefined || raw.length !== 32) {
    throw new Error(`a webhook public key is ${publicKeyPrefix} followed by the base64 of 32 bytes`);
  }
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
}

/** Fetches the gateway's webhook public key (GET /v1/webhooks/public-key, no token needed): fetch it once and keep it. */
export async function fetchWebhookPublicKey(client: GatewayClient): Promise<KeyObject> {
  const { data } = await unwrap(client.GET("/v1/webhooks/public-key"));
  return webhookPublicKey(data.attributes.public_key);
}

/**
 * Verifies a webhook request as docs/webhooks.md (Signatures) has
 * receivers do, and returns its parsed body: one of the space-separated
 * `v1a,<base64>` entries of webhook-signature must be an Ed25519 signature
 * of `<webhook-id>.<webhook-timestamp>.<body>` by publicKey, and
 * webhook-timestamp must be within the tolerance of the clock (either
 * way). Pass the body byte for byte as received, before any JSON parsing.
 * Throws WebhookVerificationError otherwise.
 */
export function verifyWebhook(
  publicKey: KeyObject | string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): VerifiedWebhook {
  const key = typeof publicKey === "string" ? webhookPublicKey(publicKey) : publicKey;
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError("missing_header", "webhook-id, webhook-timestamp and webhook-signature are required");
  }
  // Unix seconds, as the gateway writes them (an optional sign, decimal digits).
  if (!/^[+-]?[0-9]+$/.test(timestamp) || !Number.isSafeInteger(Number(timestamp))) {
    throw new WebhookVerificationError("bad_timestamp", "webhook-timestamp is not a Unix time in seconds");
  }
  const sentMs = Number(timestamp) * 1000;
  const nowMs = (options.now ?? new Date()).getTime();
  const toleranceMs = (options.toleranceSeconds ?? defaultToleranceSeconds) * 1000;
  if (nowMs - sentMs > toleranceMs) {
    throw new WebhookVerificationError("timestamp_too_old", "webhook-timestamp is too old");
  }
  if (sentMs - nowMs > toleranceMs) {
    throw new WebhookVerificationError("timestamp_too_new", "webhook-timestamp is too far in the future");
  }
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, "utf8"), bytes]);
  const verified = signatures
    .split(/\s+/)
    .filter((entry) => entry !== "")
    .some((entry) => {
      const comma = entry.indexOf(",");
      if (comma < 0 || entry.slice(0, comma) !== signatureVersion) {
        return false; // a version this helper does not know: ignored
      }
      const signature = decodeStandardBase64(entry.slice(comma + 1));
      return signature !== undefined && signature.length === 64 && verify(null, signed, key, signature);
    });
  if (!verified) {
    throw new WebhookVerificationError("no_valid_signature", "no v1a signature of the request verifies");
  }
  return { id, timestamp: new Date(sentMs), payload: JSON.parse(bytes.toString("utf8")) as WebhookEvent };
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** Standard base64 with its padding, strictly: undefined for anything else (Node's own decoder skips bad characters). */
function decodeStandardBase64(text: string): Buffer | undefined {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) {
    return undefined;
  }
  return Buffer.from(text, "base64");
}
