package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/store"
)

// Sessions (docs/console.md, Sessions).
const (
	// CookieName holds a session's token; the store keeps its SHA-256.
	CookieName = "gateway_console"
	// SessionTTL is how long a session lasts.
	SessionTTL = 12 * time.Hour
	// signInCookie holds the sign-in form's token (a double-submit
	// cookie), so that another site cannot sign a browser in.
	signInCookie = "gateway_console_sign_in"
	// csrfField is the hidden field of every form's token.
	csrfField = "csrf_token"
	// maxFormBytes bounds a form's body.
	maxFormBytes = 64 << 10
)

// session is a signed-in person's session with its credential opened.
type session struct {
	*store.ConsoleSession
	credential string
}

// errSignedOut is a request without a live session.
var errSignedOut = errors.New("console: not signed in")

// session reads r's session: errSignedOut without a live one.
func (c *Console) session(r *http.Request) (*session, error) {
	cookie, err := r.Cookie(CookieName)
	if err != nil || cookie.Value == "" {
		return nil, errSignedOut
	}
	id := sessionID(cookie.Value)
	row, err := c.cfg.Sessions.ConsoleSession(r.Context(), id, c.cfg.Now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, errSignedOut
	}
	if err != nil {
		return nil, err
	}
	credential, err := c.seal.open(row.Credential, id)
	if err != nil {
		// Sealed under another key: the session cannot be used.
		return nil, errSignedOut
	}
	return &session{ConsoleSession: row, credential: credential}, nil
}

// sessionID is the store's id of a session's token.
func sessionID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// startSession records a session for credential of tenant and sets its
// cookie.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, tenant, credential string) error {
	return c.startSessionUntil(w, r, tenant, credential, time.Time{})
}

// startSessionUntil is startSession for a session that ends at expires
// (an OIDC access token's expiry) when that comes before SessionTTL.
func (c *Console) startSessionUntil(w http.ResponseWriter, r *http.Request, tenant, credential string, expires time.Time) error {
	token, csrf := randomToken(), randomToken()
	id := sessionID(token)
	sealed, err := c.seal.seal(credential, id)
	if err != nil {
		return err
	}
	now := c.cfg.Now().UTC().Truncate(time.Microsecond)
	if expires.IsZero() || expires.After(now.Add(SessionTTL)) {
		expires = now.Add(SessionTTL)
	}
	expires = expires.UTC().Truncate(time.Microsecond)
	if err := c.cfg.Sessions.CreateConsoleSession(r.Context(), &store.ConsoleSession{ID: id, Tenant: tenant, Credential: sealed,
		CSRFToken: csrf, CreatedAt: now, ExpiresAt: expires}); err != nil {
		return err
	}
	http.SetCookie(w, cookie(r, CookieName, token, int(expires.Sub(now)/time.Second)))
	return nil
}

// endSession deletes s's row and r's cookie.
func (c *Console) endSession(w http.ResponseWriter, r *http.Request, s *session) error {
	http.SetCookie(w, cookie(r, CookieName, "", -1))
	return c.cfg.Sessions.DeleteConsoleSession(r.Context(), s.ID)
}

// cookie is one of the console's cookies: HttpOnly, SameSite=Strict, for
// the console's paths alone, Secure when r came over TLS. maxAge < 0
// deletes it.
func cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: Path, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: overTLS(r)}
}

// overTLS reports whether r came over TLS, to the gateway or to a proxy
// before it: the API's router keeps X-Forwarded-Proto only from its
// trusted proxies (docs/operations.md, Behind a proxy).
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// encodeSealed and decodeSealed carry sealed bytes in a cookie.
func encodeSealed(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func decodeSealed(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

// randomToken is 32 random bytes, URL-safe base64.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sameToken compares a form's token with the expected one in constant
// time; an empty expected token matches nothing.
func sameToken(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// page is a signed-in page's handler.
type page func(w http.ResponseWriter, r *http.Request, s *session) error

// signedIn serves h to a person with a live session, sending others to
// sign in. A POST must carry the session's CSRF token (403 otherwise).
// When the API refuses the session's credential (401: revoked or
// expired), the session ends.
func (c *Console) signedIn(h page) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(r)
		if errors.Is(err, errSignedOut) {
			c.signedOut(w, r)
			return
		}
		if err != nil {
			c.cfg.Logger.Error("console: read session", "error", err)
			c.problem(w, http.StatusInternalServerError, nil, "Something went wrong", "The session could not be read; try again.")
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if !sameToken(r.PostFormValue(csrfField), s.CSRFToken) {
				c.problem(w, http.StatusForbidden, s, "Refused", "The form was not sent from this session's page (its CSRF token is missing or wrong). Reload the page and try again.")
				return
			}
		}
		err = h(w, r, s)
		if errors.Is(err, errCredentialRefused) {
			if err := c.endSession(w, r, s); err != nil {
				c.cfg.Logger.Error("console: end session", "error", err)
			}
			http.Redirect(w, r, Path+"sign-in?ended=1", http.StatusSeeOther)
			return
		}
		if err != nil {
			c.cfg.Logger.Error("console: page", "path", r.URL.Path, "error", err)
			c.problem(w, http.StatusInternalServerError, s, "Something went wrong", "The page could not be made; try again.")
		}
	}
}

// signedOut answers a request without a live session. A link followed
// from another site arrives without the SameSite=Strict cookie: it gets a
// page that follows the link again from here, with the cookie. Others are
// sent to sign in; a cookie sent and refused is deleted.
func (c *Console) signedOut(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		c.continueAt(w, r.URL.RequestURI())
		return
	}
	if _, err := r.Cookie(CookieName); err == nil {
		http.SetCookie(w, cookie(r, CookieName, "", -1))
	}
	http.Redirect(w, r, Path+"sign-in", http.StatusSeeOther)
}

// continueAt answers a page that goes on to the console's path at once:
// a navigation that starts from the console's own page, so its
// SameSite=Strict cookie is sent (a redirect would still count as the
// other site's).
func (c *Console) continueAt(w http.ResponseWriter, path string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = continuePage.Execute(w, path)
}

var continuePage = template.Must(template.New("continue").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={{.}}">
<title>AI job gateway</title></head>
<body><p><a href="{{.}}">Continue to the console</a></p></body></html>
`))

// sealer seals credentials with AES-GCM, each bound to its session's id.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (sealer, error) {
	if len(key) != 32 {
		return sealer{}, fmt.Errorf("console: the seal key must be 32 bytes, not %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return sealer{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealer{}, err
	}
	return sealer{aead: aead}, nil
}

// seal is a random nonce followed by the sealed text.
func (s sealer) seal(text, id string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, []byte(text), []byte(id)), nil
}

func (s sealer) open(sealed []byte, id string) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("console: sealed credential too short")
	}
	text, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
	return string(text), err
}
