// Webhook signature checks of verifyWebhook (docs/webhooks.md, Signatures).
import assert from "node:assert/strict";
import { generateKeyPairSync, sign } from "node:crypto";
import { test } from "node:test";

import { verifyWebhook, webhookPublicKey, WebhookVerificationError } from "../dist/index.js";

// A request the gateway's Go signer (internal/webhooksign) signed with the
// seed 0x01…0x20, so that this helper is known to agree with it byte for byte.
const goVector = {
  publicKey: "whpk_ebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmQ=",
  id: "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f-3",
  timestamp: "1795293268",
  body: '{"event":"llm-task.completed","data":{"id":"0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f","note":"café ✓"}}',
  signature: "v1a,tMa+IFOSLO9Mg2xZxoaSbHmq7fCz2SyKeBg4G/3h6xqbozrkcz0gG/jRiJjH4Yg1XchmJqOY8eDCYSQ8xhP0Aw==",
};
const goSentAt = new Date(Number(goVector.timestamp) * 1000);

function goHeaders(changes = {}) {
  return { "webhook-id": goVector.id, "webhook-timestamp": goVector.timestamp, "webhook-signature": goVector.signature, ...changes };
}

function reason(fn) {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, `${error}`);
    return error.reason;
  }
  assert.fail("the request verified");
}

test("a request the Go signer signed verifies, its body parsed", () => {
  const verified = verifyWebhook(goVector.publicKey, goHeaders(), goVector.body, { now: goSentAt });
  assert.equal(verified.id, goVector.id);
  assert.equal(verified.timestamp.getTime(), goSentAt.getTime());
  assert.equal(verified.payload.event, "llm-task.completed");
  assert.equal(verified.payload.data.note, "café ✓");
  // The body as bytes and the headers as a fetch Headers verify alike.
  verifyWebhook(webhookPublicKey(goVector.publicKey), new Headers(goHeaders()), Buffer.from(goVector.body), { now: goSentAt });
});

test("a changed body, id or timestamp does not verify", () => {
  const key = goVector.publicKey;
  const now = { now: goSentAt };
  assert.equal(reason(() => verifyWebhook(key, goHeaders(), goVector.body.replace("completed", "failed"), now)), "no_valid_signature");
  assert.equal(reason(() => verifyWebhook(key, goHeaders(), goVector.body + "\n", now)), "no_valid_signature");
  assert.equal(reason(() => verifyWebhook(key, goHeaders({ "webhook-id": goVector.id + "0" }), goVector.body, now)), "no_valid_signature");
  const later = String(Number(goVector.timestamp) + 1);
  assert.equal(reason(() => verifyWebhook(key, goHeaders({ "webhook-timestamp": later }), goVector.body, now)), "no_valid_signature");
});

test("another key's signature does not verify", () => {
  const other = generateKeyPairSync("ed25519").publicKey;
  assert.equal(reason(() => verifyWebhook(other, goHeaders(), goVector.body, { now: goSentAt })), "no_valid_signature");
});

test("the timestamp is refused more than five minutes away, either way", () => {
  const at = (seconds) => ({ now: new Date(goSentAt.getTime() + seconds * 1000) });
  verifyWebhook(goVector.publicKey, goHeaders(), goVector.body, at(300));
  verifyWebhook(goVector.publicKey, goHeaders(), goVector.body, at(-300));
  assert.equal(reason(() => verifyWebhook(goVector.publicKey, goHeaders(), goVector.body, at(301))), "timestamp_too_old");
  assert.equal(reason(() => verifyWebhook(goVector.publicKey, goHeaders(), goVector.body, at(-301))), "timestamp_too_new");
  // The receiver's own tolerance.
  assert.equal(reason(() => verifyWebhook(goVector.publicKey, goHeaders(), goVector.body, { ...at(61), toleranceSeconds: 60 })), "timestamp_too_old");
  // Without options.now, the clock: the vector is long past.
  assert.equal(reason(() => verifyWebhook(goVector.publicKey, goHeaders(), goVector.body)), "timestamp_too_old");
});

test("a malformed timestamp or a missing header is refused", () => {
  for (const timestamp of ["", "abc", "1795293268.0", "1e9", " 1795293268"]) {
    assert.equal(reason(() => verifyWebhook(goVector.publicKey, goHeaders({ "webhook-timestamp": timestamp }), goVector.body, { now: goSentAt })), "bad_timestamp", timestamp);
  }
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const headers = goHeaders();
    delete headers[name];
    assert.equal(reason(() => verifyWebhook(goVector.publicKey, headers, goVector.body, { now: goSentAt })), "missing_header", name);
  }
});

test("any v1a entry may verify; other versions and malformed entries are ignored", () => {
  const valid = goVector.signature;
  const bare = valid.slice("v1a,".length);
  const now = { now: goSentAt };
  const with_ = (signature) => goHeaders({ "webhook-signature": signature });
  verifyWebhook(goVector.publicKey, with_(`v1,${bare} v1a,AAAA ${valid}`), goVector.body, now);
  verifyWebhook(goVector.publicKey, with_(`  ${valid}  `), goVector.body, now);
  assert.equal(reason(() => verifyWebhook(goVector.publicKey, with_(`v1,${bare}`), goVector.body, now)), "no_valid_signature");
  assert.equal(reason(() => verifyWebhook(goVector.publicKey, with_(bare), goVector.body, now)), "no_valid_signature");
  // Unpadded or base64url text is not the standard base64 the gateway sends.
  assert.equal(reason(() => verifyWebhook(goVector.publicKey, with_(valid.replace(/=+$/, "")), goVector.body, now)), "no_valid_signature");
});

test("a key made here signs what the helper verifies (the whpk_ form round trip)", () => {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const whpk = "whpk_" + Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url").toString("base64");
  const id = "msg_batch_1";
  const timestamp = String(Math.floor(Date.now() / 1000));
  const body = '{"event":"batch.completed","data":{}}';
  const signature = "v1a," + sign(null, Buffer.from(`${id}.${timestamp}.${body}`), privateKey).toString("base64");
  const verified = verifyWebhook(whpk, { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": signature }, body);
  assert.equal(verified.payload.event, "batch.completed");
});

test("a public key not in the whpk_ form is refused", () => {
  assert.throws(() => webhookPublicKey(goVector.publicKey.slice(5)), /starts with whpk_/);
  assert.throws(() => webhookPublicKey("whpk_AAAA"), /32 bytes/);
});
