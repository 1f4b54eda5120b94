import createClient, { type Client, type ClientOptions } from "openapi-fetch";

import type { components, paths } from "./schema.js";

/** A typed client of every operation of api/openapi.yaml (openapi-fetch). */
export type GatewayClient = Client<paths>;

export interface GatewayClientOptions {
  /** The gateway's address, such as http://127.0.0.1:8080. */
  baseUrl: string;
  /**
   * A JWT or an API key (gwk_…), sent as `Authorization: Bearer …`
   * (docs/api.md, Authentication); a function is asked before each request,
   * so a token that expires can be refreshed.
   */
  token?: string | (() => string | Promise<string>);
  /** Headers sent with every request (X-Application, say). */
  headers?: ClientOptions["headers"];
  /** The fetch to use; globalThis.fetch by default. */
  fetch?: ClientOptions["fetch"];
}

/** A client of the gateway at baseUrl that sends token as its bearer token. */
export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  const { baseUrl, token, headers, fetch } = options;
  const client = createClient<paths>({ baseUrl, headers, fetch });
  if (token !== undefined) {
    client.use({
      async onRequest({ request }) {
        const value = typeof token === "function" ? await token() : token;
        request.headers.set("Authorization", `Bearer ${value}`);
        return request;
      },
    });
  }
  return client;
}

/** The body of every error answer: {"error": {code, message, pointer, request_id}} (docs/api.md, Errors). */
export type ErrorBody = components["schemas"]["Error"];
/** An atomic batch's refusal: the error with the refused items (docs/api.md, Batches). */
export type BatchRefusedBody = components["schemas"]["BatchRefused"];
/** The gateway's error object: `error` of an error answer. */
export type ErrorObject = ErrorBody["error"] | BatchRefusedBody["error"];

/**
 * An error answer of the gateway. `error` is the answer's error object
 * (code, message, and pointer, the JSON pointer of the body member at
 * fault, when there is one); it is undefined when the answer was not the
 * gateway's (a proxy's page, say), whose text is then in `body`.
 */
export class GatewayError extends Error {
  override readonly name = "GatewayError";
  readonly status: number;
  readonly error: ErrorObject | undefined;
  readonly body: unknown;
  readonly response: Response;

  constructor(response: Response, body: unknown) {
    const error = errorObjectOf(body);
    super(error ? `${response.status} ${error.code}: ${error.message}` : `${response.status} ${response.statusText}`);
    this.status = response.status;
    this.error = error;
    this.body = body;
    this.response = response;
  }

  /** The error's code (VALIDATION_ERROR, NOT_FOUND, …); undefined when the answer was not the gateway's. */
  get code(): string | undefined {
    return this.error?.code;
  }

  /** The JSON pointer of the request body's member at fault (docs/api.md, Errors). */
  get pointer(): string | undefined {
    return this.error && "pointer" in this.error ? this.error.pointer : undefined;
  }

  /** The request's X-Request-Id, to quote when asking for support. */
  get requestId(): string | undefined {
    return this.error?.request_id;
  }
}

function errorObjectOf(body: unknown): ErrorObject | undefined {
  if (typeof body !== "object" || body === null || !("error" in body)) {
    return undefined;
  }
  const error = (body as { error: unknown }).error;
  if (typeof error !== "object" || error === null) {
    return undefined;
  }
  const { code, message } = error as { code?: unknown; message?: unknown };
  return typeof code === "string" && typeof message === "string" ? (error as ErrorObject) : undefined;
}

/** What each openapi-fetch call answers. */
export type FetchResult<D, E> = { data: D; error?: never; response: Response } | { data?: never; error: E; response: Response };

/**
 * The answer's data, or a GatewayError thrown for an error answer:
 * `const job = await unwrap(client.GET("/v1/translations/{id}", …))`.
 */
export async function unwrap<D, E>(result: FetchResult<D, E> | Promise<FetchResult<D, E>>): Promise<Exclude<D, undefined>> {
  const answer = await result;
  if (answer.error !== undefined || !answer.response.ok) {
    throw new GatewayError(answer.response, answer.error);
  }
  return answer.data as Exclude<D, undefined>;
}
