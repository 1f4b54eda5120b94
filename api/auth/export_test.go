package auth

import "time"

// SetClock replaces the verifier's clock; call it before the first Verify.
func SetClock(v *Verifier, now func() time.Time) { v.now = now }
