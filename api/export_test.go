package api

// RequestFingerprint is requestFingerprint, for tests that claim a key as
// a request would.
var RequestFingerprint = requestFingerprint
