package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/ai-job-gateway/gateway/app/apikeys"
)

// signInPage is templates/sign-in.html's data.
type signInPage struct {
	// Token is the form's double-submit token.
	Token string
	Error string
	// Ended says a session just ended because its key was refused.
	Ended bool
	// OIDC offers sign-in through the identity provider.
	OIDC bool
}

// signInForm serves GET /console/sign-in: the form for an API key
// (docs/console.md, Sign-in).
func (c *Console) signInForm(w http.ResponseWriter, r *http.Request) {
	if _, err := c.session(r); err == nil {
		http.Redirect(w, r, Path+"jobs", http.StatusSeeOther)
		return
	}
	c.renderSignIn(w, r, http.StatusOK, signInPage{Ended: r.URL.Query().Get("ended") != ""})
}

// renderSignIn renders the form with a new double-submit token.
func (c *Console) renderSignIn(w http.ResponseWriter, r *http.Request, status int, p signInPage) {
	p.Token, p.OIDC = randomToken(), c.cfg.OIDC != nil
	http.SetCookie(w, cookie(r, signInCookie, p.Token, 3600))
	c.render(w, status, "sign-in", layout{Title: "Sign in", Page: p})
}

// signIn serves POST /console/sign-in: the key is checked by listing a
// job through the API with it; a good key starts a session bound to its
// tenant.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	form, err := r.Cookie(signInCookie)
	if err != nil || !sameToken(r.PostFormValue(csrfField), form.Value) {
		c.problem(w, http.StatusForbidden, nil, "Refused", "The sign-in form was not sent from this site's page (its CSRF token is missing or wrong). Reload the page and try again.")
		return
	}
	key := strings.TrimSpace(r.PostFormValue("api_key"))
	if !apikeys.LooksLikeKey(key) {
		c.renderSignIn(w, r, http.StatusUnprocessableEntity, signInPage{Error: "Enter a gateway API key (it starts with " + apikeys.Prefix + ")."})
		return
	}
	a, err := c.call(r, key, http.MethodGet, "/v1/jobs", url.Values{"page[size]": {"1"}}, nil)
	if err != nil {
		c.cfg.Logger.Error("console: sign-in check", "error", err)
		c.problem(w, http.StatusInternalServerError, nil, "Something went wrong", "The key could not be checked; try again.")
		return
	}
	switch {
	case a.Status == http.StatusUnauthorized:
		c.renderSignIn(w, r, http.StatusUnauthorized, signInPage{Error: "This API key is not valid: it may be mistyped, revoked or expired."})
		return
	case a.Status != http.StatusOK:
		c.renderSignIn(w, r, a.Status, signInPage{Error: "The gateway refused this key: " + a.message()})
		return
	}
	id, err := c.cfg.Keys.Authenticate(r.Context(), key)
	var invalid *apikeys.InvalidError
	if errors.As(err, &invalid) {
		c.renderSignIn(w, r, http.StatusUnauthorized, signInPage{Error: "This API key is not valid: it may be mistyped, revoked or expired."})
		return
	}
	var limited *apikeys.LimitError
	if errors.As(err, &limited) {
		c.renderSignIn(w, r, http.StatusTooManyRequests, signInPage{Error: "This API key is over its request rate; try again in a minute."})
		return
	}
	if err == nil {
		err = c.startSession(w, r, id.Tenant, key)
	}
	if err != nil {
		c.cfg.Logger.Error("console: start session", "error", err)
		c.problem(w, http.StatusInternalServerError, nil, "Something went wrong", "The session could not be started; try again.")
		return
	}
	http.SetCookie(w, cookie(r, signInCookie, "", -1))
	http.Redirect(w, r, Path+"jobs", http.StatusSeeOther)
}

// signOut serves POST /console/sign-out: the session's row and cookie go.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := c.endSession(w, r, s); err != nil {
		return err
	}
	http.Redirect(w, r, Path+"sign-in", http.StatusSeeOther)
	return nil
}
