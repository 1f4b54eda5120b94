package console

// SessionID is sessionID, for tests.
var SessionID = sessionID
